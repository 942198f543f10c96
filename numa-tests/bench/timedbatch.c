// SPDX-License-Identifier: GPL-2.0
/*
 * timedbatch: the cost of one bulk mm operation on an area placed bound to a
 * node or interleaved page by page, for the batched LRU paths beside
 * munlock's (timedmunlock's sibling: same options, same output).
 *
 * Each iteration builds a fresh area of --size under the task policy of
 * --policy, checks page by page where it landed, and times one operation
 * with CLOCK_MONOTONIC (and the cost model's region markers):
 *
 *   populate    mmap(MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE): the
 *               lru_add batch (placement checked after it)
 *   dontneed    madvise(MADV_DONTNEED) of a populated anonymous area:
 *               release_pages() / folios_put_refs() and the per-CPU free
 *   lazyfree    madvise(MADV_FREE) of a populated anonymous area: the
 *               lru_lazyfree batch
 *   cold        madvise(MADV_COLD) of a mapped memfd whose pages were read
 *               twice (active): the lru_deactivate batch
 *   reread      read() of a memfd written once: the lru_activate batch
 *   truncate    ftruncate(0) of a filled memfd: shmem_undo_range() and
 *               release of the page cache
 *   shm-unlock  shmctl(SHM_UNLOCK) of a locked, populated SysV segment:
 *               check_move_unevictable_folios()
 *   move        move_pages() of every page to the next memory node after
 *               its own: do_pages_move() cuts its work into runs with one
 *               target node each
 *   mbind-move  mbind(MPOL_BIND to one node, MPOL_MF_MOVE): migration adds
 *               each page to the LRU with the LRU caches off (no batch);
 *               pages counts the pages that had to move
 *   collapse    madvise(MADV_COLLAPSE) of a 2 MiB aligned area of small
 *               pages (THP "never" for the run)
 *   pageout     madvise(MADV_PAGEOUT) of a clean, mapped file on ext4:
 *               reclaim_pages() cuts its list into runs of one node
 *   fadvise     posix_fadvise(POSIX_FADV_DONTNEED) of a clean file on ext4
 *               that is mapped, so that no page can be dropped: every page
 *               goes through the lru_deactivate_file batch
 *   swapout     madvise(MADV_PAGEOUT) of written anonymous memory, to a
 *               swap file on ext4: the reclaim_pages() runs and, as the
 *               loop device's worker writes the pages (on one vCPU mostly
 *               inside the call), the lru_move_tail batch that rotates
 *               each written page (PG_reclaim) to its LRU's tail
 *
 * The ext4 file system (pageout, fadvise, swapout) is a loop device over
 * tmpfs made once per run; its image is allocated interleaved over every
 * memory node so that it does not fill the node a bound area is measured
 * on. swapout's swap file (lib/swap.h) is on it: the guests have no swap.
 *
 * Placement: every page of a bind policy on one of its nodes; interleaved,
 * the policy's nodes in turn from page to page, exactly. The page cache of
 * ext4 follows the task policy's rotor, which the file system's own
 * allocations advance too (on two nodes most pages then land on one), so
 * its pages are put in place with move_pages() once the file is written
 * and mapped: page i on the i-th node of the policy, cyclically (bound:
 * its first node). The counts per node are printed.
 *
 * --processes N: N workers, each with its own area (its own file), do each
 * iteration's timed operation at the same time (process-shared barriers):
 * one line per worker and iteration, no model markers (the workers would
 * overlap on the model's one vCPU).
 *
 * Output on stdout, as timedmunlock's: a "# timedbatch ..." header, the line
 * "iteration,op,pages,seconds", one line per iteration, "# " comments (the
 * placement, "# model ..." records under --clock model, --vmstat deltas),
 * and a final "# summary" line. Nothing passes or fails on time: the exit
 * status is non-zero only when the operation could not be measured as
 * described (the reason on stderr).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "counters.h"
#include "ext4.h"
#include "marker.h"
#include "nodemask.h"
#include "nodes.h"
#include "placement.h"
#include "record.h"
#include "swap.h"
#include "sysfile.h"
#include "values.h"

#ifndef MADV_COLD
#define MADV_COLD	20
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define HPAGE_SIZE	(2UL << 20)
#define KPF_THP		22
#define PM_PFN_MASK	((1ULL << 55) - 1)
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)
#define CHUNK		(1UL << 20)

enum kind { ANON, MEMFD, SYSV, EXT4, SWAP };

enum op {
	OP_POPULATE, OP_DONTNEED, OP_LAZYFREE, OP_COLD, OP_REREAD, OP_TRUNCATE,
	OP_SHM_UNLOCK, OP_MOVE, OP_MBIND_MOVE, OP_COLLAPSE, OP_PAGEOUT, OP_FADVISE,
	OP_SWAPOUT, NR_OPS
};

static const struct {
	const char *name;
	enum kind kind;
	bool two_nodes;		/* moves pages between nodes */
} ops[NR_OPS] = {
	[OP_POPULATE] = { "populate", ANON },
	[OP_DONTNEED] = { "dontneed", ANON },
	[OP_LAZYFREE] = { "lazyfree", ANON },
	[OP_COLD] = { "cold", MEMFD },
	[OP_REREAD] = { "reread", MEMFD },
	[OP_TRUNCATE] = { "truncate", MEMFD },
	[OP_SHM_UNLOCK] = { "shm-unlock", SYSV },
	[OP_MOVE] = { "move", ANON, true },
	[OP_MBIND_MOVE] = { "mbind-move", ANON, true },
	[OP_COLLAPSE] = { "collapse", ANON },
	[OP_PAGEOUT] = { "pageout", EXT4 },
	[OP_FADVISE] = { "fadvise", EXT4 },
	[OP_SWAPOUT] = { "swapout", SWAP },
};

