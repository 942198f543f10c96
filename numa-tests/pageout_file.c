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
 * - each node's file LRU lists (Active(file) + Inactive(file) of its
 *   meminfo, Documentation/filesystems/proc.rst, read after stat_refresh,
 *   admin-guide/sysctl/vm.rst) are down by the file's pages on that node;
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
#include "ext4.h"
#include "harness.h"
#include "locked.h"
#include "lrupath.h"
#include "snapshot.h"
#include "tap.h"

#define DEFAULT_SIZE	(8UL << 20)
#define CHECKS		4
#define SHOWN		4

static const char *const file_lru[] = { "Active(file)", "Inactive(file)" };

static struct nt_lru_test lt;

static struct {
	struct nt_ext4 fs;
	char why[160];
	size_t page;
} g;

static void cleanup(void)
{
	nt_ext4_remove(&g.fs);
}

/* Word w of page i of the file: differs per page and per placement. */
static unsigned long word(enum nt_place p, size_t i, size_t w)
{
	return (p + 1) * 0x9e3779b97f4a7c15UL ^ (i << 20) ^ w;
}

/* Writes the file with the placement's policy as the task's: page cache follows it. */
static int write_file(enum nt_place p, const char *path)
{
	size_t n = g.page / sizeof(unsigned long), i, w;
	unsigned long *buf = malloc(g.page);
	struct nt_policy pol;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOATIME, 0600);
	if (fd < 0 || !buf)
		nt_tap_bail("creating %s: %s", path, strerror(errno));
	nt_place_policy(&lt.t, p, lt.home, &pol);
	if (nt_set_task_policy(&pol))
		nt_tap_bail("set_mempolicy: %s", strerror(errno));
	for (i = 0; i < lt.len / g.page; i++) {
		for (w = 0; w < n; w++)
			buf[w] = word(p, i, w);
		if (write(fd, buf, g.page) != (ssize_t)g.page)
			nt_tap_bail("writing %s: %s", path, strerror(errno));
	}
	if (nt_set_task_policy(NULL))
		nt_tap_bail("set_mempolicy(MPOL_DEFAULT): %s", strerror(errno));
	if (fsync(fd))
		nt_tap_bail("fsync %s: %s", path, strerror(errno));
	free(buf);
	return fd;
}

/* Pages of the file that do not read back as written. */
static size_t bad_data(enum nt_place p, int fd)
{
	size_t n = g.page / sizeof(unsigned long), i, w, bad = 0;
	unsigned long *buf = malloc(g.page);

	if (!buf)
		nt_tap_bail("out of memory");
	for (i = 0; i < lt.len / g.page; i++) {
		if (pread(fd, buf, g.page, i * g.page) != (ssize_t)g.page)
			nt_tap_bail("reading the file back: %s", strerror(errno));
		for (w = 0; w < n && buf[w] == word(p, i, w); w++)
			;
		bad += w < n;
	}
	free(buf);
	return bad;
}

/* Pages mincore() says are resident, naming the first few. */
static size_t resident(const char *addr, size_t npages)
{
	unsigned char *vec = malloc(npages);
	size_t i, n = 0;

	if (!vec || mincore((void *)addr, npages * g.page, vec))
		nt_tap_bail("mincore: %s", strerror(errno));
	for (i = 0; i < npages; i++) {
		if (!(vec[i] & 1))
			continue;
		if (n++ < SHOWN)
			nt_tap_diag("page %zu still resident", i);
	}
	if (n)
		nt_tap_diag("%zu of %zu pages still resident", n, npages);
	free(vec);
	return n;
}

static void run(enum nt_place p)
{
	const char *pn = nt_place_names[p];
	long counts[NT_MAX_NODES], drop[NT_MAX_NODES], base[NT_MAX_NODES], now[NT_MAX_NODES];
	size_t npages = lt.len / g.page;
	int *status = calloc(npages, sizeof(*status));
	char path[128];
	int fd, node, err;
	long off;
	char *m;

	snprintf(path, sizeof(path), "%s/%s", g.fs.dir, pn);
	fd = write_file(p, path);
	m = mmap(NULL, lt.len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (m == MAP_FAILED || !status)
		nt_tap_bail("mapping %s: %s", path, strerror(errno));
	if (syncfs(fd))
		nt_tap_bail("syncfs: %s", strerror(errno));
	off = nt_pages_per_node(m, npages, g.page, status, counts);
	if (off)
		nt_tap_bail("%s: %ld pages of the file not mapped after MAP_POPULATE (%s)", pn, off,
			    off < 0 ? strerror(-off) : "on no node");
	nt_tap_diag("%s: %zu pages, %zu node changes between neighbours", pn, npages,
		    nt_node_changes(status, npages));
	/* Pages still in a CPU's lru_add batch cannot be isolated: none may be. */
	err = nt_drain_all();
	if (!err)
		err = nt_nodes_meminfo_sum(&lt.t.online, file_lru, 2, base);
	if (err)
		nt_tap_bail("before MADV_PAGEOUT: %s", strerror(-err));

	err = madvise(m, lt.len, MADV_PAGEOUT) ? errno : 0;
	if (err)
		nt_tap_diag("madvise: %s", strerror(err));
	nt_tap_result(!err, "%s: madvise(MADV_PAGEOUT) of the mapped file returns 0", pn);
	nt_tap_result(resident(m, npages) == 0,
		      "%s: no page of the file resident after MADV_PAGEOUT (mincore)", pn);
	err = nt_nodes_meminfo_sum(&lt.t.online, file_lru, 2, now);
	if (err)
		nt_tap_bail("after MADV_PAGEOUT: %s", strerror(-err));
	nt_mask_for_each(node, &lt.t.online)
		drop[node] = -counts[node];
	nt_tap_result(nt_nodes_moved(&lt.t.online, now, base, drop, g.page / 1024,
				     "Active(file) + Inactive(file)"),
		      "%s: each node's file LRU down by the file's pages on it", pn);
	nt_tap_result(bad_data(p, fd) == 0, "%s: the file reads back as written", pn);

	munmap(m, lt.len);
	close(fd);
	unlink(path);
	free(status);
}

int main(int argc, char **argv)
{
	enum nt_place p;
	int err;

	/* Pages still in a CPU's lru_add batch cannot be isolated: one CPU, drained. */
	nt_lru_start(&lt, argc, argv, DEFAULT_SIZE);
	g.page = sysconf(_SC_PAGESIZE);
	nt_cleanup_push(cleanup);
	err = nt_ext4_make(&g.fs, 2 * lt.len + (32UL << 20), g.why, sizeof(g.why));
	if (err == -ENODEV || err == -ENOENT)
		nt_tap_skip_all("no ext4 file system to be had: %s", g.why);
	if (err)
		nt_tap_bail("making an ext4 file system: %s", g.why);
	nt_lru_plan(&lt, CHECKS);
	for (p = 0; p < NT_PLACES; p++)
		run(p);
	return nt_tap_finish();
}
