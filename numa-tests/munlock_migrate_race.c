// SPDX-License-Identifier: GPL-2.0
/*
 * munlock() on one CPU while another CPU moves the same pages with
 * move_pages(), and what munlock() leaves held when it returns.
 *
 * move_pages(2): "the pages are moved" to the nodes asked for, and a page
 * that cannot be moved now reports -EBUSY ("currently busy and cannot be
 * moved. Try again later"); a failure to migrate makes the call return the
 * number of pages not moved. munlock(2): the pages are no longer locked
 * when it returns. So, whatever munlock() does to the pages meanwhile:
 * - pages the racing call reported busy, or left unmoved, move when asked
 *   again once munlock() has returned, and in the end every page is on the
 *   node it was sent to (the pages the racing call could not move are
 *   counted, by status, in a diagnostic: a figure to compare kernels by);
 * - no page is mlocked or unevictable after munlock(), and nr_mlock and
 *   every node's Mlocked and Unevictable are back where they started.
 *
 * Also, a huge page that munlock() has returned from is not referenced by
 * anything but its mappings: nothing else holds it, so debugfs'
 * split_huge_pages, which gives up on a huge page with references it cannot
 * account for, splits every one of them at once. A kernel that keeps huge
 * pages referenced on a per-CPU batch after munlock() returns makes their
 * migration fail until that CPU drains, a FOLL_LONGTERM pin included,
 * which does not drain the batches for a large folio (mm/gup.c,
 * folio_may_be_lru_cached()).
 *
 * Parts: huge pages (THP "always"; move_pages() gets one address per huge
 * page, which moves all of it) and base pages, each interleaved over the
 * usable nodes and sent to the next usable node, ROUNDS rounds each; then
 * munlock() and the split at once, for huge pages.
 *
 * Usage: munlock_migrate_race [-s SIZE]  (the base-page area; default 1M)
 * Needs root, two CPUs and two memory nodes; the huge-page parts THP and
 * debugfs with split_huge_pages.
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
#define DEFAULT_SIZE	(1UL << 20)
#define ROUNDS		16
#define RETRIES		3
#define STEP_US		500	/* munlock() this much later each round */
#define WAIT_S		60.0
#define MAX_MOVES	1024	/* addresses in one move_pages() call */

#define RACE_CHECKS	3
#define SPLIT_CHECKS	2

static struct {
	struct nt_topology t;
	size_t page;
	int cpu[2];		/* munlock()'s CPU, the mover's */
	struct mover {
		int ready, go, stop;	/* the mover spins; may go; must stop */
		int err;		/* errno of a call that failed, or 0 */
		long calls, asked;	/* racing calls made, moves they asked for */
		long busy, other;	/* moves they left undone: -EBUSY, otherwise */
		long calls_short;	/* calls that returned pages not moved */
		unsigned long n;
		void *pages[MAX_MOVES];
		int nodes[MAX_MOVES];	/* where each is sent */
		int from[MAX_MOVES];	/* where each was */
	} *sh;
} g;

static char saved_thp[32];

static void restore_mode(void)
{
	if (saved_thp[0] && nt_file_write(THP_DIR "/enabled", saved_thp))
		fprintf(stderr, "munlock_migrate_race: cannot put THP back to %s\n", saved_thp);
	saved_thp[0] = '\0';
}

/* The range: len bytes aligned to align, interleaved, locked and populated. */
static void map_locked(struct nt_region *r, size_t len, size_t align)
{
	struct nt_policy il = { .mode = MPOL_INTERLEAVE, .nodes = g.t.allowed };

	nt_lk_map_populated(r, len, align, &il);
}

/* The usable memory node after node, wrapping round. */
static int next_node(int node)
{
	int next = nt_mask_next(&g.t.allowed, node);

	return next >= 0 ? next : nt_mask_next(&g.t.allowed, -1);
}

/* One address per unit of the range, each sent to the node after its own. */
static void plan_moves(const struct nt_area *a, size_t unit)
{
	size_t per = unit / a->page_size, i;
	int *now = calloc(a->npages, sizeof(*now));

	if (!now || nt_pages_nodes(a->addr, a->npages, a->page_size, now))
		nt_tap_bail("finding the range's nodes");
	g.sh->n = a->npages / per;
	for (i = 0; i < g.sh->n; i++) {
		if (now[i * per] < 0)
			nt_tap_bail("page %zu: no node (%d)", i * per, now[i * per]);
		g.sh->pages[i] = a->addr + i * unit;
		g.sh->from[i] = now[i * per];
		g.sh->nodes[i] = next_node(now[i * per]);
	}
	free(now);
}

