// SPDX-License-Identifier: GPL-2.0
/*
 * Policies given on the numactl command line reach locked memory: numactl
 * installs the task policy and exec()s the command, which maps an area
 * MAP_LOCKED | MAP_POPULATE. The command is this program again (--child):
 * it checks that get_mempolicy() reports the policy numactl was asked for,
 * that every page is where that policy puts it, and the mlock accounting
 * (VmLck, per-node Mlocked, unevictable_pgs_*), then munlock()s and checks
 * that every counter is back at its baseline. Its results take the next
 * numbers of this program's TAP plan (nt_tap_resume()).
 *
 * Cases: --membind and --preferred to each memory node, --interleave=all,
 * --interleave over two nodes when there are three or more, --preferred-many
 * over all memory nodes, --localalloc. The child pins itself to one CPU of
 * the first memory node that has CPUs (any CPU when none has: --localalloc
 * then skips) before its baseline, so the mlock batch it drains is the one
 * it filled.
 *
 * Usage: numactl_locked [-s SIZE]  (or NUMA_TESTS_AREA_SIZE=SIZE; default 4M)
 * Needs root (stat_refresh) and numactl on PATH.
 */
#include <errno.h>
#include <limits.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "area.h"
#include "counters.h"
#include "expect.h"
#include "nodes.h"
#include "placement.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(4UL << 20)
#define FREE_MARGIN	(32LL << 20)
#define SEED		0x6e636c74UL
#define CHILD_CHECKS	8
#define MAX_CASES	(2 * NT_MAX_NODES + 4)
#define NO_LOCAL_NODE	\
	"no memory node has a CPU: where a CPU-less node allocates locally is not modelled"

/* One numactl invocation and the policy it must install. */
struct nc_case {
	char option[96];	/* "--membind=1" */
	struct nt_policy pol;	/* nodes empty for MPOL_LOCAL */
};

struct nc_child {
	const char *option;
	struct nt_policy pol;
	struct nt_topology t;
	struct nt_area area;
	struct nt_vma vma;
	long found[NT_MAX_NODES];
	struct nt_counters base, locked, now;
};

static const char *mode_name(int mode)
{
	switch (mode) {
	case MPOL_DEFAULT: return "default";
	case MPOL_PREFERRED: return "preferred";
	case MPOL_BIND: return "bind";
	case MPOL_INTERLEAVE: return "interleave";
	case MPOL_LOCAL: return "local";
	case MPOL_PREFERRED_MANY: return "preferred_many";
	default: return "unknown";
	}
}

static void snapshot(const struct nc_child *c, struct nt_counters *to)
{
	if (nt_counters_read(to, &c->t.online))
		nt_tap_bail("numactl %s: cannot read the mlock counters", c->option);
}

static void check_policy(const struct nc_child *c)
{
	struct nt_nodemask got = { 0 };
	char want_s[128], got_s[128];
	int mode;
	bool ok;

	if (get_mempolicy(&mode, got.bits, NT_MASK_MAXNODE, NULL, 0))
		nt_tap_bail("numactl %s: get_mempolicy: %s", c->option, strerror(errno));
	ok = mode == c->pol.mode && nt_mask_equal(&got, &c->pol.nodes);
	nt_mask_format(&c->pol.nodes, want_s, sizeof(want_s));
	nt_mask_format(&got, got_s, sizeof(got_s));
	if (!ok)
		nt_tap_diag("get_mempolicy: mode %d (%s) nodes '%s'", mode, mode_name(mode),
			    got_s);
	nt_tap_result(ok, "numactl %s: task policy is %s nodes '%s'", c->option,
		      mode_name(c->pol.mode), want_s);
}

static void map_locked(struct nc_child *c, size_t len, int cpu)
{
	int err, node = numa_node_of_cpu(cpu);

	err = nt_area_map(&c->area, len, MAP_LOCKED | MAP_POPULATE);
	if (err)
		nt_tap_bail("numactl %s: mmap(MAP_LOCKED | MAP_POPULATE): %s", c->option,
			    strerror(-err));
	err = nt_area_vma(&c->area, &c->vma);
	if (err)
		nt_tap_bail("numactl %s: finding the area's VMA: %s", c->option, strerror(-err));
	/* A CPU of a memory-less node allocates from the nearest node: not modelled. */
	nt_vma_set_local(&c->vma, node >= 0 && nt_mask_isset(&c->t.memory, node) ?
			 node : NT_NODE_ANY);
}

static void check_placement(struct nc_child *c)
{
	long bad = nt_check_placement(&c->area, &c->pol, &c->vma, c->found);
	size_t wrong;

	if (bad < 0)
		nt_tap_bail("numactl %s: move_pages: %s", c->option, strerror(-bad));
	nt_tap_result(!bad, "numactl %s: all %zu pages where %s puts them (move_pages)",
		      c->option, c->area.npages, mode_name(c->pol.mode));
	nt_area_fill(&c->area, SEED);
	wrong = nt_area_verify(&c->area, SEED);
	if (wrong)
		nt_tap_diag("%zu pages read back wrong", wrong);
	nt_tap_result(!wrong, "numactl %s: data of all %zu pages reads back", c->option,
		      c->area.npages);
}

