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

/*
 * The sum of the keys (e.g. "Active(file)", "Inactive(file)") of each node's
 * meminfo, kB, for the nodes in nodes (the others 0), after a stat_refresh:
 * per-CPU deltas would hide up to a threshold of pages per CPU otherwise.
 * 0 or -errno.
 */
int nt_nodes_meminfo_sum(const struct nt_nodemask *nodes, const char *const *keys, int nkeys,
			 long kb[NT_MAX_NODES]);

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
	size_t len;		/* the area's size (-s SIZE) */
	int home;		/* the bound node, and the node of the CPU the test runs on */
	int cpu;		/* the one CPU it runs on */
	bool lru_gen;		/* nt_lru_gen_enabled() */
};

/*
 * nt_lk_start() (root, libnuma, the topology, -s SIZE with default def),
 * the home node (the plan skipped where no memory node has CPUs), and the
 * task pinned to one CPU of it: the per-CPU batches the test fills are that
 * CPU's, and the ones an operation drains before it starts (its own CPU's
 * only) hold every page it queued.
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
 * Page-cache files (on an ext4 of the test's own, lib/ext4.h), a pattern
 * that differs per page and per placement. nt_lru_file_write(): creates
 * path (O_NOATIME: no atime update commits a journal block into the page
 * cache between two readings of a counter), writes lt->len with
 * placement p's policy as the task's (page cache follows the task's
 * policy), fsync()s it (clean), and returns the fd; bails out on errors.
 */
int nt_lru_file_write(const struct nt_lru_test *lt, enum nt_place p, const char *path);

/*
 * An ext4 file system for the files (room for two of lt->len), removed
 * again whichever way the test ends; the plan skipped, with the reason,
 * where the kernel or the root file system cannot make one. Returns its
 * mount point. Call before planning.
 */
const char *nt_lru_ext4(const struct nt_lru_test *lt);

/* Reads the file back with pread() a page at a time: the pages that differ. */
size_t nt_lru_file_bad(const struct nt_lru_test *lt, enum nt_place p, int fd);

/*
 * Maps the file PROT_READ, MAP_SHARED | MAP_POPULATE (mapped once, by
 * this process), syncs its file system (nothing left for the journal to
 * commit), and gives each page's node and the pages on each node as
 * nt_lru_area(). Bails out unless every page is mapped.
 */
char *nt_lru_file_map(const struct nt_lru_test *lt, enum nt_place p, int fd, int *status,
		      long counts[NT_MAX_NODES]);

/* Pages of the mapping whose mincore() residency is not resident, naming the first few. */
size_t nt_residency_not(const void *addr, size_t npages, bool resident);
#endif
