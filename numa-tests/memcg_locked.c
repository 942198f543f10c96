// SPDX-License-Identifier: GPL-2.0
/*
 * Locked memory of two memory cgroups whose pages meet in one CPU's mlock
 * batch: each memcg's memory.stat and memory.numa_stat must say exactly
 * which of its pages are unevictable, on which node, before and after
 * munlock.
 *
 * The mlock batch is per CPU (per node with the numa-matrix series), but
 * the LRU lists it moves pages to are per lruvec, and a lruvec is per memcg
 * per node (Documentation/admin-guide/cgroup-v2.rst, memory.stat
 * "unevictable": "Amount of unevictable memory", memory.numa_stat: the same
 * per node). A drain that put a page on the wrong memcg's lruvec, or that
 * took one memcg's lru_lock for another's page, shows here.
 *
 * One child, pinned to one CPU, holds two areas interleaved over every
 * usable memory node and locked with mlock2(MLOCK_ONFAULT): a private
 * anonymous one, charged to memcg A, and a memfd (shmem), charged to memcg B.
 * It touches them alternately, BATCH_STEP pages of A's area while in A,
 * then BATCH_STEP of B's while in B (a page is charged to the memcg of the
 * task that faults it; moving the task later does not move the charge), so
 * that the CPU's batch holds pages of both memcgs whenever it drains. Then:
 * - both areas locked: placement, per memcg memory.stat unevictable and
 *   anon/shmem equal to its area, inactive/active anon and file 0, per node
 *   memory.numa_stat unevictable equal to its pages on each node, and the
 *   machine's per-node Mlocked and Unevictable up by both areas;
 * - A's area munlocked: A's unevictable 0 on every node, its pages on A's
 *   evictable anon lists (memory.stat inactive_anon + active_anon); B
 *   unchanged;
 * - B's area munlocked: B's unevictable 0 too, its pages on B's evictable
 *   lists (shmem is swap-backed: anon lists); every counter at its baseline.
 * memory.stat is folded from per-CPU counters lazily; each check reads the
 * group's cpu.stat first, which folds them (lib/cgroup.h nt_cgroup_flush()).
 *
 * Usage: memcg_locked [-s SIZE]  (each area; default 1M)
 * Needs root and the memory controller in cgroup v2 at /sys/fs/cgroup.
 */
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cgroup.h"
#include "harness.h"
#include "locked.h"
#include "placement.h"
#include "tap.h"

#define DEFAULT_SIZE	(1UL << 20)
#define BATCH_STEP	7	/* pages per memcg between switches: under any batch size */
#define NGROUPS		2
#define MEMCG_CHECKS	4	/* per memcg per step: unevictable, numa_stat, lists, charge */
#define CHECKS		(NGROUPS * 2 + 1 + 3 * NGROUPS * MEMCG_CHECKS + 2 + 1)

struct group {
	const char *name;	/* a scratch group (lib/cgroup.h) */
	char letter;		/* A, B: what subtest names call it */
	enum nt_kind kind;
	const char *charge;	/* memory.stat key its area is charged as */
	struct nt_lk lk;
	struct nt_region r;
	struct nt_vma vma;
	long per_node[NT_MAX_NODES];	/* its area's pages on each node */
	bool locked;
};

static struct {
	struct group g[NGROUPS];
} m;

static long stat_of(const struct group *g, const char *key)
{
	long v = -1;

	if (nt_cgroup_stat(g->name, "memory.stat", key, &v))
		nt_tap_bail("%s: reading %s from memory.stat", g->name, key);
	return v;
}

