// SPDX-License-Identifier: GPL-2.0
/*
 * SHM_LOCK on SysV shared memory: its pages become unevictable, not mlocked.
 *
 * What 6.1 does (ipc/shm.c shmctl_do_lock(), mm/shmem.c shmem_lock() and
 * shmem_unlock_mapping(), mm/swap.c lru_add_fn(), mm/vmscan.c
 * check_move_unevictable_folios()):
 * - SHM_LOCK only marks the segment's mapping unevictable (and sets
 *   SHM_LOCKED in shm_perm.mode). Pages faulted in afterwards go straight
 *   to the unevictable LRU (unevictable_pgs_culled once each); pages already
 *   on an LRU list may stay on the evictable lists until reclaim looks at
 *   them (Documentation/mm/unevictable-lru.rst: the lock "can be lazy"; 6.1
 *   leaves them all there), so that cell checks that the accounting agrees
 *   exactly with whichever list each page is on (pages still waiting in a
 *   CPU's LRU-add batch are not on a list yet and go to the unevictable
 *   one when it drains: the test drains first). No page is
 *   PG_mlocked, Mlocked and VmLck do not move, smaps Locked stays 0 (the
 *   VMA is not VM_LOCKED).
 * - SHM_UNLOCK clears the mark and walks the segment's pages, moving the
 *   unevictable ones back (unevictable_pgs_rescued once each).
 * - mlock() of the attached segment on top: each page is PG_mlocked too
 *   (Mlocked, unevictable_pgs_mlocked), and already unevictable, so nothing
 *   is culled; munlock() unlocks it (munlocked) but leaves it unevictable,
 *   the mapping still being so; SHM_UNLOCK then rescues it.
 *
 * Three cells, each in a child pinned to one CPU, with the segment
 * interleaved over every usable memory node (mbind() on the attached
 * segment sets the shared policy; the interleave index is the page's index
 * plus the inode number, lib/expect.h): SHM_LOCK then touch; touch then
 * SHM_LOCK; SHM_LOCK, touch and mlock(). Faults leave pages on the CPU's
 * batch, so the checks after them drain every CPU first.
 *
 * Usage: shm_lock [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 */
#include <errno.h>
#include <stdlib.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

#include "locked.h"
#include "pageflags.h"
#include "placement.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(1UL << 20)
#define SEED		0x73686d6cUL

enum cell { LOCK_THEN_TOUCH, TOUCH_THEN_LOCK, LOCK_TOUCH_MLOCK, CELLS };

static const char *const cell_names[CELLS] = {
	[LOCK_THEN_TOUCH] = "SHM_LOCK, then touch",
	[TOUCH_THEN_LOCK] = "touch, then SHM_LOCK",
	[LOCK_TOUCH_MLOCK] = "SHM_LOCK, touch, mlock",
};

static const unsigned int cell_checks[CELLS] = {
	[LOCK_THEN_TOUCH] = 13,
	[TOUCH_THEN_LOCK] = 9,
	[LOCK_TOUCH_MLOCK] = 17,
};

struct seg {
	int id;
	struct nt_lk lk;
	struct nt_region r;
	struct nt_vma vma;
	struct nt_policy pol;
	struct nt_lk_events ev;	/* expected since the baseline */
	size_t not_zero;	/* pages that did not read as zeros when first touched */
};

/* Names the subtests that follow "cell: step". */
static void step(struct seg *s, enum cell c, const char *what)
{
	snprintf(s->lk.label, sizeof(s->lk.label), "%s: %s", cell_names[c], what);
}

static void shm_ctl(struct seg *s, int cmd, const char *name)
{
	if (shmctl(s->id, cmd, NULL))
		nt_tap_bail("%s: shmctl(%s): %s", s->lk.label, name, strerror(errno));
}

static void check_flag(struct seg *s, bool locked)
{
	struct shmid_ds ds;
	bool got;

	if (shmctl(s->id, IPC_STAT, &ds))
		nt_tap_bail("%s: IPC_STAT: %s", s->lk.label, strerror(errno));
	got = ds.shm_perm.mode & SHM_LOCKED;
	nt_tap_result(got == locked, "%s: shm_perm.mode has SHM_LOCKED %s", s->lk.label,
		      locked ? "set" : "clear");
}

