// SPDX-License-Identifier: GPL-2.0
/*
 * NUMA policies and memory hotplug: the LSFMM 2013 report said "a hotplug
 * event does not cause policies to be adjusted, leading to allocations from
 * the wrong nodes". This pins down what 6.1 does with hot-added memory under
 * bind, interleave and preferred task policies, with and without
 * MPOL_F_STATIC_NODES / MPOL_F_RELATIVE_NODES, and what offlining locked
 * memory does.
 *
 * What 6.1 does, and why (the expectations come from lib/expect.h, which
 * models mpol_set_nodemask() and mpol_rebind_policy()):
 * - Memory hot-added to a node that already has memory (phase "grow") changes
 *   no node mask: N_MEMORY and the cpusets' mems stay as they are, so
 *   cpuset_hotplug_workfn() (kernel/cgroup/cpuset.c) rebinds nothing and every
 *   policy keeps its nodes, flags or not. The new memory is simply more of
 *   node K: onlined as ZONE_MOVABLE (this test sets auto_online_blocks to
 *   online_movable), it is K's highest zone, first in every zonelist's entries
 *   for K (build_zonerefs_node() in mm/page_alloc.c adds a node's zones from
 *   the highest), so pages a policy puts on K come from the new blocks first.
 * - Memory hot-added to a node that had none (phase "new node") puts K in
 *   N_MEMORY; cpuset_hotplug_workfn() then widens the top cpuset's
 *   effective mems and update_tasks_nodemask() rebinds every task's policy
 *   (mpol_rebind_task()) to the new mems: a plain bind or interleave policy
 *   keeps the nodes it had (nodes_remap() of the old mems onto the new: K
 *   was never in them), a static one gains K if the user named it, a
 *   relative one is recomputed from its positions and gains K when a
 *   position now lands there; a preferred node is remapped like a bind
 *   mask (numa_memory_policy.rst). Known deviation of 6.1 and 6.12:
 *   mpol_rebind_preferred() only records the mems, so the preferred node
 *   stays and, for a flagged one, get_mempolicy() then reports the mems
 *   (w.user_nodemask shares a union with them): expected failures (TAP
 *   TODO) when that is what is seen. A policy that named
 *   only the memory-less node is refused by set_mempolicy() (EINVAL).
 * - Offlining a block that holds locked pages (offline_pages() in
 *   mm/memory_hotplug.c) migrates them: do_migrate_range() allocates the
 *   new pages on nodes of N_MEMORY other than the block's node, whatever the
 *   owner's policy says (a page bound to K leaves K). A block in a kernel
 *   zone may instead hold unmovable pages and the offline fails with EBUSY
 *   (then 6.1 also dumps the page, which run-guest counts as a splat); the
 *   test onlines the blocks movable so that migration is what happens, and
 *   an EBUSY fails it (the path under test was not exercised; the
 *   accounting checks after it still say what the kernel did).
 *
 * Needs root, the numa-matrix host control channel (/dev/virtio-ports/nm.ctl)
 * and a free DIMM slot (an ACPI PNP0C80 device with _STA 0): the "hotplug"
 * topology. The "new node" phase also needs a second free slot and an
 * online node without memory; it is skipped, with the reason, elsewhere.
 * Hot-added memory stays in the machine afterwards.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "area.h"
#include "counters.h"
#include "expect.h"
#include "handshake.h"
#include "harness.h"
#include "hotplug.h"
#include "nodes.h"
#include "pageflags.h"
#include "placement.h"
#include "snapshot.h"
#include "sysfile.h"
#include "tap.h"
#include "values.h"

#define DIMM_MIB	128
#define AREA_PAGES	256		/* per policy holder */
#define LOCKED_PAGES	1024		/* the area locked on the new memory, then offlined */
#define WAIT_S		30
#define PARENT_WAIT_S	600	/* how long a child waits for the parent */
#define OFFLINE_BOUND_S	60
#define NPOL		10
#define ADD_CHECKS	3
#define POL_CHECKS	4
#define OFFLINE_CHECKS	11
#define AUTO_ONLINE	"/sys/devices/system/memory/auto_online_blocks"
#define SEED		0x686f74UL

/* A policy held across the hot-add. */
struct held {
	char label[96];
	struct nt_policy user;		/* as passed to set_mempolicy(), flags included */
};

/* What a policy holder tells the parent. */
struct holder_res {
	int set_err;			/* set_mempolicy(): 0 or -errno */
	int ready, go, done, err;
	int got_mode;			/* get_mempolicy() after the hot-add, flags included */
	struct nt_nodemask got_nodes;
	int local;			/* its CPU's node if that has memory now, else NT_NODE_ANY */
	long bad;			/* pages not where the policy puts them */
	long bad_kept;			/* ... where the policy with its preferred node kept does */
	long found[NT_MAX_NODES];
	long in_new;			/* pages in the hot-added blocks */
};