static struct {
	char policy_text[256];
	struct nt_policy policy;
	size_t size;
	enum op op;
	unsigned int iterations;
	unsigned int processes;
	const char *vmstat[BENCH_MAX_VMSTAT];
	int nr_vmstat;
} opt;

static size_t page_size;
static struct nt_nodemask memory_nodes;
static struct nt_ext4 fs;
static bool fs_ours;
static char swapfile[96];
static char thp_saved[32];
static bool in_worker;

/* One iteration's area of one process. */
struct area {
	char *addr;		/* its mapping (none for reread, truncate, shm-unlock) */
	size_t npages;
	int fd;			/* memfd or ext4 file, else -1 */
	int shmid;		/* SysV segment, else -1 */
	char path[160];		/* the ext4 file */
	int *status;		/* move: the target of every page */
	void **pages;
	size_t moving;		/* pages the timed operation works on */
};

static void cleanup(void)
{
	if (thp_saved[0] && nt_file_write(THP_ENABLED, thp_saved) == 0)
		thp_saved[0] = 0;
	if (swapfile[0] && nt_swap_off(swapfile))
		fprintf(stderr, "timedbatch: swapoff %s failed\n", swapfile);
	swapfile[0] = 0;
	if (fs_ours)
		nt_ext4_remove(&fs);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "timedbatch: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (in_worker) {
		/* The others wait for us at a barrier: end them all. */
		kill(0, SIGTERM);
		_exit(1);
	}
	cleanup();
	exit(1);
}

static void on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void __attribute__((noreturn)) usage(int status)
{
	int i;

	fprintf(status ? stderr : stdout,
		"usage: timedbatch --op OP [--policy P] [--size S] [--iterations N]\n"
		"                  [--processes N] [--vmstat PREFIX]...\n"
		"  --op          what is timed:");
	for (i = 0; i < NR_OPS; i++)
		fprintf(status ? stderr : stdout, " %s", ops[i].name);
	fprintf(status ? stderr : stdout, "\n"
		"  --policy      bind:NODES | interleave:NODES | preferred:NODE, NODES a\n"
		"                node list (0-3,5) or all (every memory node); the task\n"
		"                policy the area is built under (default interleave:all)\n"
		"  --size        area size, K/M/G suffixes (default 64M)\n"
		"  --iterations  default 10\n"
		"  --processes   N processes, each with its own area, timing the\n"
		"                operation at the same time\n"
		"  --vmstat      print, per iteration, the change of the /proc/vmstat\n"
		"                items starting with PREFIX across the timed operation\n");
	exit(status);
}

