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

static void is_mask(const struct nt_nodemask *got, const char *want, const char *name)
{
	struct nt_nodemask w = mask_of(want);
	char buf[128];

	if (!nt_tap_result(nt_mask_equal(got, &w), "%s", name))
		nt_tap_diag("got nodes \"%s\", want \"%s\"", nt_mask_format(got, buf, sizeof(buf)),
			    want);
}

/*
 * lib/bitmap.c semantics, worked by hand. remap: the n-th node of old goes to
 * the (n mod weight(new))-th node of new, nodes outside old stay. fold: node
 * n goes to n mod sz. onto: position m set in orig selects the m-th node of
 * relmap.
 */
static void test_remap(void)
{
	struct nt_nodemask old = mask_of("4-7"), new = mask_of("12-15"), src = mask_of("1,5,7");
	struct nt_nodemask dst;

	/* bitmap_remap()'s own example: 4-7 -> 12-15 maps 5 to 13, 7 to 15, keeps 1. */
	nt_mask_remap(&dst, &src, &old, &new);
	is_mask(&dst, "1,13,15", "remap: 1,5,7 from 4-7 onto 12-15 is 1,13,15");
	/* 0-3 onto 1,3: ordinals 0,1,2,3 -> 0,1,0,1 mod 2 -> nodes 1,3,1,3. */
	old = mask_of("0-3");
	new = mask_of("1,3");
	is_long(nt_node_remap(2, &old, &new), 1, "remap: node 2 of 0-3 onto 1,3 is node 1");
	is_long(nt_node_remap(3, &old, &new), 3, "remap: node 3 of 0-3 onto 1,3 is node 3");
	is_long(nt_node_remap(5, &old, &new), 5, "remap: node 5, not in 0-3, stays node 5");
	src = mask_of("0,2,5");
	nt_mask_fold(&dst, &src, 3);
	is_mask(&dst, "0,2", "fold: 0,2,5 modulo 3 is 0,2");
	src = mask_of("0,2");
	new = mask_of("3,5,7");
	nt_mask_onto(&dst, &src, &new);
	is_mask(&dst, "3,7", "onto: positions 0,2 of 3,5,7 are nodes 3,7");
}

/* Creation (mpol_set_nodemask()) on a machine with memory on nodes 0-3, all allowed. */
static void test_install(void)
{
	struct nt_nodemask all = mask_of("0-3"), holes = mask_of("0,2");
	struct nt_policy u = { .mode = MPOL_INTERLEAVE, .nodes = mask_of("5"),
			       .flags = MPOL_F_RELATIVE_NODES };
	struct nt_mempolicy mp;

	/* Relative: 5 mod 4 = position 1 of 0-3 = node 1. */
	is_long(nt_mpol_install(&mp, &u, &all, &all), 0, "install: relative 5 is accepted");
	is_mask(&mp.pol.nodes, "1", "install: relative interleave 5 on 0-3 uses node 1");
	u.nodes = mask_of("4,6");
	nt_mpol_install(&mp, &u, &all, &all);
	is_mask(&mp.pol.nodes, "0,2", "install: relative 4,6 on 0-3 uses nodes 0,2");
	/* Relative on memory nodes 0,2 only: 1 mod 2 = position 1 = node 2. */
	u.nodes = mask_of("1");
	nt_mpol_install(&mp, &u, &all, &holes);
	is_mask(&mp.pol.nodes, "2", "install: relative 1 with memory on 0,2 uses node 2");
	/* Static and flagless: the named nodes that are usable. */
	u.mode = MPOL_BIND;
	u.flags = MPOL_F_STATIC_NODES;
	u.nodes = mask_of("1,5");
	nt_mpol_install(&mp, &u, &all, &all);
	is_mask(&mp.pol.nodes, "1", "install: static bind 1,5 on 0-3 uses node 1");
	is_mask(&mp.user, "1,5", "install: static bind keeps the user's 1,5");
	u.nodes = mask_of("5");
	is_long(nt_mpol_install(&mp, &u, &all, &all), -EINVAL,
		"install: static bind 5 on 0-3 has no usable node: EINVAL");
	u.flags = MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES;
	u.nodes = mask_of("1");
	is_long(nt_mpol_install(&mp, &u, &all, &all), -EINVAL,
		"install: static and relative together: EINVAL");
	u.flags = 0;
	u.nodes = mask_of("1");
	is_long(nt_mpol_install(&mp, &u, &all, &holes), -EINVAL,
		"install: bind 1 where node 1 has no memory: EINVAL");
	u.mode = MPOL_PREFERRED;
	u.nodes = mask_of("2-3");
	nt_mpol_install(&mp, &u, &all, &all);
	is_mask(&mp.pol.nodes, "2", "install: preferred 2-3 keeps the first node, 2");
	nt_mask_clear(&u.nodes);
	nt_mpol_install(&mp, &u, &all, &all);
	is_long(mp.pol.mode, MPOL_LOCAL, "install: preferred with no node is local");
	u.flags = MPOL_F_STATIC_NODES;
	is_long(nt_mpol_install(&mp, &u, &all, &all), -EINVAL,
		"install: preferred with no node and a flag: EINVAL");
}

