// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cgroup.h"
#include "counters.h"
#include "ext4.h"
#include "harness.h"
#include "locked.h"
#include "lrupath.h"
#include "pageflags.h"
#include "snapshot.h"
#include "swap.h"
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

/*
 * Faults in the stack a test will use, so that no stack page is first
 * touched, and charged to the test's cgroup, between two readings: where
 * the deepest call lands depends on where the stack starts in its page,
 * which ASLR moves from run to run.
 */
static void __attribute__((noinline)) stack_prefault(void)
{
	volatile char room[256 << 10];
	size_t i;

	for (i = 0; i < sizeof(room); i += 1024)
		room[i] = 0;
}

void nt_lru_start(struct nt_lru_test *lt, int argc, char **argv, size_t def)
{
	struct nt_lru_reading warm;
	cpu_set_t saved;

	lt->len = nt_lk_start(argc, argv, def, &lt->t);
	lt->home = nt_memory_node_with_cpus(&lt->t);
	if (lt->home < 0)
		nt_tap_skip_all("no memory node with CPUs this task may use");
	nt_scratch_start(true);
	lt->memcg = nt_scratch_create("nt-lru-%d", getpid());
	stack_prefault();
	/*
	 * A page a reading touches for the first time after its drain (its
	 * static buffers) would wait in the lru_add batch and count only in the
	 * next reading: one reading outside the cgroup faults them in.
	 */
	nt_lru_read(lt, "pgactivate", &warm);
	nt_scratch_enter(lt->memcg);
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

static struct nt_ext4 lru_fs;

static void lru_fs_remove(void)
{
	nt_ext4_remove(&lru_fs);
}

void nt_lru_ext4(const struct nt_lru_test *lt)
{
	char why[160];
	int err;

	nt_cleanup_push(lru_fs_remove);
	err = nt_ext4_make(&lru_fs, 2 * lt->len + (32UL << 20), why, sizeof(why));
	if (err == -ENODEV || err == -ENOENT)
		nt_tap_skip_all("no ext4 file system to be had: %s", why);
	if (err)
		nt_tap_bail("making an ext4 file system: %s", why);
}

static char lru_swapfile[160];

static void lru_swap_off(void)
{
	if (lru_swapfile[0] && nt_swap_off(lru_swapfile))
		fprintf(stderr, "numa-tests: swapoff %s failed\n", lru_swapfile);
	lru_swapfile[0] = '\0';
}

void nt_lru_swap(const struct nt_lru_test *lt)
{
	char why[160];
	int err;

	nt_lru_ext4(lt);
	snprintf(lru_swapfile, sizeof(lru_swapfile), "%s/swapfile", lru_fs.dir);
	nt_cleanup_push(lru_swap_off);
	err = nt_swap_on(lru_swapfile, lt->len + (4UL << 20), why, sizeof(why));
	if (err) {
		lru_swapfile[0] = '\0';
		if (err == -ENOSYS)
			nt_tap_skip_all("no swap in this kernel (CONFIG_SWAP)");
		nt_tap_bail("a swap file: %s", why);
	}
}

void nt_lru_file_write(const struct nt_lru_test *lt, enum nt_place p, struct nt_lru_file *f)
{
	size_t page = sysconf(_SC_PAGESIZE), n = page / sizeof(unsigned long), i, w;
	unsigned long *buf = malloc(page);
	struct nt_policy pol;

	memset(f, 0, sizeof(*f));
	f->npages = lt->len / page;
	f->status = calloc(f->npages, sizeof(*f->status));
	snprintf(f->path, sizeof(f->path), "%s/%s", lru_fs.dir, nt_place_names[p]);
	f->fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC | O_NOATIME, 0600);
	if (f->fd < 0 || !buf || !f->status)
		nt_tap_bail("creating %s: %s", f->path, strerror(errno));
	nt_place_policy(&lt->t, p, lt->home, &pol);
	if (nt_set_task_policy(&pol))
		nt_tap_bail("set_mempolicy: %s", strerror(errno));
	for (i = 0; i < f->npages; i++) {
		for (w = 0; w < n; w++)
			buf[w] = file_word(p, i, w);
		if (write(f->fd, buf, page) != (ssize_t)page)
			nt_tap_bail("writing %s: %s", f->path, strerror(errno));
	}
	if (nt_set_task_policy(NULL))
		nt_tap_bail("set_mempolicy(MPOL_DEFAULT): %s", strerror(errno));
	if (fsync(f->fd))
		nt_tap_bail("fsync %s: %s", f->path, strerror(errno));
	free(buf);
}

size_t nt_lru_file_bad(const struct nt_lru_test *lt, enum nt_place p,
		       const struct nt_lru_file *f)
{
	size_t page = sysconf(_SC_PAGESIZE), n = page / sizeof(unsigned long), i, w, bad = 0;
	unsigned long *buf = malloc(page);

	if (!buf)
		nt_tap_bail("out of memory");
	for (i = 0; i < lt->len / page; i++) {
		if (pread(f->fd, buf, page, i * page) != (ssize_t)page)
			nt_tap_bail("reading the file back: %s", strerror(errno));
		for (w = 0; w < n && buf[w] == file_word(p, i, w); w++)
			;
		bad += w < n;
	}
	free(buf);
	return bad;
}