/* The locked area's owner during the offline. */
struct locker_res {
	int ready, go, done, unlock, unlocked, leave, err;
	long found[NT_MAX_NODES];	/* pages per node: after locking, then after the offline */
	long in_set, absent;		/* pages in the hot-added, then in the offlined blocks */
	long bad_data, bad_flags;
	long vmlck_kb, locked_kb;	/* after locking */
	long vmlck_after, locked_after;	/* after the offline */
};

struct shared {
	struct nt_blocks added;		/* the hot-added blocks */
	struct nt_blocks offlined;
	struct nt_nodemask mems_after;
	struct holder_res h[NPOL];
	struct locker_res l;
	int offline_err;
};

static struct {
	struct nt_topology t;
	size_t page;
	struct shared *sh;
	char auto_online[32];		/* to put back */
} g;

static void restore_auto_online(void)
{
	if (g.auto_online[0] && nt_file_write(AUTO_ONLINE, g.auto_online))
		fprintf(stderr, "mempolicy_hotplug: cannot restore %s to %s\n", AUTO_ONLINE,
			g.auto_online);
}

static const char *fmt(const struct nt_nodemask *m, char *buf, size_t len)
{
	return nt_mask_format(m, buf, len);
}

static long memtotal_kb(int node)
{
	long kb;

	if (nt_node_meminfo_read(node, "MemTotal", &kb))
		nt_tap_bail("reading node %d's MemTotal", node);
	return kb;
}

/* Pages of the area on each node, and how many sit in blocks of set. */
static int placement(const struct nt_area *a, const struct nt_blocks *set, long *found,
		     long *in_set, long *absent)
{
	int *status = calloc(a->npages, sizeof(*status));
	uint64_t *pfn = calloc(a->npages, sizeof(*pfn));
	size_t i;
	int err;

	if (!status || !pfn)
		return -ENOMEM;
	err = nt_pages_nodes(a->addr, a->npages, a->page_size, status);
	if (!err)
		err = nt_pages_pfns(a->addr, a->npages, a->page_size, pfn);
	memset(found, 0, NT_MAX_NODES * sizeof(*found));
	*in_set = *absent = 0;
	for (i = 0; !err && i < a->npages; i++) {
		if (status[i] < 0 || status[i] >= NT_MAX_NODES || !pfn[i]) {
			(*absent)++;
			continue;
		}
		found[status[i]]++;
		*in_set += nt_blocks_has(set, nt_pfn_block(pfn[i], a->page_size, set->size));
	}
	free(status);
	free(pfn);
	return err;
}

static void child_fail(int *errp, const char *what, int err)
{
	*errp = err ? err : -EIO;
	fprintf(stderr, "mempolicy_hotplug: child %d: %s: %s\n", getpid(), what, strerror(-*errp));
	_exit(1);
}

/* Runs the calling child on a CPU of node when it has one. */
static void child_pin(int node, int *errp)
{
	cpu_set_t saved;
	int cpu = nt_pin_cpu(node, &saved);

	if (cpu < 0)
		child_fail(errp, "pinning to a CPU", cpu);
}

static int local_node_now(void)
{
	int node = numa_node_of_cpu(sched_getcpu());
	struct nt_nodemask mem;
	char buf[256];

	/* has_memory read afresh: the child's topology is from before the hot-add. */
	if (node < 0 || nt_file_read_line("/sys/devices/system/node/has_memory", buf, sizeof(buf)) ||
	    nt_mask_parse(buf, &mem) || !nt_mask_isset(&mem, node))
		return NT_NODE_ANY;
	return node;
}

/*
 * The policy the kernel installs for user under the given mems, rebound to
 * mems_after when those differ (the kernel rebinds only on a change,
 * mpol_rebind_policy()). -EINVAL when set_mempolicy() must refuse it.
 */
static int model(const struct nt_policy *user, const struct nt_nodemask *mems_before,
		 const struct nt_nodemask *memory_before, const struct nt_nodemask *mems_after,
		 struct nt_mempolicy *mp, bool keep_preferred)
{
	int err = nt_mpol_install(mp, user, mems_before, memory_before);

	if (err || nt_mask_equal(mems_before, mems_after))
		return err;
	if (keep_preferred)
		nt_mpol_rebind_keep_preferred(mp, mems_after);
	else
		nt_mpol_rebind(mp, mems_after);
	return 0;
}

/*
 * A child that sets its policy before the hot-add and, once told to go after
 * it, reads the policy back and allocates an area under it.
 */
