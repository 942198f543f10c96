// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "tap.h"

/* Diagnostics per check: enough to see the pattern of a failure, not a flood. */
#define MAX_REPORTED	8

int nt_pages_nodes(const void *start, size_t npages, size_t page_size, int *status)
{
	void **pages;
	long ret;
	size_t i;

	pages = malloc(npages * sizeof(*pages));
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < npages; i++)
		pages[i] = (char *)start + i * page_size;
	ret = move_pages(0, npages, pages, NULL, status, 0);
	if (ret < 0)
		ret = -errno;
	else if (ret > 0)	/* "pages not migrated": meaningless without target nodes */
		ret = -EPROTO;
	free(pages);
	return ret;
}

static void describe_expected(const struct nt_policy *pol, int want, char *buf, size_t len)
{
	char nodes[128];

	if (want >= 0)
		snprintf(buf, len, "node %d", want);
	else if (want == NT_NODE_ANY)
		snprintf(buf, len, "a node of %s",
			 nt_mask_format(&pol->nodes, nodes, sizeof(nodes)));
	else
		snprintf(buf, len, "nothing (policy mode %d not modelled)", pol->mode);
}

/* Whether page i, found at status, is right; says why not for the first few. */
static bool page_ok(const struct nt_area *a, const struct nt_policy *pol,
		    const struct nt_vma *vma, unsigned int shift, size_t i, int status, long bad)
{
	unsigned long addr = (unsigned long)a->addr + i * a->page_size;
	char want[160];

	if (status >= 0 && nt_expect_ok(pol, vma, addr, shift, status))
		return true;
	if (bad >= MAX_REPORTED)
		return false;
	if (status < 0) {
		nt_tap_diag("page %zu (%#lx): move_pages status %d (%s)", i, addr, status,
			    strerror(-status));
		return false;
	}
	describe_expected(pol, nt_expect_node(pol, vma, addr, shift), want,
			  sizeof(want));
	nt_tap_diag("page %zu (%#lx): on node %d, expected %s", i, addr, status, want);
	return false;
}

long nt_check_placement(const struct nt_area *a, const struct nt_policy *pol,
			const struct nt_vma *vma, long per_node[NT_MAX_NODES])
{
	return nt_check_placement_shift(a, pol, vma, vma->page_shift, per_node);
}

long nt_check_placement_shift(const struct nt_area *a, const struct nt_policy *pol,
			      const struct nt_vma *vma, unsigned int shift,
			      long per_node[NT_MAX_NODES])
{
	long bad = 0;
	int *status;
	size_t i;
	int err;

	status = malloc(a->npages * sizeof(*status));
	if (!status)
		return -ENOMEM;
	err = nt_pages_nodes(a->addr, a->npages, a->page_size, status);
	if (err) {
		free(status);
		return err;
	}
	memset(per_node, 0, NT_MAX_NODES * sizeof(per_node[0]));
	for (i = 0; i < a->npages; i++) {
		if (status[i] >= 0 && status[i] < NT_MAX_NODES)
			per_node[status[i]]++;
		if (!page_ok(a, pol, vma, shift, i, status[i], bad))
			bad++;
	}
	if (bad > MAX_REPORTED)
		nt_tap_diag("... %ld bad pages in all", bad);
	free(status);
	return bad;
}
