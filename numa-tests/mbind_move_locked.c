// SPDX-License-Identifier: GPL-2.0
/*
 * mbind() with MPOL_MF_MOVE, MPOL_MF_MOVE_ALL and MPOL_MF_STRICT on memory
 * that is already locked: moved pages stay locked and their accounting moves
 * with them; pages that may not move stay where they are, locked.
 *
 * A range bound to node A and mlocked, in a child pinned to one CPU: private
 * anonymous, a memfd mapped shared (the other process below maps it too),
 * and private anonymous in transparent huge pages (each moved whole). Then, "next" meaning the next usable node, wrapping around:
 *
 *  1. mbind(next, MPOL_MF_MOVE): returns 0, every page moves.
 *  2. mbind(next, MPOL_MF_STRICT): the pages are not on that node, so EIO;
 *     nothing moves and the VMA keeps its policy (get_mempolicy()).
 *  3. mbind(next, MPOL_MF_MOVE | MPOL_MF_STRICT): returns 0, every page moves.
 *  4. A forked process now shares every page (it reads each one: private
 *     pages are shared copy-on-write, shared ones mapped by both).
 *     mbind(next, MPOL_MF_MOVE): returns 0 and moves nothing: MPOL_MF_MOVE
 *     leaves pages that another process maps (migrate_folio_add() in 6.1:
 *     folio_estimated_sharers() > 1).
 *  5. mbind(same node, MPOL_MF_MOVE_ALL): returns 0, every shared page moves.
 *  6. The other process exits.
 *  7. munlock(): everything back at its baseline.
 *
 * After each step the whole locked state is checked (lib/locked.h
 * nt_lk_locked()): placement, data, VmLck, smaps Locked, per-node Mlocked and
 * Unevictable, events, kpageflags. While the other process shares the pages,
 * smaps Locked is the proportional share: half of the range (each page is
 * mapped twice), and VmLck and data are not rechecked. Each page moved counts
 * unevictable_pgs_stranded, rescued, mlocked and culled once (see
 * migrate_locked.c).
 *
 * Usage: mbind_move_locked [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 * Needs root (MPOL_MF_MOVE_ALL needs CAP_SYS_NICE) and two usable memory nodes.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "locked.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(1UL << 20)
#define SHARED_CHECKS	6
#define CHECKS		(5 * NT_LK_LOCKED_CHECKS + 2 * SHARED_CHECKS + 6 + NT_LK_UNLOCKED_CHECKS)

struct state {
	struct nt_lk lk;
	struct nt_region r;
	struct nt_vma vma;
	struct nt_policy pol;	/* where the pages must be */
	char where[32];
	const struct nt_topology *t;
};

static int next_node(const struct nt_topology *t, int node)
{
	int next = nt_mask_next(&t->allowed, node);

	return next >= 0 ? next : nt_mask_next(&t->allowed, -1);
}

static void expect_on(struct state *s, int node)
{
	nt_policy_one(&s->pol, MPOL_BIND, node);
	snprintf(s->where, sizeof(s->where), "node %d", node);
}

static void moved(struct state *s)
{
	long n = s->r.a.npages;

	s->lk.extra.stranded += n;
	s->lk.extra.rescued += n;
	s->lk.extra.mlocked += n;
	s->lk.extra.culled += n;
}

/* mbind() of the range to node with flags; the result must be want (0 or -errno). */
static void do_mbind(struct state *s, int node, unsigned int flags, const char *flag_names,
		     int want)
{
	struct nt_policy pol;
	int got = 0;

	nt_policy_one(&pol, MPOL_BIND, node);
	if (mbind(s->r.a.addr, s->r.a.len, pol.mode, pol.nodes.bits, NT_MASK_MAXNODE, flags))
		got = -errno;
	if (got != want)
		nt_tap_diag("mbind returned %s", got ? strerror(-got) : "0");
	nt_tap_result(got == want, "%s: mbind(node %d, %s) returns %s", s->lk.label, node,
		      flag_names, want ? strerror(-want) : "0");
}

/* The VMA's policy is still bind to node. */
static void check_vma_policy(struct state *s, int node)
{
	struct nt_nodemask nodes, want;
	int mode = -1;

	nt_mask_clear(&want);
	nt_mask_set(&want, node);
	if (get_mempolicy(&mode, nodes.bits, NT_MASK_MAXNODE, s->r.a.addr, MPOL_F_ADDR))
		nt_tap_diag("get_mempolicy: %s", strerror(errno));
	nt_tap_result(mode == MPOL_BIND && nt_mask_equal(&nodes, &want),
		      "%s: the VMA policy is still bind to node %d", s->lk.label, node);
}

static void check_locked(struct state *s, const char *step)
{
	s->lk.step = step;
	nt_lk_locked(&s->lk, &s->pol, &s->vma, s->r.a.len / 1024, s->where, false);
}

