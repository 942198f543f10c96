// SPDX-License-Identifier: GPL-2.0
/*
 * Locking and unlocking parts of a mapping splits its VMA, and locking them
 * back merges it again; the lock follows exactly the pages asked for.
 *
 * One private anonymous range, interleaved over every usable memory node
 * (VMA policy), in a child pinned to one CPU. Steps, each checked against a
 * per-page model of what is locked (lib/locked.h nt_lkmodel: number of VMAs
 * in /proc/self/smaps, smaps Locked, VmLck, per-node Mlocked and Unevictable,
 * the unevictable_pgs_* events, KPF_MLOCKED / KPF_UNEVICTABLE of every page):
 *
 *   mlock everything                          1 VMA
 *   mprotect(PROT_READ) of the middle third   3 VMAs, every page still locked
 *                                                    (mprotect(2) changes the
 *                                                    protection only; a split
 *                                                    VMA keeps VM_LOCKED)
 *   mprotect back to read-write               1 VMA  (merged again)
 *   munlock the middle third                  3 VMAs (split twice)
 *   mlock the middle third again              1 VMA  (merged with both sides)
 *   munlock the first page                    2 VMAs
 *   munlock the last page                     3 VMAs
 *   mlock2(MLOCK_ONFAULT) of everything       1 VMA  (the two pages lock; the
 *                                                     rest only changes flags)
 *   munlockall                                1 VMA
 *   mlock the middle third                    3 VMAs
 *   munlock everything                        1 VMA
 *
 * Each step is one mlock/munlock/mprotect call; mlock and munlock drain the
 * batch of the CPU they ran on before returning, mprotect queues nothing:
 * no drain before the checks. Then the data of every
 * page must read back.
 *
 * Usage: munlock_split_merge [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "locked.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(1UL << 20)
#define SEED		0x73706c74UL

enum op { LOCK, UNLOCK, LOCK_ONFAULT, UNLOCK_ALL, PROTECT_RO, PROTECT_RW };

struct step {
	const char *name;
	enum op op;
	int first, last;	/* in thirds (0..3) of the range, or pages below */
	bool pages;		/* first/last: a single page at the start (0) or end (1) */
	int vmas;
};

static const struct step steps[] = {
	{ "mlock everything", LOCK, 0, 3, false, 1 },
	{ "mprotect(PROT_READ) of the middle third", PROTECT_RO, 1, 2, false, 3 },
	{ "mprotect(PROT_READ|PROT_WRITE) of the middle third", PROTECT_RW, 1, 2, false, 1 },
	{ "munlock the middle third", UNLOCK, 1, 2, false, 3 },
	{ "mlock the middle third again", LOCK, 1, 2, false, 1 },
	{ "munlock the first page", UNLOCK, 0, 0, true, 2 },
	{ "munlock the last page", UNLOCK, 1, 1, true, 3 },
	{ "mlock2(MLOCK_ONFAULT) of everything", LOCK_ONFAULT, 0, 3, false, 1 },
	{ "munlockall", UNLOCK_ALL, 0, 3, false, 1 },
	{ "mlock the middle third", LOCK, 1, 2, false, 3 },
	{ "munlock everything", UNLOCK, 0, 3, false, 1 },
};

#define STEPS	(sizeof(steps) / sizeof(steps[0]))
#define CHECKS	(STEPS * NT_LKM_CHECKS + 1)

/* The pages a step covers. */
static void step_range(const struct step *s, size_t npages, size_t *first, size_t *n)
{
	size_t third = npages / 3;

	if (s->pages) {
		*first = s->first ? npages - 1 : 0;
		*n = 1;
		return;
	}
	*first = s->first * third;
	*n = (s->last == 3 ? npages : s->last * third) - *first;
}

static int do_step(const struct step *s, struct nt_area *a, size_t first, size_t n)
{
	char *p = a->addr + first * a->page_size;
	size_t len = n * a->page_size;

	switch (s->op) {
	case LOCK:
		return mlock(p, len) ? -errno : 0;
	case LOCK_ONFAULT:
		return mlock2(p, len, MLOCK_ONFAULT) ? -errno : 0;
	case UNLOCK:
		return munlock(p, len) ? -errno : 0;
	case PROTECT_RO:
		return mprotect(p, len, PROT_READ) ? -errno : 0;
	case PROTECT_RW:
		return mprotect(p, len, PROT_READ | PROT_WRITE) ? -errno : 0;
	default:
		return munlockall() ? -errno : 0;
	}
}

static void run(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = t->allowed };
	struct nt_lk lk = { .t = t };
	struct nt_lkmodel m;
	struct nt_region r;
	struct nt_vma vma;
	size_t i, first, n;
	int err;

	(void)arg;
	snprintf(lk.label, sizeof(lk.label), "split and merge");
	lk.r = &r;
	nt_lk_map(&lk, NT_PRIVATE_ANON, len, &pol, false, local_node, &vma);
	/* Resident before the baseline: every step below only locks and unlocks. */
	nt_area_fill(&r.a, SEED);
	if (nt_lkm_init(&m, &lk))
		nt_tap_bail("no memory for the model");
	nt_lk_baseline(&lk);
	for (i = 0; i < STEPS; i++) {
		step_range(&steps[i], r.a.npages, &first, &n);
		err = do_step(&steps[i], &r.a, first, n);
		if (err)
			nt_tap_bail("%s: %s", steps[i].name, strerror(-err));
		if (steps[i].op == UNLOCK_ALL)
			nt_lkm_set(&m, 0, r.a.npages, false);
		else if (steps[i].op != PROTECT_RO && steps[i].op != PROTECT_RW)
			nt_lkm_set(&m, first, n, steps[i].op != UNLOCK);
		nt_lkm_check(&m, steps[i].vmas, false, steps[i].name);
	}
	nt_lk_check_data(&lk, SEED);
	nt_lkm_free(&m);
}

int main(int argc, char **argv)
{
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);

	if (len / sysconf(_SC_PAGESIZE) < 6)
		nt_tap_skip_all("the range needs at least 6 pages to split in thirds");
	nt_tap_plan(CHECKS);
	nt_lk_in_child(&t, len, CHECKS, "split and merge", run, NULL);
	return nt_tap_finish();
}
