// SPDX-License-Identifier: GPL-2.0
/*
 * A locked private mapping of a file (a memfd): reading a page maps the
 * file's page-cache page and mlocks it; writing it then replaces it with an
 * anonymous copy, which is mlocked, and munlocks the original. The counters
 * must say exactly that, whatever order the per-CPU batch saw it in.
 *
 * The mapping is locked with mlock2(MLOCK_ONFAULT), interleaved over every
 * usable memory node (VMA policy: it places the anonymous copies; the index
 * is the file offset in pages, with no inode bias, lib/expect.h), in a child
 * pinned to one CPU. Per page, from 6.1's code:
 * - the read fault maps the page-cache page P into the locked VMA
 *   (page_add_file_rmap() -> mlock_vma_page()): P mlocked, queued;
 * - the write fault copies P to a new anonymous page N (wp_page_copy():
 *   mlock_new_page(N), queued) and unmaps P from the locked VMA
 *   (page_remove_rmap() -> munlock_vma_page()): P queued for munlock.
 * Once drained, each page counts unevictable_pgs_mlocked twice (P and N) and
 * munlocked once (P), and ends with N mlocked and unevictable, P neither.
 * N is culled once. Whether P is culled (and then rescued) depends on
 * whether P, new in the page cache, had reached the LRU from this CPU's
 * LRU-add batch when its mlock was drained from the mlock batch: the two
 * batches fill at different rates (measured on 4node, baseline: 86 of 256
 * originals culled and rescued when each page is read then written at once).
 * So culled and rescued are not checked one by one, but every original that
 * was culled must have been rescued: culled - rescued = the number of pages
 * while locked, and culled = rescued after munlock().
 *
 * Two cells: each page read then written at once, so that a batch holds
 * the mlock and the munlock of the same page P in that order (3 entries per
 * page: P mlock, N mlock, P munlock); and every page read, then every page
 * written. Each is checked after the faults (draining every CPU first: faults
 * leave pages on the batch) with lib/locked.h nt_lk_locked(), then munlock()
 * must bring everything back to its baseline.
 *
 * A third cell keeps the file locked through a shared mapping as well: every
 * P is mlocked (mlock_count 1) and on the unevictable list before the
 * private mapping touches it. For that, the file's pages are faulted in and
 * every CPU drained before the shared mapping is locked: a page that still
 * waits on a CPU's LRU-add batch when its mlock is drained gets mlock_count
 * 0, not 1 (Documentation/mm/unevictable-lru.rst: the count errs on the low
 * side when the page is not on an LRU yet), and the count-1 munlock below
 * would then unlock it legitimately. Without this, it is a matter of timing:
 * when mlock() faults in a new file with both batches empty and of one size
 * (31 on 6.12, 15 on 6.1), each page's LRU-add drains before its mlock does;
 * with an mlock batch of 32 (kernel-series, 6.12 patch 6), 36 of 256 pages
 * did not (4node). Each page of the file is mapped privately on
 * its own, one-page VMAs with a hole between them, so that a read fault maps
 * that page alone (fault-around stops at the VMA) and the batch gets, per
 * page, P mlock (count 2), N mlock, P munlock (count 1) in that order, five
 * pages per batch. Every P must stay mlocked and unevictable, and the events
 * are exact: N mlocked and culled once each, nothing munlocked (P's count
 * only goes down to 1), nothing rescued. Done the other way round, the
 * munlock would take P's count to 0 and unlock a page its shared mapping
 * still locks. Then munlock() of everything: back at the baseline.
 *
 * Usage: private_file_locked [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 */
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "locked.h"
#include "pageflags.h"
#include "placement.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(1UL << 20)
#define CELL_CHECKS	(NT_LK_LOCKED_CHECKS + NT_LK_UNLOCKED_CHECKS + 2)

static const char *const cells[] = {
	"read then write, page by page",
	"read everything, then write everything",
};

#define CELLS	(sizeof(cells) / sizeof(cells[0]))

