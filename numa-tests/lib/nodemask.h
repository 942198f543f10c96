/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Node sets in the kernel's own layout, so they can be passed to mbind() and
 * set_mempolicy() as they are, and parsed from sysfs node lists ("0-3,5").
 */
#ifndef NT_NODEMASK_H
#define NT_NODEMASK_H

#include <stdbool.h>
#include <stddef.h>

/* More node ids than any machine these tests run on; larger ids are -ERANGE. */
#define NT_MAX_NODES	64
#define NT_LONG_BITS	(8 * sizeof(unsigned long))
#define NT_MASK_LONGS	((NT_MAX_NODES + NT_LONG_BITS - 1) / NT_LONG_BITS)

/* maxnode argument of mbind()/set_mempolicy(): the kernel reads maxnode - 1 bits. */
#define NT_MASK_MAXNODE	(NT_MAX_NODES + 1)

struct nt_nodemask {
	unsigned long bits[NT_MASK_LONGS];
};

void nt_mask_clear(struct nt_nodemask *m);
void nt_mask_set(struct nt_nodemask *m, int node);
bool nt_mask_isset(const struct nt_nodemask *m, int node);
int nt_mask_weight(const struct nt_nodemask *m);
/* First node in m above node (pass -1 for the first), or -1 when there is none. */
int nt_mask_next(const struct nt_nodemask *m, int node);
/* The n-th node in m, counting from 0; -1 when m has n nodes or fewer. */
int nt_mask_nth(const struct nt_nodemask *m, int n);
void nt_mask_and(struct nt_nodemask *dst, const struct nt_nodemask *a,
		 const struct nt_nodemask *b);
/* Parses a sysfs node list; 0, -EINVAL for bad syntax, -ERANGE for node ids too large. */
int nt_mask_parse(const char *s, struct nt_nodemask *m);
/* Formats m as a node list ("0-3,5", "" when empty); returns buf. */
char *nt_mask_format(const struct nt_nodemask *m, char *buf, size_t len);

/*
 * The kernel's node-set remapping (lib/bitmap.c in 6.1), which mempolicy uses
 * to move a policy's nodes when a cpuset's mems change.
 *
 * nt_mask_remap(): bitmap_remap(). The n-th node of old maps to the
 * (n mod weight(new))-th node of new; a node not in old maps to itself; with
 * old or new empty, src is copied.
 */
void nt_mask_remap(struct nt_nodemask *dst, const struct nt_nodemask *src,
		   const struct nt_nodemask *old, const struct nt_nodemask *new);
/* bitmap_bitremap(): where nt_mask_remap() sends the single node. */
int nt_node_remap(int node, const struct nt_nodemask *old, const struct nt_nodemask *new);
/* bitmap_fold(): node n of orig sets node n mod sz (sz > 0). */
void nt_mask_fold(struct nt_nodemask *dst, const struct nt_nodemask *orig, int sz);
/* bitmap_onto(): when node m is in orig, the m-th node of relmap is in dst. */
void nt_mask_onto(struct nt_nodemask *dst, const struct nt_nodemask *orig,
		  const struct nt_nodemask *relmap);
bool nt_mask_equal(const struct nt_nodemask *a, const struct nt_nodemask *b);
bool nt_mask_empty(const struct nt_nodemask *m);

#define nt_mask_for_each(node, m) \
	for ((node) = nt_mask_next((m), -1); (node) >= 0; (node) = nt_mask_next((m), (node)))

#endif
