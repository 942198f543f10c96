/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tests of the batched LRU paths of mm (lru_add, lazyfree, deactivate,
 * reclaim_pages(), do_pages_move()): each runs the same operation on an
 * area in two placements, named the same on every topology.
 *
 * Bound: every page on one node, so a batch is one run of one lruvec.
 * Interleaved: page by page over every memory node the task may use, so
 * every batch changes lruvec (relocks) at each page, and work split into
 * same-node runs gets runs of one page. With one node both are the same.
 *
 * What a page's share of a per-node counter is comes from where its pages
 * are, read with move_pages() in query mode, not from the policy: the
 * policy only has to make the placement bound or interleaved.
 */
#ifndef NT_LRUPATH_H
#define NT_LRUPATH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "area.h"
#include "expect.h"
#include "nodes.h"

enum nt_place { NT_PLACE_BOUND, NT_PLACE_INTERLEAVED, NT_PLACES };

extern const char *const nt_place_names[NT_PLACES];	/* "bound", "interleaved" */

/*
 * The policy of a placement: MPOL_BIND to the first memory node with CPUs
 * (node, which the test should run on so local and bound agree), or
 * MPOL_INTERLEAVE over every memory node the task may use.
 */
void nt_place_policy(const struct nt_topology *t, enum nt_place p, int node,
		     struct nt_policy *pol);

/*
 * Where each of npages pages of page_size from start is (status[], as
 * nt_pages_nodes()), and how many are on each node. Returns the number of
 * pages not on any node (absent, or an error for the page), or -errno.
 */
long nt_pages_per_node(const void *start, size_t npages, size_t page_size, int *status,
		       long counts[NT_MAX_NODES]);


/* Node changes between consecutive pages of status (for a diagnostic). */
size_t nt_node_changes(const int *status, size_t npages);

/*
 * Pages of the range whose kpageflags masked by mask are not want (absent
 * pages count), naming the first few as what. -errno when the flags could
 * not be read.
 */
long nt_pages_flags_not(const void *start, size_t npages, size_t page_size, uint64_t mask,
			uint64_t want, const char *what);

/*
 * Whether the multi-gen LRU runs (/sys/kernel/mm/lru_gen/enabled, bit 0;
 * admin-guide/mm/multigen_lru.rst): then pages age by generation, the
 * active and inactive lists are only a view of generations, and KPF_ACTIVE
 * says nothing about what an operation did.
 */
bool nt_lru_gen_enabled(void);

/* What every test of a batched path starts from. */
struct nt_lru_test {
	struct nt_topology t;
	const char *memcg;	/* the test's scratch memory cgroup */
	size_t len;		/* the area's size (-s SIZE) */
	int home;		/* the bound node, and the node of the CPU the test runs on */
	int cpu;		/* the one CPU it runs on */
	bool lru_gen;		/* nt_lru_gen_enabled() */
};

/*
 * nt_lk_start() (root, libnuma, the topology, -s SIZE with default def),
 * the home node (the plan skipped where no memory node has CPUs), the task
 * moved into a scratch memory cgroup of its own (the plan skipped without
 * the memory controller), and pinned to one CPU of the home node: the
 * per-CPU batches the test fills are that CPU's, and the ones an operation
 * drains before it starts (its own CPU's only) hold every page it queued.
 *
 * The cgroup is what makes the counts exact: its memory.numa_stat counts
 * only the pages charged to it, the test's, where node meminfo moves with
 * every process of the machine (the test runner reading the test's output
 * allocates memory while the test counts).
 */
void nt_lru_start(struct nt_lru_test *lt, int argc, char **argv, size_t def);

/* Plans checks subtests for each placement and says what the test runs on. */
void nt_lru_plan(const struct nt_lru_test *lt, unsigned int checks);

/*
 * A private anonymous area of lt->len in base pages, mbind()ed to placement
 * p and written with nt_area_fill(seed); bails out unless every page is on
 * a node. Returns each page's node (a new array: free() it), counts[] the
 * pages on each node, and says in a diagnostic how interleaved it is.
 */
int *nt_lru_area(const struct nt_lru_test *lt, enum nt_place p, struct nt_area *a,
		 unsigned long seed, long counts[NT_MAX_NODES]);

