// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of the expected-placement functions (lib/expect.c) and the
 * node lists they work on. No NUMA needed. Every expected value below was
 * worked out by hand; the comments show how. A hex number is congruent to
 * the sum of its hex digits modulo 3 (16 = 1 mod 3), which makes the
 * three-node cases checkable on paper.
 */
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "nodemask.h"
#include "tap.h"

#define PAGE_SHIFT	12
#define HPAGE_SHIFT	21

static struct nt_nodemask mask_of(const char *list)
{
	struct nt_nodemask m;

	if (nt_mask_parse(list, &m))
		nt_tap_bail("bad node list in the test itself: %s", list);
	return m;
}

static void is_long(long got, long want, const char *name)
{
	if (!nt_tap_result(got == want, "%s", name))
		nt_tap_diag("got %ld (%#lx), want %ld (%#lx)", got, got, want, want);
}

static void test_nodemask(void)
{
	struct nt_nodemask m;
	char buf[64];

	is_long(nt_mask_parse("0-3,5\n", &m), 0, "nodemask: parse \"0-3,5\\n\"");
	is_long(nt_mask_weight(&m), 5, "nodemask: 0-3,5 has 5 nodes");
	is_long(nt_mask_nth(&m, 4), 5, "nodemask: 5th node of 0-3,5 is 5");
	is_long(nt_mask_nth(&m, 5), -1, "nodemask: 0-3,5 has no 6th node");
	nt_tap_result(!strcmp(nt_mask_format(&m, buf, sizeof(buf)), "0-3,5"),
		      "nodemask: 0-3,5 formats back as itself");
	is_long(nt_mask_parse("\n", &m) || nt_mask_weight(&m), 0,
		"nodemask: an empty list is an empty mask");
	is_long(nt_mask_parse("3-1", &m), -EINVAL, "nodemask: a backwards range is -EINVAL");
	is_long(nt_mask_parse("0,,1", &m), -EINVAL, "nodemask: an empty item is -EINVAL");
	is_long(nt_mask_parse("64", &m), -ERANGE, "nodemask: node 64 is beyond NT_MAX_NODES");
}

/* Base pages: index = vm_pgoff + page offset, vm_pgoff = vm_start >> 12. */
static void test_index(void)
{
	struct nt_vma vma;

	nt_vma_anon(&vma, 0x7f0000001000UL, PAGE_SHIFT, NT_IL_INDEX_U32);
	is_long(vma.pgoff, 0x7f0000001L, "index: anonymous vm_pgoff is vm_start >> 12");
	is_long(nt_il_index(&vma, 0x7f0000003000UL, PAGE_SHIFT), 0x7f0000003L,
		"index: page 2 of a VMA at 0x7f0000001000 has index 0x7f0000003");
	/* A VMA merged with its predecessor: same index for the same address. */
	nt_vma_anon(&vma, 0x7efffff00000UL, PAGE_SHIFT, NT_IL_INDEX_U32);
	is_long(nt_il_index(&vma, 0x7f0000003000UL, PAGE_SHIFT), 0x7f0000003L,
		"index: base-page index does not depend on where the VMA starts");
}

/* Huge pages: index = (vm_pgoff >> 9) + ((addr - vm_start) >> 21). */
static void test_index_thp(void)
{
	struct nt_nodemask odd_even = mask_of("1,3");
	struct nt_vma vma;
	unsigned long i;

	/* 0x7f0000200 >> 9 = 0x3f80001; second huge page: + 1. */
	nt_vma_anon(&vma, 0x7f0000200000UL, PAGE_SHIFT, NT_IL_INDEX_U32);
	i = nt_il_index(&vma, 0x7f0000400000UL, HPAGE_SHIFT);
	is_long(i, 0x3f80002L, "thp: 2nd huge page of a 2 MiB-aligned VMA has index 0x3f80002");
	is_long(nt_il_node(&odd_even, i, NT_IL_INDEX_U32), 1,
		"thp: even index over nodes 1,3 is node 1");
	/*
	 * vm_start 0x7f0000001000 is not 2 MiB aligned: the first huge page, at
	 * 0x7f0000200000, gets (0x7f0000001 >> 9) + (0x1ff000 >> 21) = 0x3f80000,
	 * one less than addr >> 21 = 0x3f80001.
	 */
	nt_vma_anon(&vma, 0x7f0000001000UL, PAGE_SHIFT, NT_IL_INDEX_U32);
	i = nt_il_index(&vma, 0x7f0000200000UL, HPAGE_SHIFT);
	is_long(i, 0x3f80000L, "thp: unaligned vm_start shifts the index to (addr >> 21) - 1");
	is_long(nt_il_node(&odd_even, i, NT_IL_INDEX_U32), 1,
		"thp: unaligned vm_start puts the first huge page on node 1, not node 3");
}

/*
 * Nodes 0,2,3 (weight 3), index 0x7f0000001 (page 0 of a VMA at
 * 0x7f0000001000). 6.1 takes (unsigned int)index = 0xf0000001, digit sum 16,
 * 16 mod 3 = 1: node 2. 6.7 on: 0x7f0000001, digit sum 23, 23 mod 3 = 2:
 * node 3. The naive (page 0 mod 3) would say node 0.
 */
