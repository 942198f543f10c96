// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of lib/expect_cpuset.c: where a page may land when the
 * allocating task's cpuset mems overrule its policy. Every expected set was
 * worked out by hand from the rules in expect_cpuset.h.
 */
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>

#include "expect_cpuset.h"
#include "tap.h"

#define PAGE_SHIFT	12

static struct nt_nodemask mask_of(const char *list)
{
	struct nt_nodemask m;

	if (nt_mask_parse(list, &m))
		nt_tap_bail("bad node list in the test itself: %s", list);
	return m;
}

/* Checks that the policy mode over nodes gives want ("" for -EINVAL) under mems. */
static void expect_in(int mode, const char *nodes, int local, unsigned long pgoff,
		      const char *mems, const char *want, const char *name)
{
	struct nt_policy pol = { .mode = mode };
	struct nt_nodemask m, ok;
	char got[128];
	struct nt_vma vma;
	int err;

	if (nt_mask_parse(nodes, &pol.nodes) || nt_mask_parse(mems, &m))
		nt_tap_bail("bad node list in the test itself: \"%s\" or \"%s\"", nodes, mems);
	nt_vma_file(&vma, 0, pgoff, PAGE_SHIFT, NT_IL_INDEX_U32);
	nt_vma_set_local(&vma, local);
	err = nt_expect_nodes_in(&pol, &vma, 0, PAGE_SHIFT, &m, &ok);
	if (!*want) {
		if (!nt_tap_result(err == -EINVAL, "%s", name))
			nt_tap_diag("got %d, want -EINVAL", err);
		return;
	}
	nt_mask_format(&ok, got, sizeof(got));
	if (!nt_tap_result(!err && !strcmp(got, want), "%s", name))
		nt_tap_diag("got %d \"%s\", want \"%s\"", err, got, want);
}

/* With distances: node 0 near 1 (15), far from 2 and 3 (30, 40). */
static void nearest_cases(void)
{
	static struct nt_distances d = { .d = {
		{ 10, 15, 30, 40 }, { 15, 10, 20, 30 }, { 30, 20, 10, 15 }, { 40, 30, 15, 10 },
	} };
	struct nt_policy pol = { .mode = MPOL_PREFERRED };
	struct nt_nodemask m = mask_of("1-3"), ok;
	struct nt_vma vma;
	char got[64];

	pol.nodes = mask_of("0");
	nt_vma_file(&vma, 0, 0, PAGE_SHIFT, NT_IL_INDEX_U32);
	nt_vma_set_distances(&vma, &d);
	nt_expect_nodes_in(&pol, &vma, 0, PAGE_SHIFT, &m, &ok);
	nt_tap_result(!strcmp(nt_mask_format(&ok, got, sizeof(got)), "1"),
		      "preferred 0 outside mems 1-3, with distances: node 1, the nearest (got %s)",
		      got);
	pol.mode = MPOL_BIND;
	pol.nodes = mask_of("2-3");
	nt_vma_set_local(&vma, 0);
	nt_expect_nodes_in(&pol, &vma, 0, PAGE_SHIFT, &m, &ok);
	nt_tap_result(!strcmp(nt_mask_format(&ok, got, sizeof(got)), "2"),
		      "bind 2-3 from local 0, with distances: node 2 (30), not 3 (40) (got %s)",
		      got);
}

int main(void)
{
	nt_tap_start();
	nt_tap_plan(14 + 2);
	/* BIND */
	expect_in(MPOL_BIND, "1", 2, 0, "0-3", "1", "bind 1 in mems 0-3: node 1");
	expect_in(MPOL_BIND, "0-1", 1, 0, "0-3", "1", "bind 0-1, local 1: the local node");
	expect_in(MPOL_BIND, "0-1", 3, 0, "0-3", "0-1", "bind 0-1, local 3: any of 0-1");
	expect_in(MPOL_BIND, "0-1", 3, 0, "1-3", "1", "bind 0-1 in mems 1-3: their only common node 1");
	expect_in(MPOL_BIND, "0", 2, 0, "2-3", "2",
		  "bind 0 outside mems 2-3: the policy is ignored, local node 2");
	expect_in(MPOL_BIND, "0", 1, 0, "2-3", "2-3",
		  "bind 0 outside mems 2-3, local 1 outside too: any of 2-3");
	/* INTERLEAVE: index = pgoff = 5; over 0-3 that is position 1, node 1. */
	expect_in(MPOL_INTERLEAVE, "0-3", 0, 5, "0-3", "1", "interleave 0-3, index 5: node 1");
	expect_in(MPOL_INTERLEAVE, "0-3", 0, 5, "2-3", "2-3",
		  "interleave 0-3, index 5 is node 1, outside mems 2-3: any of 2-3");
	expect_in(MPOL_INTERLEAVE, "0-3", 0, 6, "2-3", "2",
		  "interleave 0-3, index 6 is node 2, in mems 2-3: node 2");
	/* PREFERRED */
	expect_in(MPOL_PREFERRED, "3", 0, 0, "0-3", "3", "preferred 3: node 3");
	expect_in(MPOL_PREFERRED, "3", 0, 0, "0-1", "0-1", "preferred 3 outside mems 0-1: any of 0-1");
	/* DEFAULT / LOCAL */
	expect_in(MPOL_DEFAULT, "", 2, 0, "0-3", "2", "default, local 2: node 2");
	expect_in(MPOL_LOCAL, "", NT_NODE_ANY, 0, "2-3", "2-3", "local, local node unknown: any of mems");
	expect_in(MPOL_DEFAULT, "", 1, 0, "", "", "empty mems: -EINVAL");
	nearest_cases();
	return nt_tap_finish();
}
