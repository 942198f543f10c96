// SPDX-License-Identifier: GPL-2.0
/*
 * fork() of a process with locked memory: the child does not inherit the
 * lock (dup_mmap() clears VM_LOCKED), and copy-on-write in either process
 * keeps the locked pages, and only them, locked.
 *
 * A private anonymous range, interleaved over every usable memory node (VMA
 * policy), is mlocked in a process L pinned to one CPU, and checked
 * (lib/locked.h nt_lk_locked()). Then:
 *
 * 1. L forks C1. In C1: VmLck 0 and smaps Locked 0 of the range; L's smaps
 *    Locked is half the range (proportional: every page is mapped twice);
 *    the shared pages are still KPF_MLOCKED and KPF_UNEVICTABLE. C1 writes
 *    every page: copies, in C1's unlocked VMA, placed by the inherited VMA
 *    policy, neither mlocked nor unevictable, holding C1's data; L's smaps
 *    Locked is the whole range again; per-node Mlocked and Unevictable did
 *    not move and no unevictable_pgs_* event was counted. C1 exits; L's
 *    range is checked again, data unchanged.
 * 2. L forks C2, which waits. L writes every page: the copies are faulted in
 *    L's locked VMA, so they are mlocked (unevictable_pgs_mlocked and culled
 *    once each) and the originals, now mapped by C2 only, are munlocked
 *    (munlocked and rescued once each); the copies land on the same
 *    interleave nodes as the originals, so per-node Mlocked ends where it
 *    was. Then C2: VmLck 0, smaps Locked 0, its pages (the originals)
 *    KPF_MLOCKED and KPF_UNEVICTABLE clear, and they still hold the first
 *    data.
 * 3. L munlocks: everything back at its baseline.
 * Then the same fork() over a memfd mapped shared (run_shared()): no copy
 * on write, the child's mapping unlocked, the pages still the locker's and
 * locked, the child's writes read back by the locker, no counter moved.
 *
 * Copy-on-write faults leave pages on the faulting CPU's batch: the checks
 * after them drain every CPU first.
 *
 * Usage: fork_cow_locked [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "locked.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(1UL << 20)
#define SEED_L		0x4c4c4c4cUL
#define SEED_C1		0x43314331UL
#define SEED_L2		0x4c324c32UL
#define C1_CHECKS	11
#define C2_CHECKS	4
#define CHECKS		(3 * NT_LK_LOCKED_CHECKS + C1_CHECKS + C2_CHECKS + NT_LK_UNLOCKED_CHECKS)

struct state {
	struct nt_lk lk;
	struct nt_region r;
	struct nt_vma vma;
	struct nt_policy pol;
	pid_t locker;
};

static void check_own_unlocked(struct state *s, const char *who)
{
	long kb = -1;
	int err;

	err = nt_vmlck_read(&kb);
	nt_tap_result(!err && kb == 0, "%s: VmLck 0 kB", who);
	err = nt_smaps_sum(s->r.a.addr, s->r.a.len, "Locked", &kb, NULL);
	nt_tap_result(!err && kb == 0, "%s: smaps Locked of the range 0 kB", who);
}

static void check_locker_locked(struct state *s, const char *who, long want_kb)
{
	long kb = -1;
	int err;

	err = nt_smaps_sum_pid(s->locker, s->r.a.addr, s->r.a.len, "Locked", &kb, NULL);
	if (!err && kb != want_kb)
		nt_tap_diag("the locker's smaps Locked %ld kB", kb);
	nt_tap_result(!err && kb == want_kb, "%s: the locker's smaps Locked of the range %ld kB",
		      who, want_kb);
}

static void first_child(struct state *s)
{
	const char *who = "child writing";
	struct nt_lk_events none = { 0 };
	size_t bad;

	snprintf(s->lk.label, sizeof(s->lk.label), "%s", who);
	/* Compare with the locker's last snapshot, the locked state. */
	s->lk.base = s->lk.now;
	check_own_unlocked(s, who);
	check_locker_locked(s, who, s->r.a.len / 1024 / 2);
	nt_lk_check_flags(&s->lk, true, true);
	nt_area_fill(&s->r.a, SEED_C1);
	nt_lk_snapshot(&s->lk, true);
	nt_lk_check_flags(&s->lk, false, false);
	nt_lk_check_placement(&s->lk, &s->pol, &s->vma, "their interleave node");
	bad = nt_area_verify(&s->r.a, SEED_C1);
	nt_tap_result(!bad, "%s: its copies hold its data", who);
	check_locker_locked(s, who, s->r.a.len / 1024);
	nt_lk_check_nodes(&s->lk, false, NULL);
	nt_lk_check_nodes(&s->lk, true, NULL);
	nt_lk_check_events(&s->lk, &none);
}

static void second_child(struct state *s, int go)
{
	const char *who = "child keeping the originals";
	char c;
	size_t bad;

	if (read(go, &c, 1) != 1)
		nt_tap_bail("%s: the locker went away", who);
	snprintf(s->lk.label, sizeof(s->lk.label), "%s", who);
	check_own_unlocked(s, who);
	nt_lk_check_flags(&s->lk, false, false);
	bad = nt_area_verify(&s->r.a, SEED_L);
	nt_tap_result(!bad, "%s: the originals hold the first data", who);
}

static pid_t fork_child(void)
{
	pid_t pid = nt_tap_fork();

	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	return pid;
}

