// SPDX-License-Identifier: GPL-2.0
/*
 * A process holding a large locked area exits: every counter the area moved
 * must come back to its baseline. The LSFMM 2013 report told of a storage
 * array whose crash recovery was slow to unwind "a lot of huge pages and
 * pages locked into memory"; timedmunlock --op exit measures how long such
 * an exit takes (docs/lsfmm-2013.md), this test checks that it leaves
 * nothing behind.
 *
 * Four cases: the area bound to one node or interleaved over every usable
 * memory node, with transparent huge pages off (base pages) or "always"
 * (the area 2 MiB aligned, so every 2 MiB range is one huge page). A child
 * sets the task policy and maps the area MAP_LOCKED | MAP_POPULATE, the
 * parent checks the counters while it is held, then the child exits and the
 * parent checks, while it is held, that every page is where the policy puts
 * it (bound: the node; interleaved: by its index, lib/expect.h), that the
 * child exits 0, and, after draining every CPU's batches:
 * - per-node Mlocked and Unevictable back at the baseline;
 * - nr_mlock and nr_unevictable back at the baseline;
 * - the huge pages of the area charged to the child's own memory cgroup on
 *   their nodes while it is held (memory.numa_stat anon_thp), none left in
 *   it after the exit. Not the system-wide nr_anon_transparent_hugepages:
 *   with THP "always", page faults and khugepaged give the guest's other
 *   processes (the test runner) huge pages of their own while a case runs,
 *   and how many depends on how long it runs (CI saw +5 after an exit);
 * - the unevictable_pgs_* events: every base page mlocked once and munlocked
 *   once, culled once (onto the unevictable list) and rescued once (off it),
 *   nothing stranded or cleared (exit_mmap()
 *   munlocks each page as it unmaps it, page_remove_rmap() ->
 *   munlock_vma_page(), before the page is freed: 6.1 mm/rmap.c, mm/mlock.c).
 * Right after the exit, before the drain, the pages of the exiting CPU's
 * batch still count as mlocked (at most PAGEVEC_SIZE - 1 = 14): printed,
 * not checked, since which CPU ran the exit last is up to the scheduler.
 *
 * Usage: exit_locked_counters [-s SIZE]  (default 16M, a multiple of 2M)
 * Needs root.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "counters.h"
#include "handshake.h"
#include "harness.h"
#include "locked.h"
#include "nodes.h"
#include "pageflags.h"
#include "placement.h"
#include "snapshot.h"
#include "sysfile.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(16UL << 20)
#define HPAGE_SIZE	(2UL << 20)
#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define CHECKS		9
#define GROUP		"nt-exit-locked"

/* Counters beyond lib/counters.h that a THP-backed locked area moves. */
struct extra {
	long nr_unevictable, nr_thp;
};

struct child_res {
	int ready, err;
	long found[NT_MAX_NODES];	/* base pages per node */
	long thp_pages;			/* base pages in huge pages */
	long heads_on[NT_MAX_NODES];	/* huge page heads per node */
	long misplaced;			/* base pages not where the policy puts them */
};

struct ecase {
	char label[96];
	struct nt_policy pol;
	bool thp;
	int cpu_node;
	int local_node;		/* the node of the CPU it runs on, when that has memory */
};

static struct {
	struct nt_topology t;
	size_t len, page;
	struct child_res *res;
	char thp_saved[32];
	bool have_thp;
	bool memcg;		/* the child runs in memcg GROUP, a scratch group */
} g;

/* Where there is a memory controller, a group of its own for the child. */
static void memcg_setup(void)
{
	g.memcg = nt_scratch_start(false);
	if (g.memcg)
		nt_scratch_create(GROUP);
}

/* The group's anon_thp per node, in huge pages. */
static void memcg_thp_read(long per_node[NT_MAX_NODES])
{
	int node, err = nt_cgroup_flush(GROUP);

	if (!err)
		err = nt_cgroup_numa_stat(GROUP, "anon_thp", per_node);
	/* Without CONFIG_TRANSPARENT_HUGEPAGE there is no anon_thp line. */
	if (err == -ENOENT && !g.have_thp)
		err = 0;
	if (err)
		nt_tap_bail("reading anon_thp of %s/memory.numa_stat: %s", GROUP, strerror(-err));
	for (node = 0; node < NT_MAX_NODES; node++)
		per_node[node] /= HPAGE_SIZE;
}

static void thp_restore(void)
{
	if (g.thp_saved[0] && nt_file_write(THP_ENABLED, g.thp_saved))
		fprintf(stderr, "exit_locked_counters: cannot restore %s to %s\n", THP_ENABLED,
			g.thp_saved);
	g.thp_saved[0] = '\0';
}

