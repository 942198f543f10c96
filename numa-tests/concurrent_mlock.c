// SPDX-License-Identifier: GPL-2.0
/*
 * Processes on CPUs of different nodes lock, unlock, unmap, exit and
 * migrate memory they share, all at once, for a bounded time: when they are
 * done and everything is unlocked, every counter must be back at its
 * baseline per node, no page may be lost, and (on the debug flavour) the
 * kernel log must stay clean (run-guest fails the run on a splat).
 *
 * Threads of one process would not race: mlock() and munlock() take the
 * mm's mmap_lock for writing. Here each worker is a process of its own,
 * pinned to a CPU of a different node, so that the per-CPU mlock batches of
 * several CPUs hold pages of the same node (the same lruvec) at once.
 * Shared with every worker, interleaved over every usable memory node and
 * filled with a pattern by the parent before the fork:
 *   a memfd mapped shared, a SysV segment, a shared anonymous mapping;
 * and each worker's own private anonymous area, filled with its pattern.
 * Each worker runs at most ROUNDS rounds or RUN_S seconds; a round is, on a
 * pseudo-random range of up to 64 pages of a pseudo-random area, mostly one
 * of mlock(), munlock() and move_pages(), and one round in HEAVY_EVERY one
 * of the heavier ones in turn:
 *   mlockall(MCL_CURRENT)+munlockall()
 *   munmap() and mmap() of part of its private area (the new part filled)
 *   a child that mlock()s part of a shared area and exits
 *   mbind(MPOL_MF_MOVE) of part of its private area to another node
 *   migrate_pages() of all its pages to another node
 *   compaction (/proc/sys/vm/compact_memory; worker 0, now and then).
 * Half-way through the parent takes one CPU offline (the highest one that
 * can go), so that its batch is drained from another CPU while the others
 * go on, and brings it back at the end.
 * Then each worker calls munlockall(), checks its VmLck and smaps Locked are
 * 0 and that the data of every area reads back, and exits. The parent drains
 * every CPU and checks, against its baseline: per-node Mlocked and
 * Unevictable, nr_mlock, nr_mlock = mlocked - munlocked - stranded - cleared,
 * the shared areas' data and page flags. Every frame left mlocked or
 * unevictable is named, with where the parent maps it. Last, the parent's
 * own mlockall() and munlockall(), with nothing racing, must leave no page
 * unevictable that is not mlocked: the documented rescue at munlock.
 *
 * Known kernel deviations can leave pages behind after such a race
 * (docs/kernel-deviations.md): pages left mlocked by a raised mlock_count
 * (mlocks drained late from the CPU taken offline, or a munlock racing
 * another CPU's mlock drain), and pages left on the unevictable list with
 * nothing locking them (the same munlock race). Each is reported as an
 * expected failure only when every page left over is a frame of its kind
 * and every counter is up by exactly those pages; anything else fails.
 *
 * Each worker also has an area of transparent huge pages (MADV_HUGEPAGE,
 * interleaved) that the rounds lock and unlock in part, and a heavy round
 * splits one of its huge pages (/sys/kernel/debug/split_huge_pages), when
 * THP and debugfs are there.
 *
 * Not raced here, and why: reclaim (the guests have no swap, so locked
 * pages' anonymous and shmem neighbours are never reclaimed).
 *
 * Usage: concurrent_mlock [-s SIZE]  (each area; default 1M)
 * Needs root and two CPUs this task may run on.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "counters.h"
#include "handshake.h"
#include "harness.h"
#include "hotplug.h"
#include "locked.h"
#include "pageflags.h"
#include "placement.h"
#include "snapshot.h"
#include "sysfile.h"
#include "tap.h"

#define DEFAULT_SIZE	(1UL << 20)
#define MAX_WORKERS	4
#define ROUNDS		3000
#define RUN_S		6.0
#define WAIT_S		120
#define NSHARED		3
#define CHECKS		9
#define THP_DIR		"/sys/kernel/mm/transparent_hugepage"

enum op { OP_MLOCK, OP_MUNLOCK, OP_MLOCKALL, OP_REMAP, OP_EXIT, OP_MOVE, OP_MBIND,
	  OP_MIGRATE, OP_COMPACT, OP_SPLIT, NOPS };

static const char *const op_names[NOPS] = {
	"mlock", "munlock", "mlockall", "munmap+mmap", "child exit", "move_pages",
	"mbind(MPOL_MF_MOVE)", "migrate_pages", "compaction", "THP split",
};

static const char *const shared_names[NSHARED] = {
	"memfd shared", "SysV shm", "shared anonymous",
};

struct worker_res {
	int cpu, ready, done;
	long rounds, ops[NOPS];
	long bad_data;		/* pages of any area that read back wrong */
	long vmlck_kb, locked_kb;	/* after munlockall() */
	int err;		/* -errno of the first call that failed */
	char what[48];		/* that call */
};