/* Rebinding when the cpuset's mems change: the admin guide's examples, on 8 memory nodes. */
static void test_rebind(void)
{
	struct nt_nodemask mem = mask_of("0-15"), mems = mask_of("1-3");
	struct nt_policy u = { .mode = MPOL_INTERLEAVE, .nodes = mask_of("1-3"),
			       .flags = MPOL_F_STATIC_NODES };
	struct nt_mempolicy mp;

	/* "mems 1-3 ... change to 3-5": static interleaves over 3 only, flagless over 3-5. */
	nt_mpol_install(&mp, &u, &mems, &mem);
	mems = mask_of("3-5");
	nt_mpol_rebind(&mp, &mems);
	is_mask(&mp.pol.nodes, "3", "rebind: static interleave 1-3, mems 1-3 -> 3-5 uses 3");
	u.flags = 0;
	mems = mask_of("1-3");
	nt_mpol_install(&mp, &u, &mems, &mem);
	mems = mask_of("3-5");
	nt_mpol_rebind(&mp, &mems);
	is_mask(&mp.pol.nodes, "3-5", "rebind: interleave 1-3, mems 1-3 -> 3-5 uses 3-5");
	/* "mems 2-5 ... change to 3-7 ... 3,5-7 ... then to 0,2-3,5 ... 0,2-3,5". */
	u.flags = MPOL_F_RELATIVE_NODES;
	u.nodes = mask_of("2-5");
	mems = mask_of("2-5");
	nt_mpol_install(&mp, &u, &mems, &mem);
	is_mask(&mp.pol.nodes, "2-5", "rebind: relative 2-5 in mems 2-5 uses 2-5");
	mems = mask_of("3-7");
	nt_mpol_rebind(&mp, &mems);
	is_mask(&mp.pol.nodes, "3,5-7", "rebind: relative 2-5, mems -> 3-7 uses 3,5-7");
	mems = mask_of("0,2-3,5");
	nt_mpol_rebind(&mp, &mems);
	is_mask(&mp.pol.nodes, "0,2-3,5", "rebind: relative 2-5, mems -> 0,2-3,5 uses 0,2-3,5");
	/* "1,3,5 may be remapped to 7-9 and then to 1-3": flagless, mems 1-5 -> 7-9 -> 1-5. */
	u.flags = 0;
	u.nodes = mask_of("1,3,5");
	mems = mask_of("1-5");
	nt_mpol_install(&mp, &u, &mems, &mem);
	mems = mask_of("7-9");
	nt_mpol_rebind(&mp, &mems);
	is_mask(&mp.pol.nodes, "7-9", "rebind: 1,3,5 in mems 1-5, mems -> 7-9 uses 7-9");
	mems = mask_of("1-5");
	nt_mpol_rebind(&mp, &mems);
	is_mask(&mp.pol.nodes, "1-3", "rebind: and mems back to 1-5 uses 1-3, not 1,3,5");
	/* Static 1 in mems 2-3: nothing left, so the whole of the new mems. */
	u.flags = MPOL_F_STATIC_NODES;
	u.nodes = mask_of("1");
	mems = mask_of("0-3");
	nt_mpol_install(&mp, &u, &mems, &mem);
	mems = mask_of("2-3");
	nt_mpol_rebind(&mp, &mems);
	is_mask(&mp.pol.nodes, "2-3", "rebind: static 1, mems -> 2-3 uses all of 2-3");
	/*
	 * Preferred, as the admin guide says: "the preferred node (Preferred)
	 * ... is remapped to the new set of allowed nodes": 1 is the second
	 * node of 0-3, so the second node of 2-3, node 3.
	 */
	u.mode = MPOL_PREFERRED;
	u.flags = 0;
	u.nodes = mask_of("1");
	mems = mask_of("0-3");
	nt_mpol_install(&mp, &u, &mems, &mem);
	mems = mask_of("2-3");
	nt_mpol_rebind(&mp, &mems);
	is_mask(&mp.pol.nodes, "3", "rebind: preferred 1, mems 0-3 -> 2-3 is remapped to node 3");
	/* The known deviation of 6.1 and 6.12: mpol_rebind_preferred() keeps the node. */
	mems = mask_of("0-3");
	nt_mpol_install(&mp, &u, &mems, &mem);
	mems = mask_of("2-3");
	nt_mpol_rebind_keep_preferred(&mp, &mems);
	is_mask(&mp.pol.nodes, "1", "rebind, kept as 6.1 does: preferred 1, mems -> 2-3 still names node 1");
	/* Static 1: not in 2-3, so the Default policy (local allocation); back in 0-3, node 1. */
	u.flags = MPOL_F_STATIC_NODES;
	mems = mask_of("0-3");
	nt_mpol_install(&mp, &u, &mems, &mem);
	mems = mask_of("2-3");
	nt_mpol_rebind(&mp, &mems);
	is_long(mp.pol.mode, MPOL_LOCAL, "rebind: static preferred 1, mems -> 2-3 allocates locally");
	mems = mask_of("0-3");
	nt_mpol_rebind(&mp, &mems);
	is_mask(&mp.pol.nodes, "1", "rebind: static preferred 1, mems back to 0-3 prefers node 1 again");
	/* Relative 1: the second node of the mems, 3 in 2-3. */
	u.flags = MPOL_F_RELATIVE_NODES;
	mems = mask_of("0-3");
	nt_mpol_install(&mp, &u, &mems, &mem);
	mems = mask_of("2-3");
	nt_mpol_rebind(&mp, &mems);
	is_mask(&mp.pol.nodes, "3", "rebind: relative preferred 1, mems -> 2-3 prefers node 3");
	is_long(mp.pol.flags, MPOL_F_RELATIVE_NODES, "rebind: and keeps its flag");
}