static void extra_read(struct extra *e)
{
	memset(e, 0, sizeof(*e));
	if (nt_vmstat_read("nr_unevictable", &e->nr_unevictable) ||
	    nt_vmstat_read("nr_anon_transparent_hugepages", &e->nr_thp))
		nt_tap_bail("reading nr_unevictable and nr_anon_transparent_hugepages");
}

/* Counters after draining every CPU's batches (or not), then the extra ones. */
static void snapshot(struct nt_counters *c, struct extra *e, bool drain)
{
	nt_snapshot(c, &g.t.online, drain);
	extra_read(e);
}

static void child(const struct ecase *c, int go)
{
	struct child_res *r = g.res;
	unsigned int shift = __builtin_ctzl(c->thp ? HPAGE_SIZE : g.page);
	struct nt_region reg;
	struct nt_vma vma;
	uint64_t *flags;
	int *status, err;
	cpu_set_t saved;
	size_t i;
	char byte;

#define FAIL(what, e) do { r->err = (e); fprintf(stderr, "exit_locked_counters: %s: %s\n", \
			   what, strerror(-r->err)); _exit(1); } while (0)
	/* Into the group before pinning: moving resets the CPU affinity (lib/cgroup.h). */
	err = g.memcg ? nt_cgroup_enter(GROUP) : 0;
	if (err)
		FAIL("moving into memory cgroup " GROUP, err);
	if (nt_pin_cpu(c->cpu_node, &saved) < 0)
		FAIL("pinning to a CPU", -EIO);
	if (!c->thp && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		FAIL("PR_SET_THP_DISABLE", -errno);
	err = nt_set_task_policy(&c->pol);
	if (!err)
		err = nt_region_map(&reg, NT_PRIVATE_ANON, g.len, c->thp ? HPAGE_SIZE : g.page,
				    MAP_LOCKED | MAP_POPULATE);
	if (err)
		FAIL("mapping the locked area", err);
	status = malloc(reg.a.npages * sizeof(*status));
	flags = malloc(reg.a.npages * sizeof(*flags));
	if (!status || !flags)
		FAIL("malloc", -ENOMEM);
	err = nt_pages_nodes(reg.a.addr, reg.a.npages, g.page, status);
	if (!err)
		err = nt_pages_flags(reg.a.addr, reg.a.npages, g.page, flags);
	if (!err)
		err = nt_region_vma(&reg, c->local_node, &vma);
	if (err)
		FAIL("reading where the pages are", err);
	for (i = 0; i < reg.a.npages; i++) {
		unsigned long addr = (unsigned long)reg.a.addr + i * g.page;

		if (status[i] < 0 || !nt_expect_ok(&c->pol, &vma, addr, shift, status[i]))
			r->misplaced++;
	}
	for (i = 0; i < reg.a.npages; i++) {
		if (status[i] < 0 || status[i] >= NT_MAX_NODES)
			FAIL("a page of the area is not resident", -ENOENT);
		r->found[status[i]]++;
		r->thp_pages += !!(flags[i] & NT_KPF(NT_KPF_THP));
		if ((flags[i] & (NT_KPF(NT_KPF_THP) | NT_KPF(NT_KPF_COMPOUND_HEAD))) ==
		    (NT_KPF(NT_KPF_THP) | NT_KPF(NT_KPF_COMPOUND_HEAD)))
			r->heads_on[status[i]]++;
	}
#undef FAIL
	nt_flag_set(&r->ready, 1);
	/* Exit as soon as the parent says so, with the area still locked. */
	if (read(go, &byte, 1) != 1)
		_exit(3);
	_exit(0);
}

static bool nodes_back(const long *now, const long *base, const long *pages, const char *name)
{
	return nt_nodes_moved(&g.t.online, now, base, pages, g.page / 1024, name);
}

/*
 * The child's memcg held, per node, the huge pages the child found there
 * (thp_held) and, with the child gone, holds none.
 */
static bool thp_gone(const long *thp_held)
{
	long now[NT_MAX_NODES];
	bool ok = true;
	int node;

	memcg_thp_read(now);
	for (node = 0; node < NT_MAX_NODES; node++) {
		if (thp_held[node] == g.res->heads_on[node] && !now[node])
			continue;
		nt_tap_diag("node %d: %ld huge pages of the area, %ld in its memcg while held, %ld after the exit",
			    node, g.res->heads_on[node], thp_held[node], now[node]);
		ok = false;
	}
	return ok;
}

/*
 * Waits for the child to be ready; false when it died first. No bound of
 * its own: populating the area took 20 s on 4node and over 120 s on 2node
 * with the host's load at 12; the watchdog (lib/harness.h) catches a hang.
 */
static bool wait_ready(pid_t pid)
{
	int status;

	for (;;) {
		if (nt_flag_get(&g.res->ready))
			return true;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			nt_tap_diag("the child ended with status %#x", status);
			return false;
		}
		usleep(10000);
	}
}

