// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <numaif.h>

#include "expect_cpuset.h"

/* The node if the task may use it, else any node of mems (the nearest, not modelled). */
static void node_or_mems(int node, const struct nt_nodemask *mems, struct nt_nodemask *ok)
{
	if (node >= 0 && nt_mask_isset(mems, node)) {
		nt_mask_clear(ok);
		nt_mask_set(ok, node);
	} else {
		*ok = *mems;
	}
}

/* A node of allowed: the local node when it is one, else any (the nearest, not modelled). */
static void local_or_any(int local, const struct nt_nodemask *allowed, struct nt_nodemask *ok)
{
	if (nt_mask_weight(allowed) == 1)
		local = nt_mask_next(allowed, -1);
	node_or_mems(local, allowed, ok);
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
		node_or_mems(vma->local_node, mems, ok);
		return 0;
	case MPOL_BIND:
	case MPOL_PREFERRED_MANY:
		nt_mask_and(&allowed, &pol->nodes, mems);
		if (nt_mask_empty(&allowed))
			node_or_mems(vma->local_node, mems, ok);
		else
			local_or_any(vma->local_node, &allowed, ok);
		return 0;
	case MPOL_INTERLEAVE:
	case MPOL_PREFERRED:
		node = nt_expect_node(pol, vma, addr, shift);
		if (node < 0)
			return -EINVAL;
		node_or_mems(node, mems, ok);
		return 0;
	default:
		return -EINVAL;
	}
}