static void holder(const struct held *p, struct holder_res *r, int cpu_node)
{
	struct nt_mempolicy mp, kept;
	long absent, found[NT_MAX_NODES], kept_found[NT_MAX_NODES];
	struct nt_vma vma;
	struct nt_area a;
	int err;

	child_pin(cpu_node, &r->err);
	r->set_err = nt_set_task_policy(&p->user);
	nt_flag_set(&r->ready, 1);
	if (!nt_flag_wait(&r->go, 1, PARENT_WAIT_S))
		child_fail(&r->err, "waiting for the parent", -ETIMEDOUT);
	if (r->set_err)
		_exit(0);
	if (get_mempolicy(&r->got_mode, r->got_nodes.bits, NT_MASK_MAXNODE, NULL, 0))
		child_fail(&r->err, "get_mempolicy", -errno);
	r->local = local_node_now();
	err = nt_area_map(&a, AREA_PAGES * g.page, MAP_POPULATE);
	if (!err)
		err = nt_area_vma(&a, &vma);
	if (err)
		child_fail(&r->err, "mapping the area", err);
	nt_vma_set_local(&vma, r->local);
	/* g.t is this child's copy from before the hot-add. */
	if (model(&p->user, &g.t.allowed, &g.t.memory, &g.sh->mems_after, &mp, false) ||
	    model(&p->user, &g.t.allowed, &g.t.memory, &g.sh->mems_after, &kept, true))
		child_fail(&r->err, "the model refuses a policy the kernel took", -EINVAL);
	r->bad = nt_check_placement(&a, &mp.pol, &vma, r->found);
	r->bad_kept = nt_check_placement(&a, &kept.pol, &vma, kept_found);
	err = r->bad < 0 ? (int)r->bad : placement(&a, &g.sh->added, found, &r->in_new, &absent);
	if (err)
		child_fail(&r->err, "reading where the pages are", err);
	nt_flag_set(&r->done, 1);
	_exit(0);
}

static void held_set(struct held *p, int mode, unsigned int flags, const struct nt_nodemask *nodes,
		     const char *label)
{
	p->user.mode = mode;
	p->user.flags = flags;
	p->user.nodes = *nodes;
	snprintf(p->label, sizeof(p->label), "%s", label);
}

/* The policies held across a hot-add to node k: all nodes with memory once k has some. */
static void policy_list(struct held *p, int k)
{
	struct nt_nodemask all = g.t.memory, pos, kk, other;
	int n, i, k_pos = 0;

	nt_mask_set(&all, k);
	n = nt_mask_weight(&all);
	nt_mask_clear(&pos);
	for (i = 0; i < n; i++) {
		nt_mask_set(&pos, i);
		if (nt_mask_nth(&all, i) == k)
			k_pos = i;
	}
	nt_mask_clear(&kk);
	nt_mask_set(&kk, k);
	nt_mask_clear(&other);
	nt_mask_set(&other, nt_mask_nth(&all, nt_mask_nth(&all, 0) == k ? 1 : 0));
	held_set(&p[0], MPOL_BIND, 0, &all, "bind to all nodes");
	held_set(&p[1], MPOL_BIND, MPOL_F_STATIC_NODES, &all, "bind=static to all nodes");
	held_set(&p[2], MPOL_BIND, MPOL_F_RELATIVE_NODES, &pos, "bind=relative to all positions");
	held_set(&p[3], MPOL_INTERLEAVE, 0, &all, "interleave over all nodes");
	held_set(&p[4], MPOL_INTERLEAVE, MPOL_F_STATIC_NODES, &all, "interleave=static over all nodes");
	held_set(&p[5], MPOL_INTERLEAVE, MPOL_F_RELATIVE_NODES, &pos,
		 "interleave=relative over all positions");
	held_set(&p[6], MPOL_PREFERRED, 0, &kk, "preferred node K");
	held_set(&p[7], MPOL_PREFERRED, MPOL_F_STATIC_NODES, &kk, "preferred=static node K");
	nt_mask_clear(&kk);
	nt_mask_set(&kk, k_pos);
	held_set(&p[8], MPOL_PREFERRED, MPOL_F_RELATIVE_NODES, &kk, "preferred=relative to K's position");
	held_set(&p[9], MPOL_BIND, 0, &other, "bind to another node");
}

static void describe_user(const struct held *p, char *buf, size_t len)
{
	char nodes[64];

	snprintf(buf, len, "%s (%s%s %s)", p->label,
		 p->user.mode == MPOL_BIND ? "bind" : p->user.mode == MPOL_INTERLEAVE ?
		 "interleave" : "preferred",
		 p->user.flags & MPOL_F_STATIC_NODES ? "=static" :
		 p->user.flags & MPOL_F_RELATIVE_NODES ? "=relative" : "",
		 fmt(&p->user.nodes, nodes, sizeof(nodes)));
}

