// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lockcase.h"
#include "tap.h"

const char *const nt_lock_way_names[NT_LOCK_WAYS] = {
	[NT_LOCK_MLOCK] = "mlock",
	[NT_LOCK_MLOCK_FAULTED] = "mlock of faulted pages",
	[NT_LOCK_MLOCK2_ONFAULT] = "mlock2(MLOCK_ONFAULT) and touch",
	[NT_LOCK_MCL_CURRENT] = "mlockall(MCL_CURRENT)",
	[NT_LOCK_MCL_CURRENT_ONFAULT] = "mlockall(MCL_CURRENT|MCL_ONFAULT) and touch",
	[NT_LOCK_MCL_FUTURE] = "mlockall(MCL_FUTURE) and mmap",
	[NT_LOCK_MCL_ONFAULT] = "mlockall(MCL_FUTURE|MCL_ONFAULT), mmap and touch",
	[NT_LOCK_MAP_LOCKED] = "MAP_LOCKED",
	[NT_LOCK_MAP_LOCKED_POPULATE] = "MAP_LOCKED|MAP_POPULATE",
};

const char *const nt_unlock_way_names[NT_UNLOCK_WAYS] = {
	[NT_UNLOCK_MUNLOCK] = "munlock",
	[NT_UNLOCK_MUNLOCKALL] = "munlockall",
	[NT_UNLOCK_MUNMAP] = "munmap",
	[NT_UNLOCK_EXIT] = "exit",
};

#define TOUCH_SEED	0x746f7563UL

/* What a child tells its parent for the exit checks. */
struct shared {
	long rest_mlocked, rest_culled;
};

static struct shared *shared;

bool nt_lock_way_at_mmap(enum nt_lock_way way)
{
	return way == NT_LOCK_MCL_FUTURE || way == NT_LOCK_MAP_LOCKED ||
	       way == NT_LOCK_MAP_LOCKED_POPULATE;
}

static bool onfault(enum nt_lock_way way)
{
	return way == NT_LOCK_MLOCK2_ONFAULT || way == NT_LOCK_MCL_ONFAULT ||
	       way == NT_LOCK_MCL_CURRENT_ONFAULT;
}

/* mlockall(): the whole process, the range's guard VMAs included. */
static bool whole_process(enum nt_lock_way way)
{
	return way == NT_LOCK_MCL_CURRENT || way == NT_LOCK_MCL_CURRENT_ONFAULT ||
	       way == NT_LOCK_MCL_FUTURE ||
	       way == NT_LOCK_MCL_ONFAULT;
}

static int map_flags(enum nt_lock_way way)
{
	if (way == NT_LOCK_MAP_LOCKED)
		return MAP_LOCKED;
	if (way == NT_LOCK_MAP_LOCKED_POPULATE)
		return MAP_LOCKED | MAP_POPULATE;
	return 0;
}

static unsigned int child_checks(const struct nt_lk_case *c)
{
	unsigned int n = NT_LK_LOCKED_CHECKS + onfault(c->lock);

	if (c->unlock == NT_UNLOCK_MUNLOCK || c->unlock == NT_UNLOCK_MUNLOCKALL)
		n += NT_LK_UNLOCKED_CHECKS;
	else if (c->unlock == NT_UNLOCK_MUNMAP)
		n += NT_LK_GONE_CHECKS + 1;
	return n;
}

unsigned int nt_lk_case_checks(const struct nt_lk_case *c)
{
	return child_checks(c) + (c->unlock == NT_UNLOCK_EXIT ? NT_LK_GONE_CHECKS : 0);
}

void nt_lk_case_skip(const struct nt_lk_case *c, const char *reason)
{
	unsigned int i, n = nt_lk_case_checks(c);

	for (i = 1; i <= n; i++)
		nt_tap_skip(reason, "%s: check %u of %u", c->label, i, n);
}

static void must(int err, const struct nt_lk_case *c, const char *what)
{
	if (err)
		nt_tap_bail("%s: %s: %s", c->label, what, strerror(err < 0 ? -err : err));
}

static int sys(int ret)
{
	return ret ? -errno : 0;
}

/* One case under way in the child. */
struct run {
	const struct nt_lk_case *c;
	struct nt_lk lk;
	struct nt_region r;
	struct nt_counters base0;	/* before the process locked anything */
	long rest_mlocked, rest_culled;	/* what mlockall(MCL_CURRENT) locked besides the range */
};