/* The local node decides default, local, bind to a set and preferred-many. */
static void test_local(void)
{
	struct nt_policy pol = { .mode = MPOL_BIND, .nodes = mask_of("1,3") };
	unsigned long a = 0x7f0000001000UL;
	struct nt_vma vma;

	nt_vma_anon(&vma, a, PAGE_SHIFT, NT_IL_INDEX_U32);
	nt_vma_set_local(&vma, 3);
	is_long(nt_expect_node(&pol, &vma, a, PAGE_SHIFT), 3,
		"local: bind 1,3 faulted on node 3 is node 3");
	nt_vma_set_local(&vma, 0);
	is_long(nt_expect_node(&pol, &vma, a, PAGE_SHIFT), NT_NODE_ANY,
		"local: bind 1,3 faulted on node 0 is some node of 1,3");
	pol.mode = MPOL_PREFERRED_MANY;
	nt_vma_set_local(&vma, 1);
	is_long(nt_expect_node(&pol, &vma, a, PAGE_SHIFT), 1,
		"local: preferred-many 1,3 faulted on node 1 is node 1");
	nt_vma_set_local(&vma, 2);
	nt_tap_result(nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 3) &&
		      !nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 2),
		      "local: preferred-many 1,3 faulted on node 2: 3 is right, 2 is wrong");
	pol.mode = MPOL_DEFAULT;
	nt_mask_clear(&pol.nodes);
	is_long(nt_expect_node(&pol, &vma, a, PAGE_SHIFT), 2,
		"local: default policy faulted on node 2 is node 2");
	nt_vma_set_local(&vma, NT_NODE_ANY);
	is_long(nt_expect_node(&pol, &vma, a, PAGE_SHIFT), NT_NODE_INVALID,
		"local: default policy with the local node unknown: not modelled");
}

/*
 * The nearest node of a set, by distance from the local node: a ring of
 * four, 0-1-2-3-0 at 20, across at 30 (like the 4node-ring topology).
 */