/* Hot-adds a DIMM to node k; three subtests. Returns false when it did not happen. */
static bool hot_add(const char *phase, int k, const struct nt_blocks *before, long total_before,
		    const pid_t *pids, const struct nt_nodemask *mems_want)
{
	struct nt_blocks after;
	char req[64], reply[256], zones[32], state[32], want[64], got[64];
	double end;
	long total = total_before, want_kb = total_before + DIMM_MIB * 1024L;
	bool ok = true, mems_ok = false;
	int err, i, node, online;

	snprintf(req, sizeof(req), "add-memory %d %dM", k, DIMM_MIB);
	err = nt_hostctl(req, reply, sizeof(reply), WAIT_S);
	if (err)
		snprintf(reply, sizeof(reply), "%s", strerror(-err));
	if (!nt_tap_result(!err && !strncmp(reply, "ok", 2), "%s: host control: %s -> %s", phase,
			   req, reply))
		return false;
	/*
	 * online_pages() counts the pages in MemTotal before the block's state
	 * reads "online" (memory_block_online()): wait for both.
	 */
	end = nt_now_s() + WAIT_S;
	do {
		total = memtotal_kb(k);
		if (nt_blocks_read(&after))
			nt_tap_bail("reading the memory blocks");
		nt_blocks_new(before, &after, &g.sh->added);
		for (i = 0, online = 0; i < g.sh->added.n; i++)
			online += !nt_block_attr(g.sh->added.id[i], "state", state, sizeof(state)) &&
				  !strcmp(state, "online");
		if (total == want_kb && online == g.sh->added.n)
			break;
		usleep(10000);
	} while (nt_now_s() < end);
	for (i = 0; i < g.sh->added.n; i++) {
		unsigned long id = g.sh->added.id[i];

		node = nt_block_node(id);
		if (nt_block_attr(id, "state", state, sizeof(state)) ||
		    nt_block_attr(id, "valid_zones", zones, sizeof(zones)))
			nt_tap_bail("reading memory%lu", id);
		nt_tap_diag("%s: memory%lu: node %d, %s, %s", phase, id, node, state, zones);
		ok = ok && node == k && !strcmp(state, "online") && !strcmp(zones, "Movable");
	}
	ok = ok && g.sh->added.n * (g.sh->added.size >> 10) == DIMM_MIB * 1024UL;
	nt_tap_result(ok && total == want_kb,
		      "%s: node %d MemTotal %+ld kB (want %+d), every new block online in ZONE_MOVABLE on node %d",
		      phase, k, total - total_before, DIMM_MIB * 1024, k);
	/* The tasks' mems: the top cpuset follows N_MEMORY, asynchronously. */
	fmt(mems_want, want, sizeof(want));
	end = nt_now_s() + WAIT_S;
	while (!mems_ok) {
		mems_ok = true;
		for (i = 0; i < NPOL; i++) {
			char path[64];
			const char *key = "Mems_allowed_list";
			FILE *f;

			snprintf(path, sizeof(path), "/proc/%d/status", pids[i]);
			f = fopen(path, "r");
			got[0] = '\0';
			while (f && fgets(reply, sizeof(reply), f))
				if (!strncmp(reply, key, strlen(key)))
					sscanf(reply + strlen(key) + 1, "%63s", got);
			if (f)
				fclose(f);
			mems_ok = mems_ok && !strcmp(got, want);
		}
		if (mems_ok || nt_now_s() > end)
			break;
		usleep(10000);
	}
	if (!mems_ok)
		nt_tap_diag("a holder's Mems_allowed_list is %s", got);
	nt_tap_result(mems_ok, "%s: every policy holder's mems_allowed is %s", phase, want);
	return true;
}

/*
 * The nodes get_mempolicy() reports for the task policy: for a policy with
 * MPOL_F_STATIC_NODES or MPOL_F_RELATIVE_NODES the nodemask the user passed
 * (numa_memory_policy.rst: "The kernel stores the user-passed nodemask";
 * do_get_mempolicy() returns w.user_nodemask for them), for the others
 * the nodes the policy uses.
 */
static void reported_nodes(const struct nt_policy *user, const struct nt_mempolicy *mp,
			   struct nt_nodemask *nodes)
{
	*nodes = user->flags ? user->nodes : mp->pol.nodes;
}

#define KEPT_PREFERRED	"known deviation (6.1 and 6.12): mpol_rebind_preferred() only records the new mems and does not remap the preferred node as numa_memory_policy.rst says"
#define CLOBBERED_USER	"known deviation (6.1 and 6.12): mpol_rebind_preferred() writes the new mems to w.cpuset_mems_allowed, a union with w.user_nodemask, so get_mempolicy() of a flagged preferred policy reports the mems after a rebind"

