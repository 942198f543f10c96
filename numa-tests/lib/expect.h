/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a page must land under a NUMA policy: the one place that computes it.
 * Pure functions of their arguments, so a host unit test can check them.
 *
 * What is modelled, and what is assumed (6.1: mm/mempolicy.c vma_alloc_folio(),
 * policy_node(), policy_nodemask(), alloc_pages_preferred_many()):
 * - "Local node": the first node of the faulting CPU's zonelist, which is the
 *   CPU's own node when that node has memory. The caller says which node that
 *   is (nt_vma_set_local()); NT_NODE_ANY when it does not know (a CPU of a
 *   memory-less node: the nearest node with memory is not modelled).
 * - MPOL_DEFAULT and MPOL_LOCAL: the local node; not modelled when unknown.
 * - MPOL_BIND to one node: that node.
 * - MPOL_BIND to a set, and MPOL_PREFERRED_MANY: the kernel takes the first
 *   node of the local node's zonelist that is in the set and has free memory
 *   above the watermark (numa_memory_policy.rst: "the node ... that is
 *   closest to the node where the allocation takes place"). When the local
 *   node is in the set that is the local node (its own zonelist starts with
 *   it, distance 10); otherwise the nearest node of the set by SLIT distance
 *   (nt_nearest()): nt_expect_node() says NT_NODE_ANY and nt_expect_ok()
 *   takes any node of the set at the smallest distance (equal distances are
 *   ordered by a tie-break made at boot), or, without distances, any node
 *   of the set.
 *   (PREFERRED_MANY may also fall back outside the set when every node of it
 *   is short of memory; the tests leave room so that it never has to.)
 * - MPOL_PREFERRED: the preferred node, assuming it has free memory for the
 *   whole area (the kernel falls back to other nodes silently when it has not).
 * - MPOL_INTERLEAVE, task or VMA policy, for a page faulted in a VMA: the
 *   kernel's interleave index is vm_pgoff >> order plus the page's offset in
 *   the VMA in pages of that order (interleave_nid() in 6.1), and the page goes
 *   to the index-th node of the set, wrapping around. For an anonymous
 *   private mapping vm_pgoff is vm_start >> PAGE_SHIFT, so 4 KiB page i of an
 *   area starting at vm_start lands on node number (vm_start / 4096 + i) mod
 *   weight of the set, not (i mod weight). For shared memory (shmem: shared
 *   anonymous, memfd, tmpfs, SysV shm) shmem_alloc_folio() faults through a
 *   pseudo VMA whose vm_pgoff is the page's index in the object plus the
 *   object's inode number (shmem_pseudo_vma_init(): "Bias interleave by inode
 *   number"), so page i of the object lands on node number
 *   (i_ino + i) mod weight (nt_vma_file() with pgoff = i_ino + the mapping's
 *   first page in the object). Assumes every node of the set has free memory
 *   (interleave allocations fall back silently too).
 * - Mode flags and cpusets (nt_mpol_install(), nt_mpol_rebind()): the nodes
 *   a policy really uses, from the nodes the caller passed, the flags and the
 *   cpuset's mems, at creation and after the mems change.
 * - Not modelled: home_node, vma-less (kernel) interleave which uses a
 *   per-task rotor, weighted interleave, which of several nodes at the same
 *   distance a zonelist puts first.
 */
#ifndef NT_EXPECT_H
#define NT_EXPECT_H

#include <stdbool.h>
#include <stddef.h>

#include "nodemask.h"

/* Mode flags of <linux/mempolicy.h>, which libnuma's <numaif.h> does not define. */
#ifndef MPOL_F_STATIC_NODES
#define MPOL_F_STATIC_NODES	(1 << 15)
#endif
#ifndef MPOL_F_RELATIVE_NODES
#define MPOL_F_RELATIVE_NODES	(1 << 14)
#endif

#define NT_NODE_ANY	(-1)	/* any node of the policy's set is right */
#define NT_NODE_INVALID	(-2)	/* policy not modelled, or empty set */

/* How the kernel turns an interleave index into a position in the node set. */
enum nt_il_rule {
	/* Up to 6.6: offset_il_node() computes (unsigned int)index % weight. */
	NT_IL_INDEX_U32,
	/* 6.7 on ("mempolicy: alloc_pages_mpol() for NUMA policy without vma"): index % weight. */
	NT_IL_INDEX_ULONG,
};

/*
 * A policy as passed to set_mempolicy()/mbind(): a mode, its nodes, and mode
 * flags (MPOL_F_STATIC_NODES or MPOL_F_RELATIVE_NODES, or'ed into the mode
 * argument by the callers; 0 for none). The expectation functions below read
 * mode and nodes as the nodes the kernel really uses: for a policy with flags,
 * or under a cpuset, take them from nt_mpol_install() first.
 */
struct nt_policy {
	int mode;
	struct nt_nodemask nodes;
	unsigned int flags;
};

/*
 * What the kernel keeps of a policy (struct mempolicy in 6.1), enough to
 * follow it through cpuset changes.
 */
struct nt_mempolicy {
	struct nt_policy pol;		/* mode, pol->nodes, flags: what allocations use */
	struct nt_nodemask user;	/* w.user_nodemask, kept when a mode flag is set */
	struct nt_nodemask mems;	/* w.cpuset_mems_allowed, kept without a flag */
	int user_mode;			/* the mode asked for (pol.mode may fall back to local) */
};

/*
 * The SLIT distances of the machine (/sys/devices/system/node/nodeN/distance):
 * d[from][to], 0 where unknown.
 */
struct nt_distances {
	int d[NT_MAX_NODES][NT_MAX_NODES];
};

/* What the kernel looks at when it picks the node of a page faulted at addr. */
struct nt_vma {
	unsigned long start;		/* vm_start */
	unsigned long pgoff;		/* vm_pgoff, in base pages */
	unsigned int page_shift;	/* base page shift */
	enum nt_il_rule il_rule;
	int local_node;			/* the faulting CPU's node, NT_NODE_ANY when unknown */
	const struct nt_distances *dist;	/* NULL: distances unknown */
};

/* A policy of mode over the single node, no mode flags. */
void nt_policy_one(struct nt_policy *pol, int mode, int node);
/*
 * The VMA of an anonymous private mapping whose vm_start is start (the local
 * node unknown): do_mmap()
 * sets vm_pgoff = start >> PAGE_SHIFT, and merging and splitting keep
 * vm_pgoff + (addr - vm_start) >> PAGE_SHIFT == addr >> PAGE_SHIFT. Not true
 * after mremap() moved faulted pages: vm_pgoff keeps the old address.
 */
void nt_vma_anon(struct nt_vma *vma, unsigned long start, unsigned int page_shift,
		 enum nt_il_rule il_rule);
/*
 * The VMA a shared mapping's (shmem object's) pages are allocated for, whose
 * vm_start is start: vm_pgoff = pgoff, which for shmem is the inode number
 * plus the object's page mapped at start (see above).
 */
void nt_vma_file(struct nt_vma *vma, unsigned long start, unsigned long pgoff,
		 unsigned int page_shift, enum nt_il_rule il_rule);
/* Says which node faults in vma happen on (see "local node" above). */
void nt_vma_set_local(struct nt_vma *vma, int node);
/* Gives the machine's distances, so that "the nearest node of a set" is known (below). */
void nt_vma_set_distances(struct nt_vma *vma, const struct nt_distances *dist);
/*
 * The nodes of set the kernel may take when it starts from node from's
 * zonelist: those at the smallest SLIT distance from from (build_zonelists()
 * orders a node's zonelist by distance; among equal distances the order
 * depends on a load-based tie-break made at boot, find_next_best_node(), so
 * every node of the tie is right). The whole set when the distances or from
 * are unknown.
 */
void nt_nearest(const struct nt_distances *dist, int from, const struct nt_nodemask *set,
		struct nt_nodemask *out);
/*
 * The policy the kernel installs for set_mempolicy()/mbind() of user
 * (mpol_new() and mpol_set_nodemask() in 6.1), given the mems of the task's
 * cpuset (cpuset_current_mems_allowed) and the nodes with memory
 * (N_MEMORY). 0, or -EINVAL where the kernel refuses the policy.
 */
int nt_mpol_install(struct nt_mempolicy *mp, const struct nt_policy *user,
		    const struct nt_nodemask *cpuset_mems, const struct nt_nodemask *memory);
/*
 * mp after its cpuset's mems became new_mems, as
 * Documentation/admin-guide/mm/numa_memory_policy.rst says (mode flags):
 * bind and interleave as mpol_rebind_nodemask() does it; a preferred node
 * or preferred-many mask remapped likewise (a static one with no user
 * node left in the mems falls back to local allocation, "the Default
 * policy is used"). Default and local policies do not change.
 */
void nt_mpol_rebind(struct nt_mempolicy *mp, const struct nt_nodemask *new_mems);
/*
 * The same as 6.1 and 6.12 do it, a known deviation for the preferred
 * modes: mpol_rebind_preferred() only records the new mems and leaves the
 * preferred node or mask as it was (docs/kernel-deviations.md).
 */
void nt_mpol_rebind_keep_preferred(struct nt_mempolicy *mp, const struct nt_nodemask *new_mems);
/*
 * Where do_migrate_pages(mm, from, to) (migrate_pages(2), and a cgroup v2
 * cpuset's mems change, cpuset_migrate_mm()) puts a page that is on node:
 * a page of the n-th node of from goes to the (n mod weight(to))-th node of
 * to (nodes_remap()), except that when from and to differ in weight, pages on
 * a node that is in to stay ("[0-7] -> [3,4,5] moves only 0,1,2,6,7",
 * mm/mempolicy.c 6.1). The order it moves nodes in moves no page twice.
 */
int nt_migrate_node(int node, const struct nt_nodemask *from, const struct nt_nodemask *to);
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