/* unevictable_pgs_culled - unevictable_pgs_rescued since the baseline is want. */
static void check_culled_rescued(const struct nt_lk *lk, long want)
{
	long culled = lk->now.vmstat[NT_PGS_CULLED] - lk->base.vmstat[NT_PGS_CULLED];
	long rescued = lk->now.vmstat[NT_PGS_RESCUED] - lk->base.vmstat[NT_PGS_RESCUED];

	if (culled - rescued != want)
		nt_tap_diag("unevictable_pgs_culled %+ld, rescued %+ld", culled, rescued);
	nt_tap_result(culled - rescued == want,
		      "%s: unevictable_pgs_culled - rescued = %+ld: every original culled was rescued",
		      lk->label, want);
}

static void run_cell(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	const char *const *cell = arg;
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = t->allowed };
	struct nt_lk lk = { .t = t };
	struct nt_region r;
	struct nt_vma vma;
	volatile char *p;
	size_t i, n;
	char sum = 0;

	snprintf(lk.label, sizeof(lk.label), "%s", *cell);
	lk.r = &r;
	nt_lk_map(&lk, NT_MEMFD_PRIVATE, len, &pol, false, local_node, &vma);
	n = r.a.npages;
	nt_lk_baseline(&lk);
	if (mlock2(r.a.addr, r.a.len, MLOCK_ONFAULT))
		nt_tap_bail("%s: mlock2: %s", lk.label, strerror(errno));
	p = (volatile char *)r.a.addr;
	for (i = 0; i < n; i++) {
		sum += p[i * r.a.page_size];
		if (cell == &cells[0])
			p[i * r.a.page_size] = sum;
	}
	for (i = 0; cell != &cells[0] && i < n; i++)
		p[i * r.a.page_size] = sum;
	/* The originals: mlocked and munlocked once each; culled and rescued alike. */
	lk.extra.mlocked = lk.extra.munlocked = n;
	lk.extra.culled = lk.extra.rescued = NT_LK_ANY;
	nt_lk_locked(&lk, &pol, &vma, len / 1024, "their interleave node", true);
	check_culled_rescued(&lk, n);
	nt_lk_munlock(&lk);
	check_culled_rescued(&lk, 0);
}

/* The private one-page mappings of the file: page k at base + 2k pages. */
struct copies {
	char *base;
	size_t n, ps;
};