/* Base pages of the range not on the node their unit was sent to; report: name some. */
static long misplaced(const struct nt_area *a, size_t unit, bool report)
{
	size_t per = unit / a->page_size, i;
	int *now = calloc(a->npages, sizeof(*now));
	long bad = 0;

	if (!now || nt_pages_nodes(a->addr, a->npages, a->page_size, now))
		nt_tap_bail("finding the range's nodes");
	for (i = 0; i < a->npages; i++) {
		if (now[i] == g.sh->nodes[i / per])
			continue;
		if (bad++ < 4 && report)
			nt_tap_diag("page %zu on node %d, sent to %d", i, now[i], g.sh->nodes[i / per]);
	}
	free(now);
	return bad;
}

/*
 * The mover, on the second CPU: a child forked with the range mapped, so
 * that it maps the same pages (copy-on-write, never written) in a mm of
 * its own; move_pages() of its mapping then takes its own mmap_lock, not
 * the one munlock() holds, and the migration unmaps the pages from both
 * (MPOL_MF_MOVE_ALL: they are mapped twice) while munlock() works on them.
 * It moves the pages to where they are sent and back, over and over, until
 * munlock() has returned, counting what each call could not move.
 */
static void __attribute__((noreturn)) mover(void)
{
	static int status[MAX_MOVES];
	double until = nt_now_s() + WAIT_S;
	int err = nt_run_on_cpu(g.cpu[1]);
	struct mover *m = g.sh;
	unsigned long i;
	long ret;

	if (err) {
		m->err = -err;
		_exit(1);
	}
	__atomic_store_n(&m->ready, 1, __ATOMIC_RELEASE);
	/* Spin, not sleep: the moves should meet munlock() on the other CPU. */
	while (!__atomic_load_n(&m->go, __ATOMIC_ACQUIRE))
		if (nt_now_s() > until)
			_exit(4);
	do {
		int *to = m->calls % 2 ? m->from : m->nodes;

		ret = move_pages(0, m->n, m->pages, to, status, MPOL_MF_MOVE_ALL);
		if (ret < 0) {
			m->err = errno;
			_exit(1);
		}
		m->calls++;
		m->asked += m->n;
		m->calls_short += ret > 0;
		for (i = 0; i < m->n; i++) {
			if (status[i] == to[i])
				continue;
			if (status[i] == -EBUSY)
				m->busy++;
			else
				m->other++;
		}
	} while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE));
	_exit(0);
}

/*
 * Forks the mover, lets it go, munlock()s the range delay_us later (so that
 * over the rounds munlock() meets each phase of a move_pages() call: the
 * drain of every CPU, the isolation, the copies), and stops the mover.
 */
static void munlock_racing_mover(struct nt_region *r, unsigned int delay_us, const char *label)
{
	int status;
	pid_t pid;

	g.sh->ready = g.sh->go = g.sh->stop = 0;
	pid = nt_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid)
		mover();
	if (!nt_flag_wait(&g.sh->ready, 1, WAIT_S))
		nt_tap_bail("%s: the mover did not start", label);
	__atomic_store_n(&g.sh->go, 1, __ATOMIC_RELEASE);
	if (delay_us)
		usleep(delay_us);
	if (munlock(r->a.addr, r->a.len))
		nt_tap_bail("%s: munlock: %s", label, strerror(errno));
	__atomic_store_n(&g.sh->stop, 1, __ATOMIC_RELEASE);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		nt_tap_bail("%s: the mover failed (status %#x: %s)", label, status,
			    strerror(g.sh->err));
}

/* Asks again for what is not where it was sent, as -EBUSY says to. */
static void move_rest(struct nt_area *a, size_t unit, const char *label)
{
	static int status[MAX_MOVES];
	int try;

	/* The mover may have left them anywhere between from and nodes. */
	for (try = 0; try < RETRIES && misplaced(a, unit, false); try++)
		if (move_pages(0, g.sh->n, g.sh->pages, g.sh->nodes, status, MPOL_MF_MOVE) < 0)
			nt_tap_bail("%s: move_pages: %s", label, strerror(errno));
}

