// SPDX-License-Identifier: GPL-2.0
/*
 * mlock() of a shared mapping of a tmpfs file made of huge pages
 * (mount -o huge=always, Documentation/admin-guide/mm/transhuge.rst
 * "Hugepages in tmpfs/shmem"), and munlock().
 *
 * A PMD-mapped huge page in a VM_LOCKED VMA is mlocked as a whole
 * (Documentation/mm/unevictable-lru.rst, "MLOCKING Transparent Huge
 * Pages"): each counts as its 512 base pages in per-node Mlocked and
 * Unevictable and in the unevictable_pgs_* events, and its head has
 * KPF_MLOCKED and KPF_UNEVICTABLE. The file's shared policy binds it to the
 * last usable node (mbind() on the mapping): how shmem interleaves its huge
 * pages differs between kernels (docs/kernel-deviations.md), binding does
 * not. Then munlock() puts everything back.
 *
 * The test mounts a tmpfs with huge=always on a fresh directory and
 * unmounts it at the end. The child allows THP for itself (transhuge.rst:
 * huge=always needs no madvise).
 *
 * It skips, saying why, on a kernel that makes no huge pages in such a
 * tmpfs (a file written there first shows none in ShmemHugePages): 6.1
 * built from tinyconfig has CONFIG_BASE_SMALL, whose small xarray chunks
 * keep PMD-sized folios out of the page cache (MAX_PAGECACHE_ORDER 7).
 *
 * Usage: shmem_thp_locked [-s SIZE]  (a multiple of the huge page size;
 * default two huge pages)
 * Needs root and CONFIG_TRANSPARENT_HUGEPAGE with shmem support.
 */
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "locked.h"
#include "sysfile.h"
#include "tap.h"
#include "values.h"

#define THP_SIZE	"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
#define CHECKS		(NT_LK_LOCKED_CHECKS + NT_LK_UNLOCKED_CHECKS)

static struct {
	char dir[64];
	bool mounted;
	size_t hpage;
} g;

static void cleanup(void)
{
	if (g.mounted && umount(g.dir))
		fprintf(stderr, "shmem_thp_locked: umount %s: %s\n", g.dir, strerror(errno));
	g.mounted = false;
	if (g.dir[0] && rmdir(g.dir))
		fprintf(stderr, "shmem_thp_locked: rmdir %s: %s\n", g.dir, strerror(errno));
	g.dir[0] = '\0';
}

static void run(const struct nt_topology *t, size_t len, int local_node)
{
	struct nt_lk lk = { .t = t };
	struct nt_policy bind;
	struct nt_region r;
	struct nt_vma vma;
	char path[128];
	int fd, node = -1, n, err;

	nt_mask_for_each(n, &t->allowed)
		node = n;
	nt_policy_one(&bind, MPOL_BIND, node);
	snprintf(lk.label, sizeof(lk.label), "tmpfs huge=always, shared, bound to the last node");
	lk.r = &r;
	lk.thp_pages = g.hpage / sysconf(_SC_PAGESIZE);
	snprintf(path, sizeof(path), "%s/locked", g.dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, len) || unlink(path))
		nt_tap_bail("creating %s: %s", path, strerror(errno));
	nt_lk_baseline(&lk);
	err = nt_region_map_fd(&r, fd, len, g.hpage, 0);
	close(fd);
	if (!err)
		err = nt_area_mbind(&r.a, &bind);
	if (!err)
		err = nt_area_lock(&r.a);
	if (!err)
		err = nt_region_vma(&r, local_node, &vma);
	if (err)
		nt_tap_bail("%s: mapping and locking: %s", lk.label, strerror(-err));
	nt_lk_locked(&lk, &bind, &vma, len / 1024, "the last node", false);
	nt_lk_munlock(&lk);
	nt_region_unmap(&r);
}

/* Whether writing a huge page's worth to a file of the mount makes a huge page. */
static bool huge_pages_made(void)
{
	const char *key = "ShmemHugePages";
	char path[128], *buf;
	long kb = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/probe", g.dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	buf = calloc(1, g.hpage);
	if (fd < 0 || !buf || pwrite(fd, buf, g.hpage, 0) != (ssize_t)g.hpage)
		nt_tap_bail("writing %s: %s", path, strerror(errno));
	if (nt_read_values("/proc/meminfo", &key, &kb, 1))
		nt_tap_bail("reading ShmemHugePages from /proc/meminfo");
	free(buf);
	close(fd);
	if (unlink(path))
		nt_tap_bail("removing %s: %s", path, strerror(errno));
	return kb > 0;
}

int main(int argc, char **argv)
{
	struct nt_topology t;
	char text[32], opts[64];
	unsigned int until;
	int local_node;
	size_t len;
	pid_t pid;

	len = nt_lk_start(argc, argv, 0, &t);
	if (nt_file_read_line(THP_SIZE, text, sizeof(text)))
		nt_tap_skip_all("no transparent huge pages here (%s)", THP_SIZE);
	g.hpage = strtoul(text, NULL, 10);
	if (!len)
		len = 2 * g.hpage;
	if (!g.hpage || len % g.hpage)
		nt_tap_bail("the size %zu is not a multiple of the huge page size %zu", len, g.hpage);
	nt_cleanup_push(cleanup);
	snprintf(g.dir, sizeof(g.dir), "/tmp/nt-shmem-thp-XXXXXX");
	if (!mkdtemp(g.dir)) {
		g.dir[0] = '\0';
		nt_tap_bail("mkdtemp: %s", strerror(errno));
	}
	snprintf(opts, sizeof(opts), "huge=always,size=%zu", len + g.hpage);
	if (mount("nt-shmem-thp", g.dir, "tmpfs", 0, opts)) {
		if (errno == EINVAL)
			nt_tap_skip_all("tmpfs refuses huge=always here (no THP for shmem)");
		nt_tap_bail("mount -t tmpfs -o %s: %s", opts, strerror(errno));
	}
	g.mounted = true;
	if (!huge_pages_made())
		nt_tap_skip_all("this kernel puts no huge page in a tmpfs mounted huge=always (ShmemHugePages stays 0): 6.1's shmem_is_huge() refuses PMD-sized folios when MAX_PAGECACHE_ORDER is smaller, as CONFIG_BASE_SMALL (tinyconfig, no CONFIG_BASE_FULL) makes it");
	nt_tap_plan(CHECKS);
	until = nt_tap_count() + CHECKS;
	pid = nt_lk_fork(&t, -1, true, len, &local_node);
	if (!pid) {
		run(&t, len, local_node);
		_exit(0);
	}
	nt_tap_wait(pid, until, "shmem huge pages");
	cleanup();
	return nt_tap_finish();
}