static void map_copies(struct copies *c, int fd, size_t n, size_t ps)
{
	size_t k;

	c->n = n;
	c->ps = ps;
	c->base = mmap(NULL, 2 * n * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (c->base == MAP_FAILED)
		nt_tap_bail("reserving the private mappings: %s", strerror(errno));
	for (k = 0; k < n; k++) {
		char *at = c->base + 2 * k * ps;

		if (mmap(at, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, k * ps) != at ||
		    mlock2(at, ps, MLOCK_ONFAULT))
			nt_tap_bail("mapping and locking file page %zu privately: %s", k,
				    strerror(errno));
	}
}

/* The copies: on the local node, mlocked and unevictable, holding what was written. */
static void check_copies(struct nt_lk *lk, const struct copies *c, int local_node,
			 long found[NT_MAX_NODES])
{
	struct nt_flags_want locked = { .mlocked = true, .unevictable = true };
	int *status = calloc(c->n, sizeof(*status));
	size_t k, bad = 0, wrong = 0;

	if (!status || nt_pages_nodes(c->base, c->n, 2 * c->ps, status))
		nt_tap_bail("%s: move_pages of the copies", lk->label);
	memset(found, 0, NT_MAX_NODES * sizeof(found[0]));
	for (k = 0; k < c->n; k++) {
		if (status[k] >= 0 && status[k] < NT_MAX_NODES)
			found[status[k]]++;
		bad += status[k] != local_node;
		wrong += *(c->base + 2 * k * c->ps) != (char)(k + 1);
	}
	free(status);
	nt_tap_result(!bad, "%s: every copy on the local node %d", lk->label, local_node);
	nt_tap_result(nt_check_flags(c->base, c->n, 2 * c->ps, &locked) == 0,
		      "%s: every copy KPF_MLOCKED and KPF_UNEVICTABLE", lk->label);
	nt_tap_result(!wrong, "%s: every copy holds what was written to it", lk->label);
}

static void run_shared_too(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	struct nt_lk lk = { .t = t };
	struct nt_lk_events ev = { 0 };
	struct nt_counters before;
	long found[NT_MAX_NODES];
	struct nt_region r;
	struct copies c;
	volatile char *p;
	size_t k, n;
	char sum = 0;

	snprintf(lk.label, sizeof(lk.label), "%s", (const char *)arg);
	lk.r = &r;
	if (local_node < 0)
		nt_tap_bail("%s: the CPU's node has no memory", lk.label);
	nt_lk_baseline(&lk);
	before = lk.base;
	/* The file, mapped shared and locked: every page P in it mlocked, unevictable. */
	if (nt_region_map(&r, NT_MEMFD, len, sysconf(_SC_PAGESIZE), 0))
		nt_tap_bail("%s: mapping the file shared", lk.label);
	/* Every P on an LRU first, so that its mlock counts 1 (above). */
	memset(r.a.addr, 0, r.a.len);
	if (nt_drain_all() || nt_area_lock(&r.a))
		nt_tap_bail("%s: draining, locking the file shared", lk.label);
	n = r.a.npages;
	nt_lk_baseline(&lk);
	map_copies(&c, r.fd, n, r.a.page_size);
	for (k = 0; k < n; k++) {
		p = c.base + 2 * k * c.ps;
		sum += *p;
		*p = (char)(k + 1);
	}
	nt_lk_snapshot(&lk, true);
	nt_lk_check_flags(&lk, true, true);
	check_copies(&lk, &c, local_node, found);
	nt_lk_check_nodes(&lk, false, found);
	nt_lk_check_nodes(&lk, true, found);
	ev.mlocked = ev.culled = n;
	nt_lk_check_events(&lk, &ev);

	if (munmap(c.base, 2 * n * c.ps) || munlock(r.a.addr, r.a.len))
		nt_tap_bail("%s: unmapping the copies, munlock: %s", lk.label, strerror(errno));
	/* Since before the shared lock: P and N locked and unlocked once each. */
	snprintf(lk.label, sizeof(lk.label), "%s: all unlocked", (const char *)arg);
	lk.base = before;
	ev.mlocked = ev.culled = ev.munlocked = ev.rescued = 2 * n;
	/* The unmap of the copies leaves pages on this CPU's batch. */
	nt_lk_snapshot(&lk, true);
	nt_lk_check_nodes(&lk, false, NULL);
	nt_lk_check_nodes(&lk, true, NULL);
	nt_lk_check_events(&lk, &ev);
	nt_lk_check_flags(&lk, false, false);
	(void)sum;
}

#define SHARED_TOO	"file locked shared too, one page per private mapping"
#define SHARED_CHECKS	11

int main(int argc, char **argv)
{
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	unsigned int c;
	int node;

	nt_tap_plan(CELLS * CELL_CHECKS + SHARED_CHECKS);
	for (c = 0; c < CELLS; c++)
		nt_lk_in_child(&t, len, CELL_CHECKS, cells[c], run_cell, (void *)&cells[c]);
	/*
	 * Its copies are placed by the local node: run it where that has memory
	 * (on a machine with a memory-less CPU node the scheduler may otherwise
	 * put the child there; seen once in a one-guest suite on hotplug-memless).
	 */
	node = nt_memory_node_with_cpus(&t);
	if (node < 0)
		for (c = 0; c < SHARED_CHECKS; c++)
			nt_tap_skip("no memory node has a CPU", "%s: check %u", SHARED_TOO, c + 1);
	else
		nt_lk_in_child_on(&t, node, len, SHARED_CHECKS, SHARED_TOO, run_shared_too,
				  SHARED_TOO);
	return nt_tap_finish();
}
