// SPDX-License-Identifier: GPL-2.0
/*
 * Changing a cpuset's mems rebinds the task's NUMA policy as its mode flags
 * say, and migrates its locked pages, which stay locked.
 *
 * Each case runs in a child in a cgroup v2 cpuset of its own (lib/cgroup.h;
 * cpuset enabled in /sys/fs/cgroup/cgroup.subtree_control). The usable memory nodes are split
 * in a first half A and the rest B. The child starts with cpuset.mems = A,
 * sets its task policy, and then, for mems A, then B, then A and B together
 * (it writes its own cgroup's cpuset.mems; as root it may):
 *
 * - maps a new range with MAP_LOCKED | MAP_POPULATE: its pages must land
 *   where the policy, rebound to the current mems, puts them (lib/expect.h
 *   nt_mpol_install() / nt_mpol_rebind(), the rules of
 *   Documentation/admin-guide/mm/numa_memory_policy.rst: a preferred node
 *   is remapped like a bind mask). Known deviation: 6.1 and 6.12 keep the
 *   preferred node (mpol_rebind_preferred() only records the mems); when
 *   the pages are where the kept node puts them and not where the remapped
 *   one does, the check is an expected failure (TAP TODO);
 * - checks that every page of the ranges mapped before is where the mems
 *   change put it: cgroup v2 cpusets always migrate (CS_MEMORY_MIGRATE),
 *   do_migrate_pages() from the old mems to the new (lib/expect.h
 *   nt_migrate_node()): A to B moves every page, B to A+B none (the weights
 *   differ and B is in A+B);
 * - checks all ranges together: KPF_MLOCKED and KPF_UNEVICTABLE of every
 *   page, per-node Mlocked and Unevictable equal to the pages found on each
 *   node, and the events: mlocked and culled once per page locked, and
 *   stranded, rescued, mlocked and culled once per page migrated (see
 *   migrate_locked.c).
 * Then the data of every range must read back, and after the child exits
 * (draining every CPU: the exit leaves pages on its CPU's batch) every
 * counter must be back at its baseline.
 *
 * Policies: interleave with no flag, with MPOL_F_STATIC_NODES and with
 * MPOL_F_RELATIVE_NODES, and bind and preferred with no flag. The nodes they
 * name (see user_nodes()) make the three interleave cases diverge. A
 * preferred node outside the current mems is not used (the allocation is
 * restricted to the cpuset; which of its nodes is nearest is not modelled):
 * then any node of the mems is right.
 *
 * Usage: cpuset_rebind [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 512K)
 * Needs root, cgroup v2 with the cpuset controller, two usable memory nodes.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cgroup.h"
#include "expect_cpuset.h"
#include "harness.h"
#include "locked.h"
#include "pageflags.h"
#include "placement.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(512UL << 10)
#define PHASES		3
#define FIRST_CHECKS	5
#define LATER_CHECKS	6
#define CASE_CHECKS	(FIRST_CHECKS + (PHASES - 1) * LATER_CHECKS + 1 + NT_LK_GONE_CHECKS)
#define SEED		0x63707374UL

static const struct {
	const char *name;
	int mode;
	unsigned int flags;
} cases[] = {
	{ "interleave", MPOL_INTERLEAVE, 0 },
	{ "interleave, static nodes", MPOL_INTERLEAVE, MPOL_F_STATIC_NODES },
	{ "interleave, relative nodes", MPOL_INTERLEAVE, MPOL_F_RELATIVE_NODES },
	{ "bind", MPOL_BIND, 0 },
	{ "preferred", MPOL_PREFERRED, 0 },
};

#define CASES	(sizeof(cases) / sizeof(cases[0]))

struct setup {
	const struct nt_topology *t;
	struct nt_nodemask mems[PHASES];	/* A, B, A+B */
	char cgroup[64];	/* the group's name under /sys/fs/cgroup */
	size_t len;
};

/* The ranges a case has locked so far, and where each page was. */
struct ranges {
	struct nt_region r[PHASES];
	int *nodes[PHASES];
	int n;
};

/*
 * The nodes the case's policy names: A for interleave and bind, A's last
 * node for preferred; a static policy also names B's last node (used only
 * while it is in the mems), a relative one names positions 0 .. |A| - 1 and
 * the position of the last usable node (which folds differently in A, B
 * and A+B).
 */
