// SPDX-License-Identifier: GPL-2.0
/*
 * timedmunlock: the cost of unlocking (or unmapping, or exiting with) a
 * locked anonymous area, mmtests' method.
 *
 * Each iteration maps a fresh area MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED |
 * MAP_POPULATE under the task policy given with --policy, checks that every
 * page sits where the policy says and that VmLck grew by the area, and then
 * times one operation with CLOCK_MONOTONIC:
 *
 *   munlock  munlock() of the whole area; afterwards VmLck must be back to
 *            its value before the mmap (checked, not timed), then munmap().
 *   munmap   munmap() of the whole, still locked, area.
 *   mlock    mlock() of the whole area, mapped and populated unlocked
 *            (as --unlocked maps it); afterwards VmLck must have grown by
 *            the area (checked, not timed), then munlock() and munmap().
 *            What the references that mlock() queues cost.
 *   exit     a child forked for the iteration maps, populates, locks and
 *            checks the area, says it is ready and blocks on a pipe. The
 *            parent reads the clock, writes the pipe (the exit request), the
 *            child calls _exit(0) as soon as its read() returns, and the
 *            parent reads the clock again when waitpid() returns. So the time
 *            covers: the pipe write and the child's wakeup, the whole of
 *            do_exit() of a small forked process (its copy of this program's
 *            memory, the locked area: unmap, munlock, free), the parent's
 *            wakeup and waitpid() return.
 *
 * With THP "always" or "madvise" the area is mapped at a 2 MiB aligned
 * address without MAP_POPULATE, advised MADV_HUGEPAGE, then locked and
 * populated with mlock() (MAP_POPULATE would fault it before madvise()); every
 * 2 MiB range must then be a huge page. With "never" it is one mmap() call.
 *
 * --unlocked: the same area mapped without MAP_LOCKED (and, with THP, populated
 * by touching every page instead of mlock()), for --op munmap and exit: the
 * floor that unmapping or exiting with a locked area is compared with. VmLck
 * must then not grow.
 * --mthp SIZES (6.8 on: multi-size THP for anonymous memory): the listed
 * hugepages-<size>kB sizes are set to "always" for the run (THP "never" keeps
 * the PMD size off), the area is mapped 2 MiB aligned with MAP_POPULATE, and
 * every page must then be in a folio of the largest size listed, which the
 * placement check takes as the unit the policy interleaves.
 *
 * --processes N: N forked workers, each with its own area, do each
 * iteration's timed munlock() or munmap() at the same time (a process-shared
 * barrier before and after it): one output line per worker and iteration.
 * Where lock contention is real (several vCPUs) this is what shows it.
 *
 * Before per-node Mlocked is compared with its value before the first
 * mapping, every CPU's LRU and mlock batches are drained (a move_pages() of
 * one page to its own node, which starts with lru_cache_disable()): 6.1
 * without CONFIG_SWAP leaves the last munlocks of an unmap queued.
 *
 * The timed call (or, for exit, the write of the exit request to the return
 * of waitpid()) sits between the cost model's region markers (one NOP each
 * elsewhere). Under run-guest --clock model, which names the model's records
 * file in NUMA_MATRIX_MODEL, each iteration's line is followed by
 * "# model iteration=N insns=... cycles=..." (docs/cost-model.md); a missing
 * record is an error. With --processes the workers' regions would overlap on
 * the model's one vCPU: no markers there.
 *
 * Output on stdout, for scripts: a "# timedmunlock ..." header, the line
 * "iteration,op,pages,seconds", one line per iteration, "# " comments, and a
 * final "# summary" line. pages counts base pages. Nothing passes or fails on
 * time; the exit status is non-zero only when something did not work (the
 * reason goes to stderr): a system call failed, a page is not where the
 * policy puts it, THP did not give huge pages, VmLck or the per-node Mlocked
 * counters did not come back.
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
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "area.h"
#include "counters.h"
#include "marker.h"
#include "expect.h"
#include "nodemask.h"
#include "nodes.h"
#include "placement.h"
#include "record.h"
#include "sysfile.h"
#include "values.h"

#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define HPAGE_SHIFT	21
#define HPAGE_SIZE	(1UL << HPAGE_SHIFT)
#define KPF_THP		22
#define PM_PFN_MASK	((1ULL << 55) - 1)
#define PM_PRESENT	(1ULL << 63)
#define MTHP_DIR	"/sys/kernel/mm/transparent_hugepage"
#define MAX_MTHP	8
#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16

enum op { OP_MUNLOCK, OP_MUNMAP, OP_EXIT, OP_MLOCK, NR_OPS };
static const char *const op_names[] = { "munlock", "munmap", "exit", "mlock" };

struct options {
	char policy_text[256];
	bool policy_default;
	struct nt_policy policy;
	size_t size;
	const char *thp;
	enum op op;
	unsigned int iterations;
	bool global_checks;
	bool unlocked;
	unsigned int processes;
	const char *vmstat[BENCH_MAX_VMSTAT];
	int nr_vmstat;
	const char *mthp_text;
	unsigned long mthp_kb[MAX_MTHP];	/* hugepages-<kB>kB set to "always" */
	int nr_mthp;
	unsigned long mthp_max_kb;
};

