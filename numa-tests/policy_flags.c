// SPDX-License-Identifier: GPL-2.0
/*
 * Locked memory under every NUMA policy mode, as a task policy and as a VMA
 * policy, with no mode flag, MPOL_F_STATIC_NODES and MPOL_F_RELATIVE_NODES:
 * every page must land where the installed policy puts it (lib/expect.h,
 * nt_mpol_install()) and the lock must be exact (lib/locked.h).
 *
 * Policies: default, MPOL_LOCAL, MPOL_PREFERRED with no node (local), bind
 * to one node, bind to a set with and without the local node, preferred,
 * preferred-many with and without the local node, interleave over every
 * usable memory node and over a subset. "Local" is the node of the CPU the
 * case runs on: the first node with CPUs and usable memory.
 *
 * The flags, as set_mempolicy(2)/mbind(2) take them at creation (no cpuset
 * change here; cpuset_rebind covers rebinding):
 * - MPOL_F_STATIC_NODES: the policy uses the given nodes that are usable,
 *   like no flag; the case names one more node, one above the highest online
 *   node, which does not exist and must be dropped.
 * - MPOL_F_RELATIVE_NODES: the given nodes are positions in the usable nodes,
 *   modulo their number (mpol_relative_nodemask(): fold, then onto). The case
 *   passes each intended node's position plus the number of usable nodes, so
 *   the kernel must fold them back onto the intended nodes.
 * MPOL_DEFAULT and MPOL_LOCAL take no nodes and no flags.
 *
 * The ways to lock and unlock rotate over the cases (task policies take all
 * eight ways to lock, VMA policies the five that populate after mmap()), and
 * so do the kinds of memory, so that every policy meets several of each.
 *
 * Usage: policy_flags [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 * Needs root. Skips, with the reason, cases this machine cannot host: sets
 * of nodes need two usable memory nodes.
 */
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lockcase.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(1UL << 20)
#define MAX_CASES	64

enum set {
	NO_NODES,	/* default, local */
	ONE_NODE,	/* the last usable node */
	WITH_LOCAL,	/* the local node and the last usable node */
	WITHOUT_LOCAL,	/* every usable node but the local one */
	ALL_NODES,	/* every usable node */
};

static const struct {
	const char *name;
	int mode;
	enum set set;
} policies[] = {
	{ "default", MPOL_DEFAULT, NO_NODES },
	{ "local", MPOL_LOCAL, NO_NODES },
	{ "preferred with no node", MPOL_PREFERRED, NO_NODES },
	{ "bind to one node", MPOL_BIND, ONE_NODE },
	{ "bind to a set with the local node", MPOL_BIND, WITH_LOCAL },
	{ "bind to a set without the local node", MPOL_BIND, WITHOUT_LOCAL },
	{ "preferred", MPOL_PREFERRED, ONE_NODE },
	{ "preferred-many with the local node", MPOL_PREFERRED_MANY, WITH_LOCAL },
	{ "preferred-many without the local node", MPOL_PREFERRED_MANY, WITHOUT_LOCAL },
	{ "interleave over all nodes", MPOL_INTERLEAVE, ALL_NODES },
	{ "interleave over a subset", MPOL_INTERLEAVE, WITHOUT_LOCAL },
};

#define POLICIES	(sizeof(policies) / sizeof(policies[0]))

static const struct {
	const char *name;
	unsigned int flags;
} flag_kinds[] = {
	{ "", 0 },
	{ ", static nodes", MPOL_F_STATIC_NODES },
	{ ", relative nodes", MPOL_F_RELATIVE_NODES },
};

struct pf_case {
	struct nt_lk_case c;
	char where[96];
	const char *skip;	/* why the machine cannot host it, or NULL */
};

static struct pf_case cases[MAX_CASES];
static unsigned int ncases;

static const struct nt_topology *topo;
static int home = -1;		/* the local node: the first usable node with a CPU */

static int find_home(void)
{
	cpu_set_t cpus;
	int node;

	nt_mask_for_each(node, &topo->allowed)
		if (nt_node_cpus(node, &cpus) > 0)
			return node;
	return -1;
}

/* The nodes a set names on this machine; false when it cannot have them. */
static bool set_nodes(enum set set, struct nt_nodemask *m, const char **skip)
{
	int node, last = -1;

	nt_mask_clear(m);
	nt_mask_for_each(node, &topo->allowed)
		last = node;
	if (set == NO_NODES)
		return true;
	if (set != ALL_NODES && set != ONE_NODE && nt_mask_weight(&topo->allowed) < 2) {
		*skip = "needs two usable memory nodes";
		return false;
	}
	switch (set) {
	case ONE_NODE:
		nt_mask_set(m, last);
		break;
	case WITH_LOCAL:
		nt_mask_set(m, home);
		nt_mask_set(m, last);
		break;
	case WITHOUT_LOCAL:
		*m = topo->allowed;
		m->bits[home / NT_LONG_BITS] &= ~(1UL << (home % NT_LONG_BITS));
		break;
	default:
		*m = topo->allowed;
		break;
	}
	return true;
}

