// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "harness.h"
#include "sysfile.h"
#include "tap.h"
#include "values.h"

static void group_file(const char *name, const char *file, char *path, size_t len)
{
	if (name)
		snprintf(path, len, NT_CGROUP_ROOT "/%s/%s", name, file);
	else
		snprintf(path, len, NT_CGROUP_ROOT "/%s", file);
}

/* Whether the space-separated list in file of the root names word. */
static int root_lists(const char *file, const char *word, bool *listed)
{
	char path[128], line[512], *tok, *save;
	int err;

	group_file(NULL, file, path, sizeof(path));
	err = nt_file_read_line(path, line, sizeof(line));
	if (err == -ENODATA) {
		*listed = false;
		return 0;
	}
	if (err)
		return err;
	*listed = false;
	for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		*listed |= !strcmp(tok, word);
	return 0;
}

int nt_controller_enable(const char *controller, bool *was_on)
{
	char path[128], word[32];
	bool there;
	int err;

	err = root_lists("cgroup.controllers", controller, &there);
	if (err)
		return err;
	if (!there)
		return -ENODEV;
	err = root_lists("cgroup.subtree_control", controller, was_on);
	if (err || *was_on)
		return err;
	group_file(NULL, "cgroup.subtree_control", path, sizeof(path));
	snprintf(word, sizeof(word), "+%s", controller);
	return nt_file_write(path, word);
}

int nt_controller_disable(const char *controller)
{
	char path[128], word[32];

	group_file(NULL, "cgroup.subtree_control", path, sizeof(path));
	snprintf(word, sizeof(word), "-%s", controller);
	return nt_file_write(path, word);
}

int nt_cpuset_enable(bool *was_on)
{
	return nt_controller_enable("cpuset", was_on);
}

int nt_cpuset_disable(void)
{
	return nt_controller_disable("cpuset");
}

static int write_group(const char *name, const char *file, const char *text)
{
	char path[256];

	group_file(name, file, path, sizeof(path));
	return nt_file_write(path, text);
}

/* "0-1,3" */
static void format_cpus(const cpu_set_t *cpus, char *buf, size_t len)
{
	size_t used = 0;
	int cpu, last;

	buf[0] = '\0';
	for (cpu = 0; cpu < CPU_SETSIZE && used < len; cpu++) {
		if (!CPU_ISSET(cpu, cpus))
			continue;
		for (last = cpu; last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, cpus); last++)
			;
		if (last == cpu)
			used += snprintf(buf + used, len - used, "%s%d", used ? "," : "", cpu);
		else
			used += snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", cpu,
					 last);
		cpu = last;
	}
}

int nt_cpuset_set_mems(const char *name, const struct nt_nodemask *mems)
{
	char list[256];

	nt_mask_format(mems, list, sizeof(list));
	return write_group(name, "cpuset.mems", list);
}

int nt_cpuset_create(const char *name, const cpu_set_t *cpus, const struct nt_nodemask *mems)
{
	char path[256], list[512];
	int err;

	group_file(name, "", path, sizeof(path));
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	format_cpus(cpus, list, sizeof(list));
	err = write_group(name, "cpuset.cpus", list);
	return err ? err : nt_cpuset_set_mems(name, mems);
}

int nt_cgroup_enter(const char *name)
{
	return write_group(name, "cgroup.procs", "0");
}

int nt_cgroup_remove(const char *name)
{
	char path[256];

	group_file(name, "", path, sizeof(path));
	return rmdir(path) ? -errno : 0;
}

int nt_cgroup_create(const char *name)
{
	char path[256];

	group_file(name, "", path, sizeof(path));
	return mkdir(path, 0755) && errno != EEXIST ? -errno : 0;
}

int nt_cgroup_flush(const char *name)
{
	char path[256], line[256];

	group_file(name, "cpu.stat", path, sizeof(path));
	return nt_file_read_line(path, line, sizeof(line));
}

int nt_cgroup_stat(const char *name, const char *file, const char *key, long *val)
{
	char path[256];

	group_file(name, file, path, sizeof(path));
	return nt_read_values(path, &key, val, 1);
}