static void check_holder(const char *phase, const struct held *p, const struct holder_res *r,
			 int k, const struct nt_nodemask *mems_after)
{
	char label[192], want[64], got[64], where[160] = "";
	struct nt_nodemask reported;
	struct nt_mempolicy mp;
	bool preferred, clobbered;
	size_t used = 0;
	int refused, node, mode, i;

	describe_user(p, label, sizeof(label));
	refused = model(&p->user, &g.t.allowed, &g.t.memory, mems_after, &mp, false);
	if (nt_tap_result(refused ? r->set_err == -EINVAL : !r->set_err,
			  "%s: %s: set_mempolicy() before the hot-add %s", phase, label,
			  refused ? "is refused with EINVAL" : "is accepted") && refused) {
		for (i = 1; i < POL_CHECKS; i++)
			nt_tap_skip("the policy was refused, as expected", "%s: %s: check %d",
				    phase, label, i + 1);
		return;
	}
	if (refused || r->set_err || r->err || !r->done) {
		for (i = 1; i < POL_CHECKS; i++)
			nt_tap_result(false, "%s: %s: check %d not made (set_mempolicy: %s; child: %s)",
				      phase, label, i + 1, strerror(-r->set_err),
				      r->err ? strerror(-r->err) : r->done ? "done" : "did not finish");
		return;
	}
	mode = mp.pol.mode | mp.pol.flags;
	reported_nodes(&p->user, &mp, &reported);
	fmt(&reported, want, sizeof(want));
	fmt(&r->got_nodes, got, sizeof(got));
	if (r->got_mode != mode || strcmp(want, got))
		nt_tap_diag("get_mempolicy: mode %#x nodes %s; expected mode %#x nodes %s",
			    r->got_mode, got, mode, want);
	preferred = p->user.mode == MPOL_PREFERRED || p->user.mode == MPOL_PREFERRED_MANY;
	clobbered = preferred && p->user.flags && r->got_mode == mode &&
		    !nt_mask_equal(&g.t.allowed, mems_after) &&
		    nt_mask_equal(&r->got_nodes, mems_after);
	nt_tap_todo(r->got_mode == mode && !strcmp(want, got), clobbered ? CLOBBERED_USER : NULL,
		    "%s: %s: after the hot-add get_mempolicy() reports nodes %s", phase, label, want);
	fmt(&mp.pol.nodes, want, sizeof(want));
	for (node = 0; node < NT_MAX_NODES; node++)
		if (r->found[node] && used < sizeof(where))
			used += snprintf(where + used, sizeof(where) - used, " node%d:%ld", node,
					 r->found[node]);
	nt_tap_diag("%s: %s: local node %d; pages on%s; %ld in the hot-added blocks", phase, label,
		    r->local, where, r->in_new);
	nt_tap_todo(!r->bad, preferred && r->bad && !r->bad_kept ? KEPT_PREFERRED : NULL,
		    "%s: %s: all %d pages of a new area where nodes %s put them", phase, label,
		    AREA_PAGES, want);
	nt_tap_result(r->in_new == r->found[k],
		      "%s: %s: the %ld pages on node %d all come from the hot-added memory", phase,
		      label, r->found[k], k);
}

static void run_holders(const char *phase, int k, int cpu_node, bool have_slot,
			const char *skip_reason)
{
	struct nt_nodemask mems_after;
	struct nt_blocks before;
	struct held pol[NPOL];
	pid_t pids[NPOL];
	long total;
	int i, j;

	if (!have_slot) {
		policy_list(pol, nt_mask_nth(&g.t.memory, 0));
		for (i = 0; i < ADD_CHECKS; i++)
			nt_tap_skip(skip_reason, "%s: hot-add, check %d", phase, i + 1);
		for (i = 0; i < NPOL; i++)
			for (j = 0; j < POL_CHECKS; j++)
				nt_tap_skip(skip_reason, "%s: %s: check %d", phase, pol[i].label, j + 1);
		return;
	}
	policy_list(pol, k);
	if (nt_blocks_read(&before))
		nt_tap_bail("reading the memory blocks");
	total = memtotal_kb(k);
	memset(g.sh->h, 0, sizeof(g.sh->h));
	for (i = 0; i < NPOL; i++) {
		pids[i] = nt_fork();
		if (pids[i] < 0)
			nt_tap_bail("fork: %s", strerror(errno));
		if (!pids[i])
			holder(&pol[i], &g.sh->h[i], cpu_node);
		if (!nt_flag_wait(&g.sh->h[i].ready, 1, WAIT_S))
			nt_tap_bail("%s: policy holder %d did not start", phase, i);
	}
	/* The top cpuset's mems follow N_MEMORY: the nodes with memory, now with k. */
	mems_after = g.t.memory;
	nt_mask_set(&mems_after, k);
	g.sh->mems_after = mems_after;
	if (!hot_add(phase, k, &before, total, pids, &mems_after))
		nt_tap_bail("%s: the hot-add failed: nothing else here means anything", phase);
	for (i = 0; i < NPOL; i++) {
		int status;

		nt_flag_set(&g.sh->h[i].go, 1);
		if (waitpid(pids[i], &status, 0) != pids[i])
			nt_tap_bail("waitpid: %s", strerror(errno));
		check_holder(phase, &pol[i], &g.sh->h[i], k, &mems_after);
	}
	if (nt_topology_read(&g.t))
		nt_tap_bail("reading the node topology again");
}