static void run(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	struct state s = { .lk.t = t, .locker = getpid() };
	unsigned int until;
	long n, kb;
	int go[2];
	pid_t pid;

	(void)arg;
	snprintf(s.lk.label, sizeof(s.lk.label), "locker");
	s.lk.r = &s.r;
	s.lk.seed = SEED_L;
	s.pol.mode = MPOL_INTERLEAVE;
	s.pol.nodes = t->allowed;
	nt_lk_baseline(&s.lk);
	nt_lk_map(&s.lk, NT_PRIVATE_ANON, len, &s.pol, true, local_node, &s.vma);
	n = s.r.a.npages;
	kb = len / 1024;
	s.lk.step = "before fork";
	nt_lk_locked(&s.lk, &s.pol, &s.vma, kb, "their interleave node", false);

	until = nt_tap_count() + C1_CHECKS;
	pid = fork_child();
	if (!pid) {
		first_child(&s);
		_exit(0);
	}
	nt_tap_wait(pid, until, "child writing");
	s.lk.step = "after the child's writes";
	nt_lk_locked(&s.lk, &s.pol, &s.vma, kb, "their interleave node", false);

	if (pipe(go))
		nt_tap_bail("pipe: %s", strerror(errno));
	pid = fork_child();
	if (!pid) {
		close(go[1]);
		second_child(&s, go[0]);
		_exit(0);
	}
	close(go[0]);
	nt_area_fill(&s.r.a, SEED_L2);
	s.lk.seed = SEED_L2;
	s.lk.extra.mlocked += n;
	s.lk.extra.culled += n;
	s.lk.extra.munlocked += n;
	s.lk.extra.rescued += n;
	s.lk.step = "after its own writes";
	nt_lk_locked(&s.lk, &s.pol, &s.vma, kb, "their interleave node", true);
	/* The child reports from here on: count its subtests before letting it go. */
	until = nt_tap_count() + C2_CHECKS;
	if (write(go[1], "g", 1) != 1)
		nt_tap_bail("pipe: %s", strerror(errno));
	nt_tap_wait(pid, until, "child keeping the originals");
	close(go[1]);

	s.lk.step = NULL;
	nt_lk_munlock(&s.lk);
}

/* A child of a locker of shared memory: it maps every page, then writes it. */
static void shared_child(struct state *s)
{
	const char *who = "child of the memfd locker";
	struct nt_lk_events none = { 0 };
	volatile char sum = 0;
	size_t i;

	snprintf(s->lk.label, sizeof(s->lk.label), "%s", who);
	s->lk.base = s->lk.now;
	for (i = 0; i < s->r.a.npages; i++)
		sum += s->r.a.addr[i * s->r.a.page_size];
	check_own_unlocked(s, who);
	check_locker_locked(s, who, s->r.a.len / 1024 / 2);
	nt_area_fill(&s->r.a, SEED_C1);
	nt_lk_snapshot(&s->lk, true);
	/* The pages are the locker's own, still locked by it: no copy, no event. */
	nt_lk_check_flags(&s->lk, true, true);
	nt_lk_check_nodes(&s->lk, false, NULL);
	nt_lk_check_nodes(&s->lk, true, NULL);
	nt_lk_check_events(&s->lk, &none);
}

#define SHARED_CHILD_CHECKS	7
#define SHARED_CHECKS	(2 * NT_LK_LOCKED_CHECKS + SHARED_CHILD_CHECKS + NT_LK_UNLOCKED_CHECKS)

/*
 * The same fork() over a memfd mapped shared: nothing is copied on write.
 * The child's VMA is not locked (VmLck 0, smaps Locked 0), the pages it maps
 * are the locker's, still locked, and what it writes is what the locker
 * reads back (mmap(2) MAP_SHARED); no counter moves.
 */
static void run_shared(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	struct state s = { .lk.t = t, .locker = getpid() };
	unsigned int until;
	pid_t pid;

	(void)arg;
	snprintf(s.lk.label, sizeof(s.lk.label), "memfd locker");
	s.lk.r = &s.r;
	s.pol.mode = MPOL_INTERLEAVE;
	s.pol.nodes = t->allowed;
	nt_lk_baseline(&s.lk);
	nt_lk_map(&s.lk, NT_MEMFD, len, &s.pol, true, local_node, &s.vma);
	s.lk.step = "before fork";
	nt_lk_locked(&s.lk, &s.pol, &s.vma, len / 1024, "their interleave node", false);
	until = nt_tap_count() + SHARED_CHILD_CHECKS;
	pid = fork_child();
	if (!pid) {
		shared_child(&s);
		_exit(0);
	}
	nt_tap_wait(pid, until, "child of the memfd locker");
	s.lk.seed = SEED_C1;
	s.lk.step = "after the child wrote its data";
	nt_lk_locked(&s.lk, &s.pol, &s.vma, len / 1024, "their interleave node", true);
	s.lk.step = NULL;
	nt_lk_munlock(&s.lk);
}

int main(int argc, char **argv)
{
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);

	nt_tap_plan(CHECKS + SHARED_CHECKS);
	nt_lk_in_child(&t, len, CHECKS, "locker", run, NULL);
	nt_lk_in_child(&t, len, SHARED_CHECKS, "memfd locker", run_shared, NULL);
	return nt_tap_finish();
}