/* Where the area's pages are, per node (they must all be resident). */
static void count_nodes(struct group *g)
{
	const struct nt_area *a = &g->r.a;
	int *status = calloc(a->npages, sizeof(*status)), err;
	size_t i;

	if (!status)
		nt_tap_bail("no memory");
	err = nt_pages_nodes(a->addr, a->npages, a->page_size, status);
	if (err)
		nt_tap_bail("%s: move_pages: %s", g->name, strerror(-err));
	memset(g->per_node, 0, sizeof(g->per_node));
	for (i = 0; i < a->npages; i++) {
		if (status[i] < 0 || status[i] >= NT_MAX_NODES)
			nt_tap_bail("%s: page %zu not resident (%d)", g->name, i, status[i]);
		g->per_node[status[i]]++;
	}
	free(status);
}

/* The memcg's checks for one step: see the top comment. */
static void check_group(const struct nt_topology *t, struct group *g, const char *step)
{
	long page = g->r.a.page_size, bytes = g->r.a.len, unev, charge, lists;
	long numa[NT_MAX_NODES], want;
	bool ok = true;
	int node, err;

	err = nt_cgroup_flush(g->name);
	if (err)
		nt_tap_bail("%s: folding its statistics (cpu.stat): %s", g->name, strerror(-err));
	unev = stat_of(g, "unevictable");
	want = g->locked ? bytes : 0;
	if (unev != want)
		nt_tap_diag("%s: memory.stat unevictable %ld, expected %ld", g->name, unev, want);
	nt_tap_result(unev == want, "%s: %s: memcg %c: memory.stat unevictable %ld bytes",
		      g->lk.label, step, g->letter, want);

	err = nt_cgroup_numa_stat(g->name, "unevictable", numa);
	if (err)
		nt_tap_bail("%s: reading memory.numa_stat: %s", g->name, strerror(-err));
	nt_mask_for_each(node, &t->online) {
		want = g->locked ? g->per_node[node] * page : 0;
		if (numa[node] == want)
			continue;
		nt_tap_diag("%s: memory.numa_stat unevictable N%d=%ld, expected %ld", g->name, node,
			    numa[node], want);
		ok = false;
	}
	nt_tap_result(ok, "%s: %s: memcg %c: memory.numa_stat unevictable of every node is %s",
		      g->lk.label, step, g->letter,
		      g->locked ? "its locked pages there" : "0");

	/* The area's pages are on the memcg's evictable anon lists unless locked. */
	lists = stat_of(g, "inactive_anon") + stat_of(g, "active_anon");
	want = g->locked ? 0 : bytes;
	if (lists != want)
		nt_tap_diag("%s: inactive_anon + active_anon %ld, expected %ld", g->name, lists,
			    want);
	nt_tap_result(lists == want, "%s: %s: memcg %c: inactive_anon + active_anon %ld bytes",
		      g->lk.label, step, g->letter, want);

	charge = stat_of(g, g->charge);
	if (charge != bytes)
		nt_tap_diag("%s: memory.stat %s %ld, expected %ld", g->name, g->charge, charge,
			    bytes);
	nt_tap_result(charge == bytes, "%s: %s: memcg %c: memory.stat %s %ld bytes (charged once)",
		      g->lk.label, step, g->letter, g->charge, bytes);
}

static void check_all(const struct nt_topology *t, const char *step)
{
	int i;

	for (i = 0; i < NGROUPS; i++)
		check_group(t, &m.g[i], step);
}

/* Per-node Mlocked and Unevictable of the machine: the locked areas, summed. */
static void check_nodes(struct nt_lk *lk, const char *step)
{
	long pages[NT_MAX_NODES] = { 0 };
	char label[sizeof(lk->label)];
	int i, node;

	for (i = 0; i < NGROUPS; i++)
		for (node = 0; node < NT_MAX_NODES; node++)
			pages[node] += m.g[i].locked ? m.g[i].per_node[node] : 0;
	memcpy(label, lk->label, sizeof(label));
	snprintf(lk->label, sizeof(lk->label), "both memcgs: %s", step);
	nt_lk_snapshot(lk, true);
	nt_lk_check_nodes(lk, false, pages);
	nt_lk_check_nodes(lk, true, pages);
	memcpy(lk->label, label, sizeof(label));
}