static void test_nearest(void)
{
	static struct nt_distances ring;
	struct nt_policy pol = { .mode = MPOL_BIND, .nodes = mask_of("1-2") };
	unsigned long a = 0x7f0000001000UL;
	struct nt_nodemask near;
	struct nt_vma vma;
	int i, j;

	for (i = 0; i < 4; i++)
		for (j = 0; j < 4; j++)
			ring.d[i][j] = i == j ? 10 : (i - j + 4) % 4 == 2 ? 30 : 20;
	nt_vma_anon(&vma, a, PAGE_SHIFT, NT_IL_INDEX_U32);
	nt_vma_set_local(&vma, 0);
	nt_tap_result(nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 2),
		      "nearest: bind 1-2 from node 0, distances unknown: node 2 is right too");
	nt_vma_set_distances(&vma, &ring);
	nt_tap_result(nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 1) &&
		      !nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 2),
		      "nearest: bind 1-2 from node 0 on the ring: node 1 (20), not node 2 (30)");
	pol.nodes = mask_of("1,3");
	nt_tap_result(nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 1) &&
		      nt_expect_ok(&pol, &vma, a, PAGE_SHIFT, 3),
		      "nearest: bind 1,3 from node 0 on the ring: a tie at 20, either is right");
	nt_nearest(&ring, 2, &pol.nodes, &near);
	is_mask(&near, "1,3", "nearest: of 1,3 from node 2 on the ring: both, at 20");
	nt_nearest(&ring, -1, &pol.nodes, &near);
	is_mask(&near, "1,3", "nearest: from an unknown node: the whole set");
}

/* do_migrate_pages(): the comment's own examples, and a superset. */
static void test_migrate(void)
{
	struct nt_nodemask from = mask_of("2-4"), to = mask_of("3-5");

	/* "[2,3,4] -> [3,4,5] moves everything." */
	is_long(nt_migrate_node(2, &from, &to), 3, "migrate: 2-4 -> 3-5 moves node 2 to 3");
	is_long(nt_migrate_node(4, &from, &to), 5, "migrate: 2-4 -> 3-5 moves node 4 to 5");
	/* "[0-7] -> [3,4,5] moves only 0,1,2,6,7": 6 is the 7th node, 6 mod 3 = 0: node 3. */
	from = mask_of("0-7");
	is_long(nt_migrate_node(4, &from, &to), 4, "migrate: 0-7 -> 3-5 leaves node 4");
	is_long(nt_migrate_node(6, &from, &to), 3, "migrate: 0-7 -> 3-5 moves node 6 to 3");
	/* 2-3 -> 0-3: weights differ and 2, 3 are in the destination: nothing moves. */
	from = mask_of("2-3");
	to = mask_of("0-3");
	is_long(nt_migrate_node(3, &from, &to), 3, "migrate: 2-3 -> 0-3 leaves node 3");
	/* 0-1 -> 2-3: same weight, disjoint: 0 to 2, 1 to 3. */
	from = mask_of("0-1");
	to = mask_of("2-3");
	is_long(nt_migrate_node(1, &from, &to), 3, "migrate: 0-1 -> 2-3 moves node 1 to 3");
}

/* Shared memory: the index is the page's index in the object. */
static void test_file(void)
{
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = mask_of("0-3") };
	unsigned long start = 0x7f0000003000UL;
	struct nt_vma vma;

	/* Object page 5 mapped from page 0: 5 mod 4 = node 1 (anonymous would say 8 mod 4 = 0). */
	nt_vma_file(&vma, start, 0, PAGE_SHIFT, NT_IL_INDEX_U32);
	is_long(nt_expect_node(&pol, &vma, start + 5 * 4096, PAGE_SHIFT), 1,
		"file: page 5 of a shared object interleaved over 0-3 is node 1");
	/* Mapped from object page 2: the page at start + 5 pages is object page 7, node 3. */
	nt_vma_file(&vma, start, 2, PAGE_SHIFT, NT_IL_INDEX_U32);
	is_long(nt_expect_node(&pol, &vma, start + 5 * 4096, PAGE_SHIFT), 3,
		"file: mapped from page 2, the 6th page is object page 7, node 3");
}

int main(void)
{
	nt_tap_start();
	nt_tap_plan(40 + 6 + 12 + 14 + 6 + 5 + 6 + 2);
	test_nodemask();
	test_index();
	test_index_thp();
	test_interleave_three();
	test_interleave_aligned();
	test_counts();
	test_bind_preferred();
	test_remap();
	test_install();
	test_rebind();
	test_local();
	test_nearest();
	test_migrate();
	test_file();
	return nt_tap_finish();
}