static struct options opt;
static size_t page_size;
static struct nt_nodemask memory_nodes;

/* THP mode to put back at exit; empty when untouched. */
static char thp_saved[32];
/* The same for each --mthp size. */
static char mthp_saved[MAX_MTHP][32];
/* In a --processes worker: an error ends the whole benchmark. */
static bool in_worker;

static void thp_restore(void);

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "timedmunlock: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (in_worker) {
		/* The others wait for us at a barrier: end them all. */
		kill(0, SIGTERM);
		_exit(1);
	}
	thp_restore();
	exit(1);
}

static void __attribute__((noreturn)) usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: timedmunlock [--policy P] [--size S] [--thp never|always|madvise]\n"
		"                    [--op munlock|munmap|exit|mlock] [--iterations N]\n"
		"                    [--processes N] [--vmstat PREFIX]... [--no-global-checks]\n"
		"                    [--unlocked]\n"
		"                    [--mthp SIZE,...]\n"
		"  --policy      default | bind:NODES | interleave:NODES | preferred:NODE\n"
		"                NODES a node list (0-3,5) or all (every memory node);\n"
		"                set as the task policy before the area is mapped\n"
		"  --size        area size, K/M/G suffixes (default 64M)\n"
		"  --thp         transparent_hugepage/enabled for the run (default never)\n"
		"  --mthp        anonymous multi-size THP sizes (16K,32K,64K) set to\n"
		"                always for the run, with --thp never; every page must be\n"
		"                in a folio of the largest one\n"
		"  --op          what is timed (default munlock)\n"
		"  --iterations  default 10\n"
		"  --unlocked    map the area without locking it (--op munmap, exit)\n"
		"  --processes   N processes, each with its own area, doing each\n"
		"                iteration's timed operation at the same time (barrier);\n"
		"                one line per process and iteration (munlock, munmap,\n"
		"                mlock)\n"
		"  --vmstat      print, per iteration, the change of the /proc/vmstat items\n"
		"                starting with PREFIX across the timed operation\n"
		"  --no-global-checks  skip the per-node Mlocked check (other processes\n"
		"                locking memory at the same time would upset it)\n");
	exit(status);
}

static void parse_policy(const char *s)
{
	char why[256];

	opt.policy_default = !strcmp(s, "default");
	if (opt.policy_default) {
		snprintf(opt.policy_text, sizeof(opt.policy_text), "default");
		return;
	}
	if (bench_parse_policy(s, &memory_nodes, &opt.policy, opt.policy_text,
			       sizeof(opt.policy_text), why, sizeof(why)))
		die("%s", why);
}