/* Every online node's Mlocked moved by sign * the pages move_pages() found there. */
static bool mlocked_moved(const struct nc_child *c, const struct nt_counters *d, int sign)
{
	long want, kb = c->area.page_size / 1024;
	bool ok = true;
	int node;

	nt_mask_for_each(node, &c->t.online) {
		want = sign * c->found[node] * kb;
		if (d->mlocked_kb[node] == want)
			continue;
		nt_tap_diag("node %d: Mlocked %+ld kB, expected %+ld kB", node,
			    d->mlocked_kb[node], want);
		ok = false;
	}
	return ok;
}

static bool equal(const char *what, long got, long want)
{
	if (got != want)
		nt_tap_diag("%s %+ld, expected %+ld", what, got, want);
	return got == want;
}

static void check_locked(struct nc_child *c)
{
	long npages = c->area.npages;
	struct nt_counters d;

	snapshot(c, &c->locked);
	nt_counters_delta(&c->locked, &c->base, &d);
	nt_tap_result(equal("VmLck kB", d.vmlck_kb, c->area.len / 1024),
		      "numactl %s: VmLck +%zu kB", c->option, c->area.len / 1024);
	nt_tap_result(mlocked_moved(c, &d, 1),
		      "numactl %s: per-node Mlocked grew by the pages on each node", c->option);
	nt_tap_result(equal("unevictable_pgs_mlocked", d.vmstat[NT_PGS_MLOCKED], npages),
		      "numactl %s: unevictable_pgs_mlocked +%ld", c->option, npages);
}

static void check_munlocked(struct nc_child *c)
{
	long npages = c->area.npages;
	struct nt_counters d;
	bool ok;
	int err;

	err = nt_area_unlock(&c->area);
	if (err)
		nt_tap_bail("numactl %s: munlock: %s", c->option, strerror(-err));
	snapshot(c, &c->now);
	nt_counters_delta(&c->now, &c->locked, &d);
	nt_tap_result(equal("unevictable_pgs_munlocked", d.vmstat[NT_PGS_MUNLOCKED], npages),
		      "numactl %s: munlock: unevictable_pgs_munlocked +%ld", c->option, npages);
	nt_counters_delta(&c->now, &c->base, &d);
	ok = mlocked_moved(c, &d, 0);
	ok = equal("VmLck kB", d.vmlck_kb, 0) && ok;
	nt_tap_result(ok, "numactl %s: munlock: Mlocked of every node and VmLck back to baseline",
		      c->option);
}

/* numactl_locked --child OPTION MODE NODES SIZE CPU_NODE, run by numactl. */
static int child_main(char **argv)
{
	struct nc_child c = { .option = argv[0] };
	cpu_set_t saved;
	size_t size;
	int cpu, err;

	err = nt_tap_resume();
	if (err) {
		fprintf(stderr, "numactl_locked --child: no TAP state to resume: %s\n",
			strerror(-err));
		return 2;
	}
	c.pol.mode = atoi(argv[1]);
	if ((strcmp(argv[2], "none") && nt_mask_parse(argv[2], &c.pol.nodes)) ||
	    nt_parse_size(argv[3], &size))
		nt_tap_bail("numactl %s: bad arguments '%s' '%s'", c.option, argv[2], argv[3]);
	if (numa_available() < 0 || nt_topology_read(&c.t))
		nt_tap_bail("numactl %s: reading the node topology", c.option);
	cpu = nt_pin_cpu(atoi(argv[4]), &saved);
	if (cpu < 0)
		nt_tap_bail("numactl %s: pinning to a CPU: %s", c.option, strerror(-cpu));
	nt_tap_diag("numactl %s: on CPU %d", c.option, cpu);
	check_policy(&c);
	snapshot(&c, &c.base);
	map_locked(&c, size, cpu);
	check_placement(&c);
	check_locked(&c);
	check_munlocked(&c);
	return nt_area_unmap(&c.area) ? 2 : 0;
}

/* The program's own path: numactl must exec it, not /proc/self/exe (numactl itself). */
static void self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n < 0)
		nt_tap_bail("readlink /proc/self/exe: %s", strerror(errno));
	buf[n] = '\0';
}