/* Touches the areas BATCH_STEP pages at a time, switching memcg in between. */
static void touch_alternately(void)
{
	size_t done[NGROUPS] = { 0 }, i, n;
	bool more = true;
	int k;

	while (more) {
		more = false;
		for (k = 0; k < NGROUPS; k++) {
			struct nt_area *a = &m.g[k].r.a;

			nt_scratch_enter(m.g[k].name);
			for (n = 0; n < BATCH_STEP && done[k] < a->npages; n++, done[k]++)
				a->addr[done[k] * a->page_size] = 1;
			more |= done[k] < a->npages;
		}
	}
	nt_scratch_enter(NULL);
	for (k = 0; k < NGROUPS; k++)
		for (i = 0; i < m.g[k].r.a.npages; i++)
			if (!m.g[k].r.a.addr[i * m.g[k].r.a.page_size])
				nt_tap_bail("a touched page reads back 0");
}

static void run(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = t->allowed };
	struct nt_lk all = { .t = t };
	struct nt_region none = { .a.page_size = sysconf(_SC_PAGESIZE) };
	struct nt_lk_events ev = { 0 };
	int k, err;

	(void)arg;
	all.r = &none;
	nt_lk_baseline(&all);
	for (k = 0; k < NGROUPS; k++) {
		struct group *g = &m.g[k];

		snprintf(g->lk.label, sizeof(g->lk.label), "%s in memcg %c", nt_kind_names[g->kind],
			 g->letter);
		g->lk.t = t;
		g->lk.r = &g->r;
		nt_lk_map(&g->lk, g->kind, len, &pol, false, local_node, &g->vma);
		if (mlock2(g->r.a.addr, g->r.a.len, MLOCK_ONFAULT))
			nt_tap_bail("%s: mlock2: %s", g->name, strerror(errno));
		g->locked = true;
	}
	touch_alternately();
	if (nt_drain_all())
		nt_tap_bail("draining every CPU's batches");
	for (k = 0; k < NGROUPS; k++) {
		nt_lk_snapshot(&m.g[k].lk, false);
		nt_lk_check_placement(&m.g[k].lk, &pol, &m.g[k].vma, "their interleave node");
		nt_lk_check_flags(&m.g[k].lk, true, true);
		count_nodes(&m.g[k]);
		ev.mlocked += m.g[k].r.a.npages;
	}
	ev.culled = ev.mlocked;
	snprintf(all.label, sizeof(all.label), "both memcgs: locked");
	nt_lk_snapshot(&all, true);
	nt_lk_check_events(&all, &ev);
	check_all(t, "locked");

	for (k = 0; k < NGROUPS; k++) {
		err = nt_area_unlock(&m.g[k].r.a);
		if (err)
			nt_tap_bail("%s: munlock: %s", m.g[k].name, strerror(-err));
		m.g[k].locked = false;
		check_all(t, k ? "both munlocked" : "the first munlocked");
	}
	check_nodes(&all, "both munlocked");
	ev.munlocked = ev.rescued = ev.mlocked;
	snprintf(all.label, sizeof(all.label), "both memcgs: munlocked");
	nt_lk_snapshot(&all, false);
	nt_lk_check_events(&all, &ev);
	for (k = 0; k < NGROUPS; k++)
		nt_region_unmap(&m.g[k].r);
}

int main(int argc, char **argv)
{
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	int k;

	nt_scratch_start(true);
	m.g[0].kind = NT_PRIVATE_ANON;
	m.g[0].charge = "anon";
	m.g[1].kind = NT_MEMFD;
	m.g[1].charge = "shmem";
	for (k = 0; k < NGROUPS; k++) {
		m.g[k].letter = 'A' + k;
		m.g[k].name = nt_scratch_create("nt-memcg-%c-%d", 'a' + k, getpid());
	}
	nt_tap_plan(CHECKS);
	nt_lk_in_child(&t, len, CHECKS, "two memcgs", run, NULL);
	nt_scratch_end();
	return nt_tap_finish();
}
