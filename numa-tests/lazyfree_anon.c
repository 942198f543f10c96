// SPDX-License-Identifier: GPL-2.0
/*
 * madvise(MADV_FREE) of a written private anonymous area, bound to one node
 * and interleaved: the per-CPU lazyfree batch, which relocks the lruvec at
 * every page of an interleaved area when it drains.
 *
 * MADV_FREE queues each page on the CPU's lazyfree batch; its drain moves
 * the page to the inactive file list. Documented:
 * - madvise(2): MADV_FREE applies to private anonymous pages; "the freeing
 *   could be delayed until memory pressure occurs": the pages stay.
 * - Documentation/admin-guide/cgroup-v2.rst, memory.stat: pglazyfree
 *   "Amount of pages postponed to be freed under memory pressure": up by
 *   the area's pages.
 * - Documentation/filesystems/proc.rst: smaps LazyFree "shows the amount
 *   of memory which is marked by madvise(MADV_FREE)", which "might be
 *   lower than the real value due to optimizations": the per-CPU batch,
 *   so it is read after every CPU's batches are drained: the whole area.
 * - The kernel-doc of folio_mark_lazyfree() (6.12, rendered in
 *   Documentation/core-api/mm-api.rst; mark_page_lazyfree() in 6.1 says the
 *   same): it "moves @folio to the inactive file list". So every page is on
 *   an LRU list and not swap-backed (pagemap.rst: KPF_LRU, KPF_SWAPBACKED;
 *   the file lists hold the pages that are not), not on the active list
 *   (KPF_ACTIVE), and each node's inactive_file is up, and its
 *   active_anon + inactive_anon down, by the area's pages on it.
 * The counts are the test's memory cgroup's (memory.stat, and
 * memory.numa_stat per node: lib/lrupath.h).
 * On the multi-gen LRU the active and inactive lists are a view of
 * generations: the two checks that name them are skipped there.
 *
 * Usage: lazyfree_anon [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 8M)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "counters.h"
#include "harness.h"
#include "locked.h"
#include "lrupath.h"
#include "pageflags.h"
#include "snapshot.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(8UL << 20)
#define SEED		0x6c617a79UL
#define CHECKS		7

static struct nt_lru_test lt;

static void run(enum nt_place p)
{
	struct nt_lru_reading r0, r1;
	long counts[NT_MAX_NODES], kb = -1, bad;
	const char *pn = nt_place_names[p];
	const uint64_t lru_swapbacked = NT_KPF(NT_KPF_LRU) | NT_KPF(NT_KPF_SWAPBACKED);
	struct nt_area a;
	int *status, err;

	status = nt_lru_area(&lt, p, &a, SEED, counts);
	nt_lru_read(&lt, "pglazyfree", &r0);

	err = madvise(a.addr, a.len, MADV_FREE) ? errno : 0;
	if (err)
		nt_tap_diag("madvise: %s", strerror(err));
	nt_tap_result(!err, "%s: madvise(MADV_FREE) of the written area returns 0", pn);
	nt_lru_read(&lt, "pglazyfree", &r1);
	if (r1.event - r0.event != (long)a.npages)
		nt_tap_diag("pglazyfree %+ld, expected +%zu", r1.event - r0.event, a.npages);
	nt_tap_result(r1.event - r0.event == (long)a.npages, "%s: pglazyfree up by the area's pages", pn);
	err = nt_smaps_sum(a.addr, a.len, "LazyFree", &kb, NULL);
	if (err)
		nt_tap_bail("smaps LazyFree: %s", strerror(-err));
	if (kb != (long)(a.len >> 10))
		nt_tap_diag("LazyFree %ld kB, expected %zu kB", kb, a.len >> 10);
	nt_tap_result(kb == (long)(a.len >> 10), "%s: smaps LazyFree is the whole area", pn);
	bad = nt_pages_flags_not(a.addr, a.npages, a.page_size, lru_swapbacked,
				 NT_KPF(NT_KPF_LRU), "KPF_LRU without KPF_SWAPBACKED");
	if (bad < 0)
		nt_tap_bail("kpageflags: %s", strerror(-bad));
	nt_tap_result(!bad, "%s: every page on an LRU list and not swap-backed (kpageflags)", pn);
	if (lt.lru_gen) {
		nt_tap_skip("multi-gen LRU: active is a generation, not a list",
			    "%s: no page on the active list (kpageflags)", pn);
		nt_tap_skip("multi-gen LRU: inactive is a generation, not a list",
			    "%s: each node's inactive_file up by the area's pages on it (memory.numa_stat)", pn);
	} else {
		bad = nt_pages_flags_not(a.addr, a.npages, a.page_size, NT_KPF(NT_KPF_ACTIVE), 0,
					 "inactive");
		if (bad < 0)
			nt_tap_bail("kpageflags: %s", strerror(-bad));
		nt_tap_result(!bad, "%s: no page on the active list (kpageflags)", pn);
		nt_tap_result(nt_lru_moved(&lt, &r1, &r0, NT_INACTIVE_FILE, 1, counts),
			      "%s: each node's inactive_file up by the area's pages on it (memory.numa_stat)", pn);
	}
	nt_tap_result(nt_lru_moved(&lt, &r1, &r0, NT_ANON_LRU, -1, counts),
		      "%s: each node's active_anon + inactive_anon down by the area's pages on it (memory.numa_stat)", pn);
	nt_area_unmap(&a);
	free(status);
}

int main(int argc, char **argv)
{
	/* MADV_FREE passes over a page still in a CPU's lru_add batch: one CPU, drained by it. */
	nt_lru_start(&lt, argc, argv, DEFAULT_SIZE);
	nt_lru_plan(&lt, CHECKS);
	return nt_lru_run(run);
}