/* --mthp 16K,32K,64K: sizes with a hugepages-<kB>kB directory, below 2 MiB. */
static void parse_mthp(const char *list)
{
	char buf[256], *tok, *save;
	size_t size;

	opt.mthp_text = list;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (opt.nr_mthp == MAX_MTHP)
			die("at most %d --mthp sizes", MAX_MTHP);
		if (nt_parse_size(tok, &size) || size <= page_size || size >= HPAGE_SIZE ||
		    (size & (size - 1)))
			die("bad --mthp size '%s': a power of two above the page size and "
			    "below 2 MiB", tok);
		opt.mthp_kb[opt.nr_mthp++] = size >> 10;
		if ((size >> 10) > opt.mthp_max_kb)
			opt.mthp_max_kb = size >> 10;
	}
	if (!opt.nr_mthp)
		die("empty --mthp list");
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "thp", required_argument, NULL, 't' },
		{ "op", required_argument, NULL, 'o' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "vmstat", required_argument, NULL, 'v' },
		{ "processes", required_argument, NULL, 'P' },
		{ "no-global-checks", no_argument, NULL, 'G' },
		{ "unlocked", no_argument, NULL, 'U' },
		{ "mthp", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *policy = "default";
	char *end;
	long n;
	int c, err;

	opt.size = 64UL << 20;
	opt.thp = "never";
	opt.op = OP_MUNLOCK;
	opt.iterations = 10;
	opt.global_checks = true;
	opt.processes = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			policy = optarg;
			break;
		case 's':
			err = nt_parse_size(optarg, &opt.size);
			if (err || !opt.size)
				die("bad --size '%s'", optarg);
			break;
		case 't':
			if (strcmp(optarg, "never") && strcmp(optarg, "always") &&
			    strcmp(optarg, "madvise"))
				die("bad --thp '%s': never, always or madvise", optarg);
			opt.thp = optarg;
			break;
		case 'o':
			for (n = 0; n < NR_OPS; n++)
				if (!strcmp(optarg, op_names[n]))
					break;
			if (n == NR_OPS)
				die("bad --op '%s': munlock, munmap, exit or mlock", optarg);
			opt.op = n;
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
		case 'G':
			opt.global_checks = false;
			break;
		case 'U':
			opt.unlocked = true;
			break;
		case 'm':
			parse_mthp(optarg);
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	if (opt.unlocked && (opt.op == OP_MUNLOCK || opt.op == OP_MLOCK))
		die("--unlocked works with --op munmap and exit");
	if (opt.processes > 1 && opt.op == OP_EXIT)
		die("--processes works with --op munlock, munmap and mlock");
	/* mlock() locks an area mapped as --unlocked maps it. */
	if (opt.op == OP_MLOCK)
		opt.unlocked = true;
	if (opt.size % page_size)
		die("--size %zu is not a multiple of the page size %zu", opt.size, page_size);
	if (strcmp(opt.thp, "never") && opt.size % HPAGE_SIZE)
		die("--size %zu is not a multiple of 2 MiB, needed with --thp %s", opt.size,
		    opt.thp);
	if (opt.nr_mthp && strcmp(opt.thp, "never"))
		die("--mthp needs --thp never (the PMD size follows --thp)");
	if (opt.nr_mthp && opt.size % (opt.mthp_max_kb << 10))
		die("--size %zu is not a multiple of the largest --mthp size, %lu kB",
		    opt.size, opt.mthp_max_kb);
	parse_policy(policy);
}

/* ---- THP mode ---- */

static void mthp_path(char *buf, size_t len, unsigned long kb)
{
	snprintf(buf, len, MTHP_DIR "/hugepages-%lukB/enabled", kb);
}

static void thp_restore(void)
{
	char path[128];
	int i;

	if (thp_saved[0] && nt_file_write(THP_ENABLED, thp_saved))
		fprintf(stderr, "timedmunlock: error: could not restore %s to %s\n",
			THP_ENABLED, thp_saved);
	thp_saved[0] = 0;
	for (i = 0; i < opt.nr_mthp; i++) {
		mthp_path(path, sizeof(path), opt.mthp_kb[i]);
		if (mthp_saved[i][0] && nt_file_write(path, mthp_saved[i]))
			fprintf(stderr, "timedmunlock: error: could not restore %s to %s\n",
				path, mthp_saved[i]);
		mthp_saved[i][0] = 0;
	}
}

