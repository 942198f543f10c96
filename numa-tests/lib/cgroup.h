/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup v2 (Documentation/admin-guide/cgroup-v2.rst): controllers, and
 * cpusets ("Cpuset"):
 * child groups of the root with their own cpuset.cpus and cpuset.mems, and
 * moving a process into one. The hierarchy is expected at /sys/fs/cgroup.
 *
 * Moving a task into a cpuset sets its mems_allowed to the group's effective
 * mems and its CPU affinity to the group's effective CPUs
 * (kernel/cgroup/cpuset.c cpuset_attach()), so pin a task to a CPU after
 * moving it, not before.
 */
#ifndef NT_CGROUP_H
#define NT_CGROUP_H

#include <sched.h>
#include <stdbool.h>

#include "nodemask.h"
#include "tap.h"

#define NT_CGROUP_ROOT	"/sys/fs/cgroup"

/*
 * Turns controller ("cpuset", "memory") on for the root's children
 * ("+memory" in cgroup.subtree_control). *was_on says whether it already
 * was, for nt_controller_disable(). 0, -ENODEV when the hierarchy has no
 * such controller, or -errno.
 */
int nt_controller_enable(const char *controller, bool *was_on);
/* "-controller" again (only when no child group uses it any more). 0 or -errno. */
int nt_controller_disable(const char *controller);
/*
 * nt_controller_enable("memory") for a test that needs memcgs: skips the
 * whole plan, with the reason, where there is no memory controller, and
 * bails out if it cannot be turned on.
 */
void nt_memcg_require(bool *was_on);
/*
 * Turns the cpuset controller on for the root's children ("+cpuset" in
 * cgroup.subtree_control). *was_on says whether it already was, for
 * nt_cpuset_disable(). 0, -ENODEV when the hierarchy has no cpuset
 * controller, or -errno.
 */
int nt_cpuset_enable(bool *was_on);
/* "-cpuset" again (only when no child group uses it any more). 0 or -errno. */
int nt_cpuset_disable(void);
/*
 * Creates (or reuses) the child group name of the root with the given CPUs
 * and memory nodes. 0 or -errno (what the kernel refused the values with).
 */
int nt_cpuset_create(const char *name, const cpu_set_t *cpus, const struct nt_nodemask *mems);
/* Changes the group's cpuset.mems. 0 or -errno. */
int nt_cpuset_set_mems(const char *name, const struct nt_nodemask *mems);
/* Moves the calling process into the group (NULL: back to the root). 0 or -errno. */
int nt_cgroup_enter(const char *name);
/* Removes the group (it must be empty). 0 or -errno. */
int nt_cgroup_remove(const char *name);
/* Creates (or reuses) the child group name of the root. 0 or -errno. */
int nt_cgroup_create(const char *name);
/*
 * Folds the per-CPU statistics of the group now. Reading memory.stat folds
 * them only past a threshold of updates, or every 2 s from a worker
 * (mem_cgroup_flush_stats(), mm/memcontrol.c); reading the group's cpu.stat
 * flushes every controller's per-CPU statistics of the group at once
 * (cgroup_rstat_flush()), so memory.stat read after it is exact. 0 or -errno.
 */
int nt_cgroup_flush(const char *name);
/* The value of key in the group's "key value" file (memory.stat). 0 or -errno. */
int nt_cgroup_stat(const char *name, const char *file, const char *key, long *val);
/*
 * The per-node values of key in the group's memory.numa_stat ("unevictable
 * N0=4096 N1=0"), in bytes; nodes not listed are 0. 0, -ENOENT, or -errno.
 */
int nt_cgroup_numa_stat(const char *name, const char *key, long per_node[NT_MAX_NODES]);

/*
 * Scratch memory cgroups: child groups of the root that a test makes for
 * itself. They go again whichever way the test ends (a cleanup of
 * lib/harness.h), and the memory controller is turned off again if the test
 * turned it on, so the next test finds the hierarchy as this one did.
 */
#define NT_SCRATCH_MAX	4	/* groups per test */

/*
 * Turns the memory controller on for the scratch groups and registers their
 * cleanup. Where there is no memory controller: with required, skips the
 * whole plan (nt_memcg_require()); without, returns false. Bails out on any
 * other error. True when scratch groups can be made.
 */
bool nt_scratch_start(bool required);
/*
 * Creates (or reuses) the child group of the root named by fmt and
 * remembers it for the cleanup; bails out if it cannot. Returns the name,
 * valid until the test ends.
 */
const char *nt_scratch_create(const char *fmt, ...) NT_PRINTF(1, 2);
/* nt_cgroup_enter() of a scratch group (NULL: the root), bailing out on failure. */
void nt_scratch_enter(const char *name);
/*
 * Puts the calling process back in the root, removes every scratch group,
 * last made first, and turns the memory controller off if
 * nt_scratch_start() turned it on; says on stderr what it could not undo.
 * The cleanup does this at exit; calling it earlier is harmless.
 */
void nt_scratch_end(void);

#endif
