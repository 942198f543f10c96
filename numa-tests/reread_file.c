// SPDX-License-Identifier: GPL-2.0
/*
 * read() of an ext4 file twice, its page cache bound to one node and
 * interleaved: the per-CPU activate batch, which relocks the lruvec at
 * every page of an interleaved file when it drains.
 *
 * Each read marks every page it copies accessed. The kernel-doc of
 * folio_mark_accessed() (6.12, rendered in
 * Documentation/core-api/mm-api.rst; mark_page_accessed() in 6.1 has the
 * same comment) gives the steps "inactive,unreferenced ->
 * inactive,referenced" and "inactive,referenced -> active,unreferenced":
 * a page written once and read twice ends on the active list, whether the
 * write referenced it or not. With every CPU drained after the reads:
 * - Documentation/admin-guide/cgroup-v2.rst, memory.stat: pgactivate
 *   "Amount of pages moved to the active LRU list": up by the file's
 *   pages;
 * - Documentation/admin-guide/mm/pagemap.rst: every page KPF_LRU and
 *   KPF_ACTIVE ("The page is in the active LRU list");
 * - each node's active_file up and inactive_file down by the file's
 *   pages on it.
 * The counts are the test's memory cgroup's (memory.stat, and
 * memory.numa_stat per node: lib/lrupath.h).
 * On the multi-gen LRU reads only add to a page's generation references,
 * and active is a generation: every check is skipped there.
 *
 * Usage: reread_file [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 8M)
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
#include "values.h"

#define DEFAULT_SIZE	(8UL << 20)
#define CHECKS		4

static struct nt_lru_test lt;

static void run(enum nt_place p)
{
	struct nt_lru_reading r0, r1;
	struct nt_lru_file f;
	long bad;
	const uint64_t lru_active = NT_KPF(NT_KPF_LRU) | NT_KPF(NT_KPF_ACTIVE);
	const char *pn = nt_place_names[p];
	size_t page = sysconf(_SC_PAGESIZE);
	int pass;

	nt_lru_file_write(&lt, p, &f);
	nt_lru_read(&lt, "pgactivate", &r0);
	for (pass = 0; pass < 2; pass++)
		if (nt_lru_file_bad(&lt, p, &f))
			nt_tap_bail("%s: the file does not read back as written", pn);
	nt_lru_read(&lt, "pgactivate", &r1);
	/* Mapped only now, to find the pages: a mapping references nothing. */
	nt_lru_file_map(&lt, p, &f);
	if (lt.lru_gen) {
		const char *why = "multi-gen LRU: reads add references, active is a generation";

		nt_tap_skip(why, "%s: pgactivate up by the file's pages", pn);
		nt_tap_skip(why, "%s: every page on the active LRU list (kpageflags)", pn);
		nt_tap_skip(why, "%s: each node's active_file up by the file's pages on it (memory.numa_stat)", pn);
		nt_tap_skip(why, "%s: each node's inactive_file down by the file's pages on it (memory.numa_stat)", pn);
		goto out;
	}
	if (r1.event - r0.event != (long)f.npages)
		nt_tap_diag("pgactivate %+ld, expected +%zu", r1.event - r0.event, f.npages);
	nt_tap_result(r1.event - r0.event == (long)f.npages, "%s: pgactivate up by the file's pages", pn);
	bad = nt_pages_flags_not(f.map, f.npages, page, lru_active, lru_active, "active");
	if (bad < 0)
		nt_tap_bail("kpageflags: %s", strerror(-bad));
	nt_tap_result(!bad, "%s: every page on the active LRU list (kpageflags)", pn);
	nt_tap_result(nt_lru_moved(&lt, &r1, &r0, NT_ACTIVE_FILE, 1, f.counts),
		      "%s: each node's active_file up by the file's pages on it (memory.numa_stat)", pn);
	nt_tap_result(nt_lru_moved(&lt, &r1, &r0, NT_INACTIVE_FILE, -1, f.counts),
		      "%s: each node's inactive_file down by the file's pages on it (memory.numa_stat)", pn);
out:
	nt_lru_file_remove(&f);
}

int main(int argc, char **argv)
{
	/* One CPU: the reads fill its activate batch, and a drain empties it. */
	nt_lru_start(&lt, argc, argv, DEFAULT_SIZE);
	nt_lru_ext4(&lt);
	nt_lru_plan(&lt, CHECKS);
	return nt_lru_run(run);
}
