// SPDX-License-Identifier: GPL-2.0
/*
 * madvise(MADV_PAGEOUT) of written private anonymous memory, bound to one
 * node and interleaved, to a swap file: the same-node runs of
 * reclaim_pages() for pages that must be written to swap first.
 *
 * madvise(2): MADV_PAGEOUT "Reclaim a given range of pages ... If a page
 * is anonymous, it will be swapped out", ignored only "for some pages in
 * the range when it is not applicable". Every page here is applicable:
 * private, written, mapped only by this process, not locked, with room
 * for all of them in the test's swap file. So, after it:
 * - madvise() returned 0;
 * - every page's /proc/self/pagemap entry is a swap entry, not a present
 *   page (Documentation/admin-guide/mm/pagemap.rst: bit 62 "page
 *   swapped", bit 63 "page present");
 * - the test's memory cgroup's memory.swap.current, "the total amount of
 *   swap currently being used by the cgroup" (cgroup-v2.rst), is up by the
 *   area: each swapped page holds a swap entry charged to it;
 * - each node's anon in its memory.numa_stat ("Amount of memory used in
 *   anonymous mappings") is down by the area's pages on that node;
 * - the area reads back as written (swapped, not lost).
 * Writeback to the swap file ends asynchronously; nothing here depends on
 * when.
 *
 * Usage: swapout_anon [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 8M)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cgroup.h"
#include "lrupath.h"
#include "sysfile.h"
#include "tap.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif

#define DEFAULT_SIZE	(8UL << 20)
#define SEED		0x73776170UL
#define CHECKS		5
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)

static struct nt_lru_test lt;

/* Pages of the area whose pagemap entry is not a swap entry, naming the first few. */
static size_t not_swapped(const struct nt_area *a)
{
	uint64_t *pm = calloc(a->npages, sizeof(*pm));
	size_t i, bad = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ssize_t want = (ssize_t)(a->npages * sizeof(*pm));

	if (!pm || fd < 0)
		nt_tap_bail("/proc/self/pagemap: %s", pm ? strerror(errno) : "out of memory");
	if (pread(fd, pm, want, (uintptr_t)a->addr / a->page_size * sizeof(*pm)) != want)
		nt_tap_bail("reading /proc/self/pagemap: %s", strerror(errno));
	close(fd);
	for (i = 0; i < a->npages; i++) {
		if ((pm[i] & (PM_PRESENT | PM_SWAP)) == PM_SWAP)
			continue;
		if (bad++ < 4)
			nt_tap_diag("page %zu: pagemap %#llx, %s", i, (unsigned long long)pm[i],
				    pm[i] & PM_PRESENT ? "present" : "neither present nor swapped");
	}
	free(pm);
	return bad;
}

static long swap_current(void)
{
	char path[256], buf[64];
	int err;

	snprintf(path, sizeof(path), NT_CGROUP_ROOT "/%s/memory.swap.current", lt.memcg);
	err = nt_file_read_line(path, buf, sizeof(buf));
	if (err)
		nt_tap_bail("reading %s: %s", path, strerror(-err));
	return strtol(buf, NULL, 10);
}

static void run(enum nt_place p)
{
	struct nt_lru_reading r0, r1;
	long counts[NT_MAX_NODES], s0, s1, want;
	const char *pn = nt_place_names[p];
	struct nt_area a;
	size_t bad;
	int *status, err;

	status = nt_lru_area(&lt, p, &a, SEED, counts);
	nt_lru_read(&lt, NULL, &r0);
	s0 = swap_current();

	err = madvise(a.addr, a.len, MADV_PAGEOUT) ? errno : 0;
	if (err)
		nt_tap_diag("madvise: %s", strerror(err));
	nt_tap_result(!err, "%s: madvise(MADV_PAGEOUT) of the written area returns 0", pn);
	nt_lru_read(&lt, NULL, &r1);
	s1 = swap_current();
	nt_tap_result(!not_swapped(&a), "%s: every page swapped out, none present (pagemap)", pn);
	want = (long)a.len;
	if (s1 - s0 != want)
		nt_tap_diag("memory.swap.current %+ld bytes, expected %+ld", s1 - s0, want);
	nt_tap_result(s1 - s0 == want, "%s: memory.swap.current up by the area", pn);
	nt_tap_result(nt_lru_moved(&lt, &r1, &r0, NT_ANON, -1, counts),
		      "%s: each node's anon down by the area's pages on it (memory.numa_stat)", pn);
	bad = nt_area_verify(&a, SEED);
	if (bad)
		nt_tap_diag("%zu pages differ after swap-in", bad);
	nt_tap_result(!bad, "%s: the area reads back as written", pn);
	nt_area_unmap(&a);
	free(status);
}

int main(int argc, char **argv)
{
	/* Pages still in the CPU's lru_add batch are not isolated: one CPU, drained by it. */
	nt_lru_start(&lt, argc, argv, DEFAULT_SIZE);
	nt_lru_swap(&lt);
	nt_lru_plan(&lt, CHECKS);
	return nt_lru_run(run);
}