/* Before the range exists: whatever must be in place when it is mapped. */
static void prepare(struct run *run)
{
	const struct nt_lk_case *c = run->c;
	struct nt_lk *lk = &run->lk;

	switch (c->lock) {
	case NT_LOCK_MCL_CURRENT:
	case NT_LOCK_MCL_CURRENT_ONFAULT:
		/* Lock the rest of the process now; the range's baseline includes it. */
		must(sys(mlockall(MCL_CURRENT)), c, "mlockall(MCL_CURRENT) of the process");
		nt_lk_baseline(lk);
		run->rest_mlocked = lk->base.vmstat[NT_PGS_MLOCKED] -
				    run->base0.vmstat[NT_PGS_MLOCKED];
		run->rest_culled = lk->base.vmstat[NT_PGS_CULLED] - run->base0.vmstat[NT_PGS_CULLED];
		nt_tap_diag("%s: the rest of the process: %ld pages mlocked, VmLck %ld kB",
			    c->label, run->rest_mlocked, lk->base.vmlck_kb);
		break;
	case NT_LOCK_MCL_FUTURE:
		must(sys(mlockall(MCL_FUTURE)), c, "mlockall(MCL_FUTURE)");
		break;
	case NT_LOCK_MCL_ONFAULT:
		must(sys(mlockall(MCL_FUTURE | MCL_ONFAULT)), c, "mlockall(MCL_FUTURE|MCL_ONFAULT)");
		break;
	default:
		break;
	}
	shared->rest_mlocked = run->rest_mlocked;
	shared->rest_culled = run->rest_culled;
	if (c->task_policy)
		must(nt_set_task_policy(&c->user), c, "set_mempolicy");
}

/* Nothing is populated yet: smaps Rss 0 and Locked 0, nothing mlocked. */
static void check_onfault_empty(struct nt_lk *lk, long vmlck_kb)
{
	long rss = -1, locked = -1;
	bool ok;

	nt_lk_snapshot(lk, true);
	ok = !nt_smaps_sum(lk->r->a.addr, lk->r->a.len, "Rss", &rss, NULL) &&
	     !nt_smaps_sum(lk->r->a.addr, lk->r->a.len, "Locked", &locked, NULL) &&
	     rss == 0 && locked == 0;
	if (!ok)
		nt_tap_diag("smaps Rss %ld kB, Locked %ld kB", rss, locked);
	if (lk->now.vmlck_kb - lk->base.vmlck_kb != vmlck_kb) {
		nt_tap_diag("VmLck %+ld kB", lk->now.vmlck_kb - lk->base.vmlck_kb);
		ok = false;
	}
	if (lk->now.vmstat[NT_PGS_MLOCKED] != lk->base.vmstat[NT_PGS_MLOCKED]) {
		nt_tap_diag("unevictable_pgs_mlocked %+ld",
			    lk->now.vmstat[NT_PGS_MLOCKED] - lk->base.vmstat[NT_PGS_MLOCKED]);
		ok = false;
	}
	nt_tap_result(ok, "%s: before touching: VmLck %+ld kB, nothing resident, nothing mlocked",
		      lk->label, vmlck_kb);
}

/* The range holds TOUCH_SEED's pattern: the checks read that back. */
static void touched(struct run *run)
{
	run->lk.seed = TOUCH_SEED;
	run->lk.filled = true;
}

static void lock(struct run *run, long vmlck_kb)
{
	const struct nt_lk_case *c = run->c;
	struct nt_area *a = &run->r.a;

	if (!c->task_policy)
		must(nt_area_mbind(a, &c->user), c, "mbind");
	switch (c->lock) {
	case NT_LOCK_MLOCK:
		must(nt_area_lock(a), c, "mlock");
		break;
	case NT_LOCK_MLOCK_FAULTED:
		nt_area_fill(a, TOUCH_SEED);
		touched(run);
		must(nt_area_lock(a), c, "mlock");
		break;
	case NT_LOCK_MCL_CURRENT_ONFAULT:
		/*
		 * mlockall(2): MCL_ONFAULT with MCL_CURRENT marks the current
		 * mappings to lock pages as they are faulted in. The rest of
		 * the process is locked already: only its flags change.
		 */
		must(sys(mlockall(MCL_CURRENT | MCL_ONFAULT)), c, "mlockall(MCL_CURRENT|MCL_ONFAULT)");
		check_onfault_empty(&run->lk, vmlck_kb);
		nt_area_fill(a, TOUCH_SEED);
		touched(run);
		break;
	case NT_LOCK_MLOCK2_ONFAULT:
		must(sys(mlock2(a->addr, a->len, MLOCK_ONFAULT)), c, "mlock2");
		/* fall through */
	case NT_LOCK_MCL_ONFAULT:
		check_onfault_empty(&run->lk, vmlck_kb);
		nt_area_fill(a, TOUCH_SEED);
		touched(run);
		break;
	case NT_LOCK_MCL_CURRENT:
		must(sys(mlockall(MCL_CURRENT)), c, "mlockall(MCL_CURRENT)");
		break;
	default:	/* locked and populated by mmap() */
		break;
	}
	if (c->task_policy)
		must(nt_set_task_policy(NULL), c, "resetting the task policy");
}

