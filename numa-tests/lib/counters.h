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

/*
 * Empties every CPU's LRU and mlock batches (pagevecs) now. mlock(), munlock(),
 * faults and unmapping queue pages on the current CPU's batch, and the
 * per-node Unevictable lists, NR_MLOCK on munlock, the culled / munlocked /
 * rescued events and PG_unevictable only change when that batch is drained.
 * munlock() drains its own CPU before returning, but munmap() and exit do
 * not: up to PAGEVEC_SIZE - 1 = 14 pages of a process that exited (or of a
 * task that moved to another CPU) stay queued, PageMlocked and counted in
 * Mlocked, until something drains that CPU. Nothing in /proc or /sys drains
 * all CPUs in 6.1 without side effects, but move_pages() with a target node
 * calls lru_cache_disable() before looking at any page, and that drains every
 * CPU's batches (mm/migrate.c do_pages_move(), mm/swap.c
 * __lru_add_drain_all()). So: a move_pages() of one page of this process to
 * the node it already is on; nothing moves. 0 or -errno.
 */
int nt_drain_all(void);
/* Folds the per-CPU vmstat deltas. 0 or -errno. */
int nt_stat_refresh(void);
/* One /proc/vmstat value by name; -ENOENT when the kernel has no such line. */
int nt_vmstat_read(const char *name, long *val);
/*
 * The kernel-series' mlock batch events (CONFIG_MLOCK_BATCH_STATS, its
 * mm/Kconfig): batches drained, base pages in them, lru_lock acquisitions
 * while draining them (one per run of pages of one lruvec).
 */
struct nt_mlock_batch {
	long drains, pages, locks;
};
/* All three in one read of /proc/vmstat: 0, -ENOENT on a kernel without them, or -errno. */
int nt_mlock_batch_read(struct nt_mlock_batch *b);
/* One value (kB) of /sys/devices/system/node/node<node>/meminfo, e.g. "Mlocked". */
int nt_node_meminfo_read(int node, const char *key, long *kb);
/* VmLck of the current task, kB. */
int nt_vmlck_read(long *kb);
/* VmLck of process pid (0: this one), kB. */
int nt_vmlck_read_pid(int pid, long *kb);
/*
 * Refreshes, then reads everything; per-node values for the nodes in nodes
 * (the others are 0). Any missing file or line is an error: 0 or -errno.
 */
int nt_counters_read(struct nt_counters *c, const struct nt_nodemask *nodes);
/*
 * Sum of one /proc/self/smaps field (kB), e.g. "Locked" or "Rss", over the
 * VMAs in [start, start + len); *vmas (may be NULL) is how many there are.
 * -EXDEV when a VMA reaches beyond the range (the sum would count pages outside
 * it), -ENOENT when no VMA is there, -errno on read errors.
 */
int nt_smaps_sum(const void *start, size_t len, const char *key, long *kb, int *vmas);
/* The same in the smaps of process pid (root reads any process's). */
int nt_smaps_sum_pid(int pid, const void *start, size_t len, const char *key, long *kb,
		     int *vmas);
/* delta = after - before, item by item. */
void nt_counters_delta(const struct nt_counters *after, const struct nt_counters *before,
		       struct nt_counters *delta);

#endif
