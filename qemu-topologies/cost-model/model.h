/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cost model without QEMU: caches, the q35 memory layout, x86 decoding
 * of markers and atomics, parameters and modelled cycles. plugin.c feeds it
 * from QEMU's callbacks; the unit tests in tests/ feed it synthetic traces.
 * docs/cost-model.md says what every part models and where it is wrong.
 */
#ifndef CM_MODEL_H
#define CM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CM_MAX_NODES	64
#define CM_MAX_VCPUS	64
#define CM_LEVELS	3	/* L1D, L2, LLC */
#define CM_MEMORY	CM_LEVELS	/* "served by memory" in cm_hier_access() */

/* ---- caches: set-associative, true LRU, physically indexed ---- */

struct cm_cache {
	unsigned int sets;
	unsigned int ways;
	unsigned int line_shift;
	/* sets * ways entries, most recently used first; 0 = empty, else line + 1 */
	uint64_t *lines;
};

/* 0, or -EINVAL when size is not ways x line x a whole number of sets. */
int cm_cache_init(struct cm_cache *c, uint64_t size, unsigned int ways,
		  unsigned int line);
void cm_cache_free(struct cm_cache *c);
/*
 * True on a hit (the line becomes most recent); on a miss the line is
 * filled, evicting the set's least recently used line.
 */
bool cm_cache_access(struct cm_cache *c, uint64_t addr);
/* Whether the line is present, changing nothing. */
bool cm_cache_holds(const struct cm_cache *c, uint64_t addr);

/*
 * L1D, L2 and LLC of one CPU. An access looks up each level in turn and is
 * filled into every level that missed; evictions are silent (no write-back
 * cost, no back-invalidation).
 */
struct cm_hier {
	struct cm_cache level[CM_LEVELS];
};

/* The level that held the line (0 = L1D ... 2 = LLC), or CM_MEMORY. */
unsigned int cm_hier_access(struct cm_hier *h, uint64_t addr);

/* ---- guest memory layout of a q35 machine ---- */

/*
 * QEMU puts the nodes' memory backends one after the other, in node order,
 * into the machine's RAM; q35 maps RAM offsets below below_4g at the same
 * guest-physical address and the rest from 4 GiB up.
 */
struct cm_layout {
	unsigned int nr_nodes;
	uint64_t size[CM_MAX_NODES];	/* bytes; 0 for a memory-less node */
	uint64_t base[CM_MAX_NODES];	/* offset in the machine's RAM */
	uint64_t ram_size;
	uint64_t below_4g;
};

#define CM_4G	(1ULL << 32)

int cm_layout_init(struct cm_layout *l, unsigned int nr_nodes, const uint64_t *size);
/* The guest-physical address of a RAM offset. */
uint64_t cm_layout_gpa(const struct cm_layout *l, uint64_t ram_offset);
/* The node whose RAM holds a guest-physical address, or -1. */
int cm_layout_node(const struct cm_layout *l, uint64_t gpa);
/*
 * QEMU 7.2's qemu_plugin_hwaddr_phys_addr() returns, for RAM, the RAMBlock's
 * ram_addr_t offset + the offset in the block + the address of the block's
 * memory region in its container: for a node's backend, created before any
 * other RAM block, that is 2 x its RAM offset + the offset in it. Returns the
 * node and sets *gpa, or returns -1 for an address of no node (ROM, a
 * hot-added DIMM). docs/cost-model.md shows how this was checked.
 */
int cm_layout_from_qemu72(const struct cm_layout *l, uint64_t reported, uint64_t *gpa);

/* ---- x86-64 decoding at translation time ---- */

/* CM_OP_START or CM_OP_END for a marker instruction (marker.h), else 0. */
int cm_x86_marker(const uint8_t *insn, size_t len);
/* A LOCK-prefixed instruction, or xchg with a memory operand. */
bool cm_x86_atomic(const uint8_t *insn, size_t len);
/* A kernel address: the upper half of the canonical address space. */
static inline bool cm_x86_kernel(uint64_t vaddr)
{
	return vaddr >> 63;
}

/* ---- parameters ---- */