static void run_case(const struct nc_case *c, const char *self, size_t len, int cpu_node)
{
	char mode[16], nodes[128], size[32], where[16];
	unsigned int until = nt_tap_count() + CHILD_CHECKS;
	pid_t pid;

	snprintf(mode, sizeof(mode), "%d", c->pol.mode);
	if (nt_mask_empty(&c->pol.nodes))
		snprintf(nodes, sizeof(nodes), "none");
	else
		nt_mask_format(&c->pol.nodes, nodes, sizeof(nodes));
	snprintf(size, sizeof(size), "%zu", len);
	snprintf(where, sizeof(where), "%d", cpu_node);
	pid = nt_tap_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid) {
		execlp("numactl", "numactl", c->option, "--", self, "--child", c->option, mode,
		       nodes, size, where, (char *)NULL);
		printf("# exec numactl: %s\n", strerror(errno));
		_exit(127);
	}
	nt_tap_wait(pid, until, c->option);
}

static void add_case(struct nc_case *cases, int *n, int mode, const struct nt_nodemask *nodes,
		     const char *fmt, const char *arg)
{
	struct nc_case *c = &cases[(*n)++];

	snprintf(c->option, sizeof(c->option), fmt, arg);
	c->pol.mode = mode;
	if (nodes)
		c->pol.nodes = *nodes;
}

static int build_cases(const struct nt_topology *t, struct nc_case *cases)
{
	struct nt_nodemask one, two = { 0 };
	char num[16], list[128];
	int node, n = 0;

	nt_mask_for_each(node, &t->allowed) {
		snprintf(num, sizeof(num), "%d", node);
		nt_mask_clear(&one);
		nt_mask_set(&one, node);
		add_case(cases, &n, MPOL_BIND, &one, "--membind=%s", num);
		add_case(cases, &n, MPOL_PREFERRED, &one, "--preferred=%s", num);
	}
	add_case(cases, &n, MPOL_INTERLEAVE, &t->allowed, "--interleave=%s", "all");
	if (nt_mask_weight(&t->allowed) >= 3) {
		nt_mask_set(&two, nt_mask_nth(&t->allowed, 0));
		nt_mask_set(&two, nt_mask_nth(&t->allowed, 2));
		add_case(cases, &n, MPOL_INTERLEAVE, &two, "--interleave=%s",
			 nt_mask_format(&two, list, sizeof(list)));
	}
	add_case(cases, &n, MPOL_PREFERRED_MANY, &t->allowed, "--preferred-many=%s", "all");
	add_case(cases, &n, MPOL_LOCAL, NULL, "%s", "--localalloc");
	return n;
}

static void skip_case(const struct nc_case *c, const char *reason)
{
	int i;

	for (i = 1; i <= CHILD_CHECKS; i++)
		nt_tap_skip(reason, "numactl %s: check %d of %d", c->option, i, CHILD_CHECKS);
}


/* Why the topology cannot host the cases, or NULL. */
static const char *unfit(const struct nt_topology *t, size_t len, char *buf, size_t buflen)
{
	long long free;
	int node;

	if (nt_mask_empty(&t->allowed))
		return "no memory node this task may use";
	nt_mask_for_each(node, &t->allowed) {
		if (nt_node_free(node, &free))
			snprintf(buf, buflen, "cannot read the free memory of node %d", node);
		else if (free < (long long)len + FREE_MARGIN)
			snprintf(buf, buflen, "node %d has %lld MiB free, needs %lld MiB", node,
				 free >> 20, ((long long)len + FREE_MARGIN) >> 20);
		else
			continue;
		return buf;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct nc_case cases[MAX_CASES];
	char self[PATH_MAX], reason[128];
	struct nt_topology t;
	int i, n, err, cpu_node;
	size_t len;

	if (argc == 7 && !strcmp(argv[1], "--child"))
		return child_main(argv + 2);
	len = nt_area_size_arg(argc, argv, DEFAULT_SIZE);
	nt_tap_start();
	if (geteuid())
		nt_tap_skip_all("needs root: writes /proc/sys/vm/stat_refresh, locks memory");
	if (numa_available() < 0)
		nt_tap_skip_all("libnuma says NUMA is not available (numa_available() < 0)");
	if (system("numactl --show >/dev/null 2>&1"))
		nt_tap_skip_all("numactl is not installed (Debian package numactl)");
	err = nt_topology_read(&t);
	if (err)
		nt_tap_bail("reading the node topology: %s", strerror(-err));
	self_path(self, sizeof(self));
	n = build_cases(&t, cases);
	nt_tap_plan(n * CHILD_CHECKS);
	if (unfit(&t, len, reason, sizeof(reason))) {
		for (i = 0; i < n; i++)
			skip_case(&cases[i], reason);
		return nt_tap_finish();
	}
	cpu_node = nt_memory_node_with_cpus(&t);
	for (i = 0; i < n; i++) {
		if (cases[i].pol.mode == MPOL_LOCAL && cpu_node < 0)
			skip_case(&cases[i], NO_LOCAL_NODE);
		else
			run_case(&cases[i], self, len, cpu_node);
	}
	return nt_tap_finish();
}
