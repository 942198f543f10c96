// SPDX-License-Identifier: GPL-2.0
/*
 * Where a q35 machine of QEMU 7.2 puts each node's memory.
 *
 * hw/i386/pc_q35.c keeps RAM below 4 GiB under 0xb0000000 (2816 MiB) when it
 * all fits there, and otherwise puts the first 2 GiB below 4 GiB and the rest
 * from 4 GiB up, leaving the hole for PCI, MMCONFIG and the firmware. The
 * nodes' memory backends fill the machine's RAM in node order.
 */
#include <errno.h>
#include <string.h>

#include "model.h"

#define Q35_LOWMEM_MAX	0xb0000000ULL
#define Q35_LOWMEM_SPLIT	0x80000000ULL

int cm_layout_init(struct cm_layout *l, unsigned int nr_nodes, const uint64_t *size)
{
	uint64_t off = 0;
	unsigned int n;

	memset(l, 0, sizeof(*l));
	if (!nr_nodes || nr_nodes > CM_MAX_NODES)
		return -EINVAL;
	for (n = 0; n < nr_nodes; n++) {
		l->size[n] = size[n];
		l->base[n] = off;
		off += size[n];
	}
	if (!off)
		return -EINVAL;
	l->nr_nodes = nr_nodes;
	l->ram_size = off;
	if (off >= Q35_LOWMEM_MAX)
		l->below_4g = Q35_LOWMEM_SPLIT;
	else
		l->below_4g = off;
	return 0;
}

uint64_t cm_layout_gpa(const struct cm_layout *l, uint64_t ram_offset)
{
	if (ram_offset < l->below_4g)
		return ram_offset;
	return ram_offset - l->below_4g + CM_4G;
}

static int cm_node_of_offset(const struct cm_layout *l, uint64_t off)
{
	unsigned int n;

	for (n = 0; n < l->nr_nodes; n++)
		if (off >= l->base[n] && off - l->base[n] < l->size[n])
			return n;
	return -1;
}

int cm_layout_node(const struct cm_layout *l, uint64_t gpa)
{
	uint64_t above = l->ram_size - l->below_4g;

	if (gpa < l->below_4g)
		return cm_node_of_offset(l, gpa);
	if (gpa >= CM_4G && gpa - CM_4G < above)
		return cm_node_of_offset(l, gpa - CM_4G + l->below_4g);
	return -1;
}

int cm_layout_from_qemu72(const struct cm_layout *l, uint64_t reported, uint64_t *gpa)
{
	unsigned int n;
	uint64_t start;

	for (n = 0; n < l->nr_nodes; n++) {
		start = 2 * l->base[n];
		if (reported >= start && reported - start < l->size[n]) {
			*gpa = cm_layout_gpa(l, l->base[n] + reported - start);
			return n;
		}
	}
	return -1;
}