/* The nodes to pass for the intended nodes, given the flag (see the top comment). */
static void user_nodes(const struct nt_nodemask *intended, unsigned int flags,
		       struct nt_nodemask *user)
{
	int node, pos = 0, weight = nt_mask_weight(&topo->allowed), top = -1;

	if (flags & MPOL_F_RELATIVE_NODES) {
		nt_mask_clear(user);
		nt_mask_for_each(node, &topo->allowed) {
			if (nt_mask_isset(intended, node))
				nt_mask_set(user, pos + weight);
			pos++;
		}
		return;
	}
	*user = *intended;
	if (flags & MPOL_F_STATIC_NODES) {
		nt_mask_for_each(node, &topo->online)
			top = node;
		nt_mask_set(user, top + 1);
	}
}

static void describe_where(struct pf_case *pc, int mode, const struct nt_nodemask *intended)
{
	char nodes[64];

	nt_mask_format(intended, nodes, sizeof(nodes));
	if (mode == MPOL_INTERLEAVE)
		snprintf(pc->where, sizeof(pc->where), "their interleave node of %s", nodes);
	else if (nt_mask_weight(intended) == 1)
		snprintf(pc->where, sizeof(pc->where), "node %s", nodes);
	else if (nt_mask_empty(intended) || nt_mask_isset(intended, home))
		snprintf(pc->where, sizeof(pc->where), "the local node %d", home);
	else
		snprintf(pc->where, sizeof(pc->where), "a node of %s", nodes);
}

static void add_case(unsigned int p, unsigned int f, bool task, size_t len)
{
	static const enum nt_lock_way vma_ways[] = {
		NT_LOCK_MLOCK, NT_LOCK_MLOCK_FAULTED, NT_LOCK_MLOCK2_ONFAULT,
		NT_LOCK_MCL_CURRENT, NT_LOCK_MCL_ONFAULT,
	};
	struct pf_case *pc = &cases[ncases];
	struct nt_lk_case *c = &pc->c;
	struct nt_nodemask intended;
	unsigned int n = ncases++;

	if (ncases > MAX_CASES)
		nt_tap_bail("more than %d cases", MAX_CASES);
	c->task_policy = task;
	c->lock = task ? (enum nt_lock_way)(n % NT_LOCK_WAYS) : vma_ways[n % 5];
	c->unlock = n / 2 % NT_UNLOCK_WAYS;
	c->kind = n / 3 % NT_KINDS;
	c->len = len;
	c->cpu_node = home;
	c->user.mode = policies[p].mode;
	c->user.flags = flag_kinds[f].flags;
	snprintf(c->label, sizeof(c->label), "%s policy %s%s, %s, %s, %s", task ? "task" : "VMA",
		 policies[p].name, flag_kinds[f].name, nt_kind_names[c->kind],
		 nt_lock_way_names[c->lock], nt_unlock_way_names[c->unlock]);
	if (home < 0) {
		pc->skip = "no node has both a CPU and usable memory: the local node is not modelled";
		return;
	}
	if (!set_nodes(policies[p].set, &intended, &pc->skip))
		return;
	user_nodes(&intended, c->user.flags, &c->user.nodes);
	describe_where(pc, c->user.mode, &intended);
	c->where = pc->where;
}

int main(int argc, char **argv)
{
	unsigned int p, f, i, plan = 0;
	struct nt_topology t;
	size_t len;
	int scope;

	len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	topo = &t;
	home = find_home();
	for (scope = 0; scope < 2; scope++)
		for (p = 0; p < POLICIES; p++)
			for (f = 0; f < 3; f++)
				if (!f || policies[p].set != NO_NODES)
					add_case(p, f, scope == 0, len);
	for (i = 0; i < ncases; i++)
		plan += nt_lk_case_checks(&cases[i].c);
	nt_tap_plan(plan);
	nt_tap_diag("range %zu KiB; local node %d", len >> 10, home);
	for (i = 0; i < ncases; i++) {
		if (cases[i].skip)
			nt_lk_case_skip(&cases[i].c, cases[i].skip);
		else
			nt_lk_case_run(&cases[i].c, &t);
	}
	return nt_tap_finish();
}
