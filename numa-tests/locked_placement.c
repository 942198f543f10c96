// SPDX-License-Identifier: GPL-2.0
/*
 * Locked memory lands where the NUMA policy says, and the mlock accounting
 * moves by exactly the area: VmLck, per-node Mlocked, unevictable_pgs_*.
 *
 * For each online node: task policy MPOL_BIND to that node, then mmap() with
 * MAP_LOCKED | MAP_POPULATE. Both act inside mmap() itself, so the policy must
 * be the task policy already; it is reset right after. Then one area over all
 * memory nodes: mbind(MPOL_INTERLEAVE) on the VMA, populated by mlock(). Each
 * area is checked after locking, after munlock() and after munmap().
 *
 * Usage: locked_placement [-s SIZE]  (or NUMA_TESTS_AREA_SIZE=SIZE; default 8M)
 * Needs root: stat_refresh is root-only, and the counters are only exact
 * after it. System-wide counters are exact only when nothing else on the
 * machine mlocks or munlocks meanwhile (true in the test guests).
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "area.h"
#include "counters.h"
#include "harness.h"
#include "expect.h"
#include "nodes.h"
#include "placement.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(8UL << 20)
/* Free memory a node needs beyond its share of the area, for the kernel's watermarks. */
#define FREE_MARGIN	(32LL << 20)
#define SEED		0x6e756d61UL

enum check {
	PLACED,
	DATA,
	VMLCK,
	NODE_MLOCKED,
	PGS_MLOCKED,
	PGS_MUNLOCKED,
	UNLOCK_BASELINE,
	DATA_KEPT,
	UNMAP_BASELINE,
	NR_CHECKS
};

/* Names of skipped checks; checks that run say the figures they expect. */
static const char *const check_titles[NR_CHECKS] = {
	[PLACED] = "every page on its expected node",
	[DATA] = "fresh pages read as zeros",
	[VMLCK] = "VmLck grew by the area",
	[NODE_MLOCKED] = "per-node Mlocked grew by the pages expected on each node only",
	[PGS_MLOCKED] = "unevictable_pgs_mlocked grew by the area's pages",
	[PGS_MUNLOCKED] = "munlock: unevictable_pgs_munlocked grew by the area's pages",
	[UNLOCK_BASELINE] = "munlock: Mlocked of every node and VmLck back to baseline",
	[DATA_KEPT] = "munlock: the data written while locked reads back",
	[UNMAP_BASELINE] = "munmap: Mlocked of every node and VmLck at baseline",
};

struct lp_case {
	char label[192];	/* "bind node1", "interleave nodes 0-3" */
	char where[64];		/* where every page must be, for test names */
	struct nt_policy pol;
	bool task_policy;	/* set_mempolicy + MAP_LOCKED|MAP_POPULATE, else mbind + mlock */
	int cpu_node;		/* run on a CPU of this node if it has one, -1 anywhere */
};

/* One case under way. */
struct lp_run {
	const struct lp_case *c;
	const struct nt_topology *t;
	struct nt_area area;
	struct nt_vma vma;
	long expect[NT_MAX_NODES];	/* pages expected on each node */
	struct nt_counters base, locked, now;
};

static void skip_case(const struct lp_case *c, const char *reason)
{
	int i;

	for (i = 0; i < NR_CHECKS; i++)
		nt_tap_skip(reason, "%s: %s", c->label, check_titles[i]);
}

static void snapshot(const struct lp_run *r, struct nt_counters *c)
{
	if (nt_counters_read(c, &r->t->online))
		nt_tap_bail("%s: cannot read the mlock counters", r->c->label);
}

static void create_area(struct lp_run *r, size_t len)
{
	const struct lp_case *c = r->c;
	int err, reset;

	if (c->task_policy) {
		err = nt_set_task_policy(&c->pol);
		if (!err)
			err = nt_area_map(&r->area, len, MAP_LOCKED | MAP_POPULATE);
		reset = nt_set_task_policy(NULL);
		err = err ? err : reset;
	} else {
		err = nt_area_map(&r->area, len, 0);
		if (!err)
			err = nt_area_mbind(&r->area, &c->pol);
		if (!err)
			err = nt_area_lock(&r->area);
	}
	if (err)
		nt_tap_bail("%s: creating the locked area: %s", c->label, strerror(-err));
	err = nt_area_vma(&r->area, &r->vma);
	if (err)
		nt_tap_bail("%s: finding the area's VMA: %s", c->label, strerror(-err));
	nt_tap_diag("%s: area %p, in a VMA from %#lx with vm_pgoff %#lx", c->label, r->area.addr,
		    r->vma.start, r->vma.pgoff);
	if (nt_expect_counts(&c->pol, &r->vma, (unsigned long)r->area.addr, r->area.npages,
			     r->expect))
		nt_tap_bail("%s: the policy gives no single node per page", c->label);
}