static void on_signal(int sig)
{
	thp_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void thp_set(void)
{
	char cur[32];
	int err = nt_file_read_choice(THP_ENABLED, cur, sizeof(cur));

	if (err == -ENOENT && !strcmp(opt.thp, "never"))
		return;		/* no THP in this kernel: "never" holds */
	if (err)
		die("cannot read %s: %s", THP_ENABLED, strerror(-err));
	if (!strcmp(cur, opt.thp))
		return;
	snprintf(thp_saved, sizeof(thp_saved), "%s", cur);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	err = nt_file_write(THP_ENABLED, opt.thp);
	if (err) {
		thp_saved[0] = 0;
		die("cannot set %s to %s: %s", THP_ENABLED, opt.thp, strerror(-err));
	}
}

static void mthp_set(void)
{
	char path[128], cur[32];
	int i, err;

	for (i = 0; i < opt.nr_mthp; i++) {
		mthp_path(path, sizeof(path), opt.mthp_kb[i]);
		err = nt_file_read_choice(path, cur, sizeof(cur));
		if (err == -ENOENT)
			die("no %s: this kernel has no anonymous %lu kB THP (multi-size "
			    "THP came with 6.8)", path, opt.mthp_kb[i]);
		if (err)
			die("cannot read %s: %s", path, strerror(-err));
		if (!strcmp(cur, "always"))
			continue;
		snprintf(mthp_saved[i], sizeof(mthp_saved[i]), "%s", cur);
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
		err = nt_file_write(path, "always");
		if (err) {
			mthp_saved[i][0] = 0;
			die("cannot set %s to always: %s", path, strerror(-err));
		}
	}
}

/* ---- the area ---- */

struct placement {
	long per_node[NT_MAX_NODES];
	size_t huge_ranges, ranges;
	size_t mthp_folios;	/* folios of the largest --mthp size */
};

/* How much VmLck grows when the area is mapped. */
static long area_locked_kb(void)
{
	return opt.unlocked ? 0 : (long)(opt.size >> 10);
}

static void *map_area(void)
{
	int lock = opt.unlocked ? 0 : MAP_LOCKED;
	size_t len = opt.size, off;
	char *p, *aligned;

	if (!strcmp(opt.thp, "never") && !opt.nr_mthp) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | lock | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED)
			die("mmap(%zu, %sMAP_POPULATE): %s", len, lock ? "MAP_LOCKED | " : "",
			    strerror(errno));
		return p;
	}
	/* Reserve 2 MiB more, keep the aligned part: 6.1 does not align anon mmaps. */
	p = mmap(NULL, len + HPAGE_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap(%zu) to reserve an aligned range: %s", len + HPAGE_SIZE, strerror(errno));
	aligned = (char *)(((uintptr_t)p + HPAGE_SIZE - 1) & ~(HPAGE_SIZE - 1));
	if (aligned > p && munmap(p, aligned - p))
		die("munmap of the alignment head: %s", strerror(errno));
	if (munmap(aligned + len, p + HPAGE_SIZE - aligned))
		die("munmap of the alignment tail: %s", strerror(errno));
	if (opt.nr_mthp) {
		/* "always": no madvise(); populated as one mmap() would be */
		p = mmap(aligned, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_FIXED | lock | MAP_POPULATE, -1, 0);
		if (p != aligned)
			die("mmap(%zu, MAP_FIXED | %sMAP_POPULATE): %s", len,
			    lock ? "MAP_LOCKED | " : "", strerror(errno));
		return p;
	}
	p = mmap(aligned, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (p != aligned)
		die("mmap(%zu, MAP_FIXED): %s", len, strerror(errno));
	if (madvise(p, len, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	if (opt.unlocked) {
		for (off = 0; off < len; off += page_size)
			p[off] = 1;
	} else if (mlock(p, len)) {
		die("mlock(%zu): %s", len, strerror(errno));
	}
	return p;
}

static uint64_t kpageflags_of(int pagemap, int kpageflags, const char *addr)
{
	uint64_t entry, flags;
	off_t off = (uintptr_t)addr / page_size * sizeof(entry);

	if (pread(pagemap, &entry, sizeof(entry), off) != sizeof(entry))
		die("reading /proc/self/pagemap: %s", strerror(errno));
	if (!(entry & PM_PRESENT))
		die("page %p of the locked area is not present", (void *)addr);
	if (!(entry & PM_PFN_MASK))
		die("/proc/self/pagemap shows no PFNs (not root?)");
	off = (entry & PM_PFN_MASK) * sizeof(flags);
	if (pread(kpageflags, &flags, sizeof(flags), off) != sizeof(flags))
		die("reading /proc/kpageflags: %s", strerror(errno));
	return flags;
}

/* Whether the page at addr is (part of) a transparent huge page: pagemap + kpageflags. */
static bool is_thp(int pagemap, int kpageflags, const char *addr)
{
	return kpageflags_of(pagemap, kpageflags, addr) & (1ULL << KPF_THP);
}

/*
 * Base pages of the folio that starts at page i of the area: a compound head
 * and the tails after it, or 1 for a small folio.
 */
static size_t folio_pages_at(int pagemap, int kpageflags, const char *area, size_t i,
			     size_t npages)
{
	uint64_t flags = kpageflags_of(pagemap, kpageflags, area + i * page_size);
	size_t n = 1;

	if (flags & (1ULL << KPF_COMPOUND_TAIL))
		die("page %zu of the area is the tail of a folio that starts before it", i);
	if (!(flags & (1ULL << KPF_COMPOUND_HEAD)))
		return 1;
	while (i + n < npages) {
		flags = kpageflags_of(pagemap, kpageflags, area + (i + n) * page_size);
		if (!(flags & (1ULL << KPF_COMPOUND_TAIL)))
			break;
		n++;
	}
	return n;
}

/*
 * Every page where the policy puts it; with THP, every 2 MiB range a huge page;
 * with --mthp, every page in a folio of the largest size.
 */
static void check_placement(const char *area, struct placement *pl)
{
	size_t npages = opt.size / page_size, per_huge = HPAGE_SIZE / page_size;
	int pagemap = -1, kpageflags = -1, *status;
	struct nt_vma vma;
	enum nt_il_rule rule;
	unsigned int shift = 0;
	size_t i, bad = 0, folio_left = 0, mthp_pages = (opt.mthp_max_kb << 10) / page_size;
	size_t small_pages = 0;
	bool huge = false;
	int err;

	memset(pl, 0, sizeof(*pl));
	status = malloc(npages * sizeof(*status));
	if (!status)
		die("out of memory");
	err = nt_pages_nodes(area, npages, page_size, status);
	if (err)
		die("move_pages() query of %zu pages: %s", npages, strerror(-err));
	err = nt_kernel_il_rule(&rule);
	if (err)
		die("cannot tell the kernel's interleave rule: %s", strerror(-err));
	nt_vma_anon(&vma, (unsigned long)area, __builtin_ctzl(page_size), rule);
	if (strcmp(opt.thp, "never") || opt.nr_mthp) {
		pagemap = open("/proc/self/pagemap", O_RDONLY);
		kpageflags = open("/proc/kpageflags", O_RDONLY);
		if (pagemap < 0 || kpageflags < 0)
			die("cannot open /proc/self/pagemap or /proc/kpageflags: %s",
			    strerror(errno));
		if (!opt.nr_mthp)
			pl->ranges = opt.size / HPAGE_SIZE;
	}
	for (i = 0; i < npages; i++) {
		unsigned long addr = (unsigned long)area + i * page_size;

		if (opt.nr_mthp && !folio_left) {
			folio_left = folio_pages_at(pagemap, kpageflags, area, i, npages);
			if (folio_left != mthp_pages)
				small_pages += folio_left;
			else
				pl->mthp_folios++;
			/* The policy places a folio as a whole: its order is the unit */
			shift = vma.page_shift + __builtin_ctzl(folio_left);
		} else if (pagemap >= 0 && !opt.nr_mthp && i % per_huge == 0) {
			huge = is_thp(pagemap, kpageflags, area + i * page_size);
			pl->huge_ranges += huge;
		}
		if (folio_left)
			folio_left--;
		if (status[i] < 0)
			die("page %zu of the locked area: move_pages status %d (%s)", i,
			    status[i], strerror(-status[i]));
		if (status[i] >= NT_MAX_NODES)
			die("page %zu on node %d, beyond what this program handles", i,
			    status[i]);
		pl->per_node[status[i]]++;
		if (!opt.nr_mthp)
			shift = huge ? HPAGE_SHIFT : vma.page_shift;
		if (!opt.policy_default &&
		    !nt_expect_ok(&opt.policy, &vma, addr, shift, status[i])) {
			if (bad < 5)
				fprintf(stderr, "timedmunlock: page %zu (%#lx) on node %d, "
					"expected node %d (-1: any of the policy's nodes)\n",
					i, addr, status[i],
					nt_expect_node(&opt.policy, &vma, addr, shift));
			bad++;
		}
	}
	free(status);
	if (pagemap >= 0) {
		close(pagemap);
		close(kpageflags);
	}
	if (bad)
		die("%zu of %zu pages are not where policy %s puts them: the figures would "
		    "measure another placement", bad, npages, opt.policy_text);
	if (pl->ranges && pl->huge_ranges != pl->ranges)
		die("thp=%s: only %zu of %zu 2 MiB ranges are huge pages", opt.thp,
		    pl->huge_ranges, pl->ranges);
	if (small_pages)
		die("mthp=%s: %zu of %zu pages are not in %lu kB folios: the figures would "
		    "measure other folio sizes", opt.mthp_text, small_pages, npages,
		    opt.mthp_max_kb);
}

static long vmlck_kb(void)
{
	long kb;

	if (nt_vmlck_read(&kb))
		die("cannot read VmLck from /proc/self/status");
	return kb;
}

/* Per-node Mlocked (kB) after folding the per-CPU deltas. */
static void node_mlocked(long kb[NT_MAX_NODES])
{
	int node;

	memset(kb, 0, NT_MAX_NODES * sizeof(kb[0]));
	if (nt_stat_refresh())
		die("cannot write /proc/sys/vm/stat_refresh (root needed; or --no-global-checks)");
	nt_mask_for_each(node, &memory_nodes)
		if (nt_node_meminfo_read(node, "Mlocked", &kb[node]))
			die("cannot read node %d's Mlocked", node);
}

/*
 * Empty every CPU's per-CPU LRU and mlock batches: move_pages() with target
 * nodes starts with lru_cache_disable(), which drains them all. One page of
 * ours, moved to the node it is on: nothing moves. Needed before reading
 * Mlocked after munmap or exit: a 6.1 kernel without CONFIG_SWAP frees the
 * unmapped pages with release_pages() and no lru_add_drain(), so the last
 * munlocks of an unmap wait in the batch of the CPU that queued them.
 */
static void drain_all_cpus(void)
{
	static char *page;
	int node, status;
	void *addr;

	if (!page) {
		page = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		page[0] = 1;
	}
	addr = page;
	if (move_pages(0, 1, &addr, NULL, &status, 0) || status < 0)
		die("move_pages() query of a page of ours: %s",
		    strerror(status < 0 ? -status : errno));
	node = status;
	if (move_pages(0, 1, &addr, &node, &status, MPOL_MF_MOVE))
		die("move_pages() of a page to its own node %d: %s", node, strerror(errno));
}

static void check_node_mlocked(const long before[NT_MAX_NODES], const char *when)
{
	long now[NT_MAX_NODES];
	int node;

	drain_all_cpus();
	node_mlocked(now);
	nt_mask_for_each(node, &memory_nodes)
		if (now[node] != before[node])
			die("after %s node %d Mlocked is %ld kB, %ld kB before the area was "
			    "mapped: the area was not fully unlocked", when, node, now[node],
			    before[node]);
}

static void print_placement(const struct placement *pl)
{
	char buf[512];
	size_t len = 0;
	int node;

	buf[0] = 0;
	for (node = 0; node < NT_MAX_NODES; node++)
		if (pl->per_node[node])
			len += snprintf(buf + len, sizeof(buf) - len, "%s%d:%ld",
					len ? "," : "", node, pl->per_node[node]);
	printf("# placement pages_per_node=%s thp_ranges=%zu/%zu", buf, pl->huge_ranges,
	       pl->ranges);
	if (opt.nr_mthp)
		printf(" mthp_folios=%zux%lukB", pl->mthp_folios, opt.mthp_max_kb);
	printf(" checked=all\n");
}

/* ---- vmstat deltas and the cost model's records (record.h) ---- */

static void vmstat_read(struct bench_vmstat *s)
{
	int err = bench_vmstat_read(s, opt.vmstat, opt.nr_vmstat);

	if (err)
		die("cannot read /proc/vmstat: %s", strerror(-err));
}

static void vmstat_print(unsigned int it, const struct bench_vmstat *a,
			 const struct bench_vmstat *b)
{
	if (opt.nr_vmstat)
		bench_vmstat_print(it, a, b);
}

static void model_start(void)
{
	char why[512];

	if (bench_model_start(why, sizeof(why)))
		die("%s", why);
}

static void model_print(unsigned int it)
{
	char why[512];

	if (bench_model_print(it, why, sizeof(why)))
		die("%s", why);
}

/* ---- the operations ---- */

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

/* The timed call of --op munlock and mlock; 0 or -1 with errno. */
static int timed_lock_op(char *area)
{
	return opt.op == OP_MLOCK ? mlock(area, opt.size) : munlock(area, opt.size);
}

/* How much VmLck grew across the timed operation. */
static long timed_locked_kb(void)
{
	return opt.op == OP_MLOCK ? (long)(opt.size >> 10) : 0;
}

/* What an iteration does after its checks to leave nothing behind. */
static void unmap_after(char *area)
{
	if (opt.op == OP_MLOCK && munlock(area, opt.size))
		die("munlock(%zu): %s", opt.size, strerror(errno));
	if ((opt.op == OP_MUNLOCK || opt.op == OP_MLOCK) && munmap(area, opt.size))
		die("munmap(%zu): %s", opt.size, strerror(errno));
}

static double run_in_process(unsigned int it, const long mlocked_before[NT_MAX_NODES])
{
	long lck_before = vmlck_kb(), lck;
	struct timespec t0, t1;
	struct placement pl;
	char *area;

	area = map_area();
	lck = vmlck_kb();
	if (lck - lck_before != area_locked_kb())
		die("VmLck grew by %ld kB after mapping %zu kB%s", lck - lck_before,
		    opt.size >> 10, opt.unlocked ? " unlocked" : " locked");
	check_placement(area, &pl);
	if (it == 1)
		print_placement(&pl);
	vmstat_read(&vm_before);
	if (opt.op == OP_MUNLOCK || opt.op == OP_MLOCK) {
		now(&t0);
		cm_region_start();
		if (timed_lock_op(area))
			die("%s(%zu): %s", op_names[opt.op], opt.size, strerror(errno));
		cm_region_end();
		now(&t1);
	} else {
		now(&t0);
		cm_region_start();
		if (munmap(area, opt.size))
			die("munmap(%zu): %s", opt.size, strerror(errno));
		cm_region_end();
		now(&t1);
	}
	vmstat_read(&vm_after);
	lck = vmlck_kb();
	if (lck != lck_before + timed_locked_kb())
		die("VmLck is %ld kB after %s, %ld kB before the area was mapped", lck,
		    op_names[opt.op], lck_before);
	unmap_after(area);
	if (opt.global_checks)
		check_node_mlocked(mlocked_before, op_names[opt.op]);
	vmstat_print(it, &vm_before, &vm_after);
	return elapsed(&t0, &t1);
}

/* ---- --processes: workers doing the timed operation together ---- */

struct shared {
	pthread_barrier_t mapped, go, done, checked;
	struct placement pl;	/* worker 0's, first iteration */
	double secs[];		/* [iteration][worker] */
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
	struct timespec t0, t1;
	struct placement pl;
	unsigned int it;
	long lck_before, lck;
	char *area;

	in_worker = true;
	for (it = 1; it <= opt.iterations; it++) {
		lck_before = vmlck_kb();
		area = map_area();
		lck = vmlck_kb();
		if (lck - lck_before != area_locked_kb())
			die("worker %u: VmLck grew by %ld kB after mapping %zu kB%s", w,
			    lck - lck_before, opt.size >> 10,
			    opt.unlocked ? " unlocked" : " locked");
		check_placement(area, &pl);
		if (it == 1 && w == 0)
			sh->pl = pl;
		barrier(&sh->mapped);
		barrier(&sh->go);
		now(&t0);
		if (opt.op == OP_MUNMAP ? munmap(area, opt.size) : timed_lock_op(area))
			die("worker %u: %s(%zu): %s", w, op_names[opt.op], opt.size,
			    strerror(errno));
		now(&t1);
		if (vmlck_kb() != lck_before + timed_locked_kb())
			die("worker %u: VmLck is %ld kB after %s, %ld kB before the area was "
			    "mapped", w, vmlck_kb(), op_names[opt.op], lck_before);
		unmap_after(area);
		sh->secs[(it - 1) * opt.processes + w] = elapsed(&t0, &t1);
		barrier(&sh->done);
		barrier(&sh->checked);
	}
	_exit(0);
}

/* The parent: starts the workers, checks and prints between iterations. */
static void run_processes(double *secs, const long mlocked_before[NT_MAX_NODES])
{
	size_t len = sizeof(*sh) + sizeof(double) * opt.iterations * opt.processes;
	unsigned int w, it, failed;
	pid_t *pids;
	char why[256];

	sh = bench_workers_shared(len, opt.processes, &pids, why, sizeof(why));
	if (!sh)
		die("%s", why);
	bench_barrier_shared(&sh->mapped, opt.processes + 1);
	bench_barrier_shared(&sh->go, opt.processes + 1);
	bench_barrier_shared(&sh->done, opt.processes + 1);
	bench_barrier_shared(&sh->checked, opt.processes + 1);
	fflush(stdout);
	for (w = 0; w < opt.processes; w++) {
		pids[w] = fork();
		if (pids[w] < 0)
			die("fork: %s", strerror(errno));
		if (pids[w] == 0) {
			thp_saved[0] = 0;	/* the parent restores it */
			memset(mthp_saved, 0, sizeof(mthp_saved));
			worker(w);
		}
	}
	for (it = 1; it <= opt.iterations; it++) {
		barrier(&sh->mapped);
		if (it == 1)
			print_placement(&sh->pl);
		vmstat_read(&vm_before);
		barrier(&sh->go);
		barrier(&sh->done);
		vmstat_read(&vm_after);
		if (opt.global_checks)
			check_node_mlocked(mlocked_before, op_names[opt.op]);
		vmstat_print(it, &vm_before, &vm_after);
		for (w = 0; w < opt.processes; w++) {
			secs[(it - 1) * opt.processes + w] = sh->secs[(it - 1) * opt.processes + w];
			printf("%u,%s,%zu,%.9f\n", it, op_names[opt.op], opt.size / page_size,
			       sh->secs[(it - 1) * opt.processes + w]);
		}
		fflush(stdout);
		barrier(&sh->checked);
	}
	failed = bench_workers_wait(pids, opt.processes);
	if (failed)
		die("%u worker(s) failed", failed);
	free(pids);
}

static void child(int ready, int go)
{
	struct placement pl;
	char *area, c;

	area = map_area();
	check_placement(area, &pl);
	if (vmlck_kb() < area_locked_kb())
		die("child: VmLck below the locked area's %zu kB", opt.size >> 10);
	c = 'R';
	if (write(ready, &c, 1) != 1)
		die("child: writing the ready pipe: %s", strerror(errno));
	/* The placement seen by the child, for the parent to print. */
	if (write(ready, &pl, sizeof(pl)) != sizeof(pl))
		die("child: writing the ready pipe: %s", strerror(errno));
	if (read(go, &c, 1) != 1)
		_exit(3);
	_exit(0);
}

static double run_exit(unsigned int it, const long mlocked_before[NT_MAX_NODES])
{
	int ready[2], go[2], status;
	struct timespec t0, t1;
	struct placement pl;
	pid_t pid;
	char c;

	if (pipe(ready) || pipe(go))
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		thp_saved[0] = 0;	/* the parent restores it */
		memset(mthp_saved, 0, sizeof(mthp_saved));
		child(ready[1], go[0]);
	}
	close(ready[1]);
	close(go[0]);
	if (read(ready[0], &c, 1) != 1 || c != 'R' ||
	    read(ready[0], &pl, sizeof(pl)) != sizeof(pl)) {
		waitpid(pid, &status, 0);
		die("the child did not get its locked area ready (it said why above)");
	}
	if (it == 1)
		print_placement(&pl);
	vmstat_read(&vm_before);
	now(&t0);
	cm_region_start();
	if (write(go[1], &c, 1) != 1)
		die("writing the exit request: %s", strerror(errno));
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	cm_region_end();
	now(&t1);
	vmstat_read(&vm_after);
	close(ready[0]);
	close(go[1]);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die("the child ended with status %#x", status);
	if (opt.global_checks)
		check_node_mlocked(mlocked_before, "the child's exit");
	vmstat_print(it, &vm_before, &vm_after);
	return elapsed(&t0, &t1);
}

int main(int argc, char **argv)
{
	long mlocked_before[NT_MAX_NODES];
	struct nt_topology topo;
	double *secs;
	struct utsname u;
	unsigned int it;
	int err;

	page_size = sysconf(_SC_PAGESIZE);
	err = nt_topology_read(&topo);
	if (err)
		die("cannot read the NUMA topology: %s", strerror(-err));
	memory_nodes = topo.memory;
	parse_args(argc, argv);
	if (uname(&u))
		die("uname: %s", strerror(errno));
	secs = calloc(opt.iterations * opt.processes, sizeof(*secs));
	if (!secs)
		die("out of memory");

	thp_set();
	mthp_set();
	if (!opt.policy_default)
		err = nt_set_task_policy(&opt.policy);
	else
		err = nt_set_task_policy(NULL);
	if (err)
		die("set_mempolicy(%s): %s", opt.policy_text, strerror(-err));

	printf("# timedmunlock policy=%s size=%zu thp=%s op=%s iterations=%u "
	       "clock=CLOCK_MONOTONIC kernel=%s %s", opt.policy_text, opt.size, opt.thp,
	       op_names[opt.op], opt.iterations, u.release, u.version);
	if (opt.processes > 1)
		printf(" processes=%u", opt.processes);
	if (opt.unlocked)
		printf(" unlocked");
	if (opt.nr_mthp)
		printf(" mthp=%s", opt.mthp_text);
	printf("\n");
	printf("iteration,op,pages,seconds\n");
	fflush(stdout);
	if (opt.global_checks)
		node_mlocked(mlocked_before);
	if (opt.processes == 1)
		model_start();

	for (it = 1; opt.processes == 1 && it <= opt.iterations; it++) {
		if (opt.op == OP_EXIT)
			secs[it - 1] = run_exit(it, mlocked_before);
		else
			secs[it - 1] = run_in_process(it, mlocked_before);
		printf("%u,%s,%zu,%.9f\n", it, op_names[opt.op], opt.size / page_size,
		       secs[it - 1]);
		model_print(it);
		fflush(stdout);
	}

	if (opt.processes > 1)
		run_processes(secs, mlocked_before);
	bench_summary(op_names[opt.op], opt.iterations, secs, opt.iterations * opt.processes);
	free(secs);
	thp_restore();
	if (fflush(stdout))
		die("writing stdout: %s", strerror(errno));
	return 0;
}
