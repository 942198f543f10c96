// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "counters.h"
#include "tap.h"
#include "values.h"

#define STAT_REFRESH	"/proc/sys/vm/stat_refresh"

const char *const nt_vmstat_names[NT_VMSTAT_ITEMS] = {
	[NT_NR_MLOCK] = "nr_mlock",
	[NT_PGS_MLOCKED] = "unevictable_pgs_mlocked",
	[NT_PGS_MUNLOCKED] = "unevictable_pgs_munlocked",
	[NT_PGS_CLEARED] = "unevictable_pgs_cleared",
	[NT_PGS_STRANDED] = "unevictable_pgs_stranded",
	[NT_PGS_CULLED] = "unevictable_pgs_culled",
	[NT_PGS_RESCUED] = "unevictable_pgs_rescued",
};

int nt_stat_refresh(void)
{
	int fd, err = 0;

	fd = open(STAT_REFRESH, O_WRONLY);
	if (fd < 0)
		err = -errno;
	else if (write(fd, "1", 1) != 1)
		err = -errno;
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	if (err)
		nt_tap_diag("cannot write %s: %s", STAT_REFRESH, strerror(-err));
	return err;
}

int nt_vmstat_read(const char *name, long *val)
{
	return nt_read_values("/proc/vmstat", &name, val, 1);
}

int nt_mlock_batch_read(struct nt_mlock_batch *b)
{
	static const char *const names[] = {
		"mlock_batch_drains", "mlock_batch_pages", "mlock_batch_locks",
	};
	long v[3];
	int err = nt_read_values("/proc/vmstat", names, v, 3);

	if (err)
		return err;
	b->drains = v[0];
	b->pages = v[1];
	b->locks = v[2];
	return 0;
}

static void meminfo_path(int node, char *path, size_t len)
{
	snprintf(path, len, "/sys/devices/system/node/node%d/meminfo", node);
}

/* Lines of nodeN/meminfo start with "Node N ". */
static void meminfo_key(int node, const char *key, char *buf, size_t len)
{
	snprintf(buf, len, "Node %d %s", node, key);
}

int nt_node_meminfo_read(int node, const char *key, long *kb)
{
	char path[64], line_key[64];
	const char *k = line_key;

	meminfo_path(node, path, sizeof(path));
	meminfo_key(node, key, line_key, sizeof(line_key));
	return nt_read_values(path, &k, kb, 1);
}

int nt_vmlck_read(long *kb)
{
	return nt_vmlck_read_pid(0, kb);
}

int nt_vmlck_read_pid(int pid, long *kb)
{
	const char *key = "VmLck";
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	return nt_read_values(path, &key, kb, 1);
}

/* Mlocked and Unevictable of one node, in one read of its meminfo. */
static int node_read(struct nt_counters *c, int node)
{
	char path[64], mlocked[32], unevictable[32];
	const char *keys[] = { mlocked, unevictable };
	long vals[2];
	int err;

	meminfo_path(node, path, sizeof(path));
	meminfo_key(node, "Mlocked", mlocked, sizeof(mlocked));
	meminfo_key(node, "Unevictable", unevictable, sizeof(unevictable));
	err = nt_read_values(path, keys, vals, 2);
	if (err)
		return err;
	c->mlocked_kb[node] = vals[0];
	c->unevictable_kb[node] = vals[1];
	return 0;
}

int nt_counters_read(struct nt_counters *c, const struct nt_nodemask *nodes)
{
	int node, err;

	memset(c, 0, sizeof(*c));
	err = nt_stat_refresh();
	if (!err)
		err = nt_read_values("/proc/vmstat", nt_vmstat_names, c->vmstat, NT_VMSTAT_ITEMS);
	if (!err)
		err = nt_vmlck_read(&c->vmlck_kb);
	for (node = nt_mask_next(nodes, -1); !err && node >= 0; node = nt_mask_next(nodes, node))
		err = node_read(c, node);
	return err;
}

void nt_counters_delta(const struct nt_counters *after, const struct nt_counters *before,
		       struct nt_counters *delta)
{
	int i;

	for (i = 0; i < NT_VMSTAT_ITEMS; i++)
		delta->vmstat[i] = after->vmstat[i] - before->vmstat[i];
	delta->vmlck_kb = after->vmlck_kb - before->vmlck_kb;
	for (i = 0; i < NT_MAX_NODES; i++) {
		delta->mlocked_kb[i] = after->mlocked_kb[i] - before->mlocked_kb[i];
		delta->unevictable_kb[i] = after->unevictable_kb[i] - before->unevictable_kb[i];
	}
}

/* A page of this process that nt_drain_all() asks to move where it already is. */
static char drain_page[4096] __attribute__((aligned(4096)));

int nt_drain_all(void)
{
	void *page = drain_page;
	int node, status;

	drain_page[0] = 1;	/* present, private to this process */
	if (syscall(SYS_move_pages, 0, 1UL, &page, NULL, &status, 0))
		return -errno;
	if (status < 0)
		return status;
	node = status;
	if (syscall(SYS_move_pages, 0, 1UL, &page, &node, &status, 0) < 0)
		return -errno;
	return 0;
}

/* "start-end perms ..." opens a VMA's block in smaps; other lines are "Key: value". */
static bool vma_line(const char *line, unsigned long *lo, unsigned long *hi)
{
	return sscanf(line, "%lx-%lx ", lo, hi) == 2 && strchr(line, '-') < strchr(line, ' ');
}

int nt_smaps_sum(const void *start, size_t len, const char *key, long *kb, int *vmas)
{
	return nt_smaps_sum_pid(0, start, len, key, kb, vmas);
}

int nt_smaps_sum_pid(int pid, const void *start, size_t len, const char *key, long *kb,
		     int *vmas)
{
	char path[64];
	unsigned long s = (uintptr_t)start, e = s + len, lo, hi;
	size_t klen = strlen(key);
	bool inside = false;
	int n = 0, err = 0;
	char *line = NULL;
	size_t cap = 0;
	long v, sum = 0;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/smaps");
	f = fopen(path, "r");
	if (!f)
		return -errno;
	/* getline(): a VMA line with a long path must not be read as two lines. */
	while (!err && getline(&line, &cap, f) > 0) {
		if (vma_line(line, &lo, &hi)) {
			inside = lo < e && hi > s;
			if (inside && (lo < s || hi > e))
				err = -EXDEV;
			n += inside;
		} else if (inside && !strncmp(line, key, klen) && line[klen] == ':') {
			if (sscanf(line + klen + 1, "%ld", &v) != 1)
				err = -EINVAL;
			sum += v;
		}
	}
	free(line);
	fclose(f);
	if (!err && !n)
		err = -ENOENT;
	if (err) {
		nt_tap_diag("%s: %s of %#lx-%#lx: %s", path, key, s, e, strerror(-err));
		return err;
	}
	*kb = sum;
	if (vmas)
		*vmas = n;
	return 0;
}