struct shared_state {
	int go, stop;
	struct worker_res w[MAX_WORKERS];
};

static struct {
	struct nt_topology t;
	struct nt_nodemask nodes;	/* usable memory nodes */
	size_t len, page;
	char *area[NSHARED];
	int memfd, shmid;
	int cpus[MAX_WORKERS], nworkers;
	struct shared_state *sh;
	int offlined;			/* CPU to bring back, -1 */
	size_t hpage;			/* THP size, 0 when THP is off */
	bool can_split;			/* debugfs split_huge_pages is there */
} g = { .memfd = -1, .shmid = -1, .offlined = -1 };

static void cleanup(void)
{
	if (g.offlined >= 0 && nt_cpu_set_online(g.offlined, true))
		fprintf(stderr, "concurrent_mlock: cannot bring cpu%d back online\n", g.offlined);
	g.offlined = -1;
}

static unsigned long pattern(int area, size_t page)
{
	return (area + 1) * 0x100000001b3UL ^ (page + 1) * 0x9e3779b97f4a7c15UL;
}

static void fill(char *p, size_t npages, int area, size_t first)
{
	size_t i;

	for (i = 0; i < npages; i++)
		*(unsigned long *)(p + i * g.page) = pattern(area, first + i);
}

static long verify(const char *p, size_t npages, int area)
{
	long bad = 0;
	size_t i;

	for (i = 0; i < npages; i++)
		bad += *(const unsigned long *)(p + i * g.page) != pattern(area, i);
	return bad;
}

/* xorshift: the same sequence of choices every run, whatever the timing. */
static unsigned long next_rand(unsigned long *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int random_node(unsigned long *s)
{
	return nt_mask_nth(&g.nodes, next_rand(s) % nt_mask_weight(&g.nodes));
}

static void fail(struct worker_res *r, const char *what, int err)
{
	if (!r->err) {
		r->err = err ? err : -EIO;
		snprintf(r->what, sizeof(r->what), "%s", what);
	}
}

/* A child of the worker: locks part of a shared area and exits with it locked. */
static void exit_child(struct worker_res *r, char *p, size_t len)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		fail(r, "fork", -errno);
		return;
	}
	if (!pid)
		_exit(mlock(p, len) ? 1 : 0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail(r, "the locking child", -EIO);
}

static void move_some(struct worker_res *r, char *p, size_t npages, unsigned long *s)
{
	void *pages[8];
	int nodes[8], status[8], i;

	for (i = 0; i < 8; i++) {
		pages[i] = p + (next_rand(s) % npages) * g.page;
		nodes[i] = random_node(s);
	}
	/* Per-page failures (a page mapped by others: -EACCES) are no error. */
	if (move_pages(0, 8, pages, nodes, status, MPOL_MF_MOVE) < 0)
		fail(r, "move_pages", -errno);
}

/*
 * Mostly mlock(), munlock() and move_pages() of small ranges, which race in
 * the batches; one round in HEAVY_EVERY one of the heavy operations in turn
 * (each of them walks or moves whole areas).
 */
#define HEAVY_EVERY	12
static const enum op light[] = { OP_MLOCK, OP_MUNLOCK, OP_MLOCK, OP_MOVE, OP_MUNLOCK };
static const enum op heavy[] = { OP_MLOCKALL, OP_REMAP, OP_EXIT, OP_MBIND, OP_MIGRATE,
				 OP_COMPACT, OP_SPLIT };

static enum op pick_op(int id, long round)
{
	long r = round + id;

	if (r % HEAVY_EVERY == HEAVY_EVERY - 1)
		return heavy[(r / HEAVY_EVERY) % (sizeof(heavy) / sizeof(heavy[0]))];
	return light[r % (sizeof(light) / sizeof(light[0]))];
}

/* The worker's area of huge pages (NULL without THP), and its length. */
static char *thp_area;
static size_t thp_len;

