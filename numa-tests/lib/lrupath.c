// SPDX-License-Identifier: GPL-2.0
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
#include "pageflags.h"
#include "placement.h"
#include "tap.h"

const char *const nt_place_names[NT_PLACES] = {
	[NT_PLACE_BOUND] = "bound",
	[NT_PLACE_INTERLEAVED] = "interleaved",
};

void nt_place_policy(const struct nt_topology *t, enum nt_place p, int node,
		     struct nt_policy *pol)
{
	if (p == NT_PLACE_BOUND) {
		nt_policy_one(pol, MPOL_BIND, node);
		return;
	}
	memset(pol, 0, sizeof(*pol));
	pol->mode = MPOL_INTERLEAVE;
	pol->nodes = t->allowed;
}

long nt_pages_per_node(const void *start, size_t npages, size_t page_size, int *status,
		       long counts[NT_MAX_NODES])
{
	long off = 0;
	size_t i;
	int err;

	memset(counts, 0, NT_MAX_NODES * sizeof(*counts));
	err = nt_pages_nodes(start, npages, page_size, status);
	if (err)
		return err;
	for (i = 0; i < npages; i++) {
		if (status[i] >= 0 && status[i] < NT_MAX_NODES)
			counts[status[i]]++;
		else
			off++;
	}
	return off;
}

int nt_nodes_meminfo_sum(const struct nt_nodemask *nodes, const char *const *keys, int nkeys,
			 long kb[NT_MAX_NODES])
{
	int node, k, err;
	long v;

	memset(kb, 0, NT_MAX_NODES * sizeof(*kb));
	err = nt_stat_refresh();
	if (err)
		return err;
	nt_mask_for_each(node, nodes) {
		for (k = 0; k < nkeys; k++) {
			err = nt_node_meminfo_read(node, keys[k], &v);
			if (err)
				return err;
			kb[node] += v;
		}
	}
	return 0;
}

size_t nt_node_changes(const int *status, size_t npages)
{
	size_t i, n = 0;

	for (i = 1; i < npages; i++)
		n += status[i] != status[i - 1];
	return n;
}

long nt_pages_flags_not(const void *start, size_t npages, size_t page_size, uint64_t mask,
			uint64_t want, const char *what)
{
	uint64_t *flags = malloc(npages * sizeof(*flags));
	long bad = 0;
	size_t i;
	int err;

	if (!flags)
		return -ENOMEM;
	err = nt_pages_flags(start, npages, page_size, flags);
	for (i = 0; !err && i < npages; i++) {
		if (!(flags[i] & NT_PAGE_ABSENT) && (flags[i] & mask) == want)
			continue;
		if (bad++ < 4)
			nt_tap_diag("page %zu: not %s (kpageflags %#llx)", i, what,
				    (unsigned long long)flags[i]);
	}
	if (bad)
		nt_tap_diag("%ld of %zu pages not %s", bad, npages, what);
	free(flags);
	return err ? err : bad;
}

bool nt_lru_gen_enabled(void)
{
	FILE *f = fopen("/sys/kernel/mm/lru_gen/enabled", "r");
	unsigned long caps = 0;

	if (!f)
		return false;	/* no CONFIG_LRU_GEN */
	if (fscanf(f, "%lx", &caps) != 1)
		caps = 0;
	fclose(f);
	return caps & 1;
}

void nt_lru_start(struct nt_lru_test *lt, int argc, char **argv, size_t def)
{
	cpu_set_t saved;

	lt->len = nt_lk_start(argc, argv, def, &lt->t);
	lt->home = nt_memory_node_with_cpus(&lt->t);
	if (lt->home < 0)
		nt_tap_skip_all("no memory node with CPUs this task may use");
	lt->cpu = nt_pin_cpu(lt->home, &saved);
	if (lt->cpu < 0)
		nt_tap_bail("pinning to a CPU of node %d: %s", lt->home, strerror(-lt->cpu));
	lt->lru_gen = nt_lru_gen_enabled();
}

void nt_lru_plan(const struct nt_lru_test *lt, unsigned int checks)
{
	nt_tap_plan(NT_PLACES * checks);
	nt_tap_diag("%zu kB per area, %d memory nodes, home node %d, CPU %d%s", lt->len >> 10,
		    nt_mask_weight(&lt->t.allowed), lt->home, lt->cpu,
		    lt->lru_gen ? ", multi-gen LRU" : "");
}