/* ---- offlining locked memory ---- */

/* A child waits for the parent's go-ahead; it gives up after PARENT_WAIT_S. */
static void wait_go(const int *flag, int *errp)
{
	if (!nt_flag_wait(flag, 1, PARENT_WAIT_S))
		child_fail(errp, "waiting for the parent", -ETIMEDOUT);
}

static void locked_sizes(const struct nt_area *a, struct locker_res *r, long *vmlck, long *locked)
{
	if (nt_vmlck_read(vmlck) || nt_smaps_sum(a->addr, a->len, "Locked", locked, NULL))
		child_fail(&r->err, "reading VmLck and smaps", -EIO);
}

/* Locks LOCKED_PAGES pages bound to node k; after the offline, looks at them again. */
static void locker(int k, struct locker_res *r)
{
	struct nt_flags_want lockedf = { .mlocked = true, .unevictable = true };
	struct nt_policy bind;
	struct nt_area a;
	int err;

	child_pin(k, &r->err);
	nt_policy_one(&bind, MPOL_BIND, k);
	err = nt_area_map(&a, LOCKED_PAGES * g.page, 0);
	if (!err)
		err = nt_area_mbind(&a, &bind);
	if (!err)
		err = nt_area_lock(&a);
	if (err)
		child_fail(&r->err, "locking the area", err);
	nt_area_fill(&a, SEED);
	if (placement(&a, &g.sh->added, r->found, &r->in_set, &r->absent))
		child_fail(&r->err, "reading where the pages are", -EIO);
	locked_sizes(&a, r, &r->vmlck_kb, &r->locked_kb);
	nt_flag_set(&r->ready, 1);
	wait_go(&r->go, &r->err);
	if (placement(&a, &g.sh->offlined, r->found, &r->in_set, &r->absent))
		child_fail(&r->err, "reading where the pages are", -EIO);
	r->bad_data = nt_area_verify(&a, SEED);
	r->bad_flags = nt_check_flags(a.addr, a.npages, a.page_size, &lockedf);
	locked_sizes(&a, r, &r->vmlck_after, &r->locked_after);
	nt_flag_set(&r->done, 1);
	wait_go(&r->unlock, &r->err);
	if (nt_area_unlock(&a))
		child_fail(&r->err, "munlock", -errno);
	nt_flag_set(&r->unlocked, 1);
	wait_go(&r->leave, &r->err);
	_exit(0);
}

/* Writes "offline" to memoryN/state in a child that SIGALRM ends after OFFLINE_BOUND_S. */
static int offline_block(unsigned long id, double *secs)
{
	double t0 = nt_now_s();
	int status;
	pid_t pid;

	g.sh->offline_err = -EINPROGRESS;
	pid = nt_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid) {
		/* offline_pages() gives up on a pending signal ("signal backoff"). */
		alarm(OFFLINE_BOUND_S);
		g.sh->offline_err = nt_block_set_state(id, "offline");
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		nt_tap_bail("waitpid: %s", strerror(errno));
	*secs = nt_now_s() - t0;
	if (WIFSIGNALED(status))
		return -ETIMEDOUT;
	return g.sh->offline_err;
}

/* Per-node Mlocked and Unevictable of now - base are both pages[node] pages (NULL: 0). */
static bool nodes_moved(const struct nt_counters *now, const struct nt_counters *base,
			const long *pages)
{
	long kb = g.page / 1024;

	return nt_nodes_moved(&g.t.online, now->mlocked_kb, base->mlocked_kb, pages, kb, "Mlocked") &
	       nt_nodes_moved(&g.t.online, now->unevictable_kb, base->unevictable_kb, pages, kb,
			      "Unevictable");
}

static void snapshot(struct nt_counters *c, bool drain)
{
	nt_snapshot(c, &g.t.online, drain);
}