static long page_kb(const struct lp_run *r)
{
	return r->area.page_size / 1024;
}

/* Nodes to look at: the online ones, and any other the expectation names. */
static bool node_counted(const struct lp_run *r, const long *expect, int node)
{
	return nt_mask_isset(&r->t->online, node) || (expect && expect[node]);
}

/* Every node's Mlocked moved by expect[] pages (NULL: did not move). */
static bool mlocked_moved(const struct lp_run *r, const struct nt_counters *delta,
			  const long *expect)
{
	bool ok = true;
	long want;
	int node;

	for (node = 0; node < NT_MAX_NODES; node++) {
		if (!node_counted(r, expect, node))
			continue;
		want = expect ? expect[node] * page_kb(r) : 0;
		if (delta->mlocked_kb[node] == want)
			continue;
		nt_tap_diag("node %d: Mlocked %+ld kB, expected %+ld kB", node,
			    delta->mlocked_kb[node], want);
		ok = false;
	}
	return ok;
}

static bool vmlck_moved(const struct nt_counters *delta, long want_kb)
{
	if (delta->vmlck_kb == want_kb)
		return true;
	nt_tap_diag("VmLck %+ld kB, expected %+ld kB", delta->vmlck_kb, want_kb);
	return false;
}

static bool event_moved(const struct nt_counters *delta, enum nt_vmstat_item item, long want)
{
	if (delta->vmstat[item] == want)
		return true;
	nt_tap_diag("%s %+ld, expected %+ld (other processes mlocking at the same time move it too)",
		    nt_vmstat_names[item], delta->vmstat[item], want);
	return false;
}

static void check_placement(const struct lp_run *r)
{
	long found[NT_MAX_NODES];
	long bad;

	bad = nt_check_placement(&r->area, &r->c->pol, &r->vma, found);
	if (bad < 0)
		nt_tap_diag("move_pages: %s", strerror(-bad));
	nt_tap_result(bad == 0, "%s: all %zu pages on %s (move_pages)", r->c->label,
		      r->area.npages, r->c->where);
}

/*
 * Pages an anonymous mapping populates are zero-filled (mmap(2)); then a
 * pattern is written, for check_data_kept() after munlock.
 */
static void check_zeros(const struct lp_run *r)
{
	size_t bad = nt_area_verify_zero(&r->area);

	if (bad)
		nt_tap_diag("%zu pages do not read as zeros", bad);
	nt_tap_result(!bad, "%s: all %zu fresh pages read as zeros", r->c->label,
		      r->area.npages);
	nt_area_fill(&r->area, SEED);
}

/* munlock() moved every page between LRU lists: the data must have stayed. */
static void check_data_kept(const struct lp_run *r)
{
	size_t bad = nt_area_verify(&r->area, SEED);

	if (bad)
		nt_tap_diag("%zu pages read back wrong", bad);
	nt_tap_result(!bad, "%s: munlock: the pattern written in all %zu pages while locked reads back",
		      r->c->label, r->area.npages);
}

/* "+2048 pages on node 1 only", or "+683 pages on node 0, +683 pages on node 1, ... only". */
static void describe_expect(const struct lp_run *r, char *buf, size_t len)
{
	size_t used = 0;
	int node;

	buf[0] = '\0';
	for (node = 0; node < NT_MAX_NODES; node++) {
		if (!r->expect[node] || used >= len)
			continue;
		used += snprintf(buf + used, len - used, "%s+%ld pages on node %d",
				 used ? ", " : "", r->expect[node], node);
	}
	if (used < len)
		snprintf(buf + used, len - used, " only");
}

