// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <numaif.h>
#include <string.h>

#include "expect.h"

void nt_policy_one(struct nt_policy *pol, int mode, int node)
{
	pol->mode = mode;
	nt_mask_clear(&pol->nodes);
	nt_mask_set(&pol->nodes, node);
}

void nt_vma_anon(struct nt_vma *vma, unsigned long start, unsigned int page_shift,
		 enum nt_il_rule il_rule)
{
	vma->start = start;
	vma->pgoff = start >> page_shift;
	vma->page_shift = page_shift;
	vma->il_rule = il_rule;
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

int nt_expect_node(const struct nt_policy *pol, const struct nt_vma *vma, unsigned long addr,
		   unsigned int shift)
{
	int weight = nt_mask_weight(&pol->nodes);

	if (!weight)
		return NT_NODE_INVALID;
	switch (pol->mode) {
	case MPOL_BIND:
		return weight == 1 ? nt_mask_nth(&pol->nodes, 0) : NT_NODE_ANY;
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

	if (want == NT_NODE_ANY)
		return nt_mask_isset(&pol->nodes, node);
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