static void offline_phase(int k)
{
	struct locker_res *r = &g.sh->l;
	struct nt_counters base, locked, after, unlocked, d;
	long found_locked[NT_MAX_NODES], n = LOCKED_PAGES, total0, total1, moved;
	char where[128] = "", others[64];
	struct nt_nodemask other;
	struct nt_blocks *off = &g.sh->offlined;
	double secs, worst = 0;
	size_t used = 0;
	int i, err, first_err = 0, status, node;
	bool ok, migrated;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	snapshot(&base, true);
	pid = nt_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid)
		locker(k, r);
	if (!nt_flag_wait(&r->ready, 1, WAIT_S))
		nt_tap_bail("offline: the process locking memory did not get ready");
	memcpy(found_locked, r->found, sizeof(found_locked));
	nt_tap_result(r->found[k] == n && r->in_set == n && !r->absent,
		      "offline: %ld pages locked under bind to node %d, all in the hot-added blocks (%ld of them)",
		      n, k, r->in_set);
	snapshot(&locked, true);
	nt_tap_result(nodes_moved(&locked, &base, found_locked),
		      "offline: per-node Mlocked and Unevictable grew by the locked pages, on node %d only", k);

	/* Offline every hot-added block, in order; the locked pages are in them. */
	total0 = memtotal_kb(k);
	off->size = g.sh->added.size;
	off->n = 0;
	for (i = 0; i < g.sh->added.n; i++) {
		err = offline_block(g.sh->added.id[i], &secs);
		nt_tap_diag("offline: memory%lu: %s after %.3f s", g.sh->added.id[i],
			    err ? strerror(-err) : "offline", secs);
		worst = secs > worst ? secs : worst;
		if (!err)
			off->id[off->n++] = g.sh->added.id[i];
		else if (!first_err)
			first_err = err;
	}
	migrated = off->n == g.sh->added.n;
	/* They were onlined movable: EBUSY means the migration this is about did not happen. */
	nt_tap_result(migrated, "offline: the hot-added blocks went offline within %d s%s%s",
		      OFFLINE_BOUND_S, migrated ? "" : ": ", migrated ? "" : strerror(-first_err));
	total1 = memtotal_kb(k);
	nt_tap_result(total0 - total1 == (long)(off->n * (off->size >> 10)),
		      "offline: node %d MemTotal %+ld kB, the size of the %d offlined block(s)", k,
		      total1 - total0, off->n);

	nt_flag_set(&r->go, 1);
	if (!nt_flag_wait(&r->done, 1, WAIT_S))
		nt_tap_bail("offline: the locking process did not look at its pages again");
	for (node = 0; node < NT_MAX_NODES; node++)
		if (r->found[node] && used < sizeof(where))
			used += snprintf(where + used, sizeof(where) - used, " node%d:%ld", node,
					 r->found[node]);
	nt_tap_diag("offline: the locked pages are now on%s", where);
	/* do_migrate_range(): the new pages go to nodes of N_MEMORY except the source node. */
	nt_mask_clear(&other);
	nt_mask_for_each(node, &g.t.memory)
		if (node != k)
			nt_mask_set(&other, node);
	moved = 0;
	nt_mask_for_each(node, &other)
		moved += r->found[node];
	if (migrated)
		ok = !r->absent && !r->in_set && moved == n;
	else
		ok = !r->absent && r->found[k] == n;
	nt_tap_result(ok, "offline: every locked page is resident, none in an offlined block, %s",
		      migrated ? "all moved off node K to the other nodes with memory" :
		      "all still on node K");
	nt_tap_diag("offline: migration targets allowed: nodes %s", fmt(&other, others, sizeof(others)));
	nt_tap_result(!r->bad_data, "offline: the data of all %ld locked pages reads back", n);
	nt_tap_result(!r->bad_flags && r->vmlck_after == r->vmlck_kb && r->locked_after == r->locked_kb,
		      "offline: every page still has KPF_MLOCKED and KPF_UNEVICTABLE; VmLck %ld kB and smaps Locked %ld kB unchanged",
		      r->vmlck_kb, r->locked_kb);

	snapshot(&after, true);
	nt_counters_delta(&after, &locked, &d);
	ok = nodes_moved(&after, &base, r->found) & nt_events_agree(&after, &locked, "offline") &&
	     !d.vmstat[NT_NR_MLOCK];
	nt_tap_result(ok, "offline: per-node Mlocked and Unevictable follow the pages, nr_mlock unchanged and equal to mlocked - munlocked - stranded - cleared");
	/*
	 * Documentation/mm/unevictable-lru.rst, "Migrating MLOCKED Pages":
	 * PG_mlocked is set on each new page when it is mapped into the
	 * VM_LOCKED VMA (unevictable_pgs_mlocked once per page) and cleared
	 * from each old page when it is unmapped. Whether that clearing counts
	 * as munlocked or, the old page being isolated, as stranded is the
	 * kernel's choice (6.1: stranded); one of the two, once per page. How
	 * the pages move between the LRU lists is what the per-node
	 * Unevictable check above pins.
	 */
	moved = migrated ? n : 0;
	nt_tap_result(d.vmstat[NT_PGS_MLOCKED] == moved &&
		      d.vmstat[NT_PGS_MUNLOCKED] + d.vmstat[NT_PGS_STRANDED] == moved &&
		      !d.vmstat[NT_PGS_CLEARED],
		      "offline: %ld migrated locked pages: unevictable_pgs_mlocked +%ld, munlocked + stranded +%ld, cleared +0",
		      moved, moved, moved);

	nt_flag_set(&r->unlock, 1);
	if (!nt_flag_wait(&r->unlocked, 1, WAIT_S))
		nt_tap_bail("offline: the locking process did not munlock");
	snapshot(&unlocked, false);
	ok = nodes_moved(&unlocked, &base, NULL) &&
	     unlocked.vmstat[NT_NR_MLOCK] == base.vmstat[NT_NR_MLOCK];
	nt_tap_result(ok, "offline: after munlock(), per-node Mlocked, Unevictable and nr_mlock are back at their baseline");
	nt_flag_set(&r->leave, 1);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		nt_tap_diag("offline: the locking process ended with status %#x", status);

	ok = true;
	for (i = 0; i < off->n; i++) {
		err = nt_block_set_state(off->id[i], "online_movable");
		if (err) {
			nt_tap_diag("memory%lu back online: %s", off->id[i], strerror(-err));
			ok = false;
		}
	}
	nt_tap_result(ok && memtotal_kb(k) == total0,
		      "offline: the offlined blocks are online again and node %d MemTotal is back", k);
}

