/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Memory and CPU hotplug from inside a machine: memory blocks and CPUs in
 * sysfs (Documentation/admin-guide/mm/memory-hotplug.rst,
 * Documentation/core-api/cpu_hotplug.rst), the frames behind user pages, and
 * the numa-matrix host control channel that hot-adds DIMMs.
 *
 * The control channel is a virtio serial port, /dev/virtio-ports/nm.ctl,
 * that run-guest serves: one request line ("add-memory NODE SIZE", SIZE a
 * multiple of 128M), one reply line ("ok ..." or "error ..."). On a machine
 * without it, nt_hostctl() says so with -ENOENT.
 */
#ifndef NT_HOTPLUG_H
#define NT_HOTPLUG_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pageflags.h"
#include <sys/types.h>

#define NT_HOSTCTL_PORT	"/dev/virtio-ports/nm.ctl"

/* Sends one request, waits up to timeout_s for the reply line (without '\n'). 0 or -errno. */
int nt_hostctl(const char *request, char *reply, size_t len, int timeout_s);

/*
 * Empty DIMM slots an ACPI machine offers for memory hot-add: the ACPI
 * memory devices (PNP0C80) whose _STA is 0. -errno when ACPI is not in sysfs.
 */
int nt_free_dimm_slots(void);

/* The memory blocks present (/sys/devices/system/memory/memoryN), ascending. */
#define NT_MAX_BLOCKS	1024
struct nt_blocks {
	unsigned long size;		/* block_size_bytes */
	int n;
	unsigned long id[NT_MAX_BLOCKS];
};

int nt_blocks_read(struct nt_blocks *b);
bool nt_blocks_has(const struct nt_blocks *b, unsigned long id);
/* The blocks of after that are not in before. */
void nt_blocks_new(const struct nt_blocks *before, const struct nt_blocks *after,
		   struct nt_blocks *added);
/* A block's node (its nodeN link), or -errno. */
int nt_block_node(unsigned long id);
/* One word of memoryN/<file> ("online", "Movable", ...): 0 or -errno. */
int nt_block_attr(unsigned long id, const char *file, char *buf, size_t len);
/* Writes state ("offline", "online_movable") to memoryN/state: 0 or -errno. */
int nt_block_set_state(unsigned long id, const char *state);

/* The memory block holding frame pfn of pages of page_size, for blocks of block_size bytes. */
static inline unsigned long nt_pfn_block(uint64_t pfn, size_t page_size, unsigned long block_size)
{
	return pfn * page_size / block_size;
}

/* Whether cpu can be taken offline here (cpuN/online exists). */
bool nt_cpu_hotpluggable(int cpu);
/* 1 online, 0 offline, -errno. */
int nt_cpu_online(int cpu);
/* Writes 0 or 1 to cpuN/online; 0 or -errno. */
int nt_cpu_set_online(int cpu, bool online);

/*
 * Keeping a CPU to oneself: any task that runs on a CPU can drain that CPU's
 * per-CPU batches (an munmap() calls lru_add_drain()), so a test that leaves
 * pages in a CPU's batch on purpose first moves every other user-space task
 * off it. nt_cpu_vacate() takes cpu out of the affinity of every task but
 * the caller's own threads and kernel threads (tasks allowed only that CPU
 * keep it) and records what it changed; nt_cpu_restore() puts the recorded
 * affinities back (tasks gone since are ignored). Tasks forked in between
 * inherit the narrower mask. Returns the number of tasks moved, or -errno.
 */
#define NT_MAX_VACATED	512
struct nt_vacated {
	int n;
	pid_t tid[NT_MAX_VACATED];
	cpu_set_t mask[NT_MAX_VACATED];
};

int nt_cpu_vacate(int cpu, struct nt_vacated *v);
void nt_cpu_restore(struct nt_vacated *v);

#endif
