/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tests of the batched LRU paths of mm (lru_add, lazyfree, deactivate,
 * reclaim_pages(), do_pages_move()): each runs the same operation on an
 * area in two placements, named the same on every topology.
 *
 * Bound: every page on one node, so a batch is one run of one lruvec.
 * Interleaved: page by page over every memory node the task may use, so
 * every batch changes lruvec (relocks) at each page, and work split into
 * same-node runs gets runs of one page. With one node both are the same.
 *
 * What a page's share of a per-node counter is comes from where its pages
 * are, read with move_pages() in query mode, not from the policy: the
 * policy only has to make the placement bound or interleaved.
 */
#ifndef NT_LRUPATH_H
#define NT_LRUPATH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "expect.h"
#include "nodes.h"

enum nt_place { NT_PLACE_BOUND, NT_PLACE_INTERLEAVED, NT_PLACES };

extern const char *const nt_place_names[NT_PLACES];	/* "bound", "interleaved" */

/*
 * The policy of a placement: MPOL_BIND to the first memory node with CPUs
 * (node, which the test should run on so local and bound agree), or
 * MPOL_INTERLEAVE over every memory node the task may use.
 */
void nt_place_policy(const struct nt_topology *t, enum nt_place p, int node,
		     struct nt_policy *pol);

/*
 * Where each of npages pages of page_size from start is (status[], as
 * nt_pages_nodes()), and how many are on each node. Returns the number of
 * pages not on any node (absent, or an error for the page), or -errno.
 */
long nt_pages_per_node(const void *start, size_t npages, size_t page_size, int *status,
		       long counts[NT_MAX_NODES]);

/*
 * The sum of the keys (e.g. "Active(file)", "Inactive(file)") of each node's
 * meminfo, kB, for the nodes in nodes (the others 0), after a stat_refresh:
 * per-CPU deltas would hide up to a threshold of pages per CPU otherwise.
 * 0 or -errno.
 */
int nt_nodes_meminfo_sum(const struct nt_nodemask *nodes, const char *const *keys, int nkeys,
			 long kb[NT_MAX_NODES]);

/* Node changes between consecutive pages of status (for a diagnostic). */
size_t nt_node_changes(const int *status, size_t npages);

/*
 * Pages of the range whose kpageflags masked by mask are not want (absent
 * pages count), naming the first few as what. -errno when the flags could
 * not be read.
 */
long nt_pages_flags_not(const void *start, size_t npages, size_t page_size, uint64_t mask,
			uint64_t want, const char *what);

/*
 * Whether the multi-gen LRU runs (/sys/kernel/mm/lru_gen/enabled, bit 0;
 * admin-guide/mm/multigen_lru.rst): then pages age by generation, the
 * active and inactive lists are only a view of generations, and KPF_ACTIVE
 * says nothing about what an operation did.
 */
bool nt_lru_gen_enabled(void);
#endif
