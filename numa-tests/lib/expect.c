// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <numaif.h>
#include <string.h>

#include "expect.h"

void nt_policy_one(struct nt_policy *pol, int mode, int node)
{
	pol->mode = mode;
	pol->flags = 0;
	nt_mask_clear(&pol->nodes);
	nt_mask_set(&pol->nodes, node);
}

void nt_vma_file(struct nt_vma *vma, unsigned long start, unsigned long pgoff,
		 unsigned int page_shift, enum nt_il_rule il_rule)
{
	vma->start = start;
	vma->pgoff = pgoff;
	vma->page_shift = page_shift;
	vma->il_rule = il_rule;
	vma->local_node = NT_NODE_ANY;
	vma->dist = NULL;
}

void nt_vma_anon(struct nt_vma *vma, unsigned long start, unsigned int page_shift,
		 enum nt_il_rule il_rule)
{
	nt_vma_file(vma, start, start >> page_shift, page_shift, il_rule);
}

void nt_vma_set_local(struct nt_vma *vma, int node)
{
	vma->local_node = node;
}

void nt_vma_set_distances(struct nt_vma *vma, const struct nt_distances *dist)
{
	vma->dist = dist;
}

void nt_nearest(const struct nt_distances *dist, int from, const struct nt_nodemask *set,
		struct nt_nodemask *out)
{
	int node, best = 0;

	*out = *set;
	if (!dist || from < 0 || from >= NT_MAX_NODES)
		return;
	nt_mask_for_each(node, set) {
		if (!dist->d[from][node])
			return;		/* a distance unknown: any node of the set */
		if (!best || dist->d[from][node] < best)
			best = dist->d[from][node];
	}
	nt_mask_clear(out);
	nt_mask_for_each(node, set)
		if (dist->d[from][node] == best)
			nt_mask_set(out, node);
}

/*
 * mpol_relative_nodemask(): the user's nodes are positions in mems, taken
 * modulo the number of nodes in mems (nodes_fold() then nodes_onto()).
 */
static void relative_nodes(struct nt_nodemask *dst, const struct nt_nodemask *user,
			   const struct nt_nodemask *mems)
{
	struct nt_nodemask folded;

	nt_mask_fold(&folded, user, nt_mask_weight(mems));
	nt_mask_onto(dst, &folded, mems);
}

static bool has_nodes(int mode)
{
	return mode == MPOL_BIND || mode == MPOL_INTERLEAVE || mode == MPOL_PREFERRED ||
	       mode == MPOL_PREFERRED_MANY;
}

int nt_mpol_install(struct nt_mempolicy *mp, const struct nt_policy *user,
		    const struct nt_nodemask *cpuset_mems, const struct nt_nodemask *memory)
{
	unsigned int flags = user->flags & (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES);
	struct nt_nodemask usable, nodes;
	bool empty = nt_mask_empty(&user->nodes);

	memset(mp, 0, sizeof(*mp));
	mp->pol.mode = user->mode;
	mp->user_mode = user->mode;
	mp->pol.flags = flags;
	/* sanitize_mpol_flags(): unknown flags, or both node flags, are refused. */
	if (flags != user->flags || flags == (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES))
		return -EINVAL;
	/* mpol_new(): MPOL_DEFAULT takes no nodes and no flags' meaning. */
	if (user->mode == MPOL_DEFAULT)
		return empty ? 0 : -EINVAL;
	/* MPOL_PREFERRED without nodes is local allocation, which takes no flags. */
	if (user->mode == MPOL_PREFERRED && empty) {
		mp->pol.mode = MPOL_LOCAL;
		mp->user_mode = MPOL_LOCAL;
		return flags ? -EINVAL : 0;
	}
	if (user->mode == MPOL_LOCAL)
		return empty && !flags ? 0 : -EINVAL;
	if (!has_nodes(user->mode) || empty)
		return -EINVAL;
	/*
	 * mpol_set_nodemask(): the nodes the task may use are its cpuset's mems
	 * with memory; a relative policy's nodes are positions in them, any
	 * other policy keeps the nodes it names that are usable.
	 */
	nt_mask_and(&usable, cpuset_mems, memory);
	if (flags & MPOL_F_RELATIVE_NODES)
		relative_nodes(&nodes, &user->nodes, &usable);
	else
		nt_mask_and(&nodes, &user->nodes, &usable);
	if (flags)
		mp->user = user->nodes;
	else
		mp->mems = *cpuset_mems;
	if (nt_mask_empty(&nodes))
		return -EINVAL;
	/* mpol_new_preferred() keeps the first node only. */
	if (user->mode == MPOL_PREFERRED)
		nt_policy_one(&mp->pol, MPOL_PREFERRED, nt_mask_next(&nodes, -1));
	else
		mp->pol.nodes = nodes;
	mp->pol.flags = flags;
	return 0;
}

/*
 * The nodes a policy uses after its mems became new_mems, before an empty
 * result is dealt with: static nodes are the user's nodes that are in the
 * new mems; relative ones are positions in the new mems; without a flag the
 * current nodes are remapped from the old mems onto the new ones
 * (nodes_remap()), which become the mems the policy remembers.
 */
static void rebound_nodes(struct nt_mempolicy *mp, const struct nt_nodemask *new_mems,
			  struct nt_nodemask *nodes)
{
	if (mp->pol.flags & MPOL_F_STATIC_NODES) {
		nt_mask_and(nodes, &mp->user, new_mems);
	} else if (mp->pol.flags & MPOL_F_RELATIVE_NODES) {
		relative_nodes(nodes, &mp->user, new_mems);
	} else {
		nt_mask_remap(nodes, &mp->pol.nodes, &mp->mems, new_mems);
		mp->mems = *new_mems;
	}
}

