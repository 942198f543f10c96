// SPDX-License-Identifier: GPL-2.0
/*
 * A locked transparent huge page split while it is locked, then munlock()ed.
 *
 * Documentation/mm/unevictable-lru.rst, "MLOCKING Transparent Huge Pages":
 * when a huge page is split, "subpages which belong to VM_LOCKED VMAs will
 * be moved to the unevictable LRU"; each is then a page of its own, mlocked
 * in a VM_LOCKED VMA. munlock(2): after munlock() the pages are no longer
 * locked, and unevictable-lru.rst has mlock_count err "on the low side, so
 * that when munlocked the page will be rescued to an evictable LRU", never
 * on the high one. So after the split and munlock() no page of the range
 * is PG_mlocked or PG_unevictable, nr_mlock and every node's Mlocked and
 * Unevictable are back where they were before the range was mapped, and
 * unmapping it frees no page still mlocked: unevictable_pgs_cleared ("page
 * freed while still mlocked", vm_event_item.h) does not move.
 *
 * The split (/sys/kernel/debug/split_huge_pages, "PID,0xSTART,0xEND")
 * replaces the huge page's mappings with migration entries and maps its
 * pages again: the folio is unmapped for a while but not freed. A kernel
 * that takes "an anonymous folio lost its last mapping" for "it is being
 * freed" and clears PG_mlocked behind mlock_count's back leaves the head
 * page with a count one too high, mlocked after munlock().
 *
 * Three parts, each in a child pinned to one CPU, THP allowed:
 * 1. split, then munlock: huge pages interleaved over the usable nodes
 *    (two to four of them), mapped MAP_LOCKED | MAP_POPULATE with THP
 *    "always"; split; checked; munlock()ed; checked; unmapped; checked.
 * 2. the split racing munlock(): the same range each round, split from a
 *    second CPU at the moment this one calls munlock() (mmap_lock orders
 *    the two, either way round); every page's flags checked each round,
 *    the counters at the end.
 * 3. the same as 1 with multi-size THP (64 kB folios mapped by PTEs,
 *    /sys/kernel/mm/transparent_hugepage/hugepages-64kB), where the kernel
 *    has them (6.8 and later); skipped, saying so, elsewhere.
 *
 * Usage: thp_split_locked
 * Needs root, THP, debugfs with split_huge_pages; part 2 two CPUs.
 */
#include <errno.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "handshake.h"
#include "harness.h"
#include "locked.h"
#include "pageflags.h"
#include "placement.h"
#include "snapshot.h"
#include "sysfile.h"
#include "tap.h"

#define THP_DIR		"/sys/kernel/mm/transparent_hugepage"
#define MTHP_KB		64
#define MTHP_ENABLED	THP_DIR "/hugepages-64kB/enabled"
#define ROUNDS		16
#define STEP_US		250
#define WAIT_S		60.0

#define SPLIT_CHECKS	11
#define RACE_CHECKS	5

static struct {
	struct nt_topology t;
	size_t page;
	int cpu[2];		/* the test's CPU, the splitter's (-1: none) */
	struct {
		int go, done;	/* rounds released, rounds split */
		int err;	/* -errno of the splitter's last failed write */
		char *start, *end;
	} *sh;
} g;

static char saved_thp[32], saved_mthp[32];

static void restore_modes(void)
{
	if (saved_thp[0] && nt_file_write(THP_DIR "/enabled", saved_thp))
		fprintf(stderr, "thp_split_locked: cannot put THP back to %s\n", saved_thp);
	if (saved_mthp[0] && nt_file_write(MTHP_ENABLED, saved_mthp))
		fprintf(stderr, "thp_split_locked: cannot put 64 kB THP back to %s\n", saved_mthp);
	saved_thp[0] = saved_mthp[0] = '\0';
}

static void set_mode(const char *path, const char *mode)
{
	int err = nt_file_write(path, mode);

	if (err)
		nt_tap_bail("setting %s to %s: %s", path, mode, strerror(-err));
}

/* The range: len bytes aligned to align, interleaved, locked and populated. */
static void map_locked(struct nt_region *r, size_t len, size_t align)
{
	struct nt_policy il = { .mode = MPOL_INTERLEAVE, .nodes = g.t.allowed };

	nt_lk_map_populated(r, len, align, &il);
}

/* Pages of the range on each node; bails when one cannot be found. */
static void pages_per_node(const struct nt_area *a, long per[NT_MAX_NODES])
{
	int *status = calloc(a->npages, sizeof(*status));
	size_t i;

	if (!status || nt_pages_nodes(a->addr, a->npages, a->page_size, status))
		nt_tap_bail("finding the range's nodes");
	memset(per, 0, NT_MAX_NODES * sizeof(*per));
	for (i = 0; i < a->npages; i++) {
		if (status[i] < 0 || status[i] >= NT_MAX_NODES)
			nt_tap_bail("page %zu: no node (%d)", i, status[i]);
		per[status[i]]++;
	}
	free(status);
}