static void user_nodes(const struct setup *s, unsigned int c, struct nt_nodemask *user)
{
	int node, last_a = -1, last_b = -1, wa = nt_mask_weight(&s->mems[0]);

	nt_mask_for_each(node, &s->mems[0])
		last_a = node;
	nt_mask_for_each(node, &s->mems[1])
		last_b = node;
	nt_mask_clear(user);
	if (cases[c].mode == MPOL_PREFERRED) {
		nt_mask_set(user, last_a);
	} else if (cases[c].flags & MPOL_F_RELATIVE_NODES) {
		for (node = 0; node < wa; node++)
			nt_mask_set(user, node);
		nt_mask_set(user, nt_mask_weight(&s->t->allowed) - 1);
	} else {
		*user = s->mems[0];
		if (cases[c].flags & MPOL_F_STATIC_NODES)
			nt_mask_set(user, last_b);
	}
}

static int *nodes_of(const struct nt_region *r)
{
	int *status = malloc(r->a.npages * sizeof(*status));
	int err;

	if (!status)
		nt_tap_bail("no memory");
	err = nt_pages_nodes(r->a.addr, r->a.npages, r->a.page_size, status);
	if (err)
		nt_tap_bail("move_pages: %s", strerror(-err));
	return status;
}

/* Every page of the older ranges moved from its node to the node old -> new maps it to. */
static long check_migrated(struct ranges *rg, const struct nt_nodemask *old,
			   const struct nt_nodemask *new, const char *label)
{
	long bad = 0, moved = 0;
	int i, *now, want;
	size_t p;

	for (i = 0; i < rg->n; i++) {
		now = nodes_of(&rg->r[i]);
		for (p = 0; p < rg->r[i].a.npages; p++) {
			want = nt_migrate_node(rg->nodes[i][p], old, new);
			moved += want != rg->nodes[i][p];
			if (now[p] != want && bad++ < 8)
				nt_tap_diag("range %d page %zu: on node %d, was on %d, expected %d", i,
					    p, now[p], rg->nodes[i][p], want);
		}
		free(rg->nodes[i]);
		rg->nodes[i] = now;
	}
	nt_tap_result(!bad, "%s: every page locked before is where the cpuset migration puts it",
		      label);
	return moved;
}

/* All ranges: flags, per-node Mlocked and Unevictable, events. */
static void check_all(struct nt_lk *lk, struct ranges *rg)
{
	struct nt_flags_want locked = { .mlocked = true, .unevictable = true };
	long pages[NT_MAX_NODES] = { 0 }, bad = 0, n = 0, b;
	struct nt_lk_events ev = lk->extra;
	size_t p;
	int i;

	for (i = 0; i < rg->n; i++) {
		b = nt_check_flags(rg->r[i].a.addr, rg->r[i].a.npages, rg->r[i].a.page_size,
				   &locked);
		bad += b ? 1 : 0;
		for (p = 0; p < rg->r[i].a.npages; p++)
			pages[rg->nodes[i][p]]++;
		n += rg->r[i].a.npages;
	}
	nt_tap_result(!bad, "%s: every page of every range KPF_MLOCKED and KPF_UNEVICTABLE",
		      lk->label);
	ev.mlocked += n;
	ev.culled += n;
	nt_lk_snapshot(lk, false);
	nt_lk_check_nodes(lk, false, pages);
	nt_lk_check_nodes(lk, true, pages);
	nt_lk_check_events(lk, &ev);
}

/*
 * The policy a page must obey under mp when the task's mems are mems: a
 * preferred node the cpuset does not allow is skipped, for a node of the
 * mems (lib/expect_cpuset.h), any of which is right. where: in words.
 */
static void expected(const struct nt_mempolicy *mp, const struct nt_nodemask *mems,
		     struct nt_vma *vma, unsigned long addr, struct nt_policy *check,
		     char *where, size_t len, const char *label)
{
	char list[64];

	*check = mp->pol;
	if (check->mode == MPOL_PREFERRED) {
		if (nt_expect_nodes_in(check, vma, addr, vma->page_shift, mems, &check->nodes))
			nt_tap_bail("%s: no expectation for the preferred policy", label);
		/* "Any node of the set": a bind policy to it, with no local node to prefer. */
		if (nt_mask_weight(&check->nodes) > 1) {
			check->mode = MPOL_BIND;
			nt_vma_set_local(vma, NT_NODE_ANY);
		}
	}
	snprintf(where, len, "%s of %s",
		 check->mode == MPOL_INTERLEAVE ? "their interleave node" :
		 nt_mask_weight(&check->nodes) == 1 ? "the node" : "a node",
		 nt_mask_format(&check->nodes, list, sizeof(list)));
}