int nt_cgroup_numa_stat(const char *name, const char *key, long per_node[NT_MAX_NODES])
{
	char path[256], *line = NULL, *tok, *save;
	size_t cap = 0, klen = strlen(key);
	int node, err = -ENOENT;
	long v;
	FILE *f;

	group_file(name, "memory.numa_stat", path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		return -errno;
	memset(per_node, 0, NT_MAX_NODES * sizeof(per_node[0]));
	/* "unevictable N0=4096 N1=0 ..." */
	while (err == -ENOENT && getline(&line, &cap, f) > 0) {
		if (strncmp(line, key, klen) || line[klen] != ' ')
			continue;
		err = 0;
		for (tok = strtok_r(line + klen, " \n", &save); tok && !err;
		     tok = strtok_r(NULL, " \n", &save)) {
			if (sscanf(tok, "N%d=%ld", &node, &v) != 2 || node < 0 ||
			    node >= NT_MAX_NODES)
				err = -EINVAL;
			else
				per_node[node] = v;
		}
	}
	free(line);
	fclose(f);
	return err;
}

/* What a test that needs memcgs does when enabling the controller failed. */
static void memcg_enable_failed(int err)
{
	if (err == -ENODEV)
		nt_tap_skip_all("no memory controller in %s/cgroup.controllers (cgroup v2 with CONFIG_MEMCG)",
				NT_CGROUP_ROOT);
	if (err)
		nt_tap_bail("enabling the memory controller: %s", strerror(-err));
}

void nt_memcg_require(bool *was_on)
{
	memcg_enable_failed(nt_controller_enable("memory", was_on));
}

/* The scratch groups of this process, for nt_scratch_end(). */
static struct {
	char name[NT_SCRATCH_MAX][64];
	int made;
	bool started;		/* the cleanup is registered */
	bool was_on;		/* the memory controller was on for the root's children */
} scratch = { .was_on = true };

void nt_scratch_end(void)
{
	int err;

	/* A group with a process in it cannot be removed. */
	if (scratch.made) {
		err = nt_cgroup_enter(NULL);
		if (err)
			fprintf(stderr, "numa-tests: moving back to the root cgroup: %s\n",
				strerror(-err));
	}
	while (scratch.made > 0) {
		const char *name = scratch.name[--scratch.made];

		err = nt_cgroup_remove(name);
		if (err)
			fprintf(stderr, "numa-tests: removing cgroup %s: %s\n", name,
				strerror(-err));
	}
	if (!scratch.was_on) {
		err = nt_controller_disable("memory");
		if (err)
			fprintf(stderr, "numa-tests: turning the memory controller off again: %s\n",
				strerror(-err));
	}
	scratch.was_on = true;
}

bool nt_scratch_start(bool required)
{
	int err;

	if (scratch.started)
		return true;
	err = nt_controller_enable("memory", &scratch.was_on);
	if (err == -ENODEV && !required)
		return false;
	memcg_enable_failed(err);
	nt_cleanup_push(nt_scratch_end);
	scratch.started = true;
	return true;
}

const char *nt_scratch_create(const char *fmt, ...)
{
	va_list ap;
	char *name;
	int err, n;

	/* Without the cleanup registered the group would outlive the test. */
	if (!scratch.started)
		nt_tap_bail("%s() before nt_scratch_start()", __func__);
	if (scratch.made == NT_SCRATCH_MAX)
		nt_tap_bail("more than %d scratch cgroups", NT_SCRATCH_MAX);
	name = scratch.name[scratch.made];
	va_start(ap, fmt);
	n = vsnprintf(name, sizeof(scratch.name[0]), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(scratch.name[0]))
		nt_tap_bail("a scratch cgroup's name is too long");
	err = nt_cgroup_create(name);
	if (err)
		nt_tap_bail("creating cgroup %s: %s", name, strerror(-err));
	scratch.made++;
	return name;
}

void nt_scratch_enter(const char *name)
{
	int err = nt_cgroup_enter(name);

	if (err)
		nt_tap_bail("moving into cgroup %s: %s", name ? name : "/", strerror(-err));
}