/* Pages with KPF_THP, and pages absent, among the range's. */
static void thp_census(const struct nt_area *a, long *thp, long *absent)
{
	uint64_t *f = nt_flags_of(a->addr, a->npages, a->page_size);
	size_t i;

	*thp = *absent = 0;
	for (i = 0; i < a->npages; i++) {
		*absent += !!(f[i] & NT_PAGE_ABSENT);
		*thp += !!(f[i] & NT_KPF(NT_KPF_THP));
	}
	free(f);
}

/*
 * Every page of the range with KPF_MLOCKED and KPF_UNEVICTABLE as want,
 * base pages (per_huge 0) or huge pages of per_huge; names the first pages
 * that are not, and says which are heads of the huge pages that were.
 */
static bool flags_are(const struct nt_area *a, bool set, size_t per_huge, size_t was_huge)
{
	struct nt_flags_want want = { .mlocked = set, .unevictable = set, .thp_pages = per_huge };
	long bad = nt_check_flags(a->addr, a->npages, a->page_size, &want);

	if (bad > 0 && was_huge) {
		uint64_t *f = nt_flags_of(a->addr, a->npages, a->page_size);
		long heads = 0, others = 0;
		size_t i;

		for (i = 0; i < a->npages; i++) {
			if (!(f[i] & (NT_KPF(NT_KPF_MLOCKED) | NT_KPF(NT_KPF_UNEVICTABLE))) == !set)
				continue;
			if (i % was_huge)
				others++;
			else
				heads++;
		}
		free(f);
		nt_tap_diag("of those: %ld former heads of a huge page, %ld other pages", heads,
			    others);
	}
	return bad == 0;
}

/* nr_mlock moved by pages since base, and by mlocked - munlocked - stranded - cleared. */
static bool nr_mlock_moved(const struct nt_counters *now, const struct nt_counters *base,
			   long pages, const char *label)
{
	long got = now->vmstat[NT_NR_MLOCK] - base->vmstat[NT_NR_MLOCK];
	bool agree = nt_events_agree(now, base, label);

	if (got != pages)
		nt_tap_diag("%s: nr_mlock %+ld, expected %+ld", label, got, pages);
	return agree && got == pages;
}

/*
 * nr_mlock, per-node Mlocked and Unevictable: up by the range's pages on
 * each node (per), or back at their baseline (per NULL). Three subtests.
 */
static void check_counts(const struct nt_counters *now, const struct nt_counters *base,
			 const long *per, const char *label, const char *step)
{
	const char *how = per ? "up by the range's pages" : "back at its baseline";
	long total = 0;
	int node;

	for (node = 0; per && node < NT_MAX_NODES; node++)
		total += per[node];
	nt_tap_result(nr_mlock_moved(now, base, total, label),
		      "%s: %s: nr_mlock %s, and moved by mlocked - munlocked - stranded - cleared",
		      label, step, how);
	nt_tap_result(nt_nodes_moved(&g.t.online, now->mlocked_kb, base->mlocked_kb, per,
				     g.page / 1024, "Mlocked"),
		      "%s: %s: every node's Mlocked %s", label, step, how);
	nt_tap_result(nt_nodes_moved(&g.t.online, now->unevictable_kb, base->unevictable_kb, per,
				     g.page / 1024, "Unevictable"),
		      "%s: %s: every node's Unevictable %s", label, step, how);
}

/* After the range is unmapped: nothing was freed mlocked. */
static void check_cleared(const struct nt_counters *now, const struct nt_counters *base,
			  const char *label)
{
	long cleared = now->vmstat[NT_PGS_CLEARED] - base->vmstat[NT_PGS_CLEARED];

	if (cleared)
		nt_tap_diag("unevictable_pgs_cleared %+ld", cleared);
	nt_tap_result(!cleared, "%s: unmapped: no page freed while mlocked (unevictable_pgs_cleared)",
		      label);
}

