// SPDX-License-Identifier: GPL-2.0
/*
 * mlock and munlock of one page queued in the same per-CPU batch keep their
 * order, on every node, and the accounting moves by exactly what happened.
 *
 * 6.1 defers the LRU work of mlock and munlock to per-CPU batches that drain
 * 15 pages at a time (the kernel-series queues one batch per node). A private
 * file mapping locked with MLOCK_ONFAULT gives an mlock and a munlock of one
 * page P with no drain between them, on one CPU:
 *   read fault  maps the page cache page P: P is queued for mlock;
 *   write fault copies P to a new anonymous page N (queued for mlock) and
 *               unmaps P: P is queued for munlock.
 * Case "unlocked": nothing else locks P, so after the drain P must be neither
 * mlocked nor unevictable, N must be both; the counters move by exactly one
 * mlock of P and of N, one munlock of P.
 * Case "still locked": a shared mapping of P was mlocked first (mlock_count
 * 1), so the queued mlock raises P's count to 2 and the munlock lowers it to
 * 1: P must stay mlocked and unevictable. Run in the other order, the munlock
 * would find the count at 1, unlock P, and the mlock after it would see an
 * evictable page: this case fails if the two are reordered.
 * Each case runs with P on every memory node in turn, N on the next one.
 *
 * Where /proc/vmstat has the mlock_batch_* counters (CONFIG_MLOCK_BATCH_STATS,
 * kernel-series), it also checks that no batch drained between the two
 * faults (so both really waited in one batch), and that munlock() of an area
 * interleaved over all memory nodes took one lru_lock per drain (a batch holds
 * the pages of one node, of one memcg here) on up to 8 nodes, and fewer
 * lru_locks than pages on more.
 *
 * Needs root (pagemap PFNs, kpageflags, stat_refresh). Counters are
 * system-wide: exact only while nothing else locks or unlocks memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "area.h"
#include "counters.h"
#include "harness.h"
#include "expect.h"
#include "nodes.h"
#include "pageflags.h"
#include "placement.h"
#include "tap.h"

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT	0x01
#endif

#define IL_PAGES	1024	/* interleaved area for the lock count check */

static long page_size;
static char *scratch;		/* one page, mlock()+munlock() to drain this CPU */
static bool have_batch_stats;

/* The series' batch counters, all 0 on a kernel without them. */
static void batch_read(struct nt_mlock_batch *b)
{
	int err;

	memset(b, 0, sizeof(*b));
	if (!have_batch_stats)
		return;
	err = nt_mlock_batch_read(b);
	if (err)
		nt_tap_bail("reading the mlock_batch_* counters of /proc/vmstat: %s", strerror(-err));
}

/* munlock() ends with lru_add_drain(): empties this CPU's batches. */
static void drain_this_cpu(void)
{
	if (mlock(scratch, page_size) || munlock(scratch, page_size))
		nt_tap_bail("mlock/munlock of the scratch page: %s", strerror(errno));
}

static uint64_t pfn_of(const void *addr)
{
	uint64_t pfn;
	int err = nt_pages_pfns(addr, 1, page_size, &pfn);

	if (err || !pfn)
		nt_tap_bail("no frame number for %p in /proc/self/pagemap: %s", addr,
			    err ? strerror(-err) : "not present");
	return pfn;
}

/* kpageflags of the page mapped at addr. */
static uint64_t kflags(const void *addr)
{
	uint64_t f;
	int err = nt_pages_flags(addr, 1, page_size, &f);

	if (err || (f & NT_PAGE_ABSENT))
		nt_tap_bail("no page flags for %p: %s", addr, err ? strerror(-err) : "not present");
	return f;
}

static bool flag(uint64_t f, int bit)
{
	return f & NT_KPF(bit);
}

static int node_of(void *addr)
{
	int status = -1, err = nt_pages_nodes(addr, 1, page_size, &status);

	if (err)
		nt_tap_bail("move_pages query: %s", strerror(-err));
	return status;
}