/* Faults every page in reading it (shmget(2): the segment is zero-filled), then writes it. */
static void touch(struct seg *s)
{
	s->not_zero = nt_area_verify_zero(&s->r.a);
	nt_area_fill(&s->r.a, SEED);
}

/*
 * Per-node Mlocked and Unevictable against the pages found on each node
 * (mlocked, unevictable: whether they must count there), the events, the
 * page flags.
 */
static void check_state(struct seg *s, bool mlocked, bool unevictable)
{
	nt_lk_snapshot(&s->lk, true);
	nt_lk_check_nodes(&s->lk, false, mlocked ? s->lk.found : NULL);
	nt_lk_check_nodes(&s->lk, true, unevictable ? s->lk.found : NULL);
	nt_lk_check_events(&s->lk, &s->ev);
	nt_lk_check_flags(&s->lk, mlocked, unevictable);
}

/* After the segment was populated: where its pages are, its data, and no mlock on the VMA. */
static void check_populated(struct seg *s, long vmlck_kb)
{
	nt_lk_snapshot(&s->lk, true);
	nt_lk_check_placement(&s->lk, &s->pol, &s->vma, "their interleave node");
	if (s->not_zero)
		nt_tap_diag("%zu pages did not read as zeros", s->not_zero);
	nt_tap_result(!s->not_zero, "%s: all %zu fresh pages read as zeros when first touched",
		      s->lk.label, s->r.a.npages);
	nt_lk_check_vmlck(&s->lk, vmlck_kb);
	nt_lk_check_smaps(&s->lk, "Locked", vmlck_kb);
}

/*
 * After SHM_LOCK of pages already on the evictable lists: unevictable-lru.rst
 * lets the lock be lazy ("need not ... make any special effort to push any
 * pages in the SHM_LOCK'd area to the unevictable list. Instead, vmscan
 * will do this if and when it encounters the pages"), so each page may be
 * on either list. Whichever it is on, the accounting must agree exactly:
 * per-node Unevictable up by the pages with KPF_UNEVICTABLE on each node,
 * unevictable_pgs_culled by their number, Mlocked unchanged and no page
 * KPF_MLOCKED. Returns how many pages are on the unevictable list.
 */
static long check_lazy(struct seg *s)
{
	const struct nt_area *a = &s->r.a;
	long pages[NT_MAX_NODES] = { 0 }, unevictable = 0, mlocked = 0;
	uint64_t *flags = calloc(a->npages, sizeof(*flags));
	int *status = calloc(a->npages, sizeof(*status));
	size_t i;
	int err;

	if (!flags || !status)
		nt_tap_bail("%s: no memory", s->lk.label);
	nt_lk_snapshot(&s->lk, true);
	err = nt_pages_flags(a->addr, a->npages, a->page_size, flags);
	if (!err)
		err = nt_pages_nodes(a->addr, a->npages, a->page_size, status);
	if (err)
		nt_tap_bail("%s: reading the pages' flags and nodes: %s", s->lk.label, strerror(-err));
	for (i = 0; i < a->npages; i++) {
		if (status[i] < 0 || status[i] >= NT_MAX_NODES || (flags[i] & NT_PAGE_ABSENT))
			nt_tap_bail("%s: page %zu is not resident", s->lk.label, i);
		mlocked += !!(flags[i] & NT_KPF(NT_KPF_MLOCKED));
		if (flags[i] & NT_KPF(NT_KPF_UNEVICTABLE)) {
			pages[status[i]]++;
			unevictable++;
		}
	}
	free(flags);
	free(status);
	nt_tap_diag("%s: %ld of %zu pages on the unevictable list after SHM_LOCK", s->lk.label,
		    unevictable, a->npages);
	s->ev.culled = unevictable;
	nt_lk_check_nodes(&s->lk, false, NULL);
	nt_lk_check_nodes(&s->lk, true, pages);
	nt_lk_check_events(&s->lk, &s->ev);
	nt_tap_result(!mlocked, "%s: no page KPF_MLOCKED (%ld are)", s->lk.label, mlocked);
	return unevictable;
}

/* SHM_UNLOCK, rescuing rescued pages: nothing unevictable left, SHM_LOCKED clear. */
static void unlock_segment(struct seg *s, long rescued)
{
	shm_ctl(s, SHM_UNLOCK, "SHM_UNLOCK");
	check_flag(s, false);
	s->ev.rescued = rescued;
	nt_lk_snapshot(&s->lk, false);
	nt_lk_check_nodes(&s->lk, true, NULL);
	nt_lk_check_events(&s->lk, &s->ev);
	nt_lk_check_flags(&s->lk, false, false);
}

