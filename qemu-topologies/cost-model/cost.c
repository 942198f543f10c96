// SPDX-License-Identifier: GPL-2.0
/*
 * Counting cache-line lookups and turning counts into modelled cycles. All
 * arithmetic is in integers (tenths of a cycle where SLIT distances enter),
 * so the same counts give the same cycles on every host.
 */
#include <inttypes.h>
#include <stdio.h>

#include "model.h"

void cm_count_line(struct cm_counts *k, struct cm_hier *h, unsigned int cpu_node,
		   uint64_t gpa, int home)
{
	unsigned int level = cm_hier_access(h, gpa);

	if (level < 1)
		return;
	k->c[CM_L1_MISS]++;
	if (level < 2)
		return;
	k->c[CM_L2_MISS]++;
	if (level < CM_MEMORY)
		return;
	k->c[CM_LLC_MISS]++;
	if (home < 0) {
		k->c[CM_UNMAPPED]++;
		return;
	}
	k->node_miss[home]++;
	if ((unsigned int)home != cpu_node)
		k->c[CM_REMOTE]++;
}

void cm_counts_sub(struct cm_counts *d, const struct cm_counts *after,
		   const struct cm_counts *before)
{
	unsigned int i;

	for (i = 0; i < CM_NR_COUNTS; i++)
		d->c[i] = after->c[i] - before->c[i];
	for (i = 0; i < CM_MAX_NODES; i++)
		d->node_miss[i] = after->node_miss[i] - before->node_miss[i];
}

uint64_t cm_cycles(const struct cm_params *p, unsigned int cpu_node,
		   const struct cm_counts *k)
{
	const uint64_t *c = k->c;
	uint64_t tenths, whole;
	unsigned int n;

	whole = c[CM_INSN_USER] + c[CM_INSN_KERNEL] +
		(c[CM_L1_MISS] - c[CM_L2_MISS]) * p->lat_l2 +
		(c[CM_L2_MISS] - c[CM_LLC_MISS]) * p->lat_llc +
		c[CM_UNMAPPED] * p->lat_mem +
		c[CM_ATOMICS] * p->lat_atomic;
	tenths = whole * 10;
	for (n = 0; n < p->nr_nodes; n++)
		tenths += k->node_miss[n] * p->lat_mem * p->slit[cpu_node][n];
	return tenths / 10;
}

int cm_format(char *buf, size_t len, const struct cm_params *p,
	      unsigned int cpu_node, const struct cm_counts *k)
{
	const uint64_t *c = k->c;
	size_t used;
	unsigned int n;
	int ret;

	ret = snprintf(buf, len, "insns=%" PRIu64 " user=%" PRIu64 " kernel=%" PRIu64
		       " atomics=%" PRIu64 " loads=%" PRIu64 " stores=%" PRIu64
		       " io=%" PRIu64 " l1_miss=%" PRIu64 " l2_miss=%" PRIu64
		       " llc_miss=%" PRIu64 " remote=%" PRIu64 " unmapped=%" PRIu64
		       " node_miss=",
		       c[CM_INSN_USER] + c[CM_INSN_KERNEL], c[CM_INSN_USER],
		       c[CM_INSN_KERNEL], c[CM_ATOMICS], c[CM_LOADS], c[CM_STORES],
		       c[CM_IO], c[CM_L1_MISS], c[CM_L2_MISS], c[CM_LLC_MISS],
		       c[CM_REMOTE], c[CM_UNMAPPED]);
	for (n = 0; ret > 0 && n < p->nr_nodes; n++) {
		used = ret;
		if (used >= len)
			break;
		ret += snprintf(buf + used, len - used, "%s%" PRIu64, n ? ":" : "",
				k->node_miss[n]);
	}
	used = ret;
	if (ret > 0 && used < len)
		ret += snprintf(buf + used, len - used, " cycles=%" PRIu64,
				cm_cycles(p, cpu_node, k));
	return ret;
}
