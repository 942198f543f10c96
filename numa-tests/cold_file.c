// SPDX-License-Identifier: GPL-2.0
/*
 * madvise(MADV_COLD) of active page-cache pages of an ext4 file, bound to
 * one node and interleaved: the per-CPU deactivate batch, which relocks
 * the lruvec at every page of an interleaved file when it drains.
 *
 * The file is written (its pages inactive), read twice (the second read of
 * a referenced inactive page activates it: folio_mark_accessed(), whose
 * kernel-doc 6.12 renders in Documentation/core-api/mm-api.rst,
 * "inactive,referenced -> active,unreferenced"), mapped once and
 * populated. Then MADV_COLD, and every CPU's batches drained. Documented:
 * - madvise(2): MADV_COLD "Deactivate a given range of pages ... This is a
 *   nondestructive operation": the pages stay resident;
 * - Documentation/admin-guide/cgroup-v2.rst, memory.stat: pgdeactivate
 *   "Amount of pages moved to the inactive LRU list": up by the file's
 *   pages, which were all active;
 * - Documentation/admin-guide/mm/pagemap.rst: KPF_ACTIVE "The page is in
 *   the active LRU list", KPF_LRU "in one of the LRU lists": every page
 *   on an LRU list, none on the active one;
 * - each node's active_file down and inactive_file up by the file's
 *   pages on it.
 * The counts are the test's memory cgroup's (memory.stat, and
 * memory.numa_stat per node: lib/lrupath.h).
 * That every page is active before MADV_COLD is checked too: the other
 * checks mean nothing without it.
 * On the multi-gen LRU the active and inactive lists are a view of
 * generations and reads do not activate: the checks that name them are
 * skipped there.
 *
 * Usage: cold_file [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 8M)
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
#define CHECKS		7

static struct nt_lru_test lt;

static void lru_gen_skip(const char *pn, const char *check)
{
	nt_tap_skip("multi-gen LRU: active and inactive are generations, not lists", "%s: %s",
		    pn, check);
}

static void run(enum nt_place p)
{
	struct nt_lru_reading r0, r1;
	struct nt_lru_file f;
	long bad;
	const uint64_t lru_active = NT_KPF(NT_KPF_LRU) | NT_KPF(NT_KPF_ACTIVE);
	const char *pn = nt_place_names[p];
	int err, pass;

	nt_lru_file_write(&lt, p, &f);
	/* The first read references each page, the second activates it. */
	for (pass = 0; pass < 2; pass++)
		if (nt_lru_file_bad(&lt, p, &f))
			nt_tap_bail("%s: the file does not read back as written", pn);
	nt_lru_file_map(&lt, p, &f);
	nt_lru_read(&lt, "pgdeactivate", &r0);
	if (lt.lru_gen) {
		lru_gen_skip(pn, "every page of the file active after two reads (kpageflags)");
	} else {
		bad = nt_pages_flags_not(f.map, f.npages, sysconf(_SC_PAGESIZE),
					 lru_active, lru_active, "active");
		if (bad < 0)
			nt_tap_bail("kpageflags: %s", strerror(-bad));
		nt_tap_result(!bad, "%s: every page of the file active after two reads (kpageflags)",
			      pn);
	}

	err = madvise(f.map, lt.len, MADV_COLD) ? errno : 0;
	if (err)
		nt_tap_diag("madvise: %s", strerror(err));
	nt_tap_result(!err, "%s: madvise(MADV_COLD) of the mapped file returns 0", pn);
	nt_lru_read(&lt, "pgdeactivate", &r1);
	nt_tap_result(nt_residency_not(f.map, f.npages, true) == 0,
		      "%s: every page of the file still resident (mincore)", pn);
	if (lt.lru_gen) {
		lru_gen_skip(pn, "pgdeactivate up by the file's pages");
		lru_gen_skip(pn, "every page on an LRU list, none active (kpageflags)");
		lru_gen_skip(pn, "each node's active_file down by the file's pages on it (memory.numa_stat)");
		lru_gen_skip(pn, "each node's inactive_file up by the file's pages on it (memory.numa_stat)");
		goto out;
	}
	if (r1.event - r0.event != (long)f.npages)
		nt_tap_diag("pgdeactivate %+ld, expected +%zu", r1.event - r0.event, f.npages);
	nt_tap_result(r1.event - r0.event == (long)f.npages, "%s: pgdeactivate up by the file's pages", pn);
	bad = nt_pages_flags_not(f.map, f.npages, sysconf(_SC_PAGESIZE), lru_active,
				 NT_KPF(NT_KPF_LRU), "inactive");
	if (bad < 0)
		nt_tap_bail("kpageflags: %s", strerror(-bad));
	nt_tap_result(!bad, "%s: every page on an LRU list, none active (kpageflags)", pn);
	nt_tap_result(nt_lru_moved(&lt, &r1, &r0, NT_ACTIVE_FILE, -1, f.counts),
		      "%s: each node's active_file down by the file's pages on it (memory.numa_stat)", pn);
	nt_tap_result(nt_lru_moved(&lt, &r1, &r0, NT_INACTIVE_FILE, 1, f.counts),
		      "%s: each node's inactive_file up by the file's pages on it (memory.numa_stat)", pn);
out:
	nt_lru_file_remove(&f);
}

int main(int argc, char **argv)
{
	/* MADV_COLD passes over a page still in a CPU's lru_add batch: one CPU, drained by it. */
	nt_lru_start(&lt, argc, argv, DEFAULT_SIZE);
	nt_lru_ext4(&lt);
	nt_lru_plan(&lt, CHECKS);
	return nt_lru_run(run);
}