static void parse_policy(const char *s)
{
	char why[256];

	if (bench_parse_policy(s, &memory_nodes, &opt.policy, opt.policy_text,
			       sizeof(opt.policy_text), why, sizeof(why)))
		die("%s", why);
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "op", required_argument, NULL, 'o' },
		{ "policy", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "processes", required_argument, NULL, 'P' },
		{ "vmstat", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *policy = "interleave:all";
	bool have_op = false;
	char *end;
	long n;
	int c;

	opt.size = 64UL << 20;
	opt.iterations = 10;
	opt.processes = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			for (n = 0; n < NR_OPS; n++)
				if (!strcmp(optarg, ops[n].name))
					break;
			if (n == NR_OPS)
				die("bad --op '%s' (--help lists them)", optarg);
			opt.op = n;
			have_op = true;
			break;
		case 'p':
			policy = optarg;
			break;
		case 's':
			if (nt_parse_size(optarg, &opt.size) || !opt.size)
				die("bad --size '%s'", optarg);
			break;
		case 'n':
			n = strtol(optarg, &end, 10);
			if (*end || n < 1 || n > 1000000)
				die("bad --iterations '%s'", optarg);
			opt.iterations = n;
			break;
		case 'P':
			n = strtol(optarg, &end, 10);
			if (*end || n < 1 || n > 1024)
				die("bad --processes '%s'", optarg);
			opt.processes = n;
			break;
		case 'v':
			if (opt.nr_vmstat == BENCH_MAX_VMSTAT)
				die("at most %d --vmstat prefixes", BENCH_MAX_VMSTAT);
			opt.vmstat[opt.nr_vmstat++] = optarg;
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	if (optind != argc || !have_op)
		usage(2);
	if (opt.size % page_size)
		die("--size %zu is not a multiple of the page size", opt.size);
	if (opt.op == OP_COLLAPSE && opt.size % HPAGE_SIZE)
		die("--op collapse: --size must be a multiple of 2M");
	if (ops[opt.op].two_nodes && nt_mask_weight(&memory_nodes) < 2)
		die("--op %s moves pages between nodes: this machine has one memory node",
		    ops[opt.op].name);
	parse_policy(policy);
}

/* ---- building the area ---- */

static void *map_anon(size_t len, int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (p == MAP_FAILED)
		die("mmap(%zu): %s", len, strerror(errno));
	return p;
}

/* A 2 MiB aligned anonymous area, not populated. */
static char *map_aligned(size_t len)
{
	char *p = map_anon(len + HPAGE_SIZE, 0);
	char *start = (char *)(((uintptr_t)p + HPAGE_SIZE - 1) & ~(HPAGE_SIZE - 1));

	if (start > p)
		munmap(p, start - p);
	munmap(start + len, p + HPAGE_SIZE - start);
	return start;
}

static void touch(char *p, size_t len)
{
	size_t off;

	for (off = 0; off < len; off += page_size)
		p[off] = 1;
}

/* write() of len bytes of ones; the data is not what is measured. */
static void fill_fd(int fd, size_t len)
{
	static char *buf;
	size_t done;
	ssize_t n;

	if (!buf) {
		buf = map_anon(CHUNK, MAP_POPULATE);
		memset(buf, 1, CHUNK);
	}
	for (done = 0; done < len; done += n) {
		n = pwrite(fd, buf, len - done < CHUNK ? len - done : CHUNK, done);
		if (n <= 0)
			die("write: %s", n ? strerror(errno) : "short");
	}
}

static void read_fd(int fd, size_t len)
{
	static char *buf;
	size_t done;
	ssize_t n;

	if (!buf)
		buf = map_anon(CHUNK, MAP_POPULATE);
	for (done = 0; done < len; done += n) {
		n = pread(fd, buf, len - done < CHUNK ? len - done : CHUNK, done);
		if (n <= 0)
			die("read: %s", n ? strerror(errno) : "short");
	}
}

static char *map_fd(int fd, int prot)
{
	char *p = mmap(NULL, opt.size, prot, MAP_SHARED | MAP_POPULATE, fd, 0);

	if (p == MAP_FAILED)
		die("mmap of the file (%zu): %s", opt.size, strerror(errno));
	return p;
}

/* The nodes of pages [0, npages) of addr, every one of them present. */
static int *nodes_of(const char *addr, size_t npages)
{
	int *status = malloc(npages * sizeof(*status));
	size_t i;
	int err;

	if (!status)
		die("out of memory");
	err = nt_pages_nodes(addr, npages, page_size, status);
	if (err)
		die("move_pages() query of %zu pages: %s", npages, strerror(-err));
	for (i = 0; i < npages; i++)
		if (status[i] < 0 || status[i] >= NT_MAX_NODES)
			die("page %zu of the area: move_pages status %d", i, status[i]);
	return status;
}