static void set_bind(int node)
{
	struct nt_policy pol;

	nt_policy_one(&pol, MPOL_BIND, node);
	if (nt_set_task_policy(&pol))
		nt_tap_bail("set_mempolicy(MPOL_BIND, node %d): %s", node, strerror(errno));
}

struct expect {
	long nr_mlock, mlocked, munlocked, culled, rescued;
};

static bool check_delta(const struct nt_counters *d, const struct expect *e, int p_node,
			int n_node)
{
	long want_node[2] = { 0, 0 };
	bool ok = true;

	/* Only N stays newly locked: Mlocked of its node grows by a page, others by 0. */
	want_node[1] = page_size / 1024;
#define CHECK(got, want, what) do { \
		if ((got) != (want)) { \
			nt_tap_diag("%s moved by %ld, expected %ld", what, (long)(got), (long)(want)); \
			ok = false; \
		} \
	} while (0)
	CHECK(d->vmstat[NT_NR_MLOCK], e->nr_mlock, "nr_mlock");
	CHECK(d->vmstat[NT_PGS_MLOCKED], e->mlocked, "unevictable_pgs_mlocked");
	CHECK(d->vmstat[NT_PGS_MUNLOCKED], e->munlocked, "unevictable_pgs_munlocked");
	CHECK(d->vmstat[NT_PGS_CULLED], e->culled, "unevictable_pgs_culled");
	CHECK(d->vmstat[NT_PGS_RESCUED], e->rescued, "unevictable_pgs_rescued");
	CHECK(d->vmstat[NT_PGS_STRANDED], 0, "unevictable_pgs_stranded");
	if (p_node != n_node)
		CHECK(d->mlocked_kb[p_node], want_node[0], "Mlocked (kB) of P's node");
	CHECK(d->mlocked_kb[n_node], want_node[1], "Mlocked (kB) of N's node");
#undef CHECK
	return ok;
}

/*
 * One case: P (a memfd page) on p_node, its private copy N on n_node. With
 * still_locked, a shared mapping of P is mlocked first.
 */