void nt_lru_file_map(const struct nt_lru_test *lt, enum nt_place p, struct nt_lru_file *f)
{
	size_t page = sysconf(_SC_PAGESIZE);
	const char *pn = nt_place_names[p];
	long off;

	f->map = mmap(NULL, lt->len, PROT_READ, MAP_SHARED | MAP_POPULATE, f->fd, 0);
	if (f->map == MAP_FAILED)
		nt_tap_bail("mapping the file: %s", strerror(errno));
	if (syncfs(f->fd))
		nt_tap_bail("syncfs: %s", strerror(errno));
	off = nt_pages_per_node(f->map, f->npages, page, f->status, f->counts);
	if (off)
		nt_tap_bail("%s: %ld pages of the file not mapped after MAP_POPULATE (%s)", pn, off,
			    off < 0 ? strerror(-off) : "on no node");
	nt_tap_diag("%s: %zu pages, %zu node changes between neighbours", pn, f->npages,
		    nt_node_changes(f->status, f->npages));
}

void nt_lru_file_remove(struct nt_lru_file *f)
{
	if (f->map && f->map != MAP_FAILED)
		munmap(f->map, f->npages * sysconf(_SC_PAGESIZE));
	close(f->fd);
	unlink(f->path);
	free(f->status);
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

static const char *const lru_sum_names[NT_LRU_SUMS] = {
	[NT_ACTIVE_FILE] = "memory.numa_stat active_file",
	[NT_INACTIVE_FILE] = "memory.numa_stat inactive_file",
	[NT_FILE_LRU] = "memory.numa_stat active_file + inactive_file",
	[NT_ANON_LRU] = "memory.numa_stat active_anon + inactive_anon",
	[NT_ANON] = "memory.numa_stat anon",
};

/*
 * A reading allocates nothing: a heap page it touched for the first time
 * after its drain would wait in the lru_add batch, uncounted, and count in
 * the next reading. So the files are read with read() into static buffers.
 */
static char lru_text[16384];

/* The whole of the cgroup's file into lru_text, NUL-terminated. 0 or -errno. */
static int lru_file(const struct nt_lru_test *lt, const char *file)
{
	static char path[256];
	ssize_t n, len = 0;
	int fd;

	snprintf(path, sizeof(path), NT_CGROUP_ROOT "/%s/%s", lt->memcg, file);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	while ((n = read(fd, lru_text + len, sizeof(lru_text) - 1 - len)) > 0)
		len += n;
	close(fd);
	if (n < 0)
		return -errno;
	if (len == sizeof(lru_text) - 1)
		return -EFBIG;
	lru_text[len] = '\0';
	return 0;
}

/* The text after "key " at the start of a line of lru_text, or NULL. */
static const char *lru_line(const char *key)
{
	size_t klen = strlen(key);
	const char *l = lru_text;

	while (l) {
		if (!strncmp(l, key, klen) && l[klen] == ' ')
			return l + klen + 1;
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return NULL;
}

/* memory.numa_stat's "key N0=bytes N1=bytes ..." into kB per node. 0 or -errno. */
static int lru_numa_kb(const char *key, long kb[NT_MAX_NODES])
{
	const char *l = lru_line(key);
	long bytes;
	int node, used;

	memset(kb, 0, NT_MAX_NODES * sizeof(*kb));
	if (!l)
		return -ENOENT;
	while (*l && *l != '\n') {
		if (sscanf(l, "N%d=%ld%n", &node, &bytes, &used) != 2 || node < 0 ||
		    node >= NT_MAX_NODES)
			return -EINVAL;
		kb[node] = bytes >> 10;
		l += used;
		while (*l == ' ')
			l++;
	}
	return 0;
}

void nt_lru_read(const struct nt_lru_test *lt, const char *event, struct nt_lru_reading *r)
{
	static const char *const keys[] = {
		"active_file", "inactive_file", "active_anon", "inactive_anon", "anon",
	};
	static long v[5][NT_MAX_NODES];
	const char *l;
	int node, k, err;

	memset(r, 0, sizeof(*r));
	err = nt_drain_all();
	/* Reading cpu.stat folds the cgroup's per-CPU statistics (lib/cgroup.h). */
	if (!err)
		err = lru_file(lt, "cpu.stat");
	if (!err)
		err = lru_file(lt, "memory.numa_stat");
	for (k = 0; !err && k < 5; k++)
		err = lru_numa_kb(keys[k], v[k]);
	if (err)
		nt_tap_bail("%s memory.numa_stat: %s", lt->memcg, strerror(-err));
	nt_mask_for_each(node, &lt->t.online) {
		r->kb[NT_ACTIVE_FILE][node] = v[0][node];
		r->kb[NT_INACTIVE_FILE][node] = v[1][node];
		r->kb[NT_FILE_LRU][node] = v[0][node] + v[1][node];
		r->kb[NT_ANON_LRU][node] = v[2][node] + v[3][node];
		r->kb[NT_ANON][node] = v[4][node];
	}
	if (!event)
		return;
	err = lru_file(lt, "memory.stat");
	l = err ? NULL : lru_line(event);
	if (!l || sscanf(l, "%ld", &r->event) != 1)
		nt_tap_bail("%s memory.stat %s: %s", lt->memcg, event,
			    err ? strerror(-err) : "no such line");
}

bool nt_lru_moved(const struct nt_lru_test *lt, const struct nt_lru_reading *now,
		  const struct nt_lru_reading *base, enum nt_lru_sum sum, int sign,
		  const long *pages)
{
	long want[NT_MAX_NODES];
	int node;

	nt_mask_for_each(node, &lt->t.online)
		want[node] = sign * pages[node];
	return nt_nodes_moved(&lt->t.online, now->kb[sum], base->kb[sum], want,
			      sysconf(_SC_PAGESIZE) / 1024, lru_sum_names[sum]);
}

int nt_lru_run(void (*run)(enum nt_place p))
{
	enum nt_place p;

	for (p = 0; p < NT_PLACES; p++)
		run(p);
	return nt_tap_finish();
}
