// SPDX-License-Identifier: GPL-2.0
/*
 * Concurrent mlock() and munlock() of overlapping ranges from threads pinned
 * to CPUs of different nodes: whatever order the per-CPU batches are drained
 * in, the final state must be exact.
 *
 * A range interleaved over every usable memory node (VMA policy) is faulted
 * in. One thread per node with a CPU (at least two, on two CPUs; at most
 * MAX_THREADS), each pinned to a CPU of its node, repeatedly mlocks and
 * munlocks its own two-thirds of the range, each starting a different
 * number of pages in, so every page is locked and unlocked by several
 * threads at once; between calls each also munlocks a slice of its
 * neighbour's range. Each thread stops after ITERATIONS rounds or
 * RUN_SECONDS, whichever comes first; an alarm ends the test (as a failure)
 * if they have not stopped within WATCHDOG_SECONDS.
 *
 * Then, with every CPU drained (the threads' last munlocks may sit on their
 * CPUs' batches):
 * - mlock() of the whole range: one VMA again, smaps Locked and VmLck the
 *   whole range, per-node Mlocked and Unevictable exactly the pages found on
 *   each node, every page KPF_MLOCKED and KPF_UNEVICTABLE, and nr_mlock
 *   equal to mlocked - munlocked - stranded - cleared (the events' counts
 *   depend on the interleaving; that identity does not);
 * - munlock() of the whole range: everything back at its baseline, every
 *   page's flags clear, the data intact.
 * For private anonymous memory and for a memfd.
 *
 * Usage: concurrent_mlock [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 * Needs root and two CPUs.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "locked.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE		(1UL << 20)
#define MAX_THREADS		8
#define ITERATIONS		200
#define RUN_SECONDS		2
#define WATCHDOG_SECONDS	120
#define SEED			0x72616365UL
#define KIND_CHECKS		17

static const enum nt_kind kinds[] = { NT_PRIVATE_ANON, NT_MEMFD };

struct worker {
	pthread_t thread;
	int cpu;
	struct nt_area *a;
	size_t first, n;		/* its own pages */
	size_t other_first, other_n;	/* a slice of its neighbour's */
	unsigned int rounds;
	int err;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	size_t ps = w->a->page_size;
	char *own = w->a->addr + w->first * ps, *other = w->a->addr + w->other_first * ps;
	double end = now() + RUN_SECONDS;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(w->cpu, &one);
	if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one)) {
		w->err = EINVAL;
		return NULL;
	}
	while (w->rounds < ITERATIONS && now() < end && !w->err) {
		if (mlock(own, w->n * ps) || munlock(other, w->other_n * ps) ||
		    munlock(own, w->n * ps))
			w->err = errno;
		w->rounds++;
	}
	return NULL;
}

/* One CPU of each node that has one, or two CPUs of one node; 0 when there are not two. */
static int pick_cpus(const struct nt_topology *t, int *cpus)
{
	cpu_set_t set, allowed;
	int node, cpu, n = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return 0;
	nt_mask_for_each(node, &t->online) {
		if (n == MAX_THREADS || nt_node_cpus(node, &set) <= 0)
			continue;
		for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set) && CPU_ISSET(cpu, &allowed))
				break;
		if (cpu < CPU_SETSIZE)
			cpus[n++] = cpu;
	}
	for (cpu = 0; n == 1 && cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed) && cpu != cpus[0])
			cpus[n++] = cpu;
	return n >= 2 ? n : 0;
}

static void stress(struct nt_region *r, const int *cpus, int nthreads, const char *label)
{
	struct worker w[MAX_THREADS];
	size_t np = r->a.npages, n = np * 2 / 3, step = (np - n) / (nthreads - 1);
	double start = now();
	bool ok = true;
	int i;

	for (i = 0; i < nthreads; i++)
		w[i] = (struct worker){ .cpu = cpus[i], .a = &r->a, .first = i * step, .n = n };
	/* The middle half of the next thread's range. */
	for (i = 0; i < nthreads; i++) {
		w[i].other_first = w[(i + 1) % nthreads].first + n / 4;
		w[i].other_n = n / 2;
	}
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&w[i].thread, NULL, work, &w[i]))
			nt_tap_bail("%s: pthread_create failed", label);
	for (i = 0; i < nthreads; i++) {
		pthread_join(w[i].thread, NULL);
		nt_tap_diag("%s: thread on CPU %d: pages %zu-%zu and %zu-%zu of the other, %u rounds%s%s",
			    label, w[i].cpu, w[i].first, w[i].first + w[i].n - 1, w[i].other_first,
			    w[i].other_first + w[i].other_n - 1, w[i].rounds,
			    w[i].err ? ", error " : "", w[i].err ? strerror(w[i].err) : "");
		ok = ok && !w[i].err && w[i].rounds > 0;
	}
	nt_tap_result(ok, "%s: %d threads on CPUs of different nodes mlocked and munlocked overlapping ranges (%.1f s)",
		      label, nthreads, now() - start);
}