int *nt_lru_area(const struct nt_lru_test *lt, enum nt_place p, struct nt_area *a,
		 unsigned long seed, long counts[NT_MAX_NODES])
{
	const char *pn = nt_place_names[p];
	struct nt_policy pol;
	int *status, err;
	long off;

	err = nt_area_map(a, lt->len, 0);
	if (err)
		nt_tap_bail("mmap of %zu kB: %s", lt->len >> 10, strerror(-err));
	nt_place_policy(&lt->t, p, lt->home, &pol);
	err = nt_area_mbind(a, &pol);
	if (err)
		nt_tap_bail("%s: mbind: %s", pn, strerror(-err));
	nt_area_fill(a, seed);
	status = calloc(a->npages, sizeof(*status));
	if (!status)
		nt_tap_bail("out of memory");
	off = nt_pages_per_node(a->addr, a->npages, a->page_size, status, counts);
	if (off)
		nt_tap_bail("%s: %ld pages of the area on no node after filling it (%s)", pn, off,
			    off < 0 ? strerror(-off) : "absent");
	nt_tap_diag("%s: %zu pages, %zu node changes between neighbours", pn, a->npages,
		    nt_node_changes(status, a->npages));
	return status;
}

/* Word w of page i of a file of placement p. */
static unsigned long file_word(enum nt_place p, size_t i, size_t w)
{
	return (p + 1) * 0x9e3779b97f4a7c15UL ^ (i << 20) ^ w;
}

int nt_lru_file_write(const struct nt_lru_test *lt, enum nt_place p, const char *path)
{
	size_t page = sysconf(_SC_PAGESIZE), n = page / sizeof(unsigned long), i, w;
	unsigned long *buf = malloc(page);
	struct nt_policy pol;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOATIME, 0600);
	if (fd < 0 || !buf)
		nt_tap_bail("creating %s: %s", path, strerror(errno));
	nt_place_policy(&lt->t, p, lt->home, &pol);
	if (nt_set_task_policy(&pol))
		nt_tap_bail("set_mempolicy: %s", strerror(errno));
	for (i = 0; i < lt->len / page; i++) {
		for (w = 0; w < n; w++)
			buf[w] = file_word(p, i, w);
		if (write(fd, buf, page) != (ssize_t)page)
			nt_tap_bail("writing %s: %s", path, strerror(errno));
	}
	if (nt_set_task_policy(NULL))
		nt_tap_bail("set_mempolicy(MPOL_DEFAULT): %s", strerror(errno));
	if (fsync(fd))
		nt_tap_bail("fsync %s: %s", path, strerror(errno));
	free(buf);
	return fd;
}

size_t nt_lru_file_bad(const struct nt_lru_test *lt, enum nt_place p, int fd)
{
	size_t page = sysconf(_SC_PAGESIZE), n = page / sizeof(unsigned long), i, w, bad = 0;
	unsigned long *buf = malloc(page);

	if (!buf)
		nt_tap_bail("out of memory");
	for (i = 0; i < lt->len / page; i++) {
		if (pread(fd, buf, page, i * page) != (ssize_t)page)
			nt_tap_bail("reading the file back: %s", strerror(errno));
		for (w = 0; w < n && buf[w] == file_word(p, i, w); w++)
			;
		bad += w < n;
	}
	free(buf);
	return bad;
}

char *nt_lru_file_map(const struct nt_lru_test *lt, enum nt_place p, int fd, int *status,
		      long counts[NT_MAX_NODES])
{
	size_t page = sysconf(_SC_PAGESIZE), npages = lt->len / page;
	const char *pn = nt_place_names[p];
	long off;
	char *m;

	m = mmap(NULL, lt->len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (m == MAP_FAILED)
		nt_tap_bail("mapping the file: %s", strerror(errno));
	if (syncfs(fd))
		nt_tap_bail("syncfs: %s", strerror(errno));
	off = nt_pages_per_node(m, npages, page, status, counts);
	if (off)
		nt_tap_bail("%s: %ld pages of the file not mapped after MAP_POPULATE (%s)", pn, off,
			    off < 0 ? strerror(-off) : "on no node");
	nt_tap_diag("%s: %zu pages, %zu node changes between neighbours", pn, npages,
		    nt_node_changes(status, npages));
	return m;
}

size_t nt_residency_not(const void *addr, size_t npages, bool resident)
{
	unsigned char *vec = malloc(npages);
	const char *what = resident ? "resident" : "evicted";
	size_t i, n = 0;

	if (!vec || mincore((void *)addr, npages * sysconf(_SC_PAGESIZE), vec))
		nt_tap_bail("mincore: %s", strerror(errno));
	for (i = 0; i < npages; i++) {
		if ((vec[i] & 1) == resident)
			continue;
		if (n++ < 4)
			nt_tap_diag("page %zu not %s", i, what);
	}
	if (n)
		nt_tap_diag("%zu of %zu pages not %s", n, npages, what);
	free(vec);
	return n;
}

static struct nt_ext4 lru_fs;

static void lru_fs_remove(void)
{
	nt_ext4_remove(&lru_fs);
}

const char *nt_lru_ext4(const struct nt_lru_test *lt)
{
	char why[160];
	int err;

	nt_cleanup_push(lru_fs_remove);
	err = nt_ext4_make(&lru_fs, 2 * lt->len + (32UL << 20), why, sizeof(why));
	if (err == -ENODEV || err == -ENOENT)
		nt_tap_skip_all("no ext4 file system to be had: %s", why);
	if (err)
		nt_tap_bail("making an ext4 file system: %s", why);
	return lru_fs.dir;
}