static bool flags_clear(const struct nt_area *a)
{
	struct nt_flags_want clear = { 0 };

	return nt_check_flags(a->addr, a->npages, a->page_size, &clear) == 0;
}

/* One kind of page: munlock() racing move_pages(), ROUNDS times. */
static void race(size_t len, size_t unit, const char *label)
{
	struct nt_counters base, now;
	long bad_place = 0, bad_flags = 0;
	struct nt_region r;
	int round;

	memset(g.sh, 0, sizeof(*g.sh));
	nt_snapshot(&base, &g.t.online, true);
	for (round = 1; round <= ROUNDS; round++) {
		map_locked(&r, len, unit);
		plan_moves(&r.a, unit);
		munlock_racing_mover(&r, (round - 1) * STEP_US, label);
		move_rest(&r.a, unit, label);
		bad_place += misplaced(&r.a, unit, true) != 0;
		/* munlock() drained this CPU; migration may have queued on the other. */
		if (nt_drain_all())
			nt_tap_bail("%s: draining every CPU", label);
		if (!flags_clear(&r.a))
			bad_flags++;
		if (nt_region_unmap(&r))
			nt_tap_bail("%s: munmap: %s", label, strerror(errno));
	}
	/* A figure to compare kernels by, not a verdict: busy means "try again later". */
	nt_tap_diag("%s: %ld racing move_pages() calls left %ld of %ld moves undone: %ld busy, %ld otherwise; %ld calls returned pages not moved",
		    label, g.sh->calls, g.sh->busy + g.sh->other, g.sh->asked, g.sh->busy,
		    g.sh->other, g.sh->calls_short);
	nt_tap_result(!bad_place,
		      "%s: munlock() racing move_pages(): every page on the node it was sent to, asked again while busy",
		      label);
	if (bad_flags)
		nt_tap_diag("%ld of %d rounds left pages mlocked or unevictable", bad_flags, ROUNDS);
	nt_tap_result(!bad_flags,
		      "%s: munlock() racing move_pages(): no page KPF_MLOCKED or KPF_UNEVICTABLE, in every round",
		      label);
	nt_snapshot(&now, &g.t.online, true);
	nt_tap_result(nt_events_agree(&now, &base, label) &&
		      now.vmstat[NT_NR_MLOCK] == base.vmstat[NT_NR_MLOCK] &&
		      nt_nodes_moved(&g.t.online, now.mlocked_kb, base.mlocked_kb, NULL,
				     g.page / 1024, "Mlocked") &&
		      nt_nodes_moved(&g.t.online, now.unevictable_kb, base.unevictable_kb, NULL,
				     g.page / 1024, "Unevictable"),
		      "%s: munlock() racing move_pages(): nr_mlock and every node's Mlocked and Unevictable back at their baseline",
		      label);
}

/* Huge pages: munlock(), then at once, with nothing drained, the split. */
static void munlock_then_split(size_t len, size_t huge)
{
	const char *label = "THP";
	struct nt_region r;
	uint64_t *f;
	long whole = 0;
	size_t i;
	int err;

	map_locked(&r, len, huge);
	f = nt_flags_of(r.a.addr, r.a.npages, r.a.page_size);
	for (i = 0; i < r.a.npages; i++)
		whole += !!(f[i] & NT_KPF(NT_KPF_THP));
	free(f);
	nt_tap_result(whole == (long)r.a.npages, "%s: locked: every page in a huge page", label);
	if (munlock(r.a.addr, len))
		nt_tap_bail("%s: munlock: %s", label, strerror(errno));
	err = nt_thp_split(getpid(), r.a.addr, r.a.addr + len);
	if (err)
		nt_tap_bail("%s: writing to %s: %s", label, NT_THP_SPLIT, strerror(-err));
	f = nt_flags_of(r.a.addr, r.a.npages, r.a.page_size);
	for (whole = 0, i = 0; i < r.a.npages; i++)
		whole += !!(f[i] & NT_KPF(NT_KPF_THP));
	free(f);
	if (whole)
		nt_tap_diag("%ld of %zu huge pages not split", whole / (long)(huge / g.page),
			    len / huge);
	nt_tap_result(!whole,
		      "%s: munlock() returned: every huge page splits at once, nothing but its mappings holds it",
		      label);
	if (nt_region_unmap(&r))
		nt_tap_bail("%s: munmap: %s", label, strerror(errno));
}