/*
 * An ext4 file system for the files below (room for two of lt->len),
 * removed again whichever way the test ends; the plan skipped, with the
 * reason, where the kernel or the root file system cannot make one. Call
 * before planning.
 */
void nt_lru_ext4(const struct nt_lru_test *lt);

/*
 * nt_lru_ext4(), and a swap file of lt->len and some on it, enabled
 * (lib/swap.h) and disabled again whichever way the test ends; the plan
 * skipped where the kernel has no swap (the noswap flavour). Call before
 * planning.
 */
void nt_lru_swap(const struct nt_lru_test *lt);

/* A page-cache file of lt->len on that file system, one per placement. */
struct nt_lru_file {
	char path[128];
	int fd;
	size_t npages;
	char *map;			/* after nt_lru_file_map() */
	int *status;			/* each page's node, after nt_lru_file_map() */
	long counts[NT_MAX_NODES];	/* pages on each node, likewise */
};

/*
 * Creates the file of placement p (O_NOATIME: no atime update commits a
 * journal block into the page cache between two readings of a counter),
 * writes it with p's policy as the task's (page cache follows the task's
 * policy) and a pattern that differs per page and placement, and fsync()s
 * it: clean. Bails out on errors.
 */
void nt_lru_file_write(const struct nt_lru_test *lt, enum nt_place p, struct nt_lru_file *f);

/* Reads the file back with pread() a page at a time: the pages that differ. */
size_t nt_lru_file_bad(const struct nt_lru_test *lt, enum nt_place p,
		       const struct nt_lru_file *f);

/*
 * Maps the file PROT_READ, MAP_SHARED | MAP_POPULATE (mapped once, by
 * this process), syncs its file system (nothing left for the journal to
 * commit), and finds where each page is, as nt_lru_area(). Bails out
 * unless every page is mapped.
 */
void nt_lru_file_map(const struct nt_lru_test *lt, enum nt_place p, struct nt_lru_file *f);

/* Unmaps, closes and removes the file. */
void nt_lru_file_remove(struct nt_lru_file *f);

/* Pages of the mapping whose mincore() residency is not resident, naming the first few. */
size_t nt_residency_not(const void *addr, size_t npages, bool resident);

/*
 * The test cgroup's memory per node (memory.numa_stat,
 * Documentation/admin-guide/cgroup-v2.rst: "breaks down the cgroup's
 * memory footprint into different types of memory ... per node basis",
 * the keys of memory.stat).
 */
enum nt_lru_sum {
	NT_ACTIVE_FILE,		/* active_file */
	NT_INACTIVE_FILE,	/* inactive_file */
	NT_FILE_LRU,		/* active_file + inactive_file */
	NT_ANON_LRU,		/* active_anon + inactive_anon */
	NT_ANON,		/* anon: "Amount of memory used in anonymous mappings" */
	NT_LRU_SUMS
};

struct nt_lru_reading {
	long kb[NT_LRU_SUMS][NT_MAX_NODES];	/* each online node's, kB */
	long event;				/* the memory.stat event asked for */
};

/*
 * Drains every CPU's batches (nt_drain_all()), folds the cgroup's per-CPU
 * statistics (by reading its cpu.stat, as nt_cgroup_flush() does:
 * memory.stat is folded only past a threshold otherwise), then reads every
 * sum for each online node from its memory.numa_stat and the event (NULL:
 * none; "pgactivate", "pgdeactivate", "pglazyfree": cgroup-v2.rst) from
 * its memory.stat. Allocates nothing (see lrupath.c). Bails out on errors.
 */
void nt_lru_read(const struct nt_lru_test *lt, const char *event, struct nt_lru_reading *r);

/*
 * Whether each online node's sum moved from base to now by sign *
 * pages[node] pages, saying which node is off and by how much.
 */
bool nt_lru_moved(const struct nt_lru_test *lt, const struct nt_lru_reading *now,
		  const struct nt_lru_reading *base, enum nt_lru_sum sum, int sign,
		  const long *pages);

/* Runs run() for each placement and ends the test (nt_tap_finish()). */
int nt_lru_run(void (*run)(enum nt_place p));
#endif
