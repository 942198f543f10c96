// SPDX-License-Identifier: GPL-2.0
/*
 * munlock of pages of two memory cgroups queued in one CPU's mlock batch:
 * each memcg's LRU sizes stay exact, and the batch counters mean what their
 * names say.
 *
 * An LRU list, its size and its lru_lock belong to a lruvec, one per memcg
 * per node (Documentation/admin-guide/cgroup-v2.rst, memory.stat
 * "unevictable"). A batch that holds pages of two memcgs must move each page
 * on its own memcg's lists, under that lruvec's lock, and account the size
 * change to that memcg. The kernel-series batches the size changes per run
 * of pages of one lruvec, so the runs are what this test varies:
 *   "alternating": the memcg changes at every page of the area,
 *   "grouped":     the first half of the area is A's, the second half B's.
 * One child, pinned to one CPU and bound to one node, faults each page while
 * in the memcg the page is to be charged to (a page is charged to the memcg
 * of the task that faults it), mlocks the area, then munlocks it. Checked:
 * - each memcg's memory.stat "unevictable" is its half of the area after
 *   mlock, and 0 after munlock;
 * - where /proc/vmstat has the mlock_batch_* counters (CONFIG_MLOCK_BATCH_STATS,
 *   mm/Kconfig of the kernel-series: mlock_batch_pages counts the base pages
 *   drained, mlock_batch_locks one lru_lock per run of pages of one lruvec):
 *   the munlock drained exactly the area's pages; alternating, it took one
 *   lru_lock per page; grouped, one per drain and at most one more, for the
 *   one drain in which the two halves meet.
 * A batch of pages of one memcg taking a lock per page would fail the
 * grouped case; a drain keeping one lock across memcgs would fail the
 * alternating one and the memcgs' sizes.
 *
 * Needs root and the memory controller in cgroup v2 at /sys/fs/cgroup.
 * The counters are system-wide: exact only while nothing else locks memory.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "area.h"
#include "cgroup.h"
#include "counters.h"
#include "expect.h"
#include "harness.h"
#include "nodes.h"
#include "tap.h"

#define NPAGES		64	/* several drains of any batch size, halves even */
#define NCASES		2
#define CHECKS_PER_CASE	3	/* memcg sizes locked, unlocked; batch counters */

static struct {
	const char *name[2];	/* memcgs A and B: scratch groups (lib/cgroup.h) */
	bool have_stats;	/* mlock_batch_* in /proc/vmstat */
	long page_size;
	char *scratch;		/* one page: mlock()+munlock() drains this CPU */
} m;

static void batch_read(struct nt_mlock_batch *b)
{
	int err = nt_mlock_batch_read(b);

	if (err)
		nt_tap_bail("reading the mlock_batch_* counters of /proc/vmstat: %s", strerror(-err));
}

/* munlock() ends with lru_add_drain(): this CPU's batches are empty after it. */
static void drain_this_cpu(void)
{
	if (mlock(m.scratch, m.page_size) || munlock(m.scratch, m.page_size))
		nt_tap_bail("mlock/munlock of the scratch page: %s", strerror(errno));
}

static long unevictable(int g)
{
	long v = -1;
	int err = nt_cgroup_flush(m.name[g]);

	if (!err)
		err = nt_cgroup_stat(m.name[g], "memory.stat", "unevictable", &v);
	if (err)
		nt_tap_bail("%s: reading memory.stat unevictable: %s", m.name[g], strerror(-err));
	return v;
}

/* Which memcg page i of the area is charged to. */
static int group_of(int i, bool alternating)
{
	return alternating ? i % 2 : i >= NPAGES / 2;
}

static bool check_sizes(long want, const char *label, const char *step)
{
	long a = unevictable(0), b = unevictable(1);

	nt_tap_diag("%s, %s: memory.stat unevictable A %ld, B %ld, expected %ld each",
		    label, step, a, b, want);
	return nt_tap_result(a == want && b == want,
			     "%s: each memcg's unevictable is its locked pages, %s", label, step);
}

