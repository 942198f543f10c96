// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <string.h>

#include "nodes.h"
#include "tap.h"

#define NODE_SYSFS	"/sys/devices/system/node"

static int read_mask(const char *path, struct nt_nodemask *m)
{
	char buf[1024];
	FILE *f;
	int err;

	f = fopen(path, "r");
	if (!f)
		return -errno;
	err = fgets(buf, sizeof(buf), f) ? nt_mask_parse(buf, m) : -EIO;
	fclose(f);
	if (err)
		nt_tap_diag("cannot read node list %s: %s", path, strerror(-err));
	return err;
}

static int mems_allowed(struct nt_nodemask *m)
{
	struct bitmask *bm = numa_get_mems_allowed();
	unsigned int node;

	if (!bm)
		return -ENOMEM;
	nt_mask_clear(m);
	for (node = 0; node < bm->size; node++) {
		if (!numa_bitmask_isbitset(bm, node))
			continue;
		if (node >= NT_MAX_NODES) {
			numa_bitmask_free(bm);
			return -ERANGE;
		}
		nt_mask_set(m, node);
	}
	numa_bitmask_free(bm);
	return 0;
}

int nt_topology_read(struct nt_topology *t)
{
	struct nt_nodemask allowed;
	int err;

	err = read_mask(NODE_SYSFS "/online", &t->online);
	if (!err)
		err = read_mask(NODE_SYSFS "/has_memory", &t->memory);
	if (!err)
		err = mems_allowed(&allowed);
	if (!err)
		nt_mask_and(&t->allowed, &t->memory, &allowed);
	return err;
}

int nt_node_cpus(int node, cpu_set_t *cpus)
{
	struct bitmask *bm = numa_allocate_cpumask();
	unsigned int cpu;
	int err;

	if (!bm)
		return -ENOMEM;
	CPU_ZERO(cpus);
	err = numa_node_to_cpus(node, bm) ? -errno : 0;
	for (cpu = 0; !err && cpu < bm->size; cpu++) {
		if (!numa_bitmask_isbitset(bm, cpu))
			continue;
		if (cpu >= CPU_SETSIZE)
			err = -ERANGE;
		else
			CPU_SET(cpu, cpus);
	}
	numa_bitmask_free(bm);
	return err ? err : CPU_COUNT(cpus);
}

int nt_memory_node_with_cpus(const struct nt_topology *t)
{
	cpu_set_t cpus;
	int node;

	nt_mask_for_each(node, &t->allowed)
		if (nt_node_cpus(node, &cpus) > 0)
			return node;
	return -1;
}

int nt_node_free(int node, long long *bytes)
{
	if (numa_node_size64(node, bytes) < 0)
		return -EIO;
	return 0;
}

/* node's CPUs that the task's current affinity allows, saving that affinity. */
static int usable_cpus(int node, cpu_set_t *usable, cpu_set_t *saved)
{
	cpu_set_t cpus;
	int n;

	if (sched_getaffinity(0, sizeof(*saved), saved))
		return -errno;
	if (node < 0) {
		CPU_ZERO(usable);
		return 0;
	}
	n = nt_node_cpus(node, &cpus);
	if (n < 0)
		return n;
	CPU_AND(usable, &cpus, saved);
	return CPU_COUNT(usable);
}

static int set_affinity(const cpu_set_t *cpus)
{
	return sched_setaffinity(0, sizeof(*cpus), cpus) ? -errno : 0;
}

int nt_run_on_node(int node, cpu_set_t *saved)
{
	cpu_set_t usable;
	int n;

	n = usable_cpus(node, &usable, saved);
	if (n <= 0)
		return n ? n : -ENODEV;
	return set_affinity(&usable);
}

static int first_cpu(const cpu_set_t *set)
{
	int cpu;

	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, set))
			return cpu;
	return -ENODEV;
}

int nt_pin_cpu(int node, cpu_set_t *saved)
{
	cpu_set_t usable, one;
	int n, cpu, err;

	n = usable_cpus(node, &usable, saved);
	if (n < 0)
		return n;
	cpu = n ? first_cpu(&usable) : sched_getcpu();
	if (cpu < 0)
		return n ? cpu : -errno;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	err = set_affinity(&one);
	return err ? err : cpu;
}

int nt_affinity_restore(const cpu_set_t *saved)
{
	return set_affinity(saved);
}

int nt_two_cpus(int *a, int *b)
{
	cpu_set_t mine;
	int cpu, n = 0;

	if (sched_getaffinity(0, sizeof(mine), &mine))
		return -errno;
	for (cpu = 0; cpu < CPU_SETSIZE && n < 2; cpu++) {
		if (!CPU_ISSET(cpu, &mine))
			continue;
		*(n ? b : a) = cpu;
		n++;
	}
	return n == 2 ? 0 : -ENODEV;
}

int nt_run_on_cpu(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return set_affinity(&one);
}

/* node's row of the SLIT: "10 20 20 20" in nodeN/distance, one value per online node. */
static int distance_row(int node, const struct nt_nodemask *online, struct nt_distances *d)
{
	char path[96];
	int to, v, err = 0;
	FILE *f;

	snprintf(path, sizeof(path), NODE_SYSFS "/node%d/distance", node);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	nt_mask_for_each(to, online) {
		if (fscanf(f, "%d", &v) != 1 || v <= 0) {
			err = -EINVAL;
			break;
		}
		d->d[node][to] = v;
	}
	fclose(f);
	return err;
}

const struct nt_distances *nt_distances(void)
{
	static struct nt_distances d;
	static int state;	/* 0 not read, 1 read, -1 unreadable */
	struct nt_nodemask online;
	int node;

	if (state)
		return state > 0 ? &d : NULL;
	state = -1;
	if (read_mask(NODE_SYSFS "/online", &online))
		return NULL;
	nt_mask_for_each(node, &online)
		if (distance_row(node, &online, &d)) {
			memset(&d, 0, sizeof(d));
			return NULL;
		}
	state = 1;
	return &d;
}
