/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup v2 cpusets (Documentation/admin-guide/cgroup-v2.rst, "Cpuset"):
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

#endif