struct cm_params {
	uint64_t cache_size[CM_LEVELS];
	unsigned int cache_ways[CM_LEVELS];
	unsigned int line;
	/* cycles to get a line from L2, from the LLC, from local memory */
	unsigned int lat_l2, lat_llc, lat_mem;
	unsigned int lat_atomic;	/* cycles of a locked read-modify-write */
	unsigned int nr_nodes;
	uint64_t node_size[CM_MAX_NODES];
	unsigned int slit[CM_MAX_NODES][CM_MAX_NODES];
	unsigned int slit_nodes;	/* rows given in slit=, 0: QEMU's default */
	unsigned int nr_vcpus;
	unsigned int vcpu_node[CM_MAX_VCPUS];
	char out[4096];
	char profile[4096];	/* profile=: the instruction profile's file, or "" */
};

/* Defaults: docs/cost-model.md names the published source of each. */
void cm_params_default(struct cm_params *p);
/* Applies one "key=value" plugin argument; -EINVAL with a message in err. */
int cm_params_set(struct cm_params *p, const char *arg, char *err, size_t len);
/* Cross-checks after the last argument; -EINVAL with a message in err. */
int cm_params_check(const struct cm_params *p, char *err, size_t len);

/* ---- counts and modelled cycles ---- */

enum cm_count {
	CM_INSN_USER,
	CM_INSN_KERNEL,
	CM_ATOMICS,
	CM_LOADS,
	CM_STORES,
	CM_IO,		/* accesses to MMIO: not cached, not costed */
	CM_L1_MISS,	/* cache-line lookups that missed L1D */
	CM_L2_MISS,
	CM_LLC_MISS,
	CM_REMOTE,	/* LLC misses homed on another node than the CPU's */
	CM_UNMAPPED,	/* LLC misses of no node's RAM (ROM, DIMMs): local cost */
	CM_NR_COUNTS
};

struct cm_counts {
	uint64_t c[CM_NR_COUNTS];
	uint64_t node_miss[CM_MAX_NODES];	/* LLC misses by home node */
};

/* Accounts one cache-line lookup of a CPU on node cpu_node. */
void cm_count_line(struct cm_counts *k, struct cm_hier *h, unsigned int cpu_node,
		   uint64_t gpa, int home);
/* after - before, counter by counter. */
void cm_counts_sub(struct cm_counts *d, const struct cm_counts *after,
		   const struct cm_counts *before);
/*
 * instructions + L2 hits x lat_l2 + LLC hits x lat_llc
 *   + sum over nodes n of misses(n) x lat_mem x SLIT(cpu, n) / 10
 *   + atomics x lat_atomic, rounded down to whole cycles.
 */
uint64_t cm_cycles(const struct cm_params *p, unsigned int cpu_node,
		   const struct cm_counts *k);
/* "insns=N user=N kernel=N ... cycles=N" for a region record; its length. */
int cm_format(char *buf, size_t len, const struct cm_params *p,
	      unsigned int cpu_node, const struct cm_counts *k);

/* ---- the instruction profile of marked regions (profile.c) ---- */

struct cm_profile_slot {
	uint64_t count;		/* executions since translation */
	uint64_t start;		/* count at the open region's start marker */
	uint64_t sum;		/* executions inside closed regions */
	uint64_t vaddr;
};

/* The address of instructions counted while no slot could be allocated. */
#define CM_PROFILE_NOWHERE	UINT64_MAX

struct cm_profile {
	struct cm_profile_slot **chunks;
	size_t nr_chunks, nr_slots;
	struct cm_profile_slot sink;
	uint64_t regions, lost;
};

void cm_profile_init(struct cm_profile *p);
/*
 * A new counter for one translation of the instruction at vaddr, for an
 * inline add of 1 per execution; never NULL (out of memory: the sink's).
 */
uint64_t *cm_profile_slot(struct cm_profile *p, uint64_t vaddr);
/* At a start marker (again inside a region: starts it again). */
void cm_profile_start(struct cm_profile *p);
/* At an end marker of an open region: adds the region to the sums. */
void cm_profile_end(struct cm_profile *p);
/*
 * "# ..." header lines (regions, the sum of the counts, region_insns as
 * the caller counted them), then "ADDRESS COUNT" per address that executed
 * inside a region, ascending, address in 16 hex digits. 0, or -1.
 */
int cm_profile_write(struct cm_profile *p, FILE *f, uint64_t region_insns);
void cm_profile_free(struct cm_profile *p);

#endif
