/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mlock accounting, read fresh: /proc/vmstat, per-node meminfo, VmLck.
 * NR_MLOCK and the other vmstat items sit partly in per-CPU deltas until
 * folded, so every snapshot writes /proc/sys/vm/stat_refresh first (root).
 */
#ifndef NT_COUNTERS_H
#define NT_COUNTERS_H

#include "nodemask.h"

enum nt_vmstat_item {
	NT_NR_MLOCK,		/* nr_mlock: pages mlocked now */
	NT_PGS_MLOCKED,		/* unevictable_pgs_*: events, need CONFIG_VM_EVENT_COUNTERS */
	NT_PGS_MUNLOCKED,
	NT_PGS_CLEARED,
	NT_PGS_STRANDED,
	NT_PGS_CULLED,
	NT_PGS_RESCUED,
	NT_VMSTAT_ITEMS
};

extern const char *const nt_vmstat_names[NT_VMSTAT_ITEMS];

struct nt_counters {
	long vmstat[NT_VMSTAT_ITEMS];
	long vmlck_kb;				/* VmLck of this task */
	long mlocked_kb[NT_MAX_NODES];		/* nodeN/meminfo Mlocked */
	long unevictable_kb[NT_MAX_NODES];	/* nodeN/meminfo Unevictable */
};

/* Folds the per-CPU vmstat deltas. 0 or -errno. */
int nt_stat_refresh(void);
/* One /proc/vmstat value by name; -ENOENT when the kernel has no such line. */
int nt_vmstat_read(const char *name, long *val);
/* One value (kB) of /sys/devices/system/node/node<node>/meminfo, e.g. "Mlocked". */
int nt_node_meminfo_read(int node, const char *key, long *kb);
/* VmLck of the current task, kB. */
int nt_vmlck_read(long *kb);
/*
 * Refreshes, then reads everything; per-node values for the nodes in nodes
 * (the others are 0). Any missing file or line is an error: 0 or -errno.
 */
int nt_counters_read(struct nt_counters *c, const struct nt_nodemask *nodes);
/* delta = after - before, item by item. */
void nt_counters_delta(const struct nt_counters *after, const struct nt_counters *before,
		       struct nt_counters *delta);

#endif