#define KEPT_PREFERRED	"known deviation (6.1 and 6.12): mpol_rebind_preferred() only records the new mems and does not remap the preferred node as numa_memory_policy.rst says; the pages go where the old preferred node puts them"

/*
 * Maps and locks a range under the current mems. mp is the policy rebound
 * as the documentation says, kept as 6.1 rebinds it (preferred node kept):
 * the pages must be where mp puts them; where kept does and mp does not,
 * that is the known deviation.
 */
static void lock_range(struct nt_lk *lk, struct ranges *rg, const struct nt_mempolicy *mp,
		       const struct nt_mempolicy *kept, const struct nt_nodemask *mems,
		       size_t len, int local_node)
{
	struct nt_region *r = &rg->r[rg->n];
	struct nt_policy check, check_kept;
	struct nt_vma vma, vma_kept;
	char where[96], where_kept[96];
	long bad, bad_kept = -1;
	int err;

	err = nt_region_map(r, NT_PRIVATE_ANON, len, sysconf(_SC_PAGESIZE),
			    MAP_LOCKED | MAP_POPULATE);
	if (!err)
		err = nt_region_vma(r, local_node, &vma);
	if (err)
		nt_tap_bail("%s: mapping a locked range: %s", lk->label, strerror(-err));
	nt_area_fill(&r->a, SEED);
	vma_kept = vma;
	expected(mp, mems, &vma, (unsigned long)r->a.addr, &check, where, sizeof(where),
		 lk->label);
	lk->r = r;
	bad = nt_lk_placement(lk, &check, &vma);
	if (bad && mp->user_mode == MPOL_PREFERRED) {
		expected(kept, mems, &vma_kept, (unsigned long)r->a.addr, &check_kept, where_kept,
			 sizeof(where_kept), lk->label);
		nt_tap_diag("%s: against the preferred node kept (6.1): %s", lk->label, where_kept);
		bad_kept = nt_lk_placement(lk, &check_kept, &vma_kept);
	}
	nt_tap_todo(bad == 0, bad_kept == 0 ? KEPT_PREFERRED : NULL, "%s: all %zu pages on %s",
		    lk->label, r->a.npages, where);
	rg->nodes[rg->n++] = nodes_of(r);
}

static void run_case(const struct setup *s, unsigned int c, int local_node)
{
	struct nt_lk lk = { .t = s->t };
	struct ranges rg = { .n = 0 };
	struct nt_policy user = { .mode = cases[c].mode, .flags = cases[c].flags };
	struct nt_mempolicy mp, kept;
	char list[64], mems[64];
	cpu_set_t saved;
	long moved;
	int phase, i, err;

	err = nt_cpuset_set_mems(s->cgroup, &s->mems[0]);
	if (!err)
		err = nt_cgroup_enter(s->cgroup);
	if (err)
		nt_tap_bail("entering cgroup %s: %s", s->cgroup, strerror(-err));
	/* Entering a cpuset resets the CPU affinity: pin again (lib/cgroup.h). */
	err = nt_pin_cpu(-1, &saved);
	if (err < 0)
		nt_tap_bail("pinning to a CPU: %s", strerror(-err));
	user_nodes(s, c, &user.nodes);
	if (nt_mpol_install(&mp, &user, &s->mems[0], &s->t->memory))
		nt_tap_bail("%s: the kernel would refuse this policy", cases[c].name);
	kept = mp;
	err = nt_set_task_policy(&user);
	if (err)
		nt_tap_bail("%s: set_mempolicy: %s", cases[c].name, strerror(-err));
	snprintf(lk.label, sizeof(lk.label), "%s, user nodes %s, mems %s", cases[c].name,
		 nt_mask_format(&user.nodes, list, sizeof(list)),
		 nt_mask_format(&s->mems[0], mems, sizeof(mems)));
	nt_lk_baseline(&lk);
	for (phase = 0; phase < PHASES; phase++) {
		if (phase) {
			err = nt_cpuset_set_mems(s->cgroup, &s->mems[phase]);
			if (err)
				nt_tap_bail("writing cpuset.mems: %s", strerror(-err));
			nt_mpol_rebind(&mp, &s->mems[phase]);
			nt_mpol_rebind_keep_preferred(&kept, &s->mems[phase]);
			snprintf(lk.label, sizeof(lk.label), "%s, user nodes %s, mems %s",
				 cases[c].name, nt_mask_format(&user.nodes, list, sizeof(list)),
				 nt_mask_format(&s->mems[phase], mems, sizeof(mems)));
			moved = check_migrated(&rg, &s->mems[phase - 1], &s->mems[phase],
					       lk.label);
			lk.extra.stranded += moved;
			lk.extra.rescued += moved;
			lk.extra.mlocked += moved;
			lk.extra.culled += moved;
		}
		lock_range(&lk, &rg, &mp, &kept, &s->mems[phase], s->len, local_node);
		check_all(&lk, &rg);
	}
	err = 0;
	for (i = 0; i < rg.n; i++)
		err += nt_area_verify(&rg.r[i].a, SEED) != 0;
	nt_tap_result(!err, "%s: the data of every range reads back", lk.label);
}