static void check_locked(struct lp_run *r)
{
	const char *label = r->c->label;
	struct nt_counters d;
	char expect[512];

	snapshot(r, &r->locked);
	nt_counters_delta(&r->locked, &r->base, &d);
	check_placement(r);
	check_zeros(r);
	nt_tap_result(vmlck_moved(&d, r->area.len / 1024), "%s: VmLck +%zu kB", label,
		      r->area.len / 1024);
	describe_expect(r, expect, sizeof(expect));
	nt_tap_result(mlocked_moved(r, &d, r->expect), "%s: per-node Mlocked %s", label, expect);
	nt_tap_result(event_moved(&d, NT_PGS_MLOCKED, r->area.npages),
		      "%s: unevictable_pgs_mlocked +%zu", label, r->area.npages);
	/*
	 * Information only: nr_mlock is the sum of the per-node Mlocked checked
	 * above; culled (and Unevictable) move when the per-CPU mlock batch is
	 * drained onto the unevictable LRU, which mmap() does not wait for.
	 */
	nt_tap_diag("%s: nr_mlock %+ld, unevictable_pgs_culled %+ld", label,
		    d.vmstat[NT_NR_MLOCK], d.vmstat[NT_PGS_CULLED]);
}

static void check_baseline(const struct lp_run *r, const char *after)
{
	struct nt_counters d;
	bool ok;

	nt_counters_delta(&r->now, &r->base, &d);
	ok = mlocked_moved(r, &d, NULL);
	ok = vmlck_moved(&d, 0) && ok;
	nt_tap_result(ok, "%s: %s: Mlocked of every node and VmLck back to baseline",
		      r->c->label, after);
}

static void check_munlocked(struct lp_run *r)
{
	struct nt_counters d;
	int err;

	err = nt_area_unlock(&r->area);
	if (err)
		nt_tap_bail("%s: munlock: %s", r->c->label, strerror(-err));
	snapshot(r, &r->now);
	nt_counters_delta(&r->now, &r->locked, &d);
	nt_tap_result(event_moved(&d, NT_PGS_MUNLOCKED, r->area.npages),
		      "%s: munlock: unevictable_pgs_munlocked +%zu", r->c->label, r->area.npages);
	nt_tap_diag("%s: munlock: unevictable_pgs_stranded %+ld, unevictable_pgs_rescued %+ld",
		    r->c->label, d.vmstat[NT_PGS_STRANDED], d.vmstat[NT_PGS_RESCUED]);
	check_baseline(r, "munlock");
	check_data_kept(r);
}

static void check_unmapped(struct lp_run *r)
{
	int err;

	err = nt_area_unmap(&r->area);
	if (err)
		nt_tap_bail("%s: munmap: %s", r->c->label, strerror(-err));
	snapshot(r, &r->now);
	check_baseline(r, "munmap");
}

/*
 * munlock() queues pages on a per-CPU batch and drains only the local CPU's
 * batch before returning: a task that migrated meanwhile leaves pages on
 * another CPU, counted there later. One CPU for the whole case keeps the
 * counters exact when the call returns.
 */
static void run_case(const struct lp_case *c, const struct nt_topology *t, size_t len)
{
	struct lp_run r = { .c = c, .t = t };
	cpu_set_t saved;
	int cpu, err;

	cpu = nt_pin_cpu(c->cpu_node, &saved);
	if (cpu < 0)
		nt_tap_bail("%s: pinning to a CPU: %s", c->label, strerror(-cpu));
	nt_tap_diag("%s: on CPU %d", c->label, cpu);
	snapshot(&r, &r.base);
	create_area(&r, len);
	check_locked(&r);
	check_munlocked(&r);
	check_unmapped(&r);
	err = nt_affinity_restore(&saved);
	if (err)
		nt_tap_bail("%s: restoring CPU affinity: %s", c->label, strerror(-err));
}

/*
 * Why the case cannot run on node: a property of the machine (no memory,
 * not in this task's cpuset) in reason, returning 1; or a node that should
 * have room and has not (a leak or an earlier test's leftovers: a failure)
 * in reason, returning -1. 0 when it can.
 */
