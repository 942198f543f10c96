// SPDX-License-Identifier: GPL-2.0
/*
 * Truncation and hole punching of locked file pages.
 *
 * Documentation/mm/unevictable-lru.rst, "Truncating MLOCKED Pages": "File
 * truncation or hole punching forcibly unmaps the deleted pages from
 * userspace; truncation even unmaps and deletes any private anonymous pages
 * which had been Copied-On-Write from the file pages now being truncated.
 * Mlocked pages can be munlocked and deleted in this way: like with
 * munmap()"; only when that races with munlock() may a page be freed still
 * mlocked, counted in unevictable_pgs_cleared, "which is usually 0".
 *
 * So, with nothing racing: each page deleted from a locked mapping is
 * munlocked (unevictable_pgs_munlocked, and rescued off the unevictable
 * list) and its node's Mlocked and Unevictable drop by it; nothing is
 * cleared or stranded; the pages left stay mlocked, on their nodes; VmLck
 * (the VMA's size) does not change, smaps Locked drops by the pages gone.
 * A hole punched in a file under a private mapping leaves the private
 * copies alone (only truncation deletes them).
 *
 * Cells, each in a child pinned to one CPU:
 * - memfd mapped shared (shmem page cache), interleaved over every usable
 *   node: ftruncate() to half; a hole punched in the middle half
 *   (fallocate(FALLOC_FL_PUNCH_HOLE));
 * - memfd mapped private: mlock() populates a writable private mapping
 *   with write faults, so its locked pages are anonymous copies (placed by
 *   the VMA policy, by file offset); truncated (copies deleted) and punched
 *   (copies kept);
 * - a file on ext4 (a loop device over a file in tmpfs, lib/ext4.h),
 *   written under a task policy bound to the last usable node, mapped
 *   shared: truncated and punched.
 * After the operation (and a drain of every CPU: the unmapping queues the
 * munlocks on this CPU's batch) the checks above; then munmap(), and every
 * counter back at its baseline.
 *
 * Usage: truncate_locked [-s SIZE]  (each mapping; default 1M)
 * Needs root; the ext4 cells need CONFIG_BLK_DEV_LOOP, CONFIG_EXT4_FS and
 * mkfs.ext4.
 */
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ext4.h"
#include "harness.h"
#include "locked.h"
#include "pageflags.h"
#include "placement.h"
#include "tap.h"

#define DEFAULT_SIZE	(1UL << 20)
#define SEED		0x74726e63UL
#define OP_CHECKS	6
#define CELL_CHECKS	(NT_LK_LOCKED_CHECKS + OP_CHECKS + NT_LK_GONE_CHECKS)

enum op { TRUNCATE, PUNCH };

struct cell {
	enum nt_kind kind;
	enum op op;
};

static const struct cell cells[] = {
	{ NT_MEMFD, TRUNCATE }, { NT_MEMFD, PUNCH },
	{ NT_MEMFD_PRIVATE, TRUNCATE }, { NT_MEMFD_PRIVATE, PUNCH },
	{ NT_FILE, TRUNCATE }, { NT_FILE, PUNCH },
};

#define NCELLS	(sizeof(cells) / sizeof(cells[0]))

static const char *const op_names[] = {
	[TRUNCATE] = "truncated to half",
	[PUNCH] = "a hole punched in the middle half",
};

static struct {
	struct nt_ext4 fs;
	bool have_ext4;
	char no_ext4[160];
	int file_node;		/* where the ext4 cells bind their page cache */
} g;

static void cleanup(void)
{
	nt_ext4_remove(&g.fs);
}

/* The pages the operation deletes: [*first, *first + *n). */
static void op_range(const struct cell *c, size_t npages, size_t *first, size_t *n)
{
	if (c->op == TRUNCATE) {
		*first = npages / 2;
		*n = npages - npages / 2;
	} else {
		*first = npages / 4;
		*n = npages / 2;
	}
	/* A hole in a file under a private mapping leaves the private copies. */
	if (c->op == PUNCH && c->kind == NT_MEMFD_PRIVATE)
		*n = 0;
}