/* split_huge_pages of part of the worker's THP area (debugfs; skipped without it). */
static void split_some(struct worker_res *r, unsigned long *s)
{
	size_t huge = g.hpage, n = thp_len / huge, first = next_rand(s) % n;

	if (!thp_area || !g.can_split)
		return;
	if (nt_thp_split(getpid(), thp_area + first * huge, thp_area + (first + 1) * huge))
		fail(r, "split_huge_pages", -EIO);
}

static void one_round(int id, struct worker_res *r, char *priv, unsigned long *s)
{
	size_t npages = g.len / g.page, first = next_rand(s) % npages;
	size_t n = 1 + next_rand(s) % (npages - first < 64 ? npages - first : 64);
	int which = next_rand(s) % (NSHARED + 2), node;
	char *area = which == NSHARED ? priv : which > NSHARED ? thp_area : g.area[which];
	enum op op = pick_op(id, r->rounds);
	struct nt_nodemask one;
	char *p;

	if (!area) {		/* no THP area here: the private one instead */
		which = NSHARED;
		area = priv;
	}
	p = area + first * g.page;

	switch (op) {
	case OP_MLOCK:
		if (mlock(p, n * g.page))
			fail(r, "mlock", -errno);
		break;
	case OP_MUNLOCK:
		if (munlock(p, n * g.page))
			fail(r, "munlock", -errno);
		break;
	case OP_MLOCKALL:
		if (mlockall(MCL_CURRENT) || munlockall())
			fail(r, "mlockall/munlockall", -errno);
		break;
	case OP_REMAP:
		p = priv + first * g.page;
		if (munmap(p, n * g.page) ||
		    mmap(p, n * g.page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p) {
			fail(r, "munmap+mmap", -errno);
			break;
		}
		fill(p, n, NSHARED + id, first);
		break;
	case OP_EXIT:
		exit_child(r, g.area[which % NSHARED] + first * g.page, n * g.page);
		break;
	case OP_MOVE:
		move_some(r, area, npages, s);
		break;
	case OP_MBIND:
		nt_mask_clear(&one);
		nt_mask_set(&one, random_node(s));
		if (mbind(priv + first * g.page, n * g.page, MPOL_BIND, one.bits, NT_MASK_MAXNODE,
			  MPOL_MF_MOVE))
			fail(r, "mbind(MPOL_MF_MOVE)", -errno);
		break;
	case OP_MIGRATE:
		node = random_node(s);
		nt_mask_clear(&one);
		nt_mask_set(&one, node);
		if (migrate_pages(0, NT_MASK_MAXNODE, g.nodes.bits, one.bits) < 0)
			fail(r, "migrate_pages", -errno);
		break;
	case OP_SPLIT:
		split_some(r, s);
		break;
	default:
		if (id == 0 && r->ops[OP_COMPACT] < 8 && nt_file_write("/proc/sys/vm/compact_memory", "1"))
			fail(r, "compact_memory", -EIO);
		break;
	}
	r->ops[op]++;
}

/*
 * The worker's THP area: at least g.len bytes and two huge pages, of
 * MADV_HUGEPAGE memory, interleaved, filled with its pattern; NULL when THP
 * is off. The rounds pick their ranges in its first g.len bytes.
 */
static char *map_thp(int id)
{
	struct nt_policy il = { .mode = MPOL_INTERLEAVE, .nodes = g.nodes };
	size_t len;
	char *p, *a;

	if (!g.hpage)
		return NULL;
	len = (g.len + g.hpage - 1) / g.hpage * g.hpage;
	if (len < 2 * g.hpage)
		len = 2 * g.hpage;
	p = mmap(NULL, len + g.hpage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(3);
	a = (char *)(((uintptr_t)p + g.hpage - 1) & ~(uintptr_t)(g.hpage - 1));
	if (madvise(a, len, MADV_HUGEPAGE) ||
	    mbind(a, len, il.mode, il.nodes.bits, NT_MASK_MAXNODE, 0))
		_exit(3);
	thp_len = len;
	fill(a, len / g.page, NSHARED + MAX_WORKERS + id, 0);
	return a;
}

static void __attribute__((noreturn)) worker(int id)
{
	struct worker_res *r = &g.sh->w[id];
	struct nt_policy il = { .mode = MPOL_INTERLEAVE, .nodes = g.nodes };
	unsigned long seed = 0x9e3779b97f4a7c15UL * (id + 1);
	double end;
	cpu_set_t one;
	char *priv;
	int i;

	CPU_ZERO(&one);
	CPU_SET(g.cpus[id], &one);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || sched_setaffinity(0, sizeof(one), &one))
		_exit(3);
	r->cpu = g.cpus[id];
	priv = mmap(NULL, g.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (priv == MAP_FAILED || mbind(priv, g.len, il.mode, il.nodes.bits, NT_MASK_MAXNODE, 0))
		_exit(3);
	fill(priv, g.len / g.page, NSHARED + id, 0);
	thp_area = map_thp(id);
	nt_flag_set(&r->ready, 1);
	if (!nt_flag_wait(&g.sh->go, 1, WAIT_S))
		_exit(4);
	end = nt_now_s() + RUN_S;
	while (r->rounds < ROUNDS && nt_now_s() < end && !nt_flag_get(&g.sh->stop) && !r->err) {
		one_round(id, r, priv, &seed);
		r->rounds++;
	}
	if (munlockall())
		fail(r, "munlockall", -errno);
	if (nt_vmlck_read(&r->vmlck_kb))
		fail(r, "reading VmLck", -EIO);
	r->locked_kb = 0;
	for (i = 0; i < NSHARED; i++) {
		long kb = 0;

		if (nt_smaps_sum(g.area[i], g.len, "Locked", &kb, NULL))
			fail(r, "reading smaps", -EIO);
		r->locked_kb += kb;
		r->bad_data += verify(g.area[i], g.len / g.page, i);
	}
	r->bad_data += verify(priv, g.len / g.page, NSHARED + id);
	if (thp_area)
		r->bad_data += verify(thp_area, thp_len / g.page, NSHARED + MAX_WORKERS + id);
	nt_flag_set(&r->done, 1);
	_exit(0);
}

/* The shared areas: mapped, interleaved and filled before the workers fork. */
static void make_shared(void)
{
	struct nt_policy il = { .mode = MPOL_INTERLEAVE, .nodes = g.nodes };
	int i;

	g.memfd = memfd_create("concurrent_mlock", MFD_CLOEXEC);
	if (g.memfd < 0 || ftruncate(g.memfd, g.len))
		nt_tap_bail("memfd: %s", strerror(errno));
	g.area[0] = mmap(NULL, g.len, PROT_READ | PROT_WRITE, MAP_SHARED, g.memfd, 0);
	g.shmid = shmget(IPC_PRIVATE, g.len, IPC_CREAT | 0600);
	if (g.shmid < 0)
		nt_tap_bail("shmget: %s", strerror(errno));
	g.area[1] = shmat(g.shmid, NULL, 0);
	shmctl(g.shmid, IPC_RMID, NULL);
	g.area[2] = mmap(NULL, g.len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < NSHARED; i++) {
		if (g.area[i] == MAP_FAILED || g.area[i] == (void *)-1)
			nt_tap_bail("mapping the %s area: %s", shared_names[i], strerror(errno));
		if (mbind(g.area[i], g.len, il.mode, il.nodes.bits, NT_MASK_MAXNODE, 0))
			nt_tap_bail("mbind of the %s area: %s", shared_names[i], strerror(errno));
		fill(g.area[i], g.len / g.page, i, 0);
	}
}

/* THP in madvise or always mode, and split_huge_pages: what the THP rounds need. */
static void detect_thp(void)
{
	char text[32], mode[32];

	if (!nt_file_read_line(THP_DIR "/hpage_pmd_size", text, sizeof(text)) &&
	    !nt_file_read_choice(THP_DIR "/enabled", mode, sizeof(mode)) && strcmp(mode, "never"))
		g.hpage = strtoul(text, NULL, 10);
	g.can_split = g.hpage && !access(NT_THP_SPLIT, W_OK);
	nt_tap_diag("THP areas: %s; THP splits: %s", g.hpage ? "yes" : "no (THP off here)",
		    g.can_split ? "yes" : "no (no " NT_THP_SPLIT ")");
}

/* One CPU of each node with CPUs, then any others, up to MAX_WORKERS; at least two. */
static int pick_cpus(void)
{
	cpu_set_t allowed, set, used;
	int node, cpu, n = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		nt_tap_bail("sched_getaffinity: %s", strerror(errno));
	CPU_ZERO(&used);
	nt_mask_for_each(node, &g.t.online) {
		if (n == MAX_WORKERS || nt_node_cpus(node, &set) <= 0)
			continue;
		for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set) && CPU_ISSET(cpu, &allowed)) {
				g.cpus[n++] = cpu;
				CPU_SET(cpu, &used);
				break;
			}
	}
	for (cpu = 0; cpu < CPU_SETSIZE && n < 2; cpu++)
		if (CPU_ISSET(cpu, &allowed) && !CPU_ISSET(cpu, &used))
			g.cpus[n++] = cpu;
	return n;
}

