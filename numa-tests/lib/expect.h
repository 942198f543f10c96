/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a page must land under a NUMA policy: the one place that computes it.
 * Pure functions of their arguments, so a host unit test can check them.
 *
 * What is modelled, and what is assumed:
 * - MPOL_BIND to one node: that node.
 * - MPOL_BIND to a set: the kernel takes the first node of the allocating CPU's
 *   zonelist (nearest by distance) that is in the set and has free memory above
 *   the watermark. That depends on distances and free memory at fault time, so
 *   no single node is promised (NT_NODE_ANY): any node of the set is right, a
 *   node outside it is wrong.
 * - MPOL_PREFERRED: the preferred node, assuming it has free memory for the
 *   whole area (the kernel falls back to other nodes silently when it has not).
 * - MPOL_INTERLEAVE, task or VMA policy, for a page faulted in a VMA: the
 *   kernel's interleave index is vm_pgoff >> order plus the page's offset in
 *   the VMA in pages of that order (interleave_nid() in 6.1), and the page goes
 *   to the index-th node of the set, wrapping around. For an anonymous
 *   private mapping vm_pgoff is vm_start >> PAGE_SHIFT, so 4 KiB page i of an
 *   area starting at vm_start lands on node number (vm_start / 4096 + i) mod
 *   weight of the set, not (i mod weight). Assumes every node of the set has
 *   free memory (interleave allocations fall back silently too).
 * - Not modelled: MPOL_DEFAULT/MPOL_LOCAL (depend on the faulting CPU),
 *   MPOL_PREFERRED_MANY, mode flags (MPOL_F_STATIC_NODES, ...), home_node,
 *   cpuset rebinding, vma-less (kernel) interleave which uses a per-task
 *   rotor, weighted interleave.
 */
#ifndef NT_EXPECT_H
#define NT_EXPECT_H

#include <stdbool.h>
#include <stddef.h>

#include "nodemask.h"

#define NT_NODE_ANY	(-1)	/* any node of the policy's set is right */
#define NT_NODE_INVALID	(-2)	/* policy not modelled, or empty set */

/* How the kernel turns an interleave index into a position in the node set. */
enum nt_il_rule {
	/* Up to 6.6: offset_il_node() computes (unsigned int)index % weight. */
	NT_IL_INDEX_U32,
	/* 6.7 on ("mempolicy: alloc_pages_mpol() for NUMA policy without vma"): index % weight. */
	NT_IL_INDEX_ULONG,
};

/* A policy as passed to set_mempolicy()/mbind(): a mode without flags, and its nodes. */
struct nt_policy {
	int mode;
	struct nt_nodemask nodes;
};

/* What the kernel looks at when it picks the node of a page faulted at addr. */
struct nt_vma {
	unsigned long start;		/* vm_start */
	unsigned long pgoff;		/* vm_pgoff, in base pages */
	unsigned int page_shift;	/* base page shift */
	enum nt_il_rule il_rule;
};

/* A policy of mode over the single node. */
void nt_policy_one(struct nt_policy *pol, int mode, int node);
/*
 * The VMA of an anonymous private mapping whose vm_start is start: do_mmap()
 * sets vm_pgoff = start >> PAGE_SHIFT, and merging and splitting keep
 * vm_pgoff + (addr - vm_start) >> PAGE_SHIFT == addr >> PAGE_SHIFT. Not true
 * after mremap() moved faulted pages: vm_pgoff keeps the old address.
 */
void nt_vma_anon(struct nt_vma *vma, unsigned long start, unsigned int page_shift,
		 enum nt_il_rule il_rule);
/* Interleave index of the page of size 1 << shift at addr (shift >= page_shift). */
unsigned long nt_il_index(const struct nt_vma *vma, unsigned long addr, unsigned int shift);
/* Node the index-th page goes to: the (index mod weight)-th node of mask. */
int nt_il_node(const struct nt_nodemask *mask, unsigned long index, enum nt_il_rule rule);
/* The node the page of size 1 << shift at addr must land on, NT_NODE_ANY or NT_NODE_INVALID. */
int nt_expect_node(const struct nt_policy *pol, const struct nt_vma *vma, unsigned long addr,
		   unsigned int shift);
/* Whether a page of size 1 << shift at addr landing on node obeys pol. */
bool nt_expect_ok(const struct nt_policy *pol, const struct nt_vma *vma, unsigned long addr,
		  unsigned int shift, int node);
/*
 * Pages of npages pages of size 1 << vma->page_shift from addr expected on each
 * node. 0, or -EINVAL when some page has no single expected node.
 */
int nt_expect_counts(const struct nt_policy *pol, const struct nt_vma *vma, unsigned long addr,
		     size_t npages, long counts[NT_MAX_NODES]);

#endif