/*
 * A preferred policy rebound as Documentation/admin-guide/mm/numa_memory_policy.rst
 * says: without a flag the preferred node (Preferred) or nodemask (Preferred
 * Many) is remapped to the new mems like a bind mask; a relative one is
 * recomputed from the user's positions; a static one keeps the user's
 * nodes that are in the new mems, and when none are, the Default policy
 * (local allocation) is used until a later change allows one again.
 */
static void rebind_preferred(struct nt_mempolicy *mp, const struct nt_nodemask *new_mems)
{
	int mode = mp->user_mode;
	struct nt_nodemask nodes;

	rebound_nodes(mp, new_mems, &nodes);
	if (nt_mask_empty(&nodes)) {
		mp->pol.mode = MPOL_LOCAL;
		nt_mask_clear(&mp->pol.nodes);
		return;
	}
	if (mode == MPOL_PREFERRED) {
		nt_mask_clear(&mp->pol.nodes);
		nt_mask_set(&mp->pol.nodes, nt_mask_next(&nodes, -1));
	} else {
		mp->pol.nodes = nodes;
	}
	mp->pol.mode = mode;
}

void nt_mpol_rebind(struct nt_mempolicy *mp, const struct nt_nodemask *new_mems)
{
	struct nt_nodemask nodes;
	int mode = mp->user_mode;

	if (mode == MPOL_DEFAULT || mode == MPOL_LOCAL)
		return;
	/* mpol_rebind_policy(): nothing to do when a flagless policy's mems did not change. */
	if (!mp->pol.flags && nt_mask_equal(&mp->mems, new_mems))
		return;
	if (mode == MPOL_PREFERRED || mode == MPOL_PREFERRED_MANY) {
		rebind_preferred(mp, new_mems);
		return;
	}
	/* mpol_rebind_nodemask() (BIND, INTERLEAVE): an empty result is the whole of the new mems. */
	rebound_nodes(mp, new_mems, &nodes);
	if (nt_mask_empty(&nodes))
		nodes = *new_mems;
	mp->pol.nodes = nodes;
}

void nt_mpol_rebind_keep_preferred(struct nt_mempolicy *mp, const struct nt_nodemask *new_mems)
{
	int mode = mp->user_mode;

	if (mode == MPOL_PREFERRED || mode == MPOL_PREFERRED_MANY)
		mp->mems = *new_mems;
	else
		nt_mpol_rebind(mp, new_mems);
}

unsigned long nt_il_index(const struct nt_vma *vma, unsigned long addr, unsigned int shift)
{
	/* vm_pgoff counts base pages: drop the bits below the page order first. */
	return (vma->pgoff >> (shift - vma->page_shift)) + ((addr - vma->start) >> shift);
}

int nt_il_node(const struct nt_nodemask *mask, unsigned long index, enum nt_il_rule rule)
{
	int weight = nt_mask_weight(mask);

	if (!weight)
		return NT_NODE_INVALID;
	if (rule == NT_IL_INDEX_U32)
		index = (unsigned int)index;
	return nt_mask_nth(mask, index % weight);
}

/* The first node of the local zonelist that is in the set: the local node, or unknown. */
static int nearest_of(const struct nt_nodemask *nodes, const struct nt_vma *vma)
{
	if (nt_mask_weight(nodes) == 1)
		return nt_mask_nth(nodes, 0);
	if (vma->local_node >= 0 && nt_mask_isset(nodes, vma->local_node))
		return vma->local_node;
	return NT_NODE_ANY;
}

int nt_expect_node(const struct nt_policy *pol, const struct nt_vma *vma, unsigned long addr,
		   unsigned int shift)
{
	int weight = nt_mask_weight(&pol->nodes);

	if (pol->mode == MPOL_DEFAULT || pol->mode == MPOL_LOCAL)
		return vma->local_node >= 0 ? vma->local_node : NT_NODE_INVALID;
	if (!weight)
		return NT_NODE_INVALID;
	switch (pol->mode) {
	case MPOL_BIND:
	case MPOL_PREFERRED_MANY:
		return nearest_of(&pol->nodes, vma);
	case MPOL_PREFERRED:
		/* The kernel prefers first_node() of the mask. */
		return nt_mask_nth(&pol->nodes, 0);
	case MPOL_INTERLEAVE:
		return nt_il_node(&pol->nodes, nt_il_index(vma, addr, shift), vma->il_rule);
	default:
		return NT_NODE_INVALID;
	}
}

bool nt_expect_ok(const struct nt_policy *pol, const struct nt_vma *vma, unsigned long addr,
		  unsigned int shift, int node)
{
	int want = nt_expect_node(pol, vma, addr, shift);
	struct nt_nodemask nearest;

	if (want == NT_NODE_ANY) {
		nt_nearest(vma->dist, vma->local_node, &pol->nodes, &nearest);
		return nt_mask_isset(&nearest, node);
	}
	return want >= 0 && node == want;
}

int nt_expect_counts(const struct nt_policy *pol, const struct nt_vma *vma, unsigned long addr,
		     size_t npages, long counts[NT_MAX_NODES])
{
	unsigned long page = 1UL << vma->page_shift;
	size_t i;
	int node;

	memset(counts, 0, NT_MAX_NODES * sizeof(counts[0]));
	for (i = 0; i < npages; i++) {
		node = nt_expect_node(pol, vma, addr + i * page, vma->page_shift);
		if (node < 0)
			return -EINVAL;
		counts[node]++;
	}
	return 0;
}

int nt_migrate_node(int node, const struct nt_nodemask *from, const struct nt_nodemask *to)
{
	if (!nt_mask_isset(from, node))
		return node;
	if (nt_mask_weight(from) != nt_mask_weight(to) && nt_mask_isset(to, node))
		return node;
	return nt_node_remap(node, from, to);
}
