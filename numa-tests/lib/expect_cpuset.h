/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a page may land when the task that allocates it is confined to a
 * cpuset: lib/expect.h says where a policy puts a page; this adds the
 * cpuset's mems, which can overrule the policy. Pure, like expect.h.
 *
 * 6.1, for the page cache and anonymous pages of user tasks (GFP_HIGHUSER
 * and GFP_HIGHUSER_MOVABLE carry __GFP_HARDWALL, so only the task's
 * mems_allowed may serve them: cpuset_node_allowed() in
 * kernel/cgroup/cpuset.c, checked for every zone by get_page_from_freelist()
 * in mm/page_alloc.c):
 * - MPOL_BIND: policy_nodemask() in mm/mempolicy.c applies the policy's
 *   nodes only when they intersect mems_allowed
 *   (cpuset_nodemask_valid_mems_allowed()); otherwise the page is allocated
 *   as if there were no policy, on the local node. With an intersection the
 *   page goes to a node in it: the local node when it is one, else the
 *   nearest one (nt_nearest()).
 * - MPOL_PREFERRED_MANY: the policy's nodes first (alloc_pages_preferred_many()),
 *   so like BIND when they intersect mems, otherwise the fallback without a
 *   nodemask, i.e. the local node.
 * - MPOL_INTERLEAVE, MPOL_PREFERRED: the policy names one node
 *   (interleave_nid(), first_node()) and __alloc_pages() starts at its
 *   zonelist; a node outside mems is skipped, so the page goes to that node
 *   when it is in mems, else to the nearest node of mems (nt_nearest()).
 * - MPOL_DEFAULT, MPOL_LOCAL: the local node when it is in mems, else the
 *   nearest node of mems (nt_nearest()).
 * "The nearest node" is the set of nodes at the smallest SLIT distance
 * (lib/expect.h nt_nearest(), when vma has the distances); without them,
 * every node of the set that may serve the page.
 */
#ifndef NT_EXPECT_CPUSET_H
#define NT_EXPECT_CPUSET_H

#include "expect.h"

/*
 * The nodes the page of size 1 << shift at addr may land on, under pol,
 * faulted by a task on vma->local_node (NT_NODE_ANY when unknown) whose
 * mems_allowed is mems: one node when the kernel's choice is determined.
 * 0, or -EINVAL when mems is empty or the policy is not modelled.
 */
int nt_expect_nodes_in(const struct nt_policy *pol, const struct nt_vma *vma, unsigned long addr,
		       unsigned int shift, const struct nt_nodemask *mems, struct nt_nodemask *ok);

#endif
