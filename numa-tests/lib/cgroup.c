// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "sysfile.h"

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

int nt_cpuset_enable(bool *was_on)
{
	char path[128];
	bool there;
	int err;

	err = root_lists("cgroup.controllers", "cpuset", &there);
	if (err)
		return err;
	if (!there)
		return -ENODEV;
	err = root_lists("cgroup.subtree_control", "cpuset", was_on);
	if (err || *was_on)
		return err;
	group_file(NULL, "cgroup.subtree_control", path, sizeof(path));
	return nt_file_write(path, "+cpuset");
}

int nt_cpuset_disable(void)
{
	char path[128];

	group_file(NULL, "cgroup.subtree_control", path, sizeof(path));
	return nt_file_write(path, "-cpuset");
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