/* Half-way: the highest CPU that can go offline goes, while the workers run. */
static void offline_one(double until)
{
	int cpu;

	while (nt_now_s() < until)
		usleep(20000);
	for (cpu = CPU_SETSIZE - 1; cpu > 0; cpu--)
		if (nt_cpu_hotpluggable(cpu) && nt_cpu_online(cpu) == 1)
			break;
	if (cpu <= 0) {
		nt_tap_diag("no CPU can go offline here: none taken offline");
		return;
	}
	if (nt_cpu_set_online(cpu, false)) {
		nt_tap_diag("cpu%d would not go offline", cpu);
		return;
	}
	g.offlined = cpu;
	nt_tap_diag("cpu%d taken offline half-way", cpu);
}

/*
 * Frames PG_mlocked or PG_unevictable at the baseline (ramfs pages, for
 * one, are unevictable): not the test's doing. kpageflags lists them
 * in pfn order.
 */
#define LOCKISH		(NT_KPF(NT_KPF_MLOCKED) | NT_KPF(NT_KPF_UNEVICTABLE))
#define MAX_BASE	(1L << 18)
#define MAX_LEFT	256
#define MAX_NAMED	32
static struct nt_frame *base_frames;
static long nbase_frames;

static void save_base_frames(void)
{
	base_frames = calloc(MAX_BASE, sizeof(*base_frames));
	if (!base_frames)
		nt_tap_bail("no memory for %ld frames", MAX_BASE);
	nbase_frames = nt_frames_flagged(LOCKISH, base_frames, MAX_BASE);
	if (nbase_frames < 0)
		nt_tap_bail("scanning /proc/kpageflags: %s", strerror(-nbase_frames));
	if (nbase_frames > MAX_BASE)
		nt_tap_bail("%ld frames mlocked or unevictable before the race: too many to keep",
			    nbase_frames);
}