static void print_counts(const long count[NT_MAX_NODES])
{
	char buf[512];
	size_t len = 0;
	int node;

	buf[0] = 0;
	for (node = 0; node < NT_MAX_NODES; node++)
		if (count[node])
			len += snprintf(buf + len, sizeof(buf) - len, "%s%d:%ld",
					len ? "," : "", node, count[node]);
	printf("# placement pages_per_node=%s checked=all\n", buf);
}

/*
 * Every page where the policy puts it (see the header): dies otherwise.
 * Prints the counts per node when print is set.
 */
static void check_placement(const char *addr, bool print)
{
	size_t npages = opt.size / page_size, i;
	int *status = nodes_of(addr, npages), order[NT_MAX_NODES];
	int n = 0, node, pos = 0;
	long count[NT_MAX_NODES] = { 0 };

	nt_mask_for_each(node, &opt.policy.nodes)
		order[n++] = node;
	for (i = 0; i < npages; i++) {
		count[status[i]]++;
		if (!nt_mask_isset(&opt.policy.nodes, status[i]))
			die("page %zu is on node %d, outside policy %s", i, status[i],
			    opt.policy_text);
	}
	if (opt.policy.mode == MPOL_INTERLEAVE && n > 1) {
		while (order[pos] != status[0])
			pos++;
		for (i = 0; i < npages; i++)
			if (status[i] != order[(pos + i) % n])
				die("page %zu is on node %d, not on node %d: not interleaved "
				    "page by page over %s", i, status[i],
				    order[(pos + i) % n], opt.policy_text);
	}
	if (print)
		print_counts(count);
	free(status);
}

/* Pages of [addr, addr + len) in memory, by mincore(). */
static size_t resident(const char *addr, size_t len)
{
	size_t npages = len / page_size, i, n = 0;
	unsigned char *vec = malloc(npages);

	if (!vec)
		die("out of memory");
	if (mincore((void *)addr, len, vec))
		die("mincore: %s", strerror(errno));
	for (i = 0; i < npages; i++)
		n += vec[i] & 1;
	free(vec);
	return n;
}

/* Every 2 MiB range of addr a transparent huge page, by kpageflags. */
static size_t huge_ranges(const char *addr, size_t len)
{
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kpageflags = open("/proc/kpageflags", O_RDONLY);
	size_t off, n = 0;
	uint64_t pm, flags;

	if (pagemap < 0 || kpageflags < 0)
		die("cannot open /proc/self/pagemap or /proc/kpageflags: %s", strerror(errno));
	for (off = 0; off < len; off += HPAGE_SIZE) {
		if (pread(pagemap, &pm, 8, ((uintptr_t)addr + off) / page_size * 8) != 8)
			die("reading /proc/self/pagemap: %s", strerror(errno));
		if (!(pm & PM_PRESENT) || !(pm & PM_PFN_MASK))
			continue;
		if (pread(kpageflags, &flags, 8, (pm & PM_PFN_MASK) * 8) != 8)
			die("reading /proc/kpageflags: %s", strerror(errno));
		n += (flags >> KPF_THP) & 1;
	}
	close(pagemap);
	close(kpageflags);
	return n;
}

/* Pages of [addr, addr + len) whose entry is a swap entry, by pagemap. */
static size_t swapped(const char *addr, size_t len)
{
	size_t npages = len / page_size, i, n = 0;
	uint64_t *pm = malloc(npages * sizeof(*pm));
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (!pm || fd < 0)
		die("reading /proc/self/pagemap: %s", pm ? strerror(errno) : "out of memory");
	if (pread(fd, pm, npages * 8, (uintptr_t)addr / page_size * 8) != (ssize_t)(npages * 8))
		die("reading /proc/self/pagemap: %s", strerror(errno));
	for (i = 0; i < npages; i++)
		n += (pm[i] & (PM_PRESENT | PM_SWAP)) == PM_SWAP;
	close(fd);
	free(pm);
	return n;
}

static void drain(void)
{
	int err = nt_drain_all();

	if (err)
		die("draining the per-CPU batches: %s", strerror(-err));
}

/* The first memory node after node, cyclically. */
static int next_node(int node)
{
	int n;

	for (n = node + 1; n < NT_MAX_NODES; n++)
		if (nt_mask_isset(&memory_nodes, n))
			return n;
	return nt_mask_nth(&memory_nodes, 0);
}

/* mbind-move's target: the memory node after the policy's first node. */
static int mbind_target(void)
{
	return next_node(nt_mask_nth(&opt.policy.nodes, 0));
}