static int node_unfit(const struct nt_topology *t, int node, size_t share, char *buf, size_t len)
{
	long long free;

	if (!nt_mask_isset(&t->memory, node)) {
		snprintf(buf, len, "node %d has no memory", node);
		return 1;
	}
	if (!nt_mask_isset(&t->allowed, node)) {
		snprintf(buf, len, "node %d is not in this task's cpuset mems", node);
		return 1;
	}
	if (nt_node_free(node, &free)) {
		snprintf(buf, len, "cannot read the free memory of node %d", node);
		return -1;
	}
	if (free < (long long)share + FREE_MARGIN) {
		snprintf(buf, len, "node %d has %lld MiB free, needs %lld MiB", node, free >> 20,
			 ((long long)share + FREE_MARGIN) >> 20);
		return -1;
	}
	return 0;
}

/* The case's checks, each failed because the machine is not in the state it should be. */
static void fail_case(const struct lp_case *c, const char *reason)
{
	int i;

	for (i = 0; i < NR_CHECKS; i++)
		nt_tap_result(false, "%s: %s: not checked, %s", c->label, check_titles[i], reason);
}

static void bind_case(const struct nt_topology *t, int node, size_t len)
{
	struct lp_case c = { .task_policy = true, .cpu_node = node };
	char reason[128];
	int unfit;

	snprintf(c.label, sizeof(c.label), "bind node%d", node);
	snprintf(c.where, sizeof(c.where), "node %d", node);
	nt_policy_one(&c.pol, MPOL_BIND, node);
	unfit = node_unfit(t, node, len, reason, sizeof(reason));
	if (unfit > 0)
		skip_case(&c, reason);
	else if (unfit < 0)
		fail_case(&c, reason);
	else
		run_case(&c, t, len);
}

static void interleave_case(const struct nt_topology *t, size_t len)
{
	struct lp_case c = { .pol.mode = MPOL_INTERLEAVE, .cpu_node = -1 };
	int node, weight = nt_mask_weight(&t->allowed);
	char nodes[128], reason[128];
	int unfit = 0;

	c.pol.nodes = t->allowed;
	nt_mask_format(&t->allowed, nodes, sizeof(nodes));
	snprintf(c.label, sizeof(c.label), "interleave nodes %s", nodes);
	snprintf(c.where, sizeof(c.where), "their interleave node");
	if (!weight) {
		skip_case(&c, "no memory node this task may use");
		return;
	}
	nt_mask_for_each(node, &t->allowed) {
		unfit = node_unfit(t, node, len / weight + 1, reason, sizeof(reason));
		if (unfit)
			break;
	}
	if (unfit > 0) {
		skip_case(&c, reason);
		return;
	}
	if (unfit < 0) {
		fail_case(&c, reason);
		return;
	}
	if (weight == 1)
		nt_tap_diag("%s: a single memory node, so interleave is trivial here", c.label);
	run_case(&c, t, len);
}

static void describe(const struct nt_topology *t, size_t len)
{
	char online[128], memory[128], allowed[128];
	enum nt_il_rule rule;
	int err;

	nt_tap_diag("area %zu KiB; nodes online %s, with memory %s, usable %s", len >> 10,
		    nt_mask_format(&t->online, online, sizeof(online)),
		    nt_mask_format(&t->memory, memory, sizeof(memory)),
		    nt_mask_format(&t->allowed, allowed, sizeof(allowed)));
	err = nt_kernel_il_rule(&rule);
	if (err)
		nt_tap_bail("reading the kernel version: %s", strerror(-err));
	nt_tap_diag("interleave rule: %s",
		    rule == NT_IL_INDEX_U32 ? "(unsigned int)index mod nodes, as kernels before 6.7 do (found by placing one page)" :
		    "index mod nodes (found by placing one page, or the two rules agree here)");
}

int main(int argc, char **argv)
{
	struct nt_topology t;
	size_t len;
	int node, err;

	len = nt_area_size_arg(argc, argv, DEFAULT_SIZE);
	nt_test_start();
	if (geteuid())
		nt_tap_skip_all("needs root: writes /proc/sys/vm/stat_refresh, locks memory");
	if (numa_available() < 0)
		nt_tap_skip_all("libnuma says NUMA is not available (numa_available() < 0)");
	err = nt_topology_read(&t);
	if (err)
		nt_tap_bail("reading the node topology: %s", strerror(-err));
	nt_tap_plan(NR_CHECKS * (nt_mask_weight(&t.online) + 1));
	describe(&t, len);
	nt_mask_for_each(node, &t.online)
		bind_case(&t, node, len);
	interleave_case(&t, len);
	return nt_tap_finish();
}
