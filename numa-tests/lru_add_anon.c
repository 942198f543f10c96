// SPDX-License-Identifier: GPL-2.0
/*
 * New private anonymous pages, bound to one node and interleaved, each
 * faulted by a first touch or by MAP_POPULATE: the per-CPU lru_add batch,
 * which relocks the lruvec at every page of an interleaved area when it
 * drains.
 *
 * A new page is queued on the CPU's lru_add batch and put on its node's
 * LRU list when the batch drains. Documented, with every CPU drained:
 * - the kernel-doc of folio_add_lru() (6.12, rendered in
 *   Documentation/core-api/mm-api.rst): "Add a folio to an LRU list ...
 *   the decision on whether to add the page to the [in]active [file|anon]
 *   list is deferred until the folio_batch is drained", and
 *   Documentation/admin-guide/mm/pagemap.rst, KPF_LRU "The page is in one
 *   of the LRU lists": every page KPF_LRU;
 * - Documentation/admin-guide/cgroup-v2.rst, memory.numa_stat of the
 *   test's memory cgroup, which the new pages are charged to: each node's
 *   active_anon + inactive_anon up by the area's pages on that node.
 * The area's policy is the VMA's (mbind) for a first touch and the task's
 * (set_mempolicy) for MAP_POPULATE, which faults inside mmap(); an
 * anonymous VMA interleaves by page offset under either.
 *
 * Usage: lru_add_anon [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 8M)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "counters.h"
#include "lrupath.h"
#include "pageflags.h"
#include "snapshot.h"
#include "tap.h"

#define DEFAULT_SIZE	(8UL << 20)
#define SEED		0x6c727561UL
#define CHECKS		2

enum way { TOUCH, POPULATE, WAYS };

static const char *const way_names[WAYS] = {
	[TOUCH] = "first touch",
	[POPULATE] = "MAP_POPULATE",
};

static struct nt_lru_test lt;

static void run(enum nt_place p, enum way w)
{
	long counts[NT_MAX_NODES], off, bad;
	struct nt_lru_reading r0, r1;
	const char *pn = nt_place_names[p], *wn = way_names[w];
	struct nt_policy pol;
	struct nt_area a;
	int *status, err;

	/* Everything this process allocates itself comes before the baseline. */
	status = calloc(lt.len / sysconf(_SC_PAGESIZE), sizeof(*status));
	if (!status)
		nt_tap_bail("out of memory");
	nt_place_policy(&lt.t, p, lt.home, &pol);
	if (w == TOUCH) {
		err = nt_area_map(&a, lt.len, 0);
		if (!err)
			err = nt_area_mbind(&a, &pol);
		if (err)
			nt_tap_bail("%s, %s: mapping the area: %s", pn, wn, strerror(-err));
	}
	nt_lru_read(&lt, NULL, &r0);
	if (w == TOUCH) {
		nt_area_fill(&a, SEED);
	} else {
		if (nt_set_task_policy(&pol))
			nt_tap_bail("set_mempolicy: %s", strerror(errno));
		err = nt_area_map(&a, lt.len, MAP_POPULATE);
		if (nt_set_task_policy(NULL))
			nt_tap_bail("set_mempolicy(MPOL_DEFAULT): %s", strerror(errno));
		if (err)
			nt_tap_bail("%s, %s: mapping the area: %s", pn, wn, strerror(-err));
	}
	nt_lru_read(&lt, NULL, &r1);

	off = nt_pages_per_node(a.addr, a.npages, a.page_size, status, counts);
	if (off)
		nt_tap_bail("%s, %s: %ld pages of the area on no node (%s)", pn, wn, off,
			    off < 0 ? strerror(-off) : "absent");
	nt_tap_diag("%s, %s: %zu pages, %zu node changes between neighbours", pn, wn, a.npages,
		    nt_node_changes(status, a.npages));
	bad = nt_pages_flags_not(a.addr, a.npages, a.page_size, NT_KPF(NT_KPF_LRU),
				 NT_KPF(NT_KPF_LRU), "on an LRU list");
	if (bad < 0)
		nt_tap_bail("kpageflags: %s", strerror(-bad));
	nt_tap_result(!bad, "%s, %s: every page on an LRU list after a drain (kpageflags)", pn,
		      wn);
	nt_tap_result(nt_lru_moved(&lt, &r1, &r0, NT_ANON_LRU, 1, counts),
		      "%s, %s: each node's active_anon + inactive_anon up by the area's pages on it (memory.numa_stat)", pn, wn);
	nt_area_unmap(&a);
	free(status);
}

int main(int argc, char **argv)
{
	enum nt_place p;
	enum way w;

	/* One CPU: the faults fill its lru_add batch, and a drain empties it. */
	nt_lru_start(&lt, argc, argv, DEFAULT_SIZE);
	nt_lru_plan(&lt, WAYS * CHECKS);
	for (p = 0; p < NT_PLACES; p++)
		for (w = 0; w < WAYS; w++)
			run(p, w);
	return nt_tap_finish();
}