static void run_cell(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	enum cell c = *(const enum cell *)arg;
	struct seg s = { .lk.t = t };
	long n = len / sysconf(_SC_PAGESIZE), kb = len / 1024, rescued;
	void *p;
	int err;

	snprintf(s.lk.label, sizeof(s.lk.label), "%s", cell_names[c]);
	s.lk.r = &s.r;
	s.pol.mode = MPOL_INTERLEAVE;
	s.pol.nodes = t->allowed;
	s.id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
	if (s.id < 0)
		nt_tap_bail("shmget: %s", strerror(errno));
	p = shmat(s.id, NULL, 0);
	if (p == (void *)-1)
		nt_tap_bail("shmat: %s", strerror(errno));
	/* Gone once detached: nothing left behind if the child dies. */
	shm_ctl(&s, IPC_RMID, "IPC_RMID");
	s.r = (struct nt_region){ .a = { .addr = p, .len = len, .page_size = len / n,
					 .npages = n },
				  .kind = NT_SHARED_ANON, .fd = -1 };
	err = nt_area_mbind(&s.r.a, &s.pol);
	if (!err)
		err = nt_region_vma(&s.r, local_node, &s.vma);
	if (err)
		nt_tap_bail("mbind of the segment: %s", strerror(-err));
	nt_lk_baseline(&s.lk);

	switch (c) {
	case LOCK_THEN_TOUCH:
		step(&s, c, "SHM_LOCK");
		shm_ctl(&s, SHM_LOCK, "SHM_LOCK");
		check_flag(&s, true);
		touch(&s);
		step(&s, c, "touched");
		check_populated(&s, 0);
		s.ev.culled = n;
		check_state(&s, false, true);
		step(&s, c, "SHM_UNLOCK");
		unlock_segment(&s, n);
		break;
	case TOUCH_THEN_LOCK:
		touch(&s);
		/*
		 * Up to 14 of the new pages still wait on this CPU's LRU-add
		 * batch: those would see the mapping unevictable when it drains
		 * (measured: page 256 of 256). Put them all on the LRU first.
		 */
		if (nt_drain_all())
			nt_tap_bail("draining the CPUs' batches");
		step(&s, c, "SHM_LOCK");
		shm_ctl(&s, SHM_LOCK, "SHM_LOCK");
		check_flag(&s, true);
		rescued = check_lazy(&s);
		step(&s, c, "SHM_UNLOCK");
		unlock_segment(&s, rescued);
		break;
	default:
		step(&s, c, "SHM_LOCK, touched, mlock");
		shm_ctl(&s, SHM_LOCK, "SHM_LOCK");
		touch(&s);
		err = nt_area_lock(&s.r.a);
		if (err)
			nt_tap_bail("mlock: %s", strerror(-err));
		check_flag(&s, true);
		check_populated(&s, kb);
		s.ev.culled = s.ev.mlocked = n;
		check_state(&s, true, true);
		err = nt_area_unlock(&s.r.a);
		if (err)
			nt_tap_bail("munlock: %s", strerror(-err));
		/* munlocked, but still on the unevictable list of a locked segment */
		step(&s, c, "munlock");
		s.ev.munlocked = n;
		check_state(&s, false, true);
		step(&s, c, "SHM_UNLOCK");
		unlock_segment(&s, n);
		break;
	}
	shmdt(p);
}

int main(int argc, char **argv)
{
	static enum cell cells[CELLS];
	unsigned int c, plan = 0;
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	int id;

	id = shmget(IPC_PRIVATE, sysconf(_SC_PAGESIZE), IPC_CREAT | 0600);
	if (id < 0)
		nt_tap_skip_all("no SysV shared memory here: shmget: %s (CONFIG_SYSVIPC)",
				strerror(errno));
	shmctl(id, IPC_RMID, NULL);
	for (c = 0; c < CELLS; c++)
		plan += cell_checks[c];
	nt_tap_plan(plan);
	for (c = 0; c < CELLS; c++) {
		cells[c] = c;
		nt_lk_in_child(&t, len, cell_checks[c], cell_names[c], run_cell, &cells[c]);
	}
	return nt_tap_finish();
}
