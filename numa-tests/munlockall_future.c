// SPDX-License-Identifier: GPL-2.0
/*
 * munlockall() ends mlockall(MCL_FUTURE): mappings made afterwards are not
 * locked.
 *
 * mlockall(2): MCL_FUTURE locks "all pages which will become mapped into the
 * address space of the process in the future"; munlockall() "unlocks all
 * pages mapped into the address space of the calling process", and with the
 * lock gone from the process, a new mapping is an ordinary one. Cells, each
 * in a child pinned to one CPU:
 * - mlockall(MCL_FUTURE), munlockall(), then a new range mapped and touched;
 * - mlockall(MCL_FUTURE | MCL_ONFAULT), munlockall(), the same;
 * - mlockall(MCL_FUTURE), a first range mapped (locked and populated, the
 *   usual checks), munlockall() (it is unlocked, back at the baseline), then
 *   a second range mapped and touched.
 * The new range, interleaved over every usable memory node, must be where
 * the policy puts it and not locked at all: VmLck +0, smaps Locked 0, every
 * node's Mlocked and Unevictable and every unevictable_pgs_* event as
 * before it was mapped, no page KPF_MLOCKED or KPF_UNEVICTABLE, fresh pages
 * reading as zeros.
 *
 * Usage: munlockall_future [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 */
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "locked.h"
#include "snapshot.h"
#include "tap.h"

#define DEFAULT_SIZE	(1UL << 20)
#define NEW_CHECKS	6

enum cell { FUTURE, FUTURE_ONFAULT, FUTURE_USED, CELLS };

static const char *const cell_names[CELLS] = {
	[FUTURE] = "mlockall(MCL_FUTURE), munlockall()",
	[FUTURE_ONFAULT] = "mlockall(MCL_FUTURE|MCL_ONFAULT), munlockall()",
	[FUTURE_USED] = "mlockall(MCL_FUTURE), a locked range, munlockall()",
};

static unsigned int cell_checks(enum cell c)
{
	return NEW_CHECKS + (c == FUTURE_USED ? NT_LK_LOCKED_CHECKS + NT_LK_UNLOCKED_CHECKS : 0);
}

/* A range mapped and touched after munlockall(): nothing of it may be locked. */
static void check_new(const struct nt_topology *t, struct nt_lk *lk, const struct nt_policy *pol,
		      size_t len, int local_node)
{
	struct nt_lk_events none = { 0 };
	struct nt_region r;
	struct nt_vma vma;

	lk->r = &r;
	lk->filled = false;
	lk->extra = none;
	snprintf(lk->label + strlen(lk->label), sizeof(lk->label) - strlen(lk->label),
		 ": a new range");
	nt_lk_baseline(lk);
	nt_lk_map(lk, NT_PRIVATE_ANON, len, pol, false, local_node, &vma);
	nt_lk_check_zeros(lk);
	nt_area_fill(&r.a, 0x66757475UL);
	nt_lk_snapshot(lk, true);
	nt_lk_check_placement(lk, pol, &vma, "their interleave node");
	nt_lk_check_vmlck(lk, 0);
	nt_lk_check_smaps(lk, "Locked", 0);
	nt_tap_result(nt_nodes_moved(&t->online, lk->now.mlocked_kb, lk->base.mlocked_kb, NULL,
				     r.a.page_size / 1024, "Mlocked") &&
		      nt_nodes_moved(&t->online, lk->now.unevictable_kb, lk->base.unevictable_kb,
				     NULL, r.a.page_size / 1024, "Unevictable") &&
		      nt_events_agree(&lk->now, &lk->base, lk->label) &&
		      lk->now.vmstat[NT_PGS_MLOCKED] == lk->base.vmstat[NT_PGS_MLOCKED],
		      "%s: per-node Mlocked and Unevictable and unevictable_pgs_mlocked unchanged",
		      lk->label);
	nt_lk_check_flags(lk, false, false);
	nt_region_unmap(&r);
}

static void run(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	enum cell c = *(const enum cell *)arg;
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = t->allowed };
	struct nt_lk lk = { .t = t };
	struct nt_region first;
	struct nt_vma vma;
	int flags = MCL_FUTURE | (c == FUTURE_ONFAULT ? MCL_ONFAULT : 0);

	snprintf(lk.label, sizeof(lk.label), "%s", cell_names[c]);
	if (c == FUTURE_USED) {
		lk.r = &first;
		nt_lk_baseline(&lk);
		if (mlockall(flags))
			nt_tap_bail("%s: mlockall: %s", lk.label, strerror(errno));
		/* Locked and populated by mmap() itself: the task policy places it. */
		if (nt_set_task_policy(&pol))
			nt_tap_bail("%s: set_mempolicy: %s", lk.label, strerror(errno));
		if (nt_region_map(&first, NT_PRIVATE_ANON, len, sysconf(_SC_PAGESIZE), 0) ||
		    nt_set_task_policy(NULL) || nt_region_vma(&first, local_node, &vma))
			nt_tap_bail("%s: the first range: %s", lk.label, strerror(errno));
		/* mlockall() locks the guard VMAs too: VmLck counts them by size. */
		nt_lk_locked(&lk, &pol, &vma, first.resv_len / 1024, "their interleave node",
			     false);
		if (munlockall())
			nt_tap_bail("%s: munlockall: %s", lk.label, strerror(errno));
		nt_lk_unlocked(&lk, 0);
		nt_region_unmap(&first);
	} else {
		if (mlockall(flags) || munlockall())
			nt_tap_bail("%s: mlockall/munlockall: %s", lk.label, strerror(errno));
	}
	check_new(t, &lk, &pol, len, local_node);
}

int main(int argc, char **argv)
{
	static enum cell cells[CELLS];
	unsigned int c, plan = 0;
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);

	for (c = 0; c < CELLS; c++)
		plan += cell_checks(c);
	nt_tap_plan(plan);
	for (c = 0; c < CELLS; c++) {
		cells[c] = c;
		nt_lk_in_child(&t, len, cell_checks(c), cell_names[c], run, &cells[c]);
	}
	return nt_tap_finish();
}