static void run_case(const struct ecase *c)
{
	struct nt_counters base, held, gone, settled, d;
	struct extra xbase, xheld, xgone, xsettled;
	long thp_held[NT_MAX_NODES];
	long npages = g.len / g.page, per_huge = HPAGE_SIZE / g.page, queued, heads = 0;
	int pipefd[2], status, node;
	struct timespec t0, t1;
	char where[160] = "";
	size_t used = 0;
	pid_t pid;
	bool ok;

	memset(g.res, 0, sizeof(*g.res));
	snapshot(&base, &xbase, true);
	if (pipe(pipefd))
		nt_tap_bail("pipe: %s", strerror(errno));
	pid = nt_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid) {
		close(pipefd[1]);
		child(c, pipefd[0]);
	}
	close(pipefd[0]);
	if (!wait_ready(pid))
		nt_tap_bail("%s: the child did not lock its area", c->label);
	for (node = 0; node < NT_MAX_NODES; node++)
		if (g.res->found[node] && used < sizeof(where))
			used += snprintf(where + used, sizeof(where) - used, " node%d:%ld", node,
					 g.res->found[node]);
	for (node = 0; node < NT_MAX_NODES; node++)
		heads += g.res->heads_on[node];
	nt_tap_diag("%s: %ld pages on%s; %ld huge pages", c->label, npages, where, heads);

	snapshot(&held, &xheld, true);
	if (g.memcg)
		memcg_thp_read(thp_held);
	ok = nodes_back(held.mlocked_kb, base.mlocked_kb, g.res->found, "Mlocked");
	ok = nodes_back(held.unevictable_kb, base.unevictable_kb, g.res->found, "Unevictable") && ok;
	nt_tap_result(ok, "%s: while it is held, per-node Mlocked and Unevictable are up by the %ld pages on each node",
		      c->label, npages);
	if (g.res->misplaced)
		nt_tap_diag("%s: %ld pages not where the policy puts them", c->label,
			    g.res->misplaced);
	nt_tap_result(!g.res->misplaced, "%s: every page of the area where the policy puts it",
		      c->label);
	if (c->thp)
		nt_tap_result(heads * per_huge == npages && g.res->thp_pages == npages,
			      "%s: every 2 MiB of the area is one huge page (%ld of %ld)", c->label,
			      heads, npages / per_huge);
	else
		nt_tap_result(!g.res->thp_pages, "%s: no page of the area is a huge page", c->label);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (write(pipefd[1], "x", 1) != 1)
		nt_tap_bail("writing the exit request: %s", strerror(errno));
	if (waitpid(pid, &status, 0) != pid)
		nt_tap_bail("waitpid: %s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(pipefd[1]);
	nt_tap_result(WIFEXITED(status) && !WEXITSTATUS(status),
		      "%s: the process holding the area exited normally (status %#x)", c->label,
		      status);
	/* Before any drain: what the exiting CPU's batch still holds. */
	snapshot(&gone, &xgone, false);
	queued = 0;
	nt_mask_for_each(node, &g.t.online)
		queued += gone.mlocked_kb[node] - base.mlocked_kb[node];
	nt_tap_diag("%s: exit took %.3f s (wall, not checked); right after it %ld kB still counted as Mlocked",
		    c->label, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, queued);

	snapshot(&settled, &xsettled, true);
	nt_tap_result(nodes_back(settled.mlocked_kb, base.mlocked_kb, NULL, "Mlocked"),
		      "%s: after the exit, Mlocked of every node is back at its baseline", c->label);
	nt_tap_result(nodes_back(settled.unevictable_kb, base.unevictable_kb, NULL, "Unevictable"),
		      "%s: after the exit, Unevictable of every node is back at its baseline", c->label);
	ok = settled.vmstat[NT_NR_MLOCK] == base.vmstat[NT_NR_MLOCK] &&
	     xsettled.nr_unevictable == xbase.nr_unevictable;
	if (!ok)
		nt_tap_diag("nr_mlock %+ld, nr_unevictable %+ld",
			    settled.vmstat[NT_NR_MLOCK] - base.vmstat[NT_NR_MLOCK],
			    xsettled.nr_unevictable - xbase.nr_unevictable);
	nt_tap_result(ok, "%s: after the exit, nr_mlock and nr_unevictable are back at their baseline",
		      c->label);
	nt_tap_diag("%s: nr_anon_transparent_hugepages of the whole guest %+ld while held, %+ld after the exit (not checked: other processes' too)",
		    c->label, xheld.nr_thp - xbase.nr_thp, xsettled.nr_thp - xbase.nr_thp);
	if (g.memcg)
		nt_tap_result(thp_gone(thp_held), "%s: after the exit, no huge page is left in the child's memcg, which held the area's on their nodes",
			      c->label);
	else
		nt_tap_skip("no memory controller (cgroup v2 with CONFIG_MEMCG): the area's huge pages cannot be told from other processes'",
			    "%s: after the exit, no huge page is left in the child's memcg, which held the area's on their nodes",
			    c->label);
	ok = nt_events_agree(&settled, &base, c->label);
	nt_counters_delta(&settled, &base, &d);
	nt_tap_result(ok && d.vmstat[NT_PGS_MLOCKED] == npages &&
		      d.vmstat[NT_PGS_MUNLOCKED] == npages &&
		      d.vmstat[NT_PGS_CULLED] == npages && d.vmstat[NT_PGS_RESCUED] == npages &&
		      !d.vmstat[NT_PGS_STRANDED] && !d.vmstat[NT_PGS_CLEARED],
		      "%s: unevictable_pgs_mlocked, _munlocked, _culled and _rescued +%ld each, none stranded or cleared",
		      c->label, npages);
}