static void check_counters(const struct nt_mlock_batch *b0, const struct nt_mlock_batch *b1,
			   bool alternating, const char *label)
{
	long drains = b1->drains - b0->drains, pages = b1->pages - b0->pages;
	long locks = b1->locks - b0->locks;
	bool ok;

	nt_tap_diag("%s: munlock of %d pages: %ld drains, %ld pages, %ld lru_locks",
		    label, NPAGES, drains, pages, locks);
	if (alternating) {
		nt_tap_diag("%s: expected one lru_lock per page, the memcg changes at each", label);
		ok = locks == NPAGES;
	} else {
		nt_tap_diag("%s: expected one lru_lock per drain, one more where A meets B", label);
		ok = drains > 0 && locks >= drains && locks <= drains + 1;
	}
	nt_tap_result(pages == NPAGES && ok,
		      "%s: munlock drains the area's pages, one lru_lock per run of one memcg",
		      label);
}

static void run_case(int node, bool alternating)
{
	const char *label = alternating ? "memcgs alternating" : "memcgs grouped";
	size_t len = NPAGES * m.page_size;
	struct nt_policy pol;
	struct nt_mlock_batch b0, b1;
	char *p;
	int i;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	nt_policy_one(&pol, MPOL_BIND, node);
	if (nt_set_task_policy(&pol))
		nt_tap_bail("set_mempolicy(MPOL_BIND, node %d): %s", node, strerror(errno));
	for (i = 0; i < NPAGES; i++) {
		nt_scratch_enter(m.name[group_of(i, alternating)]);
		p[i * m.page_size] = 1;
	}
	nt_scratch_enter(NULL);
	if (nt_set_task_policy(NULL))
		nt_tap_bail("set_mempolicy(MPOL_DEFAULT): %s", strerror(errno));
	if (mlock(p, len))
		nt_tap_bail("mlock: %s", strerror(errno));
	/* Every page on its memcg's unevictable list, no batch pending */
	drain_this_cpu();
	check_sizes(NPAGES / 2 * m.page_size, label, "locked");
	if (m.have_stats)
		batch_read(&b0);
	if (munlock(p, len))
		nt_tap_bail("munlock: %s", strerror(errno));
	if (m.have_stats)
		batch_read(&b1);
	check_sizes(0, label, "munlocked");
	if (m.have_stats)
		check_counters(&b0, &b1, alternating, label);
	else
		nt_tap_skip("no mlock_batch_* counters in /proc/vmstat: they come with the numa-matrix series (CONFIG_MLOCK_BATCH_STATS), this kernel does not have it",
			    "%s: munlock drains the area's pages, one lru_lock per run of one memcg",
			    label);
	if (munmap(p, len))
		nt_tap_bail("munmap: %s", strerror(errno));
}

int main(void)
{
	struct nt_topology t;
	cpu_set_t saved;
	struct nt_mlock_batch probe;
	int g, node, cpu, err;

	nt_test_start();
	if (geteuid())
		nt_tap_skip_all("needs root: cgroups");
	if (numa_available() < 0)
		nt_tap_skip_all("libnuma says NUMA is not available (numa_available() < 0)");
	err = nt_topology_read(&t);
	if (err)
		nt_tap_bail("reading the node topology: %s", strerror(-err));
	nt_scratch_start(true);
	for (g = 0; g < 2; g++)
		m.name[g] = nt_scratch_create("nt-batch-%c-%d", 'a' + g, getpid());
	m.page_size = sysconf(_SC_PAGESIZE);
	m.have_stats = !nt_mlock_batch_read(&probe);
	m.scratch = mmap(NULL, m.page_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m.scratch == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	m.scratch[0] = 1;
	/* One CPU: the batches under test are this CPU's; its node's memory */
	node = nt_memory_node_with_cpus(&t);
	if (node < 0)
		node = nt_mask_next(&t.memory, -1);
	cpu = nt_pin_cpu(node, &saved);
	if (cpu < 0)
		nt_tap_bail("cannot pin to a CPU: %s", strerror(-cpu));
	nt_tap_diag("pinned to CPU %d, the area bound to node %d", cpu, node);

	nt_tap_plan(NCASES * CHECKS_PER_CASE);
	run_case(node, true);
	run_case(node, false);
	nt_affinity_restore(&saved);
	nt_scratch_end();
	return nt_tap_finish();
}