/* Part 1 or 3: locked huge pages of huge bytes split, then munlock()ed. */
static void split_then_munlock(size_t len, size_t huge, const char *label)
{
	size_t per_huge = huge / g.page;
	struct nt_counters base, now;
	long per[NT_MAX_NODES], thp, absent;
	struct nt_region r;
	int err;

	nt_snapshot(&base, &g.t.online, true);
	map_locked(&r, len, huge);
	nt_tap_result(flags_are(&r.a, true, per_huge, 0),
		      "%s: locked: every page in a huge page, every head KPF_MLOCKED and KPF_UNEVICTABLE",
		      label);

	err = nt_thp_split(getpid(), r.a.addr, r.a.addr + len);
	if (err)
		nt_tap_bail("%s: writing to %s: %s", label, NT_THP_SPLIT, strerror(-err));
	thp_census(&r.a, &thp, &absent);
	if (thp || absent)
		nt_tap_diag("%ld pages still in a huge page, %ld absent", thp, absent);
	nt_tap_result(!thp && !absent, "%s: split: every page a base page", label);
	nt_tap_result(flags_are(&r.a, true, 0, 0),
		      "%s: split: every page KPF_MLOCKED and KPF_UNEVICTABLE", label);
	pages_per_node(&r.a, per);
	nt_snapshot(&now, &g.t.online, true);
	check_counts(&now, &base, per, label, "split");

	if (munlock(r.a.addr, len))
		nt_tap_bail("%s: munlock: %s", label, strerror(errno));
	nt_tap_result(flags_are(&r.a, false, 0, per_huge),
		      "%s: munlock: no page KPF_MLOCKED or KPF_UNEVICTABLE", label);
	nt_snapshot(&now, &g.t.online, true);
	check_counts(&now, &base, NULL, label, "munlock");

	if (nt_region_unmap(&r))
		nt_tap_bail("%s: munmap: %s", label, strerror(errno));
	nt_snapshot(&now, &g.t.online, true);
	check_cleared(&now, &base, label);
}

/* The splitter of part 2, on the second CPU: splits the range each round. */
static void __attribute__((noreturn)) splitter(pid_t victim)
{
	int round, err = nt_run_on_cpu(g.cpu[1]);

	if (err) {
		g.sh->err = err;
		_exit(1);
	}
	for (round = 1; round <= ROUNDS; round++) {
		double until = nt_now_s() + WAIT_S;

		/* Spin, not sleep: the split should meet munlock() on the other CPU. */
		while (__atomic_load_n(&g.sh->go, __ATOMIC_ACQUIRE) < round)
			if (nt_now_s() > until)
				_exit(4);
		err = nt_thp_split(victim, g.sh->start, g.sh->end);
		if (err)
			g.sh->err = err;
		__atomic_store_n(&g.sh->done, round, __ATOMIC_RELEASE);
	}
	_exit(0);
}

/* Part 2: the split racing munlock(), ROUNDS times. */
static void split_racing_munlock(size_t len, size_t huge)
{
	const char *label = "split racing munlock()";
	struct nt_counters base, now;
	long bad_rounds = 0;
	struct nt_region r;
	int round, status;
	pid_t pid;

	nt_snapshot(&base, &g.t.online, true);
	pid = nt_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid)
		splitter(getppid());
	for (round = 1; round <= ROUNDS; round++) {
		map_locked(&r, len, huge);
		g.sh->start = r.a.addr;
		g.sh->end = r.a.addr + len;
		__atomic_store_n(&g.sh->go, round, __ATOMIC_RELEASE);
		/* Later each round: munlock() before, during and after the split. */
		if (round > 1)
			usleep((round - 1) * STEP_US);
		if (munlock(r.a.addr, len))
			nt_tap_bail("%s: munlock: %s", label, strerror(errno));
		if (!nt_flag_wait(&g.sh->done, round, WAIT_S))
			nt_tap_bail("%s: round %d: the splitter did not finish", label, round);
		if (g.sh->err)
			nt_tap_bail("%s: writing to %s: %s", label, NT_THP_SPLIT, strerror(-g.sh->err));
		/* munlock() drained this CPU; the splitter's may still hold its mlocks. */
		if (nt_drain_all())
			nt_tap_bail("%s: draining every CPU", label);
		if (!flags_are(&r.a, false, 0, huge / g.page)) {
			nt_tap_diag("%s: round %d left pages locked", label, round);
			bad_rounds++;
		}
		if (nt_region_unmap(&r))
			nt_tap_bail("%s: munmap: %s", label, strerror(errno));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		nt_tap_bail("%s: the splitter failed (status %#x)", label, status);
	nt_tap_result(!bad_rounds,
		      "%s: munlock: no page KPF_MLOCKED or KPF_UNEVICTABLE, in every round", label);
	if (bad_rounds)
		nt_tap_diag("%ld of %d rounds left pages locked", bad_rounds, ROUNDS);
	nt_snapshot(&now, &g.t.online, true);
	check_counts(&now, &base, NULL, label, "unmapped");
	check_cleared(&now, &base, label);
}