static void run_case(const struct nt_topology *t, int p_node, int n_node, bool still_locked)
{
	const char *name = still_locked ? "still locked" : "unlocked";
	struct nt_mlock_batch b0, b1;
	struct nt_counters before, after, delta;
	char *shared, *priv;
	uint64_t p_pfn, n_pfn, pf, nf;
	struct expect e;
	bool ok = true;
	int fd;

	set_bind(p_node);
	fd = memfd_create("mlock_batch_order", 0);
	if (fd < 0)
		nt_tap_bail("memfd_create: %s", strerror(errno));
	if (pwrite(fd, "P", 1, 0) != 1)
		nt_tap_bail("writing the memfd: %s", strerror(errno));
	shared = mmap(NULL, page_size, PROT_READ, MAP_SHARED, fd, 0);
	priv = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (shared == MAP_FAILED || priv == MAP_FAILED)
		nt_tap_bail("mmap of the memfd: %s", strerror(errno));
	if (*(volatile char *)shared != 'P')
		nt_tap_bail("memfd page reads back wrong");
	p_pfn = pfn_of(shared);
	if (node_of(shared) != p_node)
		nt_tap_bail("memfd page on node %d, not %d", node_of(shared), p_node);
	/* On an LRU list first: else the count of P's first mlock is lost (6.1) */
	drain_this_cpu();
	if (still_locked && mlock(shared, page_size))
		nt_tap_bail("mlock of the shared mapping: %s", strerror(errno));
	if (mlock2(priv, page_size, MLOCK_ONFAULT))
		nt_tap_bail("mlock2(MLOCK_ONFAULT): %s", strerror(errno));
	drain_this_cpu();	/* P on its LRU list, every batch of this CPU empty */
	pf = kflags(shared);
	if (!flag(pf, NT_KPF_LRU))
		nt_tap_bail("P is not on an LRU list after a drain (flags %#llx)",
			    (unsigned long long)pf);
	if (nt_counters_read(&before, &t->memory))
		nt_tap_bail("cannot read the counters");
	set_bind(n_node);
	batch_read(&b0);
	if (*(volatile char *)priv != 'P')	/* read fault: mlock P */
		nt_tap_bail("private mapping reads back wrong");
	*(volatile char *)priv = 'N';		/* COW: mlock N, munlock P */
	batch_read(&b1);
	drain_this_cpu();
	if (nt_counters_read(&after, &t->memory))
		nt_tap_bail("cannot read the counters");
	nt_counters_delta(&after, &before, &delta);

	n_pfn = pfn_of(priv);
	pf = kflags(shared);
	nf = kflags(priv);
	if (n_pfn == p_pfn) {
		nt_tap_diag("the write did not copy the page");
		ok = false;
	}
	if (have_batch_stats && b1.drains != b0.drains) {
		nt_tap_diag("%ld batch drains between the two faults: the mlock and the "
			    "munlock of P were not in one batch", b1.drains - b0.drains);
		ok = false;
	}
	if (flag(pf, NT_KPF_MLOCKED) != still_locked || flag(pf, NT_KPF_UNEVICTABLE) != still_locked) {
		nt_tap_diag("P: mlocked %d unevictable %d, expected %d %d", flag(pf, NT_KPF_MLOCKED),
			    flag(pf, NT_KPF_UNEVICTABLE), still_locked, still_locked);
		ok = false;
	}
	if (!flag(nf, NT_KPF_MLOCKED) || !flag(nf, NT_KPF_UNEVICTABLE)) {
		nt_tap_diag("N: mlocked %d unevictable %d, expected 1 1", flag(nf, NT_KPF_MLOCKED),
			    flag(nf, NT_KPF_UNEVICTABLE));
		ok = false;
	}
	if (node_of(priv) != n_node) {
		nt_tap_diag("N landed on node %d, not %d", node_of(priv), n_node);
		ok = false;
	}
	/*
	 * unlocked: P mlocked (event, culled to the unevictable list), N
	 * mlocked (event, culled), P munlocked (event, rescued). still locked:
	 * P's PG_mlocked was already set and its count goes 1 -> 2 -> 1, so
	 * only N moves.
	 */
	if (still_locked)
		e = (struct expect){ .nr_mlock = 1, .mlocked = 1, .culled = 1 };
	else
		e = (struct expect){ .nr_mlock = 1, .mlocked = 2, .munlocked = 1, .culled = 2,
				     .rescued = 1 };
	/* And the drain in between: mlock() and munlock() of the scratch page. */
	e.mlocked++;
	e.munlocked++;
	e.culled++;
	e.rescued++;
	ok &= check_delta(&delta, &e, p_node, n_node);
	nt_tap_result(ok, "%s: mlock then munlock of P (node %d) in one batch, copy on node %d",
		      name, p_node, n_node);

	if (still_locked) {
		if (munlock(shared, page_size))
			nt_tap_bail("munlock of the shared mapping: %s", strerror(errno));
		pf = kflags(shared);
		nt_tap_result(!flag(pf, NT_KPF_MLOCKED) && !flag(pf, NT_KPF_UNEVICTABLE),
			      "%s: P (node %d) unlocked and evictable after munlock of its "
			      "last locked mapping", name, p_node);
	}
	munmap(priv, page_size);
	munmap(shared, page_size);
	close(fd);
	drain_this_cpu();
}

/*
 * The series' batches (mm/mlock.c, MLOCK_PVEC_SLOTS): a CPU has a batch for
 * each of up to 8 nodes; the pages of further nodes share one more batch,
 * drained like 6.1's single pagevec, one lru_lock per change of node.
 */
#define MLOCK_BATCH_SLOTS 8

