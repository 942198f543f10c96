// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <numaif.h>

#include "expect_cpuset.h"

/*
 * The node if the task may use it, else the nodes of mems nearest to it
 * (its zonelist, lib/expect.h nt_nearest()); any of mems when that is unknown.
 */
static void node_or_mems(const struct nt_vma *vma, int node, const struct nt_nodemask *mems,
			 struct nt_nodemask *ok)
{
	if (node >= 0 && nt_mask_isset(mems, node)) {
		nt_mask_clear(ok);
		nt_mask_set(ok, node);
	} else {
		nt_nearest(vma->dist, node, mems, ok);
	}
}

/* A node of allowed: the local node when it is one, else the nearest to it. */
static void local_or_nearest(const struct nt_vma *vma, const struct nt_nodemask *allowed,
			     struct nt_nodemask *ok)
{
	int local = vma->local_node;

	if (nt_mask_weight(allowed) == 1)
		local = nt_mask_next(allowed, -1);
	node_or_mems(vma, local, allowed, ok);
}

int nt_expect_nodes_in(const struct nt_policy *pol, const struct nt_vma *vma, unsigned long addr,
		       unsigned int shift, const struct nt_nodemask *mems, struct nt_nodemask *ok)
{
	struct nt_nodemask allowed;
	int node;

	if (nt_mask_empty(mems))
		return -EINVAL;
	switch (pol->mode) {
	case MPOL_DEFAULT:
	case MPOL_LOCAL:
		node_or_mems(vma, vma->local_node, mems, ok);
		return 0;
	case MPOL_BIND:
	case MPOL_PREFERRED_MANY:
		nt_mask_and(&allowed, &pol->nodes, mems);
		if (nt_mask_empty(&allowed))
			node_or_mems(vma, vma->local_node, mems, ok);
		else
			local_or_nearest(vma, &allowed, ok);
		return 0;
	case MPOL_INTERLEAVE:
	case MPOL_PREFERRED:
		node = nt_expect_node(pol, vma, addr, shift);
		if (node < 0)
			return -EINVAL;
		node_or_mems(vma, node, mems, ok);
		return 0;
	default:
		return -EINVAL;
	}
}