/* The subtests of a part, for skipping it whole under the names it reports. */
static const char *const split_names[SPLIT_CHECKS] = {
	"locked: every page in a huge page, every head KPF_MLOCKED and KPF_UNEVICTABLE",
	"split: every page a base page",
	"split: every page KPF_MLOCKED and KPF_UNEVICTABLE",
	"split: nr_mlock up by the range's pages, and moved by mlocked - munlocked - stranded - cleared",
	"split: every node's Mlocked up by the range's pages",
	"split: every node's Unevictable up by the range's pages",
	"munlock: no page KPF_MLOCKED or KPF_UNEVICTABLE",
	"munlock: nr_mlock back at its baseline, and moved by mlocked - munlocked - stranded - cleared",
	"munlock: every node's Mlocked back at its baseline",
	"munlock: every node's Unevictable back at its baseline",
	"unmapped: no page freed while mlocked (unevictable_pgs_cleared)",
};

static const char *const race_names[RACE_CHECKS] = {
	"munlock: no page KPF_MLOCKED or KPF_UNEVICTABLE, in every round",
	"unmapped: nr_mlock back at its baseline, and moved by mlocked - munlocked - stranded - cleared",
	"unmapped: every node's Mlocked back at its baseline",
	"unmapped: every node's Unevictable back at its baseline",
	"unmapped: no page freed while mlocked (unevictable_pgs_cleared)",
};

static void skip_part(const char *const *names, unsigned int n, const char *label,
		      const char *why)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		nt_tap_skip(why, "%s: %s", label, names[i]);
}

/* What a part works on: the range's length, and the size of its huge pages. */
struct part {
	size_t len, huge;
};

static void part1(void *arg)
{
	const struct part *p = arg;

	split_then_munlock(p->len, p->huge, "THP");
}

static void part2(void *arg)
{
	const struct part *p = arg;

	split_racing_munlock(p->len, p->huge);
}

static void part3(void *arg)
{
	const struct part *p = arg;

	split_then_munlock(p->len, p->huge, "64 kB THP");
}

int main(int argc, char **argv)
{
	char text[32];
	size_t huge, len;
	unsigned int nodes;
	bool mthp;

	(void)nt_lk_start(argc, argv, 0, &g.t);
	g.page = sysconf(_SC_PAGESIZE);
	if (nt_file_read_line(THP_DIR "/hpage_pmd_size", text, sizeof(text)) ||
	    nt_file_read_choice(THP_DIR "/enabled", saved_thp, sizeof(saved_thp)))
		nt_tap_skip_all("no transparent huge pages here (%s)", THP_DIR);
	if (access(NT_THP_SPLIT, W_OK))
		nt_tap_skip_all("no %s (debugfs not mounted, or no CONFIG_DEBUG_FS)", NT_THP_SPLIT);
	huge = strtoul(text, NULL, 10);
	if (!huge)
		nt_tap_skip_all("no PMD size in %s/hpage_pmd_size", THP_DIR);
	nodes = nt_mask_weight(&g.t.allowed);
	len = (nodes < 2 ? 2 : nodes > 4 ? 4 : nodes) * huge;
	mthp = !nt_file_read_choice(MTHP_ENABLED, saved_mthp, sizeof(saved_mthp));
	if (nt_two_cpus(&g.cpu[0], &g.cpu[1])) {
		g.cpu[1] = -1;
		if (sched_getcpu() < 0)
			nt_tap_bail("sched_getcpu: %s", strerror(errno));
		g.cpu[0] = sched_getcpu();
	}
	g.sh = mmap(NULL, sizeof(*g.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		    0);
	if (g.sh == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	nt_cleanup_push(restore_modes);
	nt_tap_plan(2 * SPLIT_CHECKS + RACE_CHECKS);
	nt_tap_diag("huge page %zu kB, range %zu kB over %u node(s), CPUs %d and %d", huge >> 10,
		    len >> 10, nodes, g.cpu[0], g.cpu[1]);

	set_mode(THP_DIR "/enabled", "always");
	nt_in_child_on_cpu(g.cpu[0], SPLIT_CHECKS, "split, then munlock", part1,
			   &(struct part){ len, huge });
	if (g.cpu[1] < 0)
		skip_part(race_names, RACE_CHECKS, "split racing munlock()",
			  "needs two CPUs: the split runs on one, munlock() on the other");
	else
		nt_in_child_on_cpu(g.cpu[0], RACE_CHECKS, "split racing munlock()", part2,
				   &(struct part){ len, huge });

	if (!mthp) {
		skip_part(split_names, SPLIT_CHECKS, "64 kB THP",
			  "no multi-size THP here (" MTHP_ENABLED ": kernels before 6.8)");
	} else {
		/* Only 64 kB folios: the PMD size follows the top-level "never". */
		set_mode(THP_DIR "/enabled", "never");
		set_mode(MTHP_ENABLED, "always");
		nt_in_child_on_cpu(g.cpu[0], SPLIT_CHECKS, "64 kB THP split, then munlock", part3,
				   &(struct part){ len, MTHP_KB << 10 });
	}
	restore_modes();
	return nt_tap_finish();
}