static void test_interleave_three(void)
{
	struct nt_nodemask m = mask_of("0,2-3");

	is_long(nt_il_node(&m, 0x7f0000001UL, NT_IL_INDEX_U32), 2,
		"interleave 0,2,3: index 0x7f0000001 on 6.1 is node 2");
	is_long(nt_il_node(&m, 0x7f0000001UL, NT_IL_INDEX_ULONG), 3,
		"interleave 0,2,3: index 0x7f0000001 on 6.7+ is node 3");
	is_long(nt_il_node(&m, 0x7f0000002UL, NT_IL_INDEX_U32), 3,
		"interleave 0,2,3: next index on 6.1 is node 3");
	is_long(nt_il_node(&m, 0x7f0000003UL, NT_IL_INDEX_U32), 0,
		"interleave 0,2,3: and the one after wraps to node 0");
}

/* Four nodes and vm_start >> 12 = 0x7f0000000 = 0 mod 4: page i on node i mod 4. */
static void test_interleave_aligned(void)
{
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = mask_of("0-3") };
	static const int want[] = { 0, 1, 2, 3, 0, 1 };
	unsigned long start = 0x7f0000000000UL;
	struct nt_vma vma;
	char name[96];
	int i;

	nt_vma_anon(&vma, start, PAGE_SHIFT, NT_IL_INDEX_U32);
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "interleave 0-3, aligned start: page %d on node %d",
			 i, want[i]);
		is_long(nt_expect_node(&pol, &vma, start + (i << PAGE_SHIFT), PAGE_SHIFT),
			want[i], name);
	}
	/* Start one page later: index 0x7f0000001 = 1 mod 4, so page 0 is on node 1. */
	nt_vma_anon(&vma, start + 4096, PAGE_SHIFT, NT_IL_INDEX_U32);
	is_long(nt_expect_node(&pol, &vma, start + 4096, PAGE_SHIFT), 1,
		"interleave 0-3, start 0x7f0000001000: page 0 on node 1, not 0");
}

/*
 * Five pages over 0,2,3 from 0x7f0000001000. 6.1: positions 1,2,0,1,2 ->
 * nodes 2,3,0,2,3. 6.7+: positions 2,0,1,2,0 -> nodes 3,0,2,3,0.
 */
static void test_counts(void)
{
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = mask_of("0,2-3") };
	unsigned long start = 0x7f0000001000UL;
	long counts[NT_MAX_NODES];
	struct nt_vma vma;

	nt_vma_anon(&vma, start, PAGE_SHIFT, NT_IL_INDEX_U32);
	is_long(nt_expect_counts(&pol, &vma, start, 5, counts), 0,
		"counts: interleave has a node for every page");
	is_long(counts[0] * 100 + counts[2] * 10 + counts[3], 122,
		"counts: 5 pages over 0,2,3 on 6.1 are 1 on node 0, 2 on node 2, 2 on node 3");
	nt_vma_anon(&vma, start, PAGE_SHIFT, NT_IL_INDEX_ULONG);
	nt_expect_counts(&pol, &vma, start, 5, counts);
	is_long(counts[0] * 100 + counts[2] * 10 + counts[3], 212,
		"counts: 5 pages over 0,2,3 on 6.7+ are 2 on node 0, 1 on node 2, 2 on node 3");
	pol.mode = MPOL_BIND;
	is_long(nt_expect_counts(&pol, &vma, start, 5, counts), -EINVAL,
		"counts: bind to a set has no single node per page");
}

static void test_bind_preferred(void)
{
	struct nt_policy pol;
	struct nt_vma vma;
	unsigned long a = 0x7f0000001000UL;

	nt_vma_anon(&vma, a, PAGE_SHIFT, NT_IL_INDEX_U32);
	nt_policy_one(&pol, MPOL_BIND, 2);
	is_long(nt_expect_node(&pol, &vma, a, PAGE_SHIFT), 2, "bind 2: expect node 2");
	nt_tap_result(!nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 0), "bind 2: node 0 is wrong");
	pol.nodes = mask_of("1,3");
	is_long(nt_expect_node(&pol, &vma, a, PAGE_SHIFT), NT_NODE_ANY,
		"bind 1,3: no single node expected");
	nt_tap_result(nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 1) &&
		      nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 3), "bind 1,3: nodes 1 and 3 are right");
	nt_tap_result(!nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 0) &&
		      !nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 2), "bind 1,3: nodes 0 and 2 are wrong");
	nt_policy_one(&pol, MPOL_PREFERRED, 3);
	is_long(nt_expect_node(&pol, &vma, a, PAGE_SHIFT), 3, "preferred 3: expect node 3");
	nt_policy_one(&pol, MPOL_LOCAL, 0);
	is_long(nt_expect_node(&pol, &vma, a, PAGE_SHIFT), NT_NODE_INVALID,
		"local: not modelled");
	nt_tap_result(!nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 0), "local: no node is accepted");
	pol.mode = MPOL_BIND;
	nt_mask_clear(&pol.nodes);
	is_long(nt_expect_node(&pol, &vma, a, PAGE_SHIFT), NT_NODE_INVALID,
		"bind to no node: invalid");
}

int main(void)
{
	nt_tap_start();
	nt_tap_plan(40);
	test_nodemask();
	test_index();
	test_index_thp();
	test_interleave_three();
	test_interleave_aligned();
	test_counts();
	test_bind_preferred();
	return nt_tap_finish();
}
