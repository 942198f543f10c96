// SPDX-License-Identifier: GPL-2.0
/*
 * madvise(MADV_PAGEOUT) of clean page-cache pages of an ext4 file, bound
 * to one node and interleaved: the same-node runs of reclaim_pages().
 *
 * MADV_PAGEOUT isolates the pages of each page table it walks and hands
 * them to reclaim_pages() (mm/vmscan.c), which reclaims them in runs of
 * pages of one node: one run per page table for a file bound to one node,
 * a run per page for an interleaved one.
 *
 * madvise(2): MADV_PAGEOUT "Reclaim a given range of pages. This is done to
 * free up memory occupied by these pages ... If a page is file-backed and
 * dirty, it will be written back", ignored only "for some pages in the
 * range when it is not applicable". Here every page is applicable: the
 * file was written and fsync'd (clean), is mapped once, by this process,
 * MAP_SHARED, populated, not locked. So, after it:
 * - madvise() returned 0;
 * - mincore(2) says no page of the file is resident ("the pages ... are
 *   resident in (RAM)", page-cache residency for a file mapping);
 * - each node's active_file + inactive_file in the test's memory cgroup
 *   (memory.numa_stat, Documentation/admin-guide/cgroup-v2.rst: the file
 *   was written by the test, so charged to it) are down by the file's
 *   pages on that node;
 * - the file still reads back as written (a clean page dropped, not lost).
 *
 * The file is opened O_NOATIME and the file system synced before the
 * counters are read, so that no atime update commits a journal block to
 * the page cache between the readings.
 *
 * Usage: pageout_file [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 8M)
 */
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "counters.h"
#include "harness.h"
#include "locked.h"
#include "lrupath.h"
#include "snapshot.h"
#include "tap.h"

#define DEFAULT_SIZE	(8UL << 20)
#define CHECKS		4

static struct nt_lru_test lt;


static void run(enum nt_place p)
{
	const char *pn = nt_place_names[p];
	struct nt_lru_reading base, now;
	struct nt_lru_file f;
	int err;

	nt_lru_file_write(&lt, p, &f);
	nt_lru_file_map(&lt, p, &f);
	/* Pages still in a CPU's lru_add batch cannot be isolated: none may be. */
	nt_lru_read(&lt, NULL, &base);

	err = madvise(f.map, lt.len, MADV_PAGEOUT) ? errno : 0;
	if (err)
		nt_tap_diag("madvise: %s", strerror(err));
	nt_tap_result(!err, "%s: madvise(MADV_PAGEOUT) of the mapped file returns 0", pn);
	nt_tap_result(nt_residency_not(f.map, f.npages, false) == 0,
		      "%s: no page of the file resident after MADV_PAGEOUT (mincore)", pn);
	nt_lru_read(&lt, NULL, &now);
	nt_tap_result(nt_lru_moved(&lt, &now, &base, NT_FILE_LRU, -1, f.counts),
		      "%s: each node's active_file + inactive_file down by the file's pages on it (memory.numa_stat)", pn);
	nt_tap_result(nt_lru_file_bad(&lt, p, &f) == 0, "%s: the file reads back as written", pn);

	nt_lru_file_remove(&f);
}

int main(int argc, char **argv)
{
	/* Pages still in a CPU's lru_add batch cannot be isolated: one CPU, drained. */
	nt_lru_start(&lt, argc, argv, DEFAULT_SIZE);
	nt_lru_ext4(&lt);
	nt_lru_plan(&lt, CHECKS);
	return nt_lru_run(run);
}