/* Page i of a mapped file onto the policy's i-th node, cyclically. */
static void place_file_pages(char *addr, size_t npages)
{
	int *nodes = malloc(npages * sizeof(int)), *status = malloc(npages * sizeof(int));
	void **pages = malloc(npages * sizeof(void *));
	int order[NT_MAX_NODES], n = 0, node;
	size_t i;

	if (!nodes || !status || !pages)
		die("out of memory");
	nt_mask_for_each(node, &opt.policy.nodes)
		order[n++] = node;
	for (i = 0; i < npages; i++) {
		pages[i] = addr + i * page_size;
		nodes[i] = opt.policy.mode == MPOL_INTERLEAVE ? order[i % n] : order[0];
	}
	if (move_pages(0, npages, pages, nodes, status, MPOL_MF_MOVE))
		die("move_pages() of the file's pages into place: %s", strerror(errno));
	free(nodes);
	free(status);
	free(pages);
}

/* Builds worker w's area for one iteration; checks placement. */
static void prepare(struct area *a, unsigned int w, bool print)
{
	size_t i;
	int *status;

	memset(a, 0, sizeof(*a));
	a->fd = -1;
	a->shmid = -1;
	a->npages = opt.size / page_size;
	a->moving = a->npages;
	switch (opt.op) {
	case OP_POPULATE:
		return;		/* the timed call builds it */
	case OP_DONTNEED:
	case OP_LAZYFREE:
	case OP_MOVE:
	case OP_MBIND_MOVE:
		a->addr = map_anon(opt.size, MAP_POPULATE);
		break;
	case OP_SWAPOUT:
		/* Written: since 6.12 a zero-filled page is not written to swap. */
		a->addr = map_anon(opt.size, 0);
		touch(a->addr, opt.size);
		break;
	case OP_COLLAPSE:
		a->addr = map_aligned(opt.size);
		touch(a->addr, opt.size);
		break;
	case OP_COLD:
	case OP_REREAD:
	case OP_TRUNCATE:
		a->fd = memfd_create("timedbatch", MFD_CLOEXEC);
		if (a->fd < 0)
			die("memfd_create: %s", strerror(errno));
		if (ftruncate(a->fd, opt.size))
			die("ftruncate(memfd, %zu): %s", opt.size, strerror(errno));
		fill_fd(a->fd, opt.size);
		if (opt.op == OP_COLD) {
			/* The second access of each page activates it. */
			read_fd(a->fd, opt.size);
			drain();
		}
		a->addr = map_fd(a->fd, PROT_READ);
		break;
	case OP_SHM_UNLOCK:
		a->shmid = shmget(IPC_PRIVATE, opt.size, IPC_CREAT | 0600);
		if (a->shmid < 0)
			die("shmget(%zu): %s", opt.size, strerror(errno));
		if (shmctl(a->shmid, SHM_LOCK, NULL))
			die("shmctl(SHM_LOCK): %s", strerror(errno));
		a->addr = shmat(a->shmid, NULL, 0);
		if (a->addr == (void *)-1)
			die("shmat: %s", strerror(errno));
		touch(a->addr, opt.size);
		break;
	case OP_PAGEOUT:
	case OP_FADVISE:
		snprintf(a->path, sizeof(a->path), "%s/area-%u", fs.dir, w);
		a->fd = open(a->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (a->fd < 0)
			die("creating %s: %s", a->path, strerror(errno));
		fill_fd(a->fd, opt.size);
		if (fsync(a->fd))
			die("fsync: %s", strerror(errno));
		/* Mapped once and populated: what both operations need. */
		a->addr = map_fd(a->fd, PROT_READ);
		place_file_pages(a->addr, a->npages);
		break;
	case NR_OPS:
		break;
	}
	check_placement(a->addr, print);
	if (opt.op == OP_MOVE || opt.op == OP_MBIND_MOVE) {
		status = nodes_of(a->addr, a->npages);
		a->pages = malloc(a->npages * sizeof(*a->pages));
		if (!a->pages)
			die("out of memory");
		a->moving = 0;
		for (i = 0; i < a->npages; i++) {
			a->pages[i] = a->addr + i * page_size;
			if (opt.op == OP_MOVE) {
				a->moving += next_node(status[i]) != status[i];
				status[i] = next_node(status[i]);
			} else {
				a->moving += status[i] != mbind_target();
			}
		}
		if (opt.op == OP_MOVE)
			a->status = status;
		else
			free(status);
	}
	if (opt.op == OP_REREAD || opt.op == OP_TRUNCATE || opt.op == OP_SHM_UNLOCK) {
		/* Only the page cache (or segment) is left for the timed call. */
		if (opt.op == OP_SHM_UNLOCK ? shmdt(a->addr) : munmap(a->addr, opt.size))
			die("unmapping the area: %s", strerror(errno));
		a->addr = NULL;
	}
}

/* The timed call; 0 or -1 with errno. */
static int timed_op(struct area *a)
{
	struct nt_nodemask target;
	int *st;

	switch (opt.op) {
	case OP_POPULATE:
		a->addr = mmap(NULL, opt.size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		return a->addr == MAP_FAILED ? -1 : 0;
	case OP_DONTNEED:
		return madvise(a->addr, opt.size, MADV_DONTNEED);
	case OP_LAZYFREE:
		return madvise(a->addr, opt.size, MADV_FREE);
	case OP_COLD:
		return madvise(a->addr, opt.size, MADV_COLD);
	case OP_REREAD:
		read_fd(a->fd, opt.size);
		return 0;
	case OP_TRUNCATE:
		return ftruncate(a->fd, 0);
	case OP_SHM_UNLOCK:
		return shmctl(a->shmid, SHM_UNLOCK, NULL);
	case OP_MOVE:
		st = a->status + a->npages;	/* the second half: what came back */
		return move_pages(0, a->npages, a->pages, a->status, st, MPOL_MF_MOVE) ? -1 : 0;
	case OP_MBIND_MOVE:
		nt_mask_clear(&target);
		nt_mask_set(&target, mbind_target());
		return mbind(a->addr, opt.size, MPOL_BIND, target.bits, NT_MASK_MAXNODE,
			     MPOL_MF_MOVE) ? -1 : 0;
	case OP_COLLAPSE:
		return madvise(a->addr, opt.size, MADV_COLLAPSE);
	case OP_PAGEOUT:
		return madvise(a->addr, opt.size, MADV_PAGEOUT);
	case OP_FADVISE:
		return posix_fadvise(a->fd, 0, opt.size, POSIX_FADV_DONTNEED) ? -1 : 0;
	case OP_SWAPOUT:
		return madvise(a->addr, opt.size, MADV_PAGEOUT);
	case NR_OPS:
		break;
	}
	return -1;
}

/* Checks that the operation did its whole work, then frees the area. */
static void finish(struct area *a)
{
	size_t i, n;
	int *now;

	switch (opt.op) {
	case OP_POPULATE:
		check_placement(a->addr, false);
		break;
	case OP_DONTNEED:
		n = resident(a->addr, opt.size);
		if (n)
			die("%zu pages still resident after MADV_DONTNEED", n);
		break;
	case OP_MOVE:
		now = nodes_of(a->addr, a->npages);
		for (i = 0; i < a->npages; i++)
			if (now[i] != a->status[i])
				die("page %zu is on node %d after move_pages() to node %d", i,
				    now[i], a->status[i]);
		free(now);
		break;
	case OP_MBIND_MOVE:
		now = nodes_of(a->addr, a->npages);
		for (i = 0; i < a->npages; i++)
			if (now[i] != mbind_target())
				die("page %zu is on node %d after mbind(MPOL_MF_MOVE) to node "
				    "%d", i, now[i], mbind_target());
		free(now);
		break;
	case OP_COLLAPSE:
		n = huge_ranges(a->addr, opt.size);
		if (n != opt.size / HPAGE_SIZE)
			die("%zu of %zu 2 MiB ranges are huge pages after MADV_COLLAPSE", n,
			    opt.size / HPAGE_SIZE);
		break;
	case OP_PAGEOUT:
		n = resident(a->addr, opt.size);
		if (n)
			die("%zu of %zu pages still in the page cache after MADV_PAGEOUT: the "
			    "figure would be of less work", n, a->npages);
		break;
	case OP_SWAPOUT:
		n = swapped(a->addr, opt.size);
		if (n != a->npages)
			die("%zu of %zu pages swapped out after MADV_PAGEOUT: the figure would "
			    "be of less work", n, a->npages);
		break;
	default:
		break;
	}
	if (a->addr && munmap(a->addr, opt.size))
		die("munmap: %s", strerror(errno));
	if (a->shmid >= 0 && shmctl(a->shmid, IPC_RMID, NULL))
		die("shmctl(IPC_RMID): %s", strerror(errno));
	if (a->fd >= 0)
		close(a->fd);
	if (a->path[0] && unlink(a->path))
		die("unlink %s: %s", a->path, strerror(errno));
	free(a->status);
	free(a->pages);
}

/* ---- the iterations ---- */

/*
 * One untimed pass of swapout first: on 6.12 the writes of the first pass
 * over a fresh swap file were still under way long after the call
 * returned; from the second pass on, they were done within it (or for at
 * most a few hundred of 16,384 pages) on both kernels.
 */
static void warm_up(void)
{
	struct area a;

	prepare(&a, 0, false);
	if (timed_op(&a))
		die("the untimed first pass of %s: %s", ops[opt.op].name, strerror(errno));
	finish(&a);
}

static double elapsed(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) + (b->tv_nsec - a->tv_nsec) / 1e9;
}

static void now(struct timespec *t)
{
	if (clock_gettime(CLOCK_MONOTONIC, t))
		die("clock_gettime(CLOCK_MONOTONIC): %s", strerror(errno));
}

static struct bench_vmstat vm_before, vm_after;

static void vmstat_read(struct bench_vmstat *s)
{
	int err = bench_vmstat_read(s, opt.vmstat, opt.nr_vmstat);

	if (err)
		die("cannot read /proc/vmstat: %s", strerror(-err));
}

static void timed(struct area *a, struct timespec *t0, struct timespec *t1, bool markers)
{
	if (opt.op == OP_MOVE) {
		/* Room for the statuses move_pages() returns, after the targets. */
		a->status = realloc(a->status, 2 * a->npages * sizeof(*a->status));
		if (!a->status)
			die("out of memory");
	}
	now(t0);
	if (markers)
		cm_region_start();
	if (timed_op(a))
		die("%s of %zu bytes: %s", ops[opt.op].name, opt.size, strerror(errno));
	if (markers)
		cm_region_end();
	now(t1);
}

static double run_in_process(unsigned int it, size_t *pages)
{
	struct timespec t0, t1;
	struct area a;
	char why[512];

	prepare(&a, 0, it == 1 && opt.op != OP_POPULATE);
	vmstat_read(&vm_before);
	timed(&a, &t0, &t1, true);
	vmstat_read(&vm_after);
	if (opt.op == OP_POPULATE && it == 1)
		check_placement(a.addr, true);
	*pages = a.moving;
	finish(&a);
	if (opt.nr_vmstat)
		bench_vmstat_print(it, &vm_before, &vm_after);
	printf("%u,%s,%zu,%.9f\n", it, ops[opt.op].name, *pages, elapsed(&t0, &t1));
	if (bench_model_print(it, why, sizeof(why)))
		die("%s", why);
	fflush(stdout);
	return elapsed(&t0, &t1);
}

struct shared {
	pthread_barrier_t ready, go, done;
	double secs[];		/* [iteration][worker], then pages likewise */
};

static struct shared *sh;

static void barrier(pthread_barrier_t *b)
{
	int err = pthread_barrier_wait(b);

	if (err && err != PTHREAD_BARRIER_SERIAL_THREAD)
		die("pthread_barrier_wait: %s", strerror(err));
}

static void worker(unsigned int w)
{
	size_t cells = (size_t)opt.iterations * opt.processes;
	struct timespec t0, t1;
	unsigned int it;
	struct area a;

	in_worker = true;
	for (it = 1; it <= opt.iterations; it++) {
		prepare(&a, w, false);
		barrier(&sh->ready);
		barrier(&sh->go);
		timed(&a, &t0, &t1, false);
		sh->secs[(it - 1) * opt.processes + w] = elapsed(&t0, &t1);
		sh->secs[cells + (it - 1) * opt.processes + w] = a.moving;
		finish(&a);
		barrier(&sh->done);
	}
	_exit(0);
}

static void run_processes(double *secs)
{
	size_t cells = (size_t)opt.iterations * opt.processes, c;
	size_t len = sizeof(*sh) + sizeof(double) * 2 * cells;
	unsigned int w, it, failed;
	pid_t *pids;
	char why[256];

	sh = bench_workers_shared(len, opt.processes, &pids, why, sizeof(why));
	if (!sh)
		die("%s", why);
	bench_barrier_shared(&sh->ready, opt.processes + 1);
	bench_barrier_shared(&sh->go, opt.processes + 1);
	bench_barrier_shared(&sh->done, opt.processes + 1);
	fflush(stdout);
	for (w = 0; w < opt.processes; w++) {
		pids[w] = fork();
		if (pids[w] < 0)
			die("fork: %s", strerror(errno));
		if (!pids[w]) {
			thp_saved[0] = 0;	/* the parent puts things back */
			fs_ours = false;	/* the parent removes it */
			worker(w);
		}
	}
	for (it = 1; it <= opt.iterations; it++) {
		barrier(&sh->ready);
		vmstat_read(&vm_before);
		barrier(&sh->go);
		barrier(&sh->done);
		vmstat_read(&vm_after);
		if (opt.nr_vmstat)
			bench_vmstat_print(it, &vm_before, &vm_after);
		for (w = 0; w < opt.processes; w++) {
			c = (it - 1) * opt.processes + w;
			secs[c] = sh->secs[c];
			printf("%u,%s,%.0f,%.9f\n", it, ops[opt.op].name, sh->secs[cells + c],
			       sh->secs[c]);
		}
		fflush(stdout);
	}
	failed = bench_workers_wait(pids, opt.processes);
	if (failed)
		die("%u worker(s) failed", failed);
	free(pids);
}

/* The ext4 file system of pageout, fadvise and swapout, its image spread out. */
static void make_fs(void)
{
	size_t size = opt.size * opt.processes + opt.size / 4 + (32UL << 20);
	struct nt_policy spread = { .mode = MPOL_INTERLEAVE, .nodes = memory_nodes };
	char why[256];
	int err;

	err = nt_set_task_policy(&spread);
	if (err)
		die("set_mempolicy(interleave over every memory node): %s", strerror(-err));
	err = nt_ext4_make_allocated(&fs, size, why, sizeof(why));
	fs_ours = true;		/* what it made, if anything, is ours to remove */
	if (err)
		die("an ext4 file system for --op %s: %s", ops[opt.op].name, why);
}

int main(int argc, char **argv)
{
	double *secs;
	struct nt_topology topo;
	struct utsname u;
	unsigned int it;
	size_t pages;
	char why[512];
	int err;

	page_size = sysconf(_SC_PAGESIZE);
	err = nt_topology_read(&topo);
	if (err)
		die("cannot read the NUMA topology: %s", strerror(-err));
	memory_nodes = topo.memory;
	parse_args(argc, argv);
	if (uname(&u))
		die("uname: %s", strerror(errno));
	secs = calloc((size_t)opt.iterations * opt.processes, sizeof(*secs));
	if (!secs)
		die("out of memory");
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
	if (opt.op == OP_COLLAPSE) {
		/* Small pages at fault; MADV_COLLAPSE ignores the setting. */
		if (nt_file_read_choice(THP_ENABLED, thp_saved, sizeof(thp_saved)))
			die("cannot read %s", THP_ENABLED);
		if (nt_file_write(THP_ENABLED, "never"))
			die("cannot set %s to never", THP_ENABLED);
	}
	if (ops[opt.op].kind == EXT4 || ops[opt.op].kind == SWAP)
		make_fs();
	if (ops[opt.op].kind == SWAP) {
		snprintf(swapfile, sizeof(swapfile), "%s/swapfile", fs.dir);
		err = nt_swap_on(swapfile, opt.size * opt.processes + (4UL << 20), why,
				 sizeof(why));
		if (err) {
			swapfile[0] = 0;
			die("a swap file for --op swapout: %s", why);
		}
	}
	err = nt_set_task_policy(&opt.policy);
	if (err)
		die("set_mempolicy(%s): %s", opt.policy_text, strerror(-err));

	if (ops[opt.op].kind == SWAP)
		warm_up();

	printf("# timedbatch policy=%s size=%zu op=%s iterations=%u clock=CLOCK_MONOTONIC "
	       "kernel=%s %s", opt.policy_text, opt.size, ops[opt.op].name, opt.iterations,
	       u.release, u.version);
	if (opt.processes > 1)
		printf(" processes=%u", opt.processes);
	printf("\niteration,op,pages,seconds\n");
	fflush(stdout);
	if (opt.processes == 1 && bench_model_start(why, sizeof(why)))
		die("%s", why);
	for (it = 1; opt.processes == 1 && it <= opt.iterations; it++)
		secs[it - 1] = run_in_process(it, &pages);
	if (opt.processes > 1)
		run_processes(secs);
	bench_summary(ops[opt.op].name, opt.iterations, secs, opt.iterations * opt.processes);
	free(secs);
	cleanup();
	if (fflush(stdout))
		die("writing stdout: %s", strerror(errno));
	return 0;
}