static void unlock(struct run *run, long guards_kb)
{
	const struct nt_lk_case *c = run->c;
	struct nt_lk *lk = &run->lk;

	switch (c->unlock) {
	case NT_UNLOCK_MUNLOCK:
		must(nt_area_unlock(&run->r.a), c, "munlock");
		/* After mlockall() the guard VMAs stay VM_LOCKED. */
		nt_lk_unlocked(lk, whole_process(c->lock) ? guards_kb : 0);
		break;
	case NT_UNLOCK_MUNLOCKALL:
		must(sys(munlockall()), c, "munlockall");
		/* Everything the process locked goes: back to before it locked anything. */
		lk->base = run->base0;
		lk->rest_mlocked = run->rest_mlocked;
		lk->rest_culled = run->rest_culled;
		nt_lk_unlocked(lk, 0);
		break;
	case NT_UNLOCK_MUNMAP:
		must(nt_region_unmap(&run->r), c, "munmap");
		nt_lk_gone(lk);
		nt_lk_check_vmlck(lk, 0);
		break;
	default:	/* exit: the parent checks */
		break;
	}
}

static void run_child(const struct nt_lk_case *c, const struct nt_topology *t, int local_node)
{
	struct run run = { .c = c, .lk.t = t };
	long page = sysconf(_SC_PAGESIZE), len_kb, guards_kb, vmlck_kb;
	struct nt_mempolicy mp;
	struct nt_vma vma;

	snprintf(run.lk.label, sizeof(run.lk.label), "%s", c->label);
	run.lk.r = &run.r;
	if (nt_mpol_install(&mp, &c->user, &t->allowed, &t->memory))
		nt_tap_bail("%s: the kernel would refuse this policy", c->label);
	nt_lk_baseline(&run.lk);
	run.base0 = run.lk.base;
	prepare(&run);
	must(nt_region_map(&run.r, c->kind, c->len, c->huge ? c->huge : (size_t)page,
			   map_flags(c->lock)), c, "mapping the range");
	if (c->madvise_huge)
		must(sys(madvise(run.r.a.addr, run.r.a.len, MADV_HUGEPAGE)), c, "MADV_HUGEPAGE");
	run.lk.thp_pages = c->huge / page;
	len_kb = run.r.a.len / 1024;
	guards_kb = (run.r.resv_len - run.r.a.len) / 1024;
	vmlck_kb = len_kb + (whole_process(c->lock) ? guards_kb : 0);
	must(nt_region_vma(&run.r, local_node, &vma), c, "finding the VMA");
	lock(&run, vmlck_kb);
	/* Faults from touching leave pages on the CPU's batch; the lock calls drain it. */
	nt_lk_locked(&run.lk, &mp.pol, &vma, vmlck_kb, c->where, onfault(c->lock));
	unlock(&run, guards_kb);
}

void nt_lk_case_run(const struct nt_lk_case *c, const struct nt_topology *t)
{
	long page = sysconf(_SC_PAGESIZE);
	struct nt_region gone = { .a.npages = c->len / page, .a.page_size = page };
	struct nt_lk parent = { .t = t, .r = &gone };
	unsigned int until = nt_tap_count() + child_checks(c);
	int local_node;
	pid_t pid;

	if (!shared) {
		shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (shared == MAP_FAILED)
			nt_tap_bail("mmap of a shared page: %s", strerror(errno));
	}
	snprintf(parent.label, sizeof(parent.label), "%s", c->label);
	nt_lk_baseline(&parent);
	shared->rest_mlocked = shared->rest_culled = 0;
	pid = nt_lk_fork(t, c->cpu_node, c->huge != 0, c->len, &local_node);
	if (!pid) {
		run_child(c, t, local_node);
		_exit(0);
	}
	nt_tap_wait(pid, until, c->label);
	if (c->unlock != NT_UNLOCK_EXIT)
		return;
	/* Exit unlocked the child's whole process, whatever mlockall() locked included. */
	parent.rest_mlocked = shared->rest_mlocked;
	parent.rest_culled = shared->rest_culled;
	nt_lk_gone(&parent);
}