/* What a part works on: the range's length, and the unit move_pages() moves. */
struct part {
	size_t len, unit;
};

static void race_base(void *arg)
{
	const struct part *p = arg;

	race(p->len, p->unit, "base pages");
}

static void race_thp(void *arg)
{
	const struct part *p = arg;

	race(p->len, p->unit, "THP");
}

static void split_thp(void *arg)
{
	const struct part *p = arg;

	munlock_then_split(p->len, p->unit);
}

static const char *const race_names[RACE_CHECKS] = {
	"munlock() racing move_pages(): every page on the node it was sent to, asked again while busy",
	"munlock() racing move_pages(): no page KPF_MLOCKED or KPF_UNEVICTABLE, in every round",
	"munlock() racing move_pages(): nr_mlock and every node's Mlocked and Unevictable back at their baseline",
};

static const char *const split_names[SPLIT_CHECKS] = {
	"locked: every page in a huge page",
	"munlock() returned: every huge page splits at once, nothing but its mappings holds it",
};

static void skip_thp(const char *why)
{
	unsigned int i;

	for (i = 0; i < RACE_CHECKS; i++)
		nt_tap_skip(why, "THP: %s", race_names[i]);
	for (i = 0; i < SPLIT_CHECKS; i++)
		nt_tap_skip(why, "THP: %s", split_names[i]);
}

int main(int argc, char **argv)
{
	const char *no_thp = NULL;
	size_t len, huge, thp_len;
	unsigned int nodes;
	char text[32];

	len = nt_lk_start(argc, argv, DEFAULT_SIZE, &g.t);
	g.page = sysconf(_SC_PAGESIZE);
	nodes = nt_mask_weight(&g.t.allowed);
	if (nodes < 2)
		nt_tap_skip_all("needs two memory nodes: every page moves to another node");
	if (nt_two_cpus(&g.cpu[0], &g.cpu[1]))
		nt_tap_skip_all("needs two CPUs: munlock() runs on one, move_pages() on the other");
	if (len / g.page > MAX_MOVES)
		nt_tap_skip_all("at most %d pages (-s)", MAX_MOVES);
	if (nt_file_read_line(THP_DIR "/hpage_pmd_size", text, sizeof(text)) ||
	    nt_file_read_choice(THP_DIR "/enabled", saved_thp, sizeof(saved_thp)))
		no_thp = "no transparent huge pages here (" THP_DIR ")";
	else if (access(NT_THP_SPLIT, W_OK))
		no_thp = "no " NT_THP_SPLIT " (debugfs not mounted, or no CONFIG_DEBUG_FS)";
	huge = no_thp ? 0 : strtoul(text, NULL, 10);
	thp_len = (nodes > 4 ? 4 : nodes) * huge;
	g.sh = mmap(NULL, sizeof(*g.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		    0);
	if (g.sh == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	nt_cleanup_push(restore_mode);
	nt_tap_plan(2 * RACE_CHECKS + SPLIT_CHECKS);
	nt_tap_diag("CPUs %d and %d; base pages %zu kB, huge pages %zu kB, over %u nodes",
		    g.cpu[0], g.cpu[1], len >> 10, thp_len >> 10, nodes);

	nt_in_child_on_cpu(g.cpu[0], RACE_CHECKS, "base pages", race_base,
			   &(struct part){ len, g.page });
	if (no_thp) {
		skip_thp(no_thp);
	} else {
		if (nt_file_write(THP_DIR "/enabled", "always"))
			nt_tap_bail("setting THP to always");
		nt_in_child_on_cpu(g.cpu[0], RACE_CHECKS, "THP", race_thp,
				   &(struct part){ thp_len, huge });
		nt_in_child_on_cpu(g.cpu[0], SPLIT_CHECKS, "THP split", split_thp,
				   &(struct part){ thp_len, huge });
	}
	restore_mode();
	return nt_tap_finish();
}