static void do_op(const struct cell *c, struct nt_region *r)
{
	size_t page = r->a.page_size, npages = r->a.npages;
	int err = 0;

	/* The file's pages op_range() names for a shared mapping. */
	if (c->op == TRUNCATE) {
		if (ftruncate(r->fd, npages / 2 * page))
			err = -errno;
	} else if (fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, npages / 4 * page,
			     npages / 2 * page)) {
		err = -errno;
	}
	if (err)
		nt_tap_bail("%s: %s: %s", nt_kind_names[c->kind], op_names[c->op], strerror(-err));
}

/* A file of len bytes on the ext4 file system, written under a bind to g.file_node. */
static int ext4_file(size_t len)
{
	struct nt_policy bind;
	char path[128];
	char *buf;
	int fd, err;

	nt_policy_one(&bind, MPOL_BIND, g.file_node);
	snprintf(path, sizeof(path), "%s/locked-%d", g.fs.dir, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	buf = calloc(1, len);
	if (fd < 0 || !buf)
		nt_tap_bail("creating %s: %s", path, strerror(errno));
	err = nt_set_task_policy(&bind);
	if (!err && pwrite(fd, buf, len, 0) != (ssize_t)len)
		err = -errno;
	if (!err)
		err = nt_set_task_policy(NULL);
	if (!err && unlink(path))
		err = -errno;
	free(buf);
	if (err)
		nt_tap_bail("writing %s: %s", path, strerror(-err));
	return fd;
}

/* Maps and locks the cell's range; its pages and their expected nodes in *pol and *vma. */
static void lock_cell(const struct cell *c, struct nt_lk *lk, size_t len, int local_node,
		      struct nt_policy *pol, struct nt_vma *vma)
{
	int fd, err;

	if (c->kind == NT_FILE) {
		nt_policy_one(pol, MPOL_BIND, g.file_node);
		fd = ext4_file(len);
		err = nt_region_map_fd(lk->r, fd, len, sysconf(_SC_PAGESIZE), 0);
		close(fd);
		/* The pages are in the page cache: put them on the LRU first. */
		if (!err && nt_drain_all())
			err = -EIO;
		if (!err)
			err = nt_area_lock(&lk->r->a);
		if (!err)
			err = nt_region_vma(lk->r, local_node, vma);
		if (err)
			nt_tap_bail("%s: mapping and locking: %s", lk->label, strerror(-err));
		return;
	}
	pol->mode = MPOL_INTERLEAVE;
	pol->nodes = lk->t->allowed;
	nt_lk_map(lk, c->kind, len, pol, true, local_node, vma);
}

/* The range's pages outside [first, first + n) on each node, from status (before the op). */
static void left_per_node(const int *status, size_t npages, size_t first, size_t n,
			  long pages[NT_MAX_NODES])
{
	size_t i;

	memset(pages, 0, NT_MAX_NODES * sizeof(pages[0]));
	for (i = 0; i < npages; i++)
		if ((i < first || i >= first + n) && status[i] >= 0 && status[i] < NT_MAX_NODES)
			pages[status[i]]++;
}

/* Pages outside the deleted range KPF_MLOCKED and KPF_UNEVICTABLE, inside not mapped. */
static long bad_flags(const struct nt_area *a, size_t first, size_t n)
{
	uint64_t *f = nt_flags_of(a->addr, a->npages, a->page_size);
	uint64_t both = NT_KPF(NT_KPF_MLOCKED) | NT_KPF(NT_KPF_UNEVICTABLE);
	long bad = 0;
	size_t i;

	for (i = 0; i < a->npages; i++) {
		bool gone = i >= first && i < first + n;

		if (gone ? (f[i] & NT_PAGE_ABSENT) : (f[i] & (both | NT_PAGE_ABSENT)) == both)
			continue;
		if (bad++ < 4)
			nt_tap_diag("page %zu: kpageflags %#llx, expected %s", i,
				    (unsigned long long)f[i], gone ? "not mapped" : "locked");
	}
	free(f);
	return bad;
}

static void check_after_op(struct nt_lk *lk, const int *status, size_t first, size_t n,
			   const char *what)
{
	long pages[NT_MAX_NODES], kb = -1, left = lk->r->a.npages - n;
	long page_kb = lk->r->a.page_size / 1024;
	struct nt_lk_events ev = lk->extra;
	char label[sizeof(lk->label)];

	memcpy(label, lk->label, sizeof(label));
	snprintf(lk->label, sizeof(lk->label), "%.100s: %.50s", label, what);
	nt_lk_snapshot(lk, true);
	left_per_node(status, lk->r->a.npages, first, n, pages);
	nt_lk_check_nodes(lk, false, pages);
	nt_lk_check_nodes(lk, true, pages);
	ev.mlocked += lk->r->a.npages;
	ev.culled += lk->r->a.npages;
	ev.munlocked += n;
	ev.rescued += n;
	nt_lk_check_events(lk, &ev);
	nt_lk_check_vmlck(lk, lk->r->a.len / 1024);
	if (nt_smaps_sum(lk->r->a.addr, lk->r->a.len, "Locked", &kb, NULL))
		kb = -1;
	if (kb != left * page_kb)
		nt_tap_diag("smaps Locked %ld kB", kb);
	nt_tap_result(kb == left * page_kb, "%s: smaps Locked %ld kB, the %ld pages left", lk->label,
		      left * page_kb, left);
	nt_tap_result(bad_flags(&lk->r->a, first, n) == 0,
		      "%s: the %ld pages left KPF_MLOCKED and KPF_UNEVICTABLE, the %zu deleted unmapped",
		      lk->label, left, n);
	memcpy(lk->label, label, sizeof(label));
}

static void run_cell(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	const struct cell *c = arg;
	struct nt_region r = { .fd = -1 };
	struct nt_lk lk = { .t = t, .r = &r };
	struct nt_policy pol = { 0 };
	struct nt_vma vma;
	size_t first, n;
	int *status, err;

	snprintf(lk.label, sizeof(lk.label), "%s, %s", nt_kind_names[c->kind], op_names[c->op]);
	nt_lk_baseline(&lk);
	lock_cell(c, &lk, len, local_node, &pol, &vma);
	nt_lk_locked(&lk, &pol, &vma, len / 1024, c->kind == NT_FILE ? "the bound node" :
		     "their interleave node", true);
	status = calloc(r.a.npages, sizeof(*status));
	if (!status)
		nt_tap_bail("no memory");
	err = nt_pages_nodes(r.a.addr, r.a.npages, r.a.page_size, status);
	if (err)
		nt_tap_bail("%s: move_pages: %s", lk.label, strerror(-err));
	do_op(c, &r);
	op_range(c, r.a.npages, &first, &n);
	check_after_op(&lk, status, first, n, c->op == TRUNCATE ? "after ftruncate" :
		       "after the hole punch");
	free(status);
	err = nt_region_unmap(&r);
	if (err)
		nt_tap_bail("%s: munmap: %s", lk.label, strerror(-err));
	nt_lk_gone(&lk);
}

int main(int argc, char **argv)
{
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	unsigned int i;
	int err, node;

	nt_cleanup_push(cleanup);
	err = nt_ext4_make(&g.fs, 64 << 20, g.no_ext4, sizeof(g.no_ext4));
	if (err == -ENODEV || err == -ENOENT)
		nt_tap_diag("no ext4 here: %s", g.no_ext4);
	else if (err)
		nt_tap_bail("making an ext4 file system: %s", g.no_ext4);
	g.have_ext4 = !err;
	nt_mask_for_each(node, &t.allowed)
		g.file_node = node;
	nt_tap_plan(NCELLS * CELL_CHECKS);
	for (i = 0; i < NCELLS; i++) {
		char what[96];
		unsigned int k;

		snprintf(what, sizeof(what), "%s, %s", nt_kind_names[cells[i].kind],
			 op_names[cells[i].op]);
		if (cells[i].kind == NT_FILE && !g.have_ext4) {
			for (k = 1; k <= CELL_CHECKS; k++)
				nt_tap_skip(g.no_ext4, "%s: check %u", what, k);
			continue;
		}
		nt_lk_in_child(&t, len, CELL_CHECKS, what, run_cell, (void *)&cells[i]);
	}
	cleanup();
	return nt_tap_finish();
}
