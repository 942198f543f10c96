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
 *   "Amount of pages postponed to be freed under memory pressure", the
 *   same event as /proc/vmstat's pglazyfree: up by the area's pages.
 * - Documentation/filesystems/proc.rst: smaps LazyFree "shows the amount
 *   of memory which is marked by madvise(MADV_FREE)", which "might be
 *   lower than the real value due to optimizations": the per-CPU batch,
 *   so it is read after every CPU's batches are drained: the whole area.
 * - The kernel-doc of folio_mark_lazyfree() (6.12, rendered in
 *   Documentation/core-api/mm-api.rst; mark_page_lazyfree() in 6.1 says the
 *   same): it "moves @folio to the inactive file list". So every page is on
 *   an LRU list and not swap-backed (pagemap.rst: KPF_LRU, KPF_SWAPBACKED;
 *   the file lists hold the pages that are not), not on the active list
 *   (KPF_ACTIVE), and each node's Inactive(file) is up, and its anon lists
 *   (Active(anon) + Inactive(anon)) down, by the area's pages on it (node
 *   meminfo after stat_refresh).
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

static const char *const file_inactive[] = { "Inactive(file)" };
static const char *const anon_lru[] = { "Active(anon)", "Inactive(anon)" };
static const char *const lazyfree_event[] = { "pglazyfree" };

static struct nt_topology t;
static bool lru_gen;

/* Each node's Inactive(file) and anon LRU, and pglazyfree, every CPU drained first. */
static void snap(long file[NT_MAX_NODES], long anon[NT_MAX_NODES], long *events)
{
	int err = nt_drain_all();

	if (!err)
		err = nt_nodes_meminfo_sum(&t.online, file_inactive, 1, file);
	if (!err)
		err = nt_nodes_meminfo_sum(&t.online, anon_lru, 2, anon);
	if (err)
		nt_tap_bail("reading node meminfo: %s", strerror(-err));
	if (nt_read_values("/proc/vmstat", lazyfree_event, events, 1))
		nt_tap_bail("reading /proc/vmstat");
}

static void run(enum nt_place p, size_t len, int home)
{
	long counts[NT_MAX_NODES], neg[NT_MAX_NODES], file0[NT_MAX_NODES], anon0[NT_MAX_NODES];
	long file1[NT_MAX_NODES], anon1[NT_MAX_NODES], ev0, ev1, off, kb = -1, bad;
	const char *pn = nt_place_names[p];
	const uint64_t lru_swapbacked = NT_KPF(NT_KPF_LRU) | NT_KPF(NT_KPF_SWAPBACKED);
	struct nt_policy pol;
	struct nt_area a;
	int *status, err, node;

	err = nt_area_map(&a, len, 0);
	if (err)
		nt_tap_bail("mmap of %zu kB: %s", len >> 10, strerror(-err));
	nt_place_policy(&t, p, home, &pol);
	err = nt_area_mbind(&a, &pol);
	if (err)
		nt_tap_bail("%s: mbind: %s", pn, strerror(-err));
	nt_area_fill(&a, SEED);
	status = calloc(a.npages, sizeof(*status));
	if (!status)
		nt_tap_bail("out of memory");
	off = nt_pages_per_node(a.addr, a.npages, a.page_size, status, counts);
	if (off)
		nt_tap_bail("%s: %ld pages of the area on no node after filling it", pn, off);
	nt_tap_diag("%s: %zu pages, %zu node changes between neighbours", pn, a.npages,
		    nt_node_changes(status, a.npages));
	snap(file0, anon0, &ev0);

	err = madvise(a.addr, a.len, MADV_FREE) ? errno : 0;
	if (err)
		nt_tap_diag("madvise: %s", strerror(err));
	nt_tap_result(!err, "%s: madvise(MADV_FREE) of the written area returns 0", pn);
	snap(file1, anon1, &ev1);
	if (ev1 - ev0 != (long)a.npages)
		nt_tap_diag("pglazyfree %+ld, expected +%zu", ev1 - ev0, a.npages);
	nt_tap_result(ev1 - ev0 == (long)a.npages, "%s: pglazyfree up by the area's pages", pn);
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
	if (lru_gen) {
		nt_tap_skip("multi-gen LRU: active is a generation, not a list",
			    "%s: no page on the active list (kpageflags)", pn);
		nt_tap_skip("multi-gen LRU: inactive is a generation, not a list",
			    "%s: each node's Inactive(file) up by the area's pages on it", pn);
	} else {
		bad = nt_pages_flags_not(a.addr, a.npages, a.page_size, NT_KPF(NT_KPF_ACTIVE), 0,
					 "inactive");
		if (bad < 0)
			nt_tap_bail("kpageflags: %s", strerror(-bad));
		nt_tap_result(!bad, "%s: no page on the active list (kpageflags)", pn);
		nt_tap_result(nt_nodes_moved(&t.online, file1, file0, counts, a.page_size / 1024,
					     "Inactive(file)"),
			      "%s: each node's Inactive(file) up by the area's pages on it", pn);
	}
	nt_mask_for_each(node, &t.online)
		neg[node] = -counts[node];
	nt_tap_result(nt_nodes_moved(&t.online, anon1, anon0, neg, a.page_size / 1024,
				     "Active(anon) + Inactive(anon)"),
		      "%s: each node's anon LRU down by the area's pages on it", pn);
	nt_area_unmap(&a);
	free(status);
}

int main(int argc, char **argv)
{
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	cpu_set_t saved;
	enum nt_place p;
	int home, cpu;

	home = nt_memory_node_with_cpus(&t);
	if (home < 0)
		nt_tap_skip_all("no memory node with CPUs this task may use");
	/*
	 * One CPU: MADV_FREE drains only its own CPU's lru_add batch before it
	 * looks at the pages, and a page still queued there is passed over.
	 */
	cpu = nt_pin_cpu(home, &saved);
	if (cpu < 0)
		nt_tap_bail("pinning to a CPU of node %d: %s", home, strerror(-cpu));
	lru_gen = nt_lru_gen_enabled();
	nt_tap_plan(NT_PLACES * CHECKS);
	nt_tap_diag("%zu kB per area, %d memory nodes, home node %d, CPU %d%s", len >> 10,
		    nt_mask_weight(&t.allowed), home, cpu, lru_gen ? ", multi-gen LRU" : "");
	for (p = 0; p < NT_PLACES; p++)
		run(p, len, home);
	return nt_tap_finish();
}