int main(int argc, char **argv)
{
	int slots, k_grow, k_new = -1, node;
	char nodes[64], reason[160];
	(void)argc;
	(void)argv;

	g.page = sysconf(_SC_PAGESIZE);
	nt_test_start();
	if (geteuid())
		nt_tap_skip_all("needs root: hot-plugs memory, reads page frames");
	if (numa_available() < 0)
		nt_tap_skip_all("libnuma says NUMA is not available (numa_available() < 0)");
	if (nt_topology_read(&g.t))
		nt_tap_bail("reading the node topology");
	if (access(NT_HOSTCTL_PORT, R_OK | W_OK))
		nt_tap_skip_all("no host control channel %s: memory is hot-added by run-guest",
				NT_HOSTCTL_PORT);
	slots = nt_free_dimm_slots();
	if (slots <= 0)
		nt_tap_skip_all("no free DIMM slot (no ACPI memory device PNP0C80 with _STA 0): needs a machine with memory hotplug slots (the hotplug topology)");
	if (nt_mask_weight(&g.t.memory) < 2)
		nt_tap_skip_all("one memory node (%s): no other node to bind to",
				fmt(&g.t.memory, nodes, sizeof(nodes)));
	if (!nt_mask_equal(&g.t.memory, &g.t.allowed))
		nt_tap_skip_all("this task's cpuset does not allow every memory node: the model of the rebind assumes the top cpuset");
	k_grow = nt_mask_nth(&g.t.memory, nt_mask_weight(&g.t.memory) - 1);
	nt_mask_for_each(node, &g.t.online)
		if (!nt_mask_isset(&g.t.memory, node)) {
			k_new = node;
			break;
		}
	if (nt_file_read_line(AUTO_ONLINE, g.auto_online, sizeof(g.auto_online)))
		nt_tap_bail("reading %s", AUTO_ONLINE);
	nt_cleanup_push(restore_auto_online);
	if (nt_file_write(AUTO_ONLINE, "online_movable"))
		nt_tap_bail("writing online_movable to %s", AUTO_ONLINE);
	g.sh = mmap(NULL, sizeof(*g.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g.sh == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));

	nt_tap_plan(2 * (ADD_CHECKS + NPOL * POL_CHECKS) + OFFLINE_CHECKS);
	nt_tap_diag("memory nodes %s, %d free DIMM slot(s); grow node %d; new node %d",
		    fmt(&g.t.memory, nodes, sizeof(nodes)), slots, k_grow, k_new);
	snprintf(reason, sizeof(reason), "phase grow node %d", k_grow);
	run_holders(reason, k_grow, k_grow, true, NULL);
	offline_phase(k_grow);
	if (k_new < 0)
		snprintf(reason, sizeof(reason), "no online node without memory here: needs a topology with a memory-less node and a free DIMM slot");
	else if (slots < 2)
		snprintf(reason, sizeof(reason), "one DIMM slot only, used by the grow phase");
	run_holders(k_new < 0 ? "phase new node" : "phase new node", k_new, k_new,
		    k_new >= 0 && slots >= 2, reason);
	return nt_tap_finish();
}
