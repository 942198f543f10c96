/* SPDX-License-Identifier: GPL-2.0 */
/* The machine's nodes: which exist, which have memory, their CPUs; running on them. */
#ifndef NT_NODES_H
#define NT_NODES_H

#include <sched.h>

#include "expect.h"
#include "nodemask.h"

struct nt_topology {
	struct nt_nodemask online;	/* /sys/devices/system/node/online */
	struct nt_nodemask memory;	/* has_memory: nodes pages can be placed on */
	struct nt_nodemask allowed;	/* memory nodes this task's cpuset allows */
};

/* Needs libnuma to be usable (numa_available() >= 0). 0 or -errno. */
int nt_topology_read(struct nt_topology *t);
/* CPUs of node (all of them, not only those this task may use): count, or -errno. */
int nt_node_cpus(int node, cpu_set_t *cpus);
/*
 * The first node this task may allocate from that also has CPUs: where a
 * task must run for its local node to have memory. -1 when there is none.
 */
int nt_memory_node_with_cpus(const struct nt_topology *t);
/* Free memory of node in bytes, from its meminfo. 0 or -errno. */
int nt_node_free(int node, long long *bytes);
/*
 * Runs the current task on those of node's CPUs it may use, saving its
 * affinity in saved: 0, -ENODEV when there are none, or -errno.
 */
int nt_run_on_node(int node, cpu_set_t *saved);
/*
 * Pins the current task to one CPU: of node when node >= 0 has one the task
 * may use, else the one it runs on. Saves its affinity. The CPU, or -errno.
 */
int nt_pin_cpu(int node, cpu_set_t *saved);
int nt_affinity_restore(const cpu_set_t *saved);
/*
 * The first two CPUs this task may run on, for tests that race two CPUs:
 * 0, -ENODEV when it may run on fewer than two, or -errno.
 */
int nt_two_cpus(int *a, int *b);
/* Pins the current task to cpu. 0 or -errno. */
int nt_run_on_cpu(int cpu);
/*
 * The machine's SLIT distances between online nodes, read once from
 * /sys/devices/system/node/nodeN/distance; NULL when they cannot be read.
 */
const struct nt_distances *nt_distances(void);

#endif
