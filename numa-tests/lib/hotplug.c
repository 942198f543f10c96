// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotplug.h"
#include "sysfile.h"

#define MEMORY_SYSFS	"/sys/devices/system/memory"
#define CPU_SYSFS	"/sys/devices/system/cpu"
#define ACPI_DEVICES	"/sys/bus/acpi/devices"

int nt_hostctl(const char *request, char *reply, size_t len, int timeout_s)
{
	struct pollfd p = { .events = POLLIN };
	size_t used = 0;
	char line[256];
	int n, err = 0;

	if (len < 2 || snprintf(line, sizeof(line), "%s\n", request) >= (int)sizeof(line))
		return -EINVAL;
	p.fd = open(NT_HOSTCTL_PORT, O_RDWR | O_CLOEXEC);
	if (p.fd < 0)
		return -errno;
	if (write(p.fd, line, strlen(line)) != (ssize_t)strlen(line))
		err = -EIO;
	/* One reply line; the host answers each request at once. */
	while (!err && (!used || reply[used - 1] != '\n')) {
		n = poll(&p, 1, timeout_s * 1000);
		if (n <= 0) {
			err = n ? -errno : -ETIMEDOUT;
			break;
		}
		n = read(p.fd, reply + used, len - 1 - used);
		if (n <= 0)
			err = n ? -errno : -EPIPE;
		else if ((used += n) == len - 1 && reply[used - 1] != '\n')
			err = -EOVERFLOW;
		reply[used] = '\0';
	}
	close(p.fd);
	if (!err)
		reply[strcspn(reply, "\n")] = '\0';
	return err;
}

int nt_free_dimm_slots(void)
{
	char path[300], sta[32];
	struct dirent *d;
	int free = 0;
	DIR *dir;

	dir = opendir(ACPI_DEVICES);
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "PNP0C80:", 8))
			continue;
		snprintf(path, sizeof(path), ACPI_DEVICES "/%s/status", d->d_name);
		if (!nt_file_read_line(path, sta, sizeof(sta)) && atoi(sta) == 0)
			free++;
	}
	closedir(dir);
	return free;
}

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

int nt_blocks_read(struct nt_blocks *b)
{
	char line[64];
	struct dirent *d;
	unsigned long id;
	DIR *dir;
	int err;

	memset(b, 0, sizeof(*b));
	err = nt_file_read_line(MEMORY_SYSFS "/block_size_bytes", line, sizeof(line));
	if (err)
		return err;
	b->size = strtoul(line, NULL, 16);
	if (!b->size)
		return -EINVAL;
	dir = opendir(MEMORY_SYSFS);
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		if (sscanf(d->d_name, "memory%lu", &id) != 1)
			continue;
		if (b->n == NT_MAX_BLOCKS) {
			err = -E2BIG;
			break;
		}
		b->id[b->n++] = id;
	}
	closedir(dir);
	qsort(b->id, b->n, sizeof(b->id[0]), cmp_ulong);
	return err;
}

bool nt_blocks_has(const struct nt_blocks *b, unsigned long id)
{
	return bsearch(&id, b->id, b->n, sizeof(b->id[0]), cmp_ulong) != NULL;
}

void nt_blocks_new(const struct nt_blocks *before, const struct nt_blocks *after,
		   struct nt_blocks *added)
{
	int i;

	added->size = after->size;
	added->n = 0;
	for (i = 0; i < after->n; i++)
		if (!nt_blocks_has(before, after->id[i]))
			added->id[added->n++] = after->id[i];
}

int nt_block_node(unsigned long id)
{
	char path[128];
	struct dirent *d;
	int node = -ENOENT;
	DIR *dir;

	snprintf(path, sizeof(path), MEMORY_SYSFS "/memory%lu", id);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((d = readdir(dir)))
		if (sscanf(d->d_name, "node%d", &node) == 1)
			break;
	closedir(dir);
	return node;
}

int nt_block_attr(unsigned long id, const char *file, char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), MEMORY_SYSFS "/memory%lu/%s", id, file);
	return nt_file_read_line(path, buf, len);
}

int nt_block_set_state(unsigned long id, const char *state)
{
	char path[128];

	snprintf(path, sizeof(path), MEMORY_SYSFS "/memory%lu/state", id);
	return nt_file_write(path, state);
}

static void cpu_online_path(int cpu, char *path, size_t len)
{
	snprintf(path, len, CPU_SYSFS "/cpu%d/online", cpu);
}

bool nt_cpu_hotpluggable(int cpu)
{
	char path[96];

	cpu_online_path(cpu, path, sizeof(path));
	return access(path, W_OK) == 0;
}

int nt_cpu_online(int cpu)
{
	char path[96], line[16];
	int err;

	cpu_online_path(cpu, path, sizeof(path));
	err = nt_file_read_line(path, line, sizeof(line));
	return err ? err : line[0] == '1';
}

int nt_cpu_set_online(int cpu, bool online)
{
	char path[96];

	cpu_online_path(cpu, path, sizeof(path));
	return nt_file_write(path, online ? "1" : "0");
}

#define PF_KTHREAD	0x00200000	/* include/linux/sched.h */

/* Whether task tid is a kernel thread: flags, field 9 of its stat line. */
static bool is_kthread(pid_t tid)
{
	char path[64], line[512], *p;
	unsigned long flags;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	err = nt_file_read_line(path, line, sizeof(line));
	p = err ? NULL : strrchr(line, ')');
	/* ") S ppid pgrp session tty_nr tpgid flags" */
	if (!p || sscanf(p, ") %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return true;	/* gone, or unreadable: leave it alone */
	return flags & PF_KTHREAD;
}

/* Takes cpu out of task tid's affinity; true when it changed it. */
static bool vacate_task(pid_t tid, int cpu, struct nt_vacated *v)
{
	cpu_set_t mask, narrow;

	if (v->n == NT_MAX_VACATED || is_kthread(tid) ||
	    sched_getaffinity(tid, sizeof(mask), &mask) || !CPU_ISSET(cpu, &mask) ||
	    CPU_COUNT(&mask) < 2)
		return false;
	narrow = mask;
	CPU_CLR(cpu, &narrow);
	/* EINVAL: a cpuset confines it to cpu; ESRCH: it is gone. Leave both. */
	if (sched_setaffinity(tid, sizeof(narrow), &narrow))
		return false;
	v->tid[v->n] = tid;
	v->mask[v->n++] = mask;
	return true;
}

int nt_cpu_vacate(int cpu, struct nt_vacated *v)
{
	struct dirent *pe, *te;
	char path[64];
	DIR *proc, *tasks;
	pid_t pid, tid;

	v->n = 0;
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while ((pe = readdir(proc))) {
		pid = atoi(pe->d_name);
		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		tasks = opendir(path);
		if (!tasks)
			continue;	/* gone meanwhile */
		while ((te = readdir(tasks))) {
			tid = atoi(te->d_name);
			if (tid > 0)
				vacate_task(tid, cpu, v);
		}
		closedir(tasks);
	}
	closedir(proc);
	return v->n;
}

void nt_cpu_restore(struct nt_vacated *v)
{
	int i;

	for (i = 0; i < v->n; i++)
		sched_setaffinity(v->tid[i], sizeof(v->mask[i]), &v->mask[i]);
	v->n = 0;
}
