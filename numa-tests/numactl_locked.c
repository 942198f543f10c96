// SPDX-License-Identifier: GPL-2.0
/*
 * Policies given on the numactl command line reach locked memory: numactl
 * installs the task policy and exec()s the command, which maps an area
 * MAP_LOCKED | MAP_POPULATE. The command is this program again (--child):
 * it checks that get_mempolicy() reports the policy numactl was asked for,
 * then makes lib/locked.h's checks of a locked range (every page where that
 * policy puts it, data, VmLck, smaps Locked, per-node Mlocked and
 * Unevictable, unevictable_pgs_*, page flags), munlock()s it and checks that
 * everything is back at its baseline. Its results take the next
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
#include <sys/prctl.h>
#include <unistd.h>

#include "harness.h"
#include "locked.h"
#include "nodes.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(4UL << 20)
#define FREE_MARGIN	(32LL << 20)
#define CHILD_CHECKS	(1 + NT_LK_LOCKED_CHECKS + NT_LK_UNLOCKED_CHECKS)
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
	struct nt_region r;
	struct nt_lk lk;
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

/*
 * The area is mapped MAP_LOCKED | MAP_POPULATE under the task policy numactl
 * set, then checked (lib/locked.h: placement, data, VmLck, smaps Locked,
 * per-node Mlocked and Unevictable, events, page flags) and munlock()ed back
 * to its baseline.
 */
static void lock_and_unlock(struct nc_child *c, size_t len, int cpu)
{
	int err, node = numa_node_of_cpu(cpu);
	struct nt_vma vma;
	char where[64];

	c->lk.t = &c->t;
	c->lk.r = &c->r;
	snprintf(c->lk.label, sizeof(c->lk.label), "numactl %s", c->option);
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		nt_tap_bail("%s: PR_SET_THP_DISABLE: %s", c->lk.label, strerror(errno));
	nt_lk_baseline(&c->lk);
	err = nt_region_map(&c->r, NT_PRIVATE_ANON, len, sysconf(_SC_PAGESIZE),
			    MAP_LOCKED | MAP_POPULATE);
	if (err)
		nt_tap_bail("%s: mmap(MAP_LOCKED | MAP_POPULATE): %s", c->lk.label,
			    strerror(-err));
	/* A CPU of a memory-less node allocates from the nearest node: not modelled. */
	err = nt_region_vma(&c->r, node >= 0 && nt_mask_isset(&c->t.memory, node) ?
			    node : NT_NODE_ANY, &vma);
	if (err)
		nt_tap_bail("%s: finding the area's VMA: %s", c->lk.label, strerror(-err));
	snprintf(where, sizeof(where), "the %s policy's nodes", mode_name(c->pol.mode));
	nt_lk_locked(&c->lk, &c->pol, &vma, len / 1024, where, false);
	nt_lk_munlock(&c->lk);
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
	lock_and_unlock(&c, size, cpu);
	return nt_region_unmap(&c.r) ? 2 : 0;
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

static void fail_case(const struct nc_case *c, const char *reason)
{
	int i;

	for (i = 1; i <= CHILD_CHECKS; i++)
		nt_tap_result(false, "numactl %s: check %d of %d not made: %s", c->option, i,
			      CHILD_CHECKS, reason);
}

/* Which usable node lacks the free memory the area needs, or NULL. */
static const char *unfit(const struct nt_topology *t, size_t len, char *buf, size_t buflen)
{
	long long free;
	int node;

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
	nt_test_start();
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
	if (nt_mask_empty(&t.allowed)) {
		for (i = 0; i < n; i++)
			skip_case(&cases[i], "no memory node this task may use");
		return nt_tap_finish();
	}
	/* Too little free memory where there should be plenty: a failure, not a skip. */
	if (unfit(&t, len, reason, sizeof(reason))) {
		for (i = 0; i < n; i++)
			fail_case(&cases[i], reason);
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
