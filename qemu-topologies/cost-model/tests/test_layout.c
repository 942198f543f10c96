// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of the node mapping (layout.c): which node's memory a
 * guest-physical address is on a q35 machine of QEMU 7.2, with and without
 * the hole below 4 GiB, with memory-less nodes, and the translation of the
 * addresses QEMU 7.2's plugin API reports.
 */
#include <errno.h>
#include <stdint.h>

#include "model.h"
#include "tap.h"

#define MiB	(1ULL << 20)
#define GiB	(1ULL << 30)

static void layout(struct cm_layout *l, unsigned int n, const uint64_t *size)
{
	if (cm_layout_init(l, n, size))
		nt_tap_bail("cm_layout_init refused a valid layout");
}

static void test_four_nodes(void)
{
	static const uint64_t size[] = { 512 * MiB, 512 * MiB, 512 * MiB, 512 * MiB };
	struct cm_layout l;

	layout(&l, 4, size);
	nt_tap_result(l.below_4g == 2 * GiB, "4 x 512 MiB: all 2 GiB below 4 GiB");
	nt_tap_result(cm_layout_node(&l, 0) == 0 && cm_layout_node(&l, 512 * MiB - 1) == 0,
		      "4 x 512 MiB: the first 512 MiB are node 0");
	nt_tap_result(cm_layout_node(&l, 512 * MiB) == 1 &&
		      cm_layout_node(&l, 1536 * MiB) == 3 &&
		      cm_layout_node(&l, 2 * GiB - 1) == 3,
		      "4 x 512 MiB: nodes follow in order, node 3 ends at 2 GiB");
	nt_tap_result(cm_layout_node(&l, 2 * GiB) == -1 && cm_layout_node(&l, 4 * GiB) == -1,
		      "4 x 512 MiB: nothing at 2 GiB or above 4 GiB");
}

static void test_hole(void)
{
	static const uint64_t size[] = { GiB, GiB, GiB };
	static const uint64_t straddle[] = { 1536 * MiB, 1536 * MiB };
	struct cm_layout l;

	layout(&l, 3, size);
	nt_tap_result(l.below_4g == 2 * GiB, "3 x 1 GiB: 2 GiB below 4 GiB, 1 GiB above");
	nt_tap_result(cm_layout_node(&l, 2 * GiB) == -1 && cm_layout_node(&l, 4 * GiB - 1) == -1,
		      "3 x 1 GiB: the hole 2-4 GiB is no node's memory");
	nt_tap_result(cm_layout_node(&l, 4 * GiB) == 2 && cm_layout_node(&l, 5 * GiB - 1) == 2 &&
		      cm_layout_node(&l, 5 * GiB) == -1,
		      "3 x 1 GiB: node 2 is 4-5 GiB");
	nt_tap_result(cm_layout_gpa(&l, 2 * GiB + 4096) == 4 * GiB + 4096,
		      "3 x 1 GiB: RAM offset 2 GiB + 4 KiB is at 4 GiB + 4 KiB");

	layout(&l, 2, straddle);
	nt_tap_result(cm_layout_node(&l, 1792 * MiB) == 1 && cm_layout_node(&l, 4 * GiB) == 1 &&
		      cm_layout_node(&l, 5 * GiB - 1) == 1 && cm_layout_node(&l, 5 * GiB) == -1,
		      "2 x 1.5 GiB: node 1 is 1.5-2 GiB and 4-5 GiB, around the hole");
}

static void test_split_threshold(void)
{
	uint64_t size[1];
	struct cm_layout l;

	size[0] = 0xb0000000ULL;
	layout(&l, 1, size);
	nt_tap_result(l.below_4g == 2 * GiB, "2816 MiB of RAM: split at 2 GiB (q35 rule)");
	size[0] = 0xb0000000ULL - 2 * MiB;
	layout(&l, 1, size);
	nt_tap_result(l.below_4g == size[0] && cm_layout_node(&l, size[0] - 1) == 0,
		      "2814 MiB of RAM: all below 4 GiB");
}

static void test_memoryless(void)
{
	static const uint64_t size[] = { 512 * MiB, 0, 512 * MiB };
	struct cm_layout l;
	uint64_t none[2] = { 0, 0 };

	layout(&l, 3, size);
	nt_tap_result(cm_layout_node(&l, 512 * MiB) == 2 && cm_layout_node(&l, 0) == 0,
		      "a memory-less node owns nothing: node 2 follows node 0");
	nt_tap_result(cm_layout_init(&l, 2, none) == -EINVAL &&
		      cm_layout_init(&l, 0, size) == -EINVAL,
		      "no memory at all, or no nodes, is refused");
}

static void test_qemu72(void)
{
	static const uint64_t four[] = { 512 * MiB, 512 * MiB, 512 * MiB, 512 * MiB };
	static const uint64_t three[] = { GiB, GiB, GiB };
	struct cm_layout l;
	uint64_t gpa = 0;
	int node;

	layout(&l, 4, four);
	node = cm_layout_from_qemu72(&l, 2 * GiB + 5, &gpa);
	nt_tap_result(node == 2 && gpa == GiB + 5,
		      "QEMU 7.2 reports node 2's byte 5 as 2 GiB + 5: node %d, GPA %#llx",
		      node, (unsigned long long)gpa);
	nt_tap_result(cm_layout_from_qemu72(&l, 2 * GiB - 1, &gpa) == -1,
		      "a reported address between the nodes' ranges is no node's");
	nt_tap_result(cm_layout_from_qemu72(&l, 100, &gpa) == 0 && gpa == 100,
		      "node 0's addresses are reported as they are");
	layout(&l, 3, three);
	node = cm_layout_from_qemu72(&l, 2 * GiB + 7, &gpa);
	nt_tap_result(node == 1 && gpa == GiB + 7, "3 x 1 GiB: reported 2 GiB + 7 is node 1, "
		      "GPA 1 GiB + 7");
	node = cm_layout_from_qemu72(&l, 4 * GiB + 7, &gpa);
	nt_tap_result(node == 2 && gpa == 4 * GiB + 7, "3 x 1 GiB: reported 4 GiB + 7 is node 2, "
		      "GPA 4 GiB + 7 (above the hole)");
}

int main(void)
{
	nt_tap_start();
	nt_tap_plan(18);
	test_four_nodes();
	test_hole();
	test_split_threshold();
	test_memoryless();
	test_qemu72();
	return nt_tap_finish();
}
