// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
	const char *key = "VmLck";

	return nt_read_values("/proc/self/status", &key, kb, 1);
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