static void split_nodes(struct setup *s)
{
	int node, i = 0, half = (nt_mask_weight(&s->t->allowed) + 1) / 2;

	nt_mask_clear(&s->mems[0]);
	nt_mask_clear(&s->mems[1]);
	nt_mask_for_each(node, &s->t->allowed)
		nt_mask_set(&s->mems[i++ < half ? 0 : 1], node);
	s->mems[2] = s->t->allowed;
}

static struct {
	char cgroup[64];	/* the group made, "" once removed */
	bool was_on;		/* the cpuset controller was on for the root's children */
} made = { .was_on = true };

/* Removes the group and turns the controller off again if the test turned it on. */
static void cleanup(void)
{
	int err = 0;

	if (made.cgroup[0])
		err = nt_cgroup_remove(made.cgroup);
	if (!err && !made.was_on)
		err = nt_cpuset_disable();
	if (err)
		fprintf(stderr, "cpuset_rebind: cleaning up the cpuset %s: %s\n", made.cgroup,
			strerror(-err));
	made.cgroup[0] = '\0';
	made.was_on = true;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	struct nt_region gone = { .a.page_size = page };
	struct setup s = { 0 };
	struct nt_topology t;
	bool was_on = false;
	cpu_set_t cpus;
	int local_node, err;
	unsigned int c;
	pid_t pid;

	s.len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	s.t = &t;
	if (nt_mask_weight(&t.allowed) < 2)
		nt_tap_skip_all("needs two usable memory nodes to move a cpuset between, this machine has %d",
				nt_mask_weight(&t.allowed));
	err = nt_cpuset_enable(&was_on);
	if (!err) {
		made.was_on = was_on;
		nt_cleanup_push(cleanup);
	}
	if (err == -ENODEV)
		nt_tap_skip_all("no cpuset controller in %s/cgroup.controllers (cgroup v2 with CONFIG_CPUSETS)",
				NT_CGROUP_ROOT);
	if (err)
		nt_tap_bail("cannot enable +cpuset in %s/cgroup.subtree_control: %s",
			    NT_CGROUP_ROOT, strerror(-err));
	split_nodes(&s);
	snprintf(s.cgroup, sizeof(s.cgroup), "numa-tests-cpuset-%d", getpid());
	if (sched_getaffinity(0, sizeof(cpus), &cpus))
		nt_tap_bail("sched_getaffinity: %s", strerror(errno));
	err = nt_cpuset_create(s.cgroup, &cpus, &s.mems[0]);
	if (err)
		nt_tap_bail("cannot create the cpuset %s: %s", s.cgroup, strerror(-err));
	snprintf(made.cgroup, sizeof(made.cgroup), "%s", s.cgroup);
	/* The ranges of all phases, mapped over the child's life. */
	gone.a.npages = PHASES * s.len / page;
	nt_tap_plan(CASES * CASE_CHECKS);
	for (c = 0; c < CASES; c++) {
		struct nt_lk parent = { .t = &t, .r = &gone };
		unsigned int until = nt_tap_count() + CASE_CHECKS - NT_LK_GONE_CHECKS;

		snprintf(parent.label, sizeof(parent.label), "%s: after the exit", cases[c].name);
		nt_lk_baseline(&parent);
		pid = nt_lk_fork(&t, -1, false, PHASES * s.len, &local_node);
		if (!pid) {
			run_case(&s, c, local_node);
			_exit(0);
		}
		nt_tap_wait(pid, until, cases[c].name);
		/* Every page was migrated at most twice; exit unlocked everything, drained or not. */
		parent.extra.mlocked = parent.extra.stranded = parent.extra.culled =
			parent.extra.rescued = NT_LK_ANY;
		nt_lk_gone(&parent);
	}
	cleanup();
	return nt_tap_finish();
}
