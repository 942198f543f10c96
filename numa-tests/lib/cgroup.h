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

#endif