static bool in_base(uint64_t pfn)
{
	long lo = 0, hi = nbase_frames;

	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;

		if (base_frames[mid].pfn == pfn)
			return true;
		if (base_frames[mid].pfn < pfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* The frames mlocked or unevictable now and not at the baseline: how many, or -errno. */
static long new_frames(struct nt_frame *out, size_t max)
{
	struct nt_frame *all = calloc(MAX_BASE, sizeof(*all));
	long n, i, found = 0;

	if (!all)
		return -ENOMEM;
	n = nt_frames_flagged(LOCKISH, all, MAX_BASE);
	if (n > MAX_BASE)
		n = -E2BIG;
	for (i = 0; i < n; i++) {
		if (in_base(all[i].pfn))
			continue;
		if (found < (long)max)
			out[found] = all[i];
		found++;
	}
	free(all);
	return n < 0 ? n : found;
}

/* Pages behind one frame: a THP's head stands for all of it. */
static long frame_pages(const struct nt_frame *f)
{
	if ((f->flags & NT_KPF(NT_KPF_THP)) && (f->flags & NT_KPF(NT_KPF_COMPOUND_HEAD)) && g.hpage)
		return g.hpage / g.page;
	return 1;
}

/* VmLck of process pid in kB; 0 for a kernel thread (no such line) or a process gone. */
static long vmlck_of(int pid)
{
	char path[64], line[128];
	long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* How many processes of the guest hold locked memory (VmLck > 0), named. */
static int lockers(void)
{
	struct dirent *de;
	int n = 0, pid;
	long kb;
	DIR *d;

	d = opendir("/proc");
	if (!d) {
		nt_tap_diag("cannot list /proc: %s", strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		pid = atoi(de->d_name);
		kb = pid > 0 ? vmlck_of(pid) : 0;
		if (!kb)
			continue;
		nt_tap_diag("pid %d has VmLck %ld kB", pid, kb);
		n++;
	}
	closedir(d);
	return n;
}

/* Where this process maps frame pfn, if it does: address and what is mapped there. */
static void name_frame(const struct nt_frame *f)
{
	unsigned long start, end;
	char line[512], what[256];
	uint64_t *pfns;
	size_t n, i;
	FILE *maps;

	maps = fopen("/proc/self/maps", "r");
	if (!maps)
		return;
	while (fgets(line, sizeof(line), maps)) {
		what[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &start, &end, what) < 2)
			continue;
		n = (end - start) / g.page;
		pfns = calloc(n, sizeof(*pfns));
		if (!pfns || nt_pages_pfns((void *)start, n, g.page, pfns)) {
			free(pfns);
			continue;
		}
		for (i = 0; i < n; i++)
			if (pfns[i] == f->pfn)
				nt_tap_diag("  mapped by this process at %#lx: %s",
					    start + i * g.page, what[0] ? what : "anonymous");
		free(pfns);
	}
	fclose(maps);
}

/* Says which frames are left mlocked or unevictable, and where, for whoever debugs it. */
static void name_leftovers(const struct nt_frame *f, long n)
{
	long i;

	nt_tap_diag("%ld frames are mlocked or unevictable that were not before the race%s", n,
		    n > MAX_NAMED ? "; the first ones:" : "");
	for (i = 0; i < n && i < MAX_NAMED; i++) {
		nt_tap_diag("pfn %#llx: kpageflags %#llx, mapped %llu times",
			    (unsigned long long)f[i].pfn, (unsigned long long)f[i].flags,
			    (unsigned long long)f[i].mapcount);
		name_frame(&f[i]);
	}
}

/* docs/kernel-deviations.md: the late drain, and the stale mlock_count. */
#define RAISED "known deviation (mm/mlock.c of 6.1 and 6.12): pages nothing locks stay mlocked while mapped (page cache also after), their mlock_count raised by mlocks left queued on the CPU taken offline and drained after a later munlock() and mlock() (munlock_cpu_offline round 2), or by a munlock that raced another CPU's mlock drain (mlock_munlock_race); no upstream fix"
#define STRANDED "known deviation (mm/mlock.c of 6.1 and 6.12): a munlock that raced another CPU's mlock drain only cleared PG_mlocked, and the page stayed on the unevictable list with nothing locking it (mlock_munlock_race); no upstream fix"
#define BOTH "known deviations (mm/mlock.c of 6.1 and 6.12): pages left mlocked while mapped by a raised mlock_count, and pages left on the unevictable list with nothing locking them, both as in mlock_munlock_race; no upstream fix"

/* What the leftover frames add up to, by kind. */
struct leftovers {
	long mlocked, stranded;		/* pages: PG_mlocked; PG_unevictable alone, on an LRU */
	long other;			/* frames of neither kind (PG_unevictable off the LRU) */
	bool unmapped_anon_mlocked;	/* a PG_mlocked anonymous frame no page table maps */
};

static void sort_leftovers(const struct nt_frame *f, long n, struct leftovers *l)
{
	long i;

	memset(l, 0, sizeof(*l));
	for (i = 0; i < n; i++) {
		if (f[i].flags & NT_KPF(NT_KPF_MLOCKED)) {
			l->mlocked += frame_pages(&f[i]);
			l->unmapped_anon_mlocked |= !f[i].mapcount &&
						    (f[i].flags & NT_KPF(NT_KPF_ANON));
		} else if (f[i].flags & NT_KPF(NT_KPF_LRU)) {
			l->stranded += frame_pages(&f[i]);
		} else {
			l->other++;
		}
	}
}

/*
 * The two ways the race may leave pages the documentation does not allow,
 * that are understood (docs/kernel-deviations.md), and their signatures,
 * all of which must hold: every page still counted is a frame left behind,
 * and every frame left behind is one of
 *   raised: PG_mlocked, no process of the guest holds locked memory (the
 *     late drain of a CPU taken offline, or a munlock that raced another
 *     CPU's drain, raised its mlock_count), and still mapped unless it is
 *     a page-cache page: a library page that only the workers mapped (their
 *     mlockall() faults in all of it) loses its last mapping when they exit
 *     and, its mlock_count not down to 0, stays mlocked in the page cache;
 *     an anonymous page that loses its last mapping is freed, and freeing
 *     clears PG_mlocked, so an unmapped mlocked one is a leak;
 *   stranded: PG_unevictable without PG_mlocked, on the (unevictable) LRU,
 *     and rescued by the next munlock (rescue() below).
 * nr_mlock and the per-node Mlocked sum are up by the raised pages
 * exactly, the Unevictable sum by both kinds. A page counted with no frame
 * behind it, or a frame of neither kind, is a leak and fails.
 */
static const char *known_leftovers(const struct nt_counters *end, const struct nt_counters *base,
				   const struct nt_frame *f, long n, bool rescued)
{
	long pages = end->vmstat[NT_NR_MLOCK] - base->vmstat[NT_NR_MLOCK];
	long mlocked = 0, unevictable = 0, kb = g.page / 1024;
	struct leftovers l;
	int node;

	if (n < 1 || n > MAX_LEFT)
		return NULL;
	sort_leftovers(f, n, &l);
	for (node = 0; node < NT_MAX_NODES; node++) {
		mlocked += end->mlocked_kb[node] - base->mlocked_kb[node];
		unevictable += end->unevictable_kb[node] - base->unevictable_kb[node];
	}
	nt_tap_diag("left behind: %ld pages mlocked, %ld stranded unevictable, %ld frames of neither kind",
		    l.mlocked, l.stranded, l.other);
	if (l.other || pages != l.mlocked || mlocked != l.mlocked * kb ||
	    unevictable != (l.mlocked + l.stranded) * kb)
		return NULL;
	if (l.mlocked && (l.unmapped_anon_mlocked || lockers()))
		return NULL;
	if (l.stranded && !rescued)
		return NULL;
	if (l.mlocked && l.stranded)
		return BOTH;
	return l.mlocked ? RAISED : STRANDED;
}

/*
 * The documented way out for a page stranded on the unevictable list: the
 * next munlock of it finds it evictable and rescues it (unevictable-lru.rst,
 * "so that when munlocked the page will be rescued"). This process maps the
 * shared areas and the libraries that the workers locked with mlockall():
 * its own mlockall() and munlockall(), with nobody racing, must take every
 * stranded page back to an evictable list. Only pages that the late drain
 * left mlocked stay: their mlock_count is raised, and an mlock() and a
 * munlock() leave it as it was. Whether that held, after counters in after.
 */
static bool rescue(const struct nt_counters *base, struct nt_counters *after)
{
	struct nt_frame left[MAX_LEFT];
	long n, unevictable = 0;
	struct leftovers l;
	int node;

	if (mlockall(MCL_CURRENT) || munlockall())
		nt_tap_bail("mlockall/munlockall in the parent: %s", strerror(errno));
	nt_snapshot(after, &g.t.online, true);
	n = new_frames(left, MAX_LEFT);
	if (n < 0)
		nt_tap_bail("scanning /proc/kpageflags: %s", strerror(-n));
	/* More than MAX_LEFT frames fail below; sort the ones kept, for the diagnostic. */
	sort_leftovers(left, n < MAX_LEFT ? n : MAX_LEFT, &l);
	for (node = 0; node < NT_MAX_NODES; node++)
		unevictable += after->unevictable_kb[node] - base->unevictable_kb[node];
	if (n)
		nt_tap_diag("after the parent's mlockall()+munlockall(): %ld pages mlocked, %ld stranded unevictable, %ld frames of neither kind; Unevictable %+ld kB",
			    l.mlocked, l.stranded, l.other, unevictable);
	return n <= MAX_LEFT && !l.stranded && !l.other &&
	       unevictable == l.mlocked * (long)(g.page / 1024);
}

static void check_end(const struct nt_counters *base, long bad_shared)
{
	struct nt_frame left[MAX_LEFT];
	struct nt_flags_want clear = { 0 };
	struct nt_counters end, after;
	const char *known;
	long bad_flags = 0, nleft;
	bool ok = true, agree, rescued;
	int i;

	nt_snapshot(&end, &g.t.online, true);
	for (i = 0; i < NSHARED; i++) {
		long b = nt_check_flags(g.area[i], g.len / g.page, g.page, &clear);

		bad_flags += b < 0 ? 1 : b;
	}
	nleft = new_frames(left, MAX_LEFT);
	if (nleft < 0)
		nt_tap_bail("scanning /proc/kpageflags: %s", strerror(-nleft));
	if (end.vmstat[NT_NR_MLOCK] != base->vmstat[NT_NR_MLOCK]) {
		nt_tap_diag("nr_mlock %+ld", end.vmstat[NT_NR_MLOCK] - base->vmstat[NT_NR_MLOCK]);
		ok = false;
	}
	/* The deviations leave pages behind, they do not miscount them: the events still agree. */
	agree = nt_events_agree(&end, base, "after the stress");
	ok = ok && agree;
	if (!ok || nleft)
		name_leftovers(left, nleft);
	rescued = rescue(base, &after);
	known = agree ? known_leftovers(&end, base, left, nleft, rescued) : NULL;
	nt_tap_result(!bad_shared, "every page of the shared areas reads back after the stress (%ld wrong)",
		      bad_shared);
	nt_tap_todo(!bad_flags, known, "no page of the shared areas KPF_MLOCKED or KPF_UNEVICTABLE at the end");
	nt_tap_todo(nt_nodes_moved(&g.t.online, end.mlocked_kb, base->mlocked_kb, NULL,
				   g.page / 1024, "Mlocked"), known,
		    "every node's Mlocked back at its baseline");
	nt_tap_todo(nt_nodes_moved(&g.t.online, end.unevictable_kb, base->unevictable_kb, NULL,
				   g.page / 1024, "Unevictable"), known,
		    "every node's Unevictable back at its baseline");
	nt_tap_todo(ok, known, "nr_mlock back at its baseline, and moved by mlocked - munlocked - stranded - cleared");
	nt_tap_result(rescued, "after the parent's own mlockall() and munlockall(), no page is left unevictable but those left mlocked");
}

int main(int argc, char **argv)
{
	struct nt_counters base;
	pid_t pids[MAX_WORKERS];
	long bad = 0, vm = 0, rounds;
	bool ok = true;
	int i, k, status;
	char line[256];
	size_t used;

	g.len = nt_lk_start(argc, argv, DEFAULT_SIZE, &g.t);
	g.page = sysconf(_SC_PAGESIZE);
	g.nodes = g.t.allowed;
	if (nt_mask_empty(&g.nodes))
		nt_tap_skip_all("no memory node this task may use");
	g.nworkers = pick_cpus();
	if (g.nworkers < 2)
		nt_tap_skip_all("needs two CPUs this task may run on");
	g.sh = mmap(NULL, sizeof(*g.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g.sh == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	nt_cleanup_push(cleanup);
	nt_tap_plan(CHECKS);
	detect_thp();
	make_shared();
	nt_snapshot(&base, &g.t.online, true);
	save_base_frames();
	for (i = 0; i < g.nworkers; i++) {
		fflush(NULL);
		pids[i] = fork();
		if (pids[i] < 0)
			nt_tap_bail("fork: %s", strerror(errno));
		if (!pids[i])
			worker(i);
	}
	for (i = 0; i < g.nworkers; i++)
		if (!nt_flag_wait(&g.sh->w[i].ready, 1, WAIT_S))
			nt_tap_bail("worker %d did not get ready", i);
	nt_flag_set(&g.sh->go, 1);
	offline_one(nt_now_s() + RUN_S / 2);
	for (i = 0; i < g.nworkers; i++) {
		struct worker_res *r = &g.sh->w[i];

		if (waitpid(pids[i], &status, 0) != pids[i])
			nt_tap_bail("waitpid: %s", strerror(errno));
		used = snprintf(line, sizeof(line), "worker %d on cpu%d: %ld rounds:", i, r->cpu,
				r->rounds);
		for (k = 0; k < NOPS && used < sizeof(line); k++)
			used += snprintf(line + used, sizeof(line) - used, " %s %ld", op_names[k],
					 r->ops[k]);
		nt_tap_diag("%s", line);
		if (r->err)
			nt_tap_diag("worker %d: %s: %s", i, r->what, strerror(-r->err));
		if (!WIFEXITED(status) || WEXITSTATUS(status) || !r->done)
			nt_tap_diag("worker %d ended with status %#x", i, status);
		ok = ok && WIFEXITED(status) && !WEXITSTATUS(status) && r->done && !r->err &&
		     r->rounds > 0;
		bad += r->bad_data;
		vm += r->vmlck_kb + r->locked_kb;
	}
	cleanup();
	rounds = 0;
	for (i = 0; i < g.nworkers; i++)
		rounds += g.sh->w[i].rounds;
	nt_tap_result(ok, "%d processes on CPUs of different nodes raced for at most %.0f s or %d rounds each (%ld rounds in all), no call failed",
		      g.nworkers, RUN_S, ROUNDS, rounds);
	nt_tap_result(!vm, "after munlockall() every worker's VmLck and smaps Locked are 0");
	nt_tap_result(!bad, "every page of every worker's areas read back (%ld wrong)", bad);
	for (i = 0, bad = 0; i < NSHARED; i++)
		bad += verify(g.area[i], g.len / g.page, i);
	check_end(&base, bad);
	return nt_tap_finish();
}