/* A machine that should have room and has not: every check of the case fails. */
static void fail_case(const struct ecase *c, const char *reason)
{
	int i;

	for (i = 1; i <= CHECKS; i++)
		nt_tap_result(false, "%s: check %d of %d not made: %s", c->label, i, CHECKS, reason);
}

static void skip_case(const struct ecase *c, const char *reason)
{
	int i;

	for (i = 1; i <= CHECKS; i++)
		nt_tap_skip(reason, "%s: check %d of %d", c->label, i, CHECKS);
}

int main(int argc, char **argv)
{
	struct ecase cases[4] = { 0 };
	char nodes[64], mode[32];
	long long free_b;
	int i, node, bind_node, err;
	bool have_thp;

	g.len = nt_area_size_arg(argc, argv, DEFAULT_SIZE);
	g.page = sysconf(_SC_PAGESIZE);
	nt_test_start();
	if (g.len % HPAGE_SIZE)
		nt_tap_bail("the size %zu is not a multiple of 2 MiB", g.len);
	if (geteuid())
		nt_tap_skip_all("needs root: writes /proc/sys/vm/stat_refresh, reads /proc/kpageflags");
	if (numa_available() < 0)
		nt_tap_skip_all("libnuma says NUMA is not available (numa_available() < 0)");
	err = nt_topology_read(&g.t);
	if (err)
		nt_tap_bail("reading the node topology: %s", strerror(-err));
	if (nt_mask_empty(&g.t.allowed))
		nt_tap_skip_all("no memory node this task may use");
	g.res = mmap(NULL, sizeof(*g.res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (g.res == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	bind_node = nt_mask_nth(&g.t.allowed, 0);
	for (i = 0; i < 4; i++) {
		struct ecase *c = &cases[i];

		c->thp = i >= 2;
		if (i % 2 == 0) {
			nt_policy_one(&c->pol, MPOL_BIND, bind_node);
			c->cpu_node = bind_node;
			c->local_node = NT_NODE_ANY;
			snprintf(c->label, sizeof(c->label), "bound to node %d, THP %s", bind_node,
				 c->thp ? "always" : "off");
		} else {
			c->pol.mode = MPOL_INTERLEAVE;
			c->pol.nodes = g.t.allowed;
			c->cpu_node = -1;
			c->local_node = NT_NODE_ANY;
			snprintf(c->label, sizeof(c->label), "interleaved over nodes %s, THP %s",
				 nt_mask_format(&g.t.allowed, nodes, sizeof(nodes)),
				 c->thp ? "always" : "off");
		}
	}
	nt_tap_plan(4 * CHECKS);
	have_thp = !nt_file_read_choice(THP_ENABLED, mode, sizeof(mode));
	g.have_thp = have_thp;
	memcg_setup();
	nt_tap_diag("area %zu MiB; THP setting %s", g.len >> 20, have_thp ? mode : "absent");
	nt_cleanup_push(thp_restore);
	for (i = 0; i < 4; i++) {
		const struct ecase *c = &cases[i];
		bool fits = true;

		nt_mask_for_each(node, &c->pol.nodes)
			if (nt_node_free(node, &free_b) ||
			    free_b < (long long)(g.len / nt_mask_weight(&c->pol.nodes)) + (32LL << 20))
				fits = false;
		if (!fits) {
			fail_case(c, "a node of the policy has too little free memory for the area");
			continue;
		}
		if (c->thp && !have_thp) {
			skip_case(c, "no transparent huge pages in this kernel (" THP_ENABLED " missing)");
			continue;
		}
		if (c->thp && strcmp(mode, "always")) {
			snprintf(g.thp_saved, sizeof(g.thp_saved), "%s", mode);
			if (nt_file_write(THP_ENABLED, "always"))
				nt_tap_bail("setting %s to always", THP_ENABLED);
		}
		run_case(c);
		thp_restore();
	}
	return nt_tap_finish();
}
