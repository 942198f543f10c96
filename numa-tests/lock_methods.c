// SPDX-License-Identifier: GPL-2.0
/*
 * Every way to lock memory, with every way to unlock it, on every kind of
 * memory mlock applies to: each cell locks a fresh range interleaved over all
 * usable memory nodes and checks it exactly (lib/locked.h): where every page
 * is, its data, VmLck, smaps Locked, per-node Mlocked and Unevictable, the
 * unevictable_pgs_* events, KPF_MLOCKED and KPF_UNEVICTABLE of every page;
 * then unlocks it and checks that everything is back at its baseline, per
 * node, exactly. How a cell runs: lib/lockcase.h.
 *
 * Ways to lock: mlock() of an untouched range, mlock() of a range already
 * faulted in, mlock2(MLOCK_ONFAULT) then touching every page,
 * mlockall(MCL_CURRENT), mlockall(MCL_FUTURE) then mmap(),
 * mlockall(MCL_FUTURE | MCL_ONFAULT) then mmap() and touching, MAP_LOCKED,
 * MAP_LOCKED | MAP_POPULATE. Ways to unlock: munlock(), munlockall(),
 * munmap(), exit. Kinds: private anonymous, shared anonymous, memfd mapped
 * shared, memfd mapped private (the locked pages are anonymous copies of the
 * file's: every way here writes or populates for writing, so the file's own
 * pages are never mapped; private_file_locked maps them).
 *
 * The policy is MPOL_INTERLEAVE over every usable memory node, where the
 * kernel is exact (lib/expect.h): the VMA's policy (mbind()) when the range
 * is mapped before it is populated, the task's (set_mempolicy()) when mmap()
 * itself populates it. policy_flags covers the other policies.
 *
 * Usage: lock_methods [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 2M)
 * Needs root (stat_refresh, kpageflags, pagemap frame numbers).
 */
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lockcase.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(2UL << 20)
#define CASES		(NT_KINDS * NT_LOCK_WAYS * NT_UNLOCK_WAYS)

int main(int argc, char **argv)
{
	static struct nt_lk_case cases[CASES];
	struct nt_mempolicy mp;
	struct nt_topology t;
	unsigned int i, plan = 0;
	char nodes[128];
	size_t len;

	len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	for (i = 0; i < CASES; i++) {
		struct nt_lk_case *c = &cases[i];

		c->kind = i / (NT_LOCK_WAYS * NT_UNLOCK_WAYS);
		c->lock = i / NT_UNLOCK_WAYS % NT_LOCK_WAYS;
		c->unlock = i % NT_UNLOCK_WAYS;
		c->user.mode = MPOL_INTERLEAVE;
		c->user.nodes = t.allowed;
		c->task_policy = nt_lock_way_at_mmap(c->lock);
		c->where = "their interleave node";
		c->len = len;
		c->cpu_node = -1;
		snprintf(c->label, sizeof(c->label), "%s, %s, %s", nt_kind_names[c->kind],
			 nt_lock_way_names[c->lock], nt_unlock_way_names[c->unlock]);
		plan += nt_lk_case_checks(c);
	}
	if (nt_mpol_install(&mp, &cases[0].user, &t.allowed, &t.memory))
		nt_tap_skip_all("no memory node this task may use");
	nt_tap_plan(plan);
	nt_tap_diag("range %zu KiB, interleaved over nodes %s, task policy where mmap() populates",
		    len >> 10, nt_mask_format(&t.allowed, nodes, sizeof(nodes)));
	for (i = 0; i < CASES; i++)
		nt_lk_case_run(&cases[i], &t);
	return nt_tap_finish();
}