/* While another process maps every page too. */
static void check_shared(struct state *s, const char *step)
{
	struct nt_lk_events ev = s->lk.extra;
	char label[sizeof(s->lk.label)];

	memcpy(label, s->lk.label, sizeof(label));
	snprintf(s->lk.label, sizeof(s->lk.label), "%.100s: %.56s", label, step);
	ev.mlocked += s->r.a.npages;
	ev.culled += s->r.a.npages;
	nt_lk_snapshot(&s->lk, false);
	nt_lk_check_placement(&s->lk, &s->pol, &s->vma, s->where);
	nt_lk_check_smaps(&s->lk, "Locked", s->r.a.len / 1024 / 2);
	nt_lk_check_nodes(&s->lk, false, s->lk.found);
	nt_lk_check_nodes(&s->lk, true, s->lk.found);
	nt_lk_check_events(&s->lk, &ev);
	nt_lk_check_flags(&s->lk, true, true);
	memcpy(s->lk.label, label, sizeof(label));
}

/*
 * A process sharing every page of the range until it is killed. fork()
 * copies the page tables of private mappings only, so the child reads every
 * page first: a shared mapping's pages are mapped by it too then.
 */
static pid_t sharer(const struct nt_area *a)
{
	volatile char sum = 0;
	int ready[2];
	size_t i;
	pid_t pid;
	char c;

	if (pipe(ready))
		nt_tap_bail("pipe: %s", strerror(errno));
	pid = nt_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid) {
		for (i = 0; i < a->npages; i++)
			sum += a->addr[i * a->page_size];
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		nt_tap_bail("the sharing process did not map the pages");
	close(ready[0]);
	return pid;
}

static const struct mkind {
	enum nt_kind kind;
	bool thp;
	const char *name;
} kinds[] = {
	{ NT_PRIVATE_ANON, false, "private anonymous" },
	{ NT_MEMFD, false, "memfd shared" },
	{ NT_PRIVATE_ANON, true, "private anonymous THP" },
};

#define NKINDS	(sizeof(kinds) / sizeof(kinds[0]))

static size_t hpage;	/* PMD size; 0 without THP */

static void run(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	const struct mkind *k = arg;
	struct state s = { .t = t };
	int node = nt_mask_next(&t->allowed, -1), status;
	pid_t other;

	snprintf(s.lk.label, sizeof(s.lk.label), "%s", k->name);
	s.lk.t = t;
	s.lk.r = &s.r;
	nt_lk_baseline(&s.lk);
	expect_on(&s, node);
	if (k->thp)
		nt_lk_map_thp(&s.lk, len, hpage, &s.pol, local_node, &s.vma);
	else
		nt_lk_map(&s.lk, k->kind, len, &s.pol, true, local_node, &s.vma);
	check_locked(&s, "mapped");

	node = next_node(t, node);
	do_mbind(&s, node, MPOL_MF_MOVE, "MPOL_MF_MOVE", 0);
	moved(&s);
	expect_on(&s, node);
	check_locked(&s, "after MPOL_MF_MOVE");

	do_mbind(&s, next_node(t, node), MPOL_MF_STRICT, "MPOL_MF_STRICT", -EIO);
	check_vma_policy(&s, node);
	check_locked(&s, "after MPOL_MF_STRICT");

	node = next_node(t, node);
	do_mbind(&s, node, MPOL_MF_MOVE | MPOL_MF_STRICT, "MPOL_MF_MOVE|MPOL_MF_STRICT", 0);
	moved(&s);
	expect_on(&s, node);
	check_locked(&s, "after MPOL_MF_MOVE|MPOL_MF_STRICT");

	other = sharer(&s.r.a);
	do_mbind(&s, next_node(t, node), MPOL_MF_MOVE, "MPOL_MF_MOVE, pages shared", 0);
	check_shared(&s, "shared, after MPOL_MF_MOVE");
	node = next_node(t, node);
	do_mbind(&s, node, MPOL_MF_MOVE_ALL, "MPOL_MF_MOVE_ALL, pages shared", 0);
	moved(&s);
	expect_on(&s, node);
	check_shared(&s, "shared, after MPOL_MF_MOVE_ALL");
	kill(other, SIGKILL);
	if (waitpid(other, &status, 0) != other)
		nt_tap_bail("waitpid: %s", strerror(errno));
	check_locked(&s, "the sharer gone");

	s.lk.step = NULL;
	nt_lk_munlock(&s.lk);
}

int main(int argc, char **argv)
{
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	const char *thp_skip;
	unsigned int i, c;

	if (nt_mask_weight(&t.allowed) < 2)
		nt_tap_skip_all("needs two usable memory nodes to move pages between, this machine has %d",
				nt_mask_weight(&t.allowed));
	nt_tap_plan(NKINDS * CHECKS);
	hpage = nt_thp_size(&thp_skip);
	for (i = 0; i < NKINDS; i++) {
		if (kinds[i].thp && thp_skip) {
			for (c = 1; c <= CHECKS; c++)
				nt_tap_skip(thp_skip, "%s: check %u of %d", kinds[i].name, c, CHECKS);
			continue;
		}
		/* The THP kind: whole huge pages, two at least. */
		nt_lk_in_child_thp(&t, -1, kinds[i].thp,
				   !kinds[i].thp ? len : len < 2 * hpage ? 2 * hpage :
				   len / hpage * hpage,
				   CHECKS, kinds[i].name, run, (void *)&kinds[i]);
	}
	return nt_tap_finish();
}