static void check_vmas(struct nt_lk *lk, const char *step)
{
	long kb;
	int vmas = -1;

	nt_smaps_sum(lk->r->a.addr, lk->r->a.len, "Rss", &kb, &vmas);
	nt_tap_result(vmas == 1, "%s: %s: one VMA again", lk->label, step);
}

static int cpus[MAX_THREADS], nthreads;

static void run_kind(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	enum nt_kind kind = *(const enum nt_kind *)arg;
	struct nt_lk_events any = {
		NT_LK_ANY, NT_LK_ANY, NT_LK_ANY, NT_LK_ANY, NT_LK_ANY, NT_LK_ANY,
	};
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = t->allowed };
	struct nt_lk lk = { .t = t };
	struct nt_region r;
	struct nt_vma vma;
	int err;

	/* The threads leave the main thread's CPU; it stays pinned. */
	alarm(WATCHDOG_SECONDS);
	snprintf(lk.label, sizeof(lk.label), "%s", nt_kind_names[kind]);
	lk.r = &r;
	nt_lk_map(&lk, kind, len, &pol, false, local_node, &vma);
	nt_area_fill(&r.a, SEED);
	nt_lk_baseline(&lk);
	stress(&r, cpus, nthreads, lk.label);

	/* The threads' last munlocks may still sit on their CPUs' batches. */
	if (nt_drain_all())
		nt_tap_bail("draining the CPUs' batches");
	err = nt_area_lock(&r.a);
	if (err)
		nt_tap_bail("%s: mlock: %s", lk.label, strerror(-err));
	nt_lk_snapshot(&lk, false);
	nt_lk_check_placement(&lk, &pol, &vma, "their interleave node");
	check_vmas(&lk, "mlock of the whole range");
	nt_lk_check_smaps(&lk, "Locked", len / 1024);
	nt_lk_check_vmlck(&lk, len / 1024);
	nt_lk_check_nodes(&lk, false, lk.found);
	nt_lk_check_nodes(&lk, true, lk.found);
	nt_lk_check_events(&lk, &any);
	nt_lk_check_flags(&lk, true, true);

	err = nt_area_unlock(&r.a);
	if (err)
		nt_tap_bail("%s: munlock: %s", lk.label, strerror(-err));
	nt_lk_snapshot(&lk, false);
	check_vmas(&lk, "munlock of the whole range");
	nt_lk_check_smaps(&lk, "Locked", 0);
	nt_lk_check_vmlck(&lk, 0);
	nt_lk_check_nodes(&lk, false, NULL);
	nt_lk_check_nodes(&lk, true, NULL);
	nt_lk_check_events(&lk, &any);
	nt_lk_check_flags(&lk, false, false);
	nt_lk_check_data(&lk, SEED);
	nt_region_unmap(&r);
}

int main(int argc, char **argv)
{
	unsigned int i, nkinds = sizeof(kinds) / sizeof(kinds[0]);
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);

	nthreads = pick_cpus(&t, cpus);
	if (!nthreads)
		nt_tap_skip_all("needs two CPUs this task may run on");
	if (len / sysconf(_SC_PAGESIZE) < (size_t)3 * nthreads)
		nt_tap_skip_all("the range needs at least 3 pages per thread");
	nt_tap_plan(nkinds * KIND_CHECKS);
	for (i = 0; i < nkinds; i++)
		nt_lk_in_child(&t, len, KIND_CHECKS, nt_kind_names[kinds[i]], run_kind,
			       (void *)&kinds[i]);
	return nt_tap_finish();
}