/* munlock() of an area interleaved over all memory nodes: lru_locks per drain. */
static void lock_count(const struct nt_topology *t)
{
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = t->memory };
	struct nt_mlock_batch b0, b1;
	size_t len = IL_PAGES * page_size;
	int nodes = nt_mask_weight(&t->memory);
	long drains, pages, locks;
	bool ok;
	char *p;

	if (!have_batch_stats) {
		nt_tap_skip("no mlock_batch_* counters in /proc/vmstat: they come with the numa-matrix series (CONFIG_MLOCK_BATCH_STATS), this kernel does not have it",
			    "munlock of an interleaved area: its %d pages drained, lru_locks as its batches allow",
			    IL_PAGES);
		return;
	}
	if (nt_set_task_policy(&pol))
		nt_tap_bail("set_mempolicy(MPOL_INTERLEAVE): %s", strerror(errno));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		nt_tap_bail("mmap MAP_LOCKED: %s", strerror(errno));
	drain_this_cpu();
	batch_read(&b0);
	if (munlock(p, len))
		nt_tap_bail("munlock: %s", strerror(errno));
	batch_read(&b1);
	drains = b1.drains - b0.drains;
	pages = b1.pages - b0.pages;
	locks = b1.locks - b0.locks;
	nt_tap_diag("munlock of %d pages interleaved over %d nodes: %ld drains, %ld pages, %ld lru_locks",
		    IL_PAGES, nodes, drains, pages, locks);
	/*
	 * Exactly the area's pages went through the batches (the scratch
	 * page's drain came before b0). With a batch per node, every drain
	 * held the pages of one lruvec, one node of the root memcg: one
	 * lru_lock each. With more nodes than batches, the shared batch
	 * relocks per change of node, but the batches of single nodes still
	 * save locks: fewer than one per page (6.1: one per page, interleaved).
	 */
	if (nodes <= MLOCK_BATCH_SLOTS) {
		nt_tap_diag("%d nodes, at most %d: expected one lru_lock per drain",
			    nodes, MLOCK_BATCH_SLOTS);
		ok = locks == drains;
	} else {
		nt_tap_diag("%d nodes, more than %d: expected drains <= lru_locks < pages",
			    nodes, MLOCK_BATCH_SLOTS);
		ok = drains <= locks && locks < pages;
	}
	nt_tap_result(pages == IL_PAGES && drains > 0 && ok,
		      "munlock of an interleaved area: its %d pages drained, lru_locks as its batches allow",
		      IL_PAGES);
	munmap(p, len);
	nt_set_task_policy(NULL);
}

int main(void)
{
	struct nt_topology t;
	cpu_set_t saved;
	struct nt_mlock_batch probe;
	int node, next, nodes, err;

	nt_test_start();
	if (geteuid())
		nt_tap_skip_all("needs root: pagemap PFNs, kpageflags, stat_refresh");
	if (numa_available() < 0)
		nt_tap_skip_all("libnuma says NUMA is not available (numa_available() < 0)");
	err = nt_topology_read(&t);
	if (err)
		nt_tap_bail("reading the node topology: %s", strerror(-err));
	page_size = sysconf(_SC_PAGESIZE);
	nodes = nt_mask_weight(&t.memory);
	have_batch_stats = !nt_mlock_batch_read(&probe);
	scratch = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (scratch == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	scratch[0] = 1;
	/* One CPU: the per-CPU batches under test are this CPU's. */
	if (nt_pin_cpu(-1, &saved) < 0)
		nt_tap_bail("cannot pin to a CPU");

	nt_tap_plan(3 * nodes + 1);
	nt_mask_for_each(node, &t.memory) {
		next = nt_mask_next(&t.memory, node);
		if (next < 0)
			next = nt_mask_next(&t.memory, -1);
		run_case(&t, node, next, false);
		run_case(&t, node, next, true);
	}
	nt_set_task_policy(NULL);
	lock_count(&t);
	nt_affinity_restore(&saved);
	return nt_tap_finish();
}
