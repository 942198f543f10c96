/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Locked memory under test: a mapping of one kind of memory between guard
 * pages, and the checks every locked-memory test makes on it. Each check is
 * one TAP subtest; the composite checks have a fixed number of subtests
 * (NT_LK_*_CHECKS) so that plans can be computed up front.
 *
 * What the counters must do, from mm/mlock.c and mm/swap.c in 6.1:
 * - mlock_folio() / mlock_new_page() set PG_mlocked, add to NR_MLOCK (the
 *   node's Mlocked) and count unevictable_pgs_mlocked at once, then queue the
 *   page on the CPU's mlock batch; draining the batch moves it to the
 *   node's unevictable LRU (Unevictable, PG_unevictable) and counts
 *   unevictable_pgs_culled.
 * - munlock queues the page; the drain clears PG_mlocked, subtracts it from
 *   NR_MLOCK, counts unevictable_pgs_munlocked, moves it back to an evictable
 *   LRU and counts unevictable_pgs_rescued. munlock() and munlockall() drain
 *   their own CPU before returning; munmap() and exit do not (nt_drain_all()).
 * - unevictable_pgs_stranded counts a munlock of a page that was off the LRU
 *   and still unevictable; unevictable_pgs_cleared a page freed while still
 *   PG_mlocked. Neither happens in a plain lock/unlock cycle.
 * - Always: the change of nr_mlock equals mlocked - munlocked - stranded -
 *   cleared (every NR_MLOCK update comes with exactly one of these events).
 */
#ifndef NT_LOCKED_H
#define NT_LOCKED_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "area.h"
#include "counters.h"
#include "expect.h"
#include "nodes.h"

/* Kinds of memory a region can be. */
enum nt_kind {
	NT_PRIVATE_ANON,	/* MAP_PRIVATE | MAP_ANONYMOUS */
	NT_SHARED_ANON,		/* MAP_SHARED | MAP_ANONYMOUS: shmem */
	NT_MEMFD,		/* MAP_SHARED of a memfd: shmem with a file */
	/*
	 * MAP_PRIVATE of a memfd: reading maps the file's page-cache pages,
	 * writing replaces each with an anonymous copy (copy-on-write).
	 */
	NT_MEMFD_PRIVATE,
	NT_KINDS,		/* the kinds above: what lock_methods covers */
	/* MAP_SHARED of a file of a disk file system (nt_region_map_fd()): page cache */
	NT_FILE = NT_KINDS,
	NT_KINDS_ALL
};

extern const char *const nt_kind_names[NT_KINDS_ALL];

struct nt_region {
	struct nt_area a;	/* the mapping: nt_area_fill/verify/mbind/lock work on it */
	enum nt_kind kind;
	char *resv;		/* guard, mapping, guard: one reservation */
	size_t resv_len;
	int fd;			/* the memfd, or -1 */
};

/*
 * Reserves len bytes plus guards with PROT_NONE, then maps the kind of memory
 * over the middle (MAP_FIXED | flags, e.g. MAP_LOCKED | MAP_POPULATE) at an
 * address aligned to align (a power of two, at least the page size). The
 * PROT_NONE guards on both sides keep the mapping from merging with its
 * neighbours, so its VMAs in /proc/self/smaps are its own. Note that
 * mlockall() sets VM_LOCKED on the guards too: VmLck then counts resv_len.
 * 0 or -errno.
 */
int nt_region_map(struct nt_region *r, enum nt_kind kind, size_t len, size_t align, int flags);
/*
 * The same for a file the caller opened (kind NT_FILE, mapped MAP_SHARED
 * from offset 0); the region keeps a duplicate of fd, closed with it.
 */
int nt_region_map_fd(struct nt_region *r, int fd, size_t len, size_t align, int flags);
/* Unmaps the mapping and its guards, closes the memfd. 0 or -errno. */
int nt_region_unmap(struct nt_region *r);
/*
 * Whether the kernel adds the inode number to the interleave index of the
 * anonymous copies in a private mapping of a shmem file, as it does for
 * the shmem pages themselves. 6.1 does not (interleave_nid() takes the
 * VMA's vm_pgoff, the file offset); since 6.7 shmem's get_policy() hands
 * every user of the mapping's policy the inode number as the index's base
 * (Hugh Dickins, "mempolicy: alloc_pages_mpol() for NUMA policy without
 * vma"), copies included. Found once by copying one page of a memfd whose
 * inode number tells the two apart. 0 or -errno.
 */
int nt_kernel_private_shmem_bias(bool *biased);
/*
 * The VMA model of the region's first page, faults on local_node: for shmem
 * pages nt_vma_file() with the inode bias (lib/expect.h); for the anonymous
 * pages of a private mapping nt_vma_anon(), or for a private file mapping
 * (its copies) nt_vma_file() from the file offset, with no inode bias.
 */
int nt_region_vma(const struct nt_region *r, int local_node, struct nt_vma *vma);

/* unevictable_pgs_* changes a check expects; NT_LK_ANY: not checked. */
#define NT_LK_ANY	LONG_MIN
struct nt_lk_events {
	long mlocked, munlocked, culled, rescued, stranded, cleared;
};

/* One locked range under test, and the snapshots its checks compare. */
struct nt_lk {
	char label[160];
	const struct nt_topology *t;
	struct nt_region *r;
	size_t thp_pages;		/* base pages per huge page when THP-backed, else 0 */
	struct nt_counters base;	/* before the range was locked */
	struct nt_counters now;		/* the last snapshot */
	long found[NT_MAX_NODES];	/* pages of the range on each node, last placement check */
	/*
	 * Pages locked outside the range since base (mlockall() locks the whole
	 * process): the release checks expect their munlock too.
	 */
	long rest_mlocked, rest_culled;
	/*
	 * Events from what else happened to the range since base (a migration
	 * mlocks the new page and strands the old one, a copy-on-write in a
	 * locked VMA mlocks the copy and munlocks the original): added to what
	 * every composite check below expects. NT_LK_ANY: that event is not
	 * checked (nr_mlock's agreement with the events still is).
	 */
	struct nt_lk_events extra;
	/*
	 * What the composite checks call this step in subtest names ("label:
	 * step: check"), so that names stay unique: NULL for "locked",
	 * "unlocked", "gone". A test that makes the same composite check twice
	 * sets it before each ("after move_pages").
	 */
	const char *step;
	bool filled;		/* the range holds the pattern of seed (written by the caller or by
				   nt_lk_locked()); false: it must still read as zeros */
	unsigned long seed;	/* of the data pattern; 0: a default */
	/*
	 * The known kernel deviation a failed check of this range was found to
	 * be (see lk_deviation() in locked.c), NULL while none was: from then
	 * on the range's counts are off by it, so later failures of the
	 * composite checks are reported as that TODO too. Reset by
	 * nt_lk_baseline().
	 */
	const char *deviation;
};

/* Reads every counter into lk->now, draining all CPUs first when drain is set; bails on errors. */
void nt_lk_snapshot(struct nt_lk *lk, bool drain);
/* lk->base = a fresh snapshot (drained). */
void nt_lk_baseline(struct nt_lk *lk);

/*
 * Where the range's pages are against pol: counts them per node in
 * lk->found, says where they were found, and returns the number of pages
 * pol does not allow (-errno when move_pages() failed). Reports no subtest.
 */
long nt_lk_placement(struct nt_lk *lk, const struct nt_policy *pol, const struct nt_vma *vma);

/* Single checks against lk->now and lk->base; one subtest each. */
void nt_lk_check_placement(struct nt_lk *lk, const struct nt_policy *pol, const struct nt_vma *vma,
			   const char *where);
void nt_lk_check_data(const struct nt_lk *lk, unsigned long seed);
/* Every page reads as zeros: new anonymous, shmem and memfd pages are zero-filled. */
void nt_lk_check_zeros(const struct nt_lk *lk);
/* VmLck moved by want_kb since base. */
void nt_lk_check_vmlck(const struct nt_lk *lk, long want_kb);
/* smaps field key (e.g. "Locked") of the region's VMAs is want_kb. */
void nt_lk_check_smaps(const struct nt_lk *lk, const char *key, long want_kb);
/* Per-node Mlocked (unevictable false) or Unevictable moved by pages[node] pages; NULL: by none. */
void nt_lk_check_nodes(struct nt_lk *lk, bool unevictable, const long *pages);
/* unevictable_pgs_* moved by want since base, and nr_mlock agrees with them. */
void nt_lk_check_events(struct nt_lk *lk, const struct nt_lk_events *want);
/* KPF_MLOCKED and KPF_UNEVICTABLE of every page (of every huge page head). */
void nt_lk_check_flags(struct nt_lk *lk, bool mlocked, bool unevictable);

/*
 * After the range was locked and populated: drains all CPUs if drain (after
 * faults: mlock(), mlockall() and mmap() drain their own CPU when they
 * return, a page fault does not), then checks placement against pol (where:
 * words for the test name), the data (written on the first call, read back
 * on later ones), VmLck (+vmlck_kb), smaps Locked (the whole range), per-node
 * Mlocked and Unevictable (the pages found on each node), the events
 * (mlocked and culled by the range's pages, plus lk->extra) and the page
 * flags. Also right after the locked range moved (migration): everything
 * must hold just the same, on the new nodes. The data check: on the first
 * call, unless the caller wrote the pattern of lk->seed itself and set
 * lk->filled, the fresh pages must read as zeros, and the pattern is
 * written then; later calls read it back.
 */
#define NT_LK_LOCKED_CHECKS	8
void nt_lk_locked(struct nt_lk *lk, const struct nt_policy *pol, const struct nt_vma *vma,
		  long vmlck_kb, const char *where, bool drain);
/*
 * After munlock()/munlockall() with the range still mapped, on the CPU that
 * did all the work: no drain first, munlock drained this CPU and the counters
 * must be exact already. Per-node Mlocked and Unevictable back at base,
 * VmLck at base + vmlck_kb, smaps Locked 0, events (every page mlocked since
 * base munlocked and rescued, plus lk->extra), flags clear, data intact.
 */
#define NT_LK_UNLOCKED_CHECKS	7
void nt_lk_unlocked(struct nt_lk *lk, long vmlck_kb);
/* munlock() of the whole range, then nt_lk_unlocked(lk, 0); bails if munlock() fails. */
void nt_lk_munlock(struct nt_lk *lk);
/*
 * After the range went away (munmap, exit): drains all CPUs, then per-node
 * Mlocked and Unevictable back at base, and the events as above.
 */
#define NT_LK_GONE_CHECKS	3
void nt_lk_gone(struct nt_lk *lk);

/*
 * A model of which pages of a region are locked, for tests that lock and
 * unlock parts of it: each operation on the memory is mirrored on the model,
 * and nt_lkm_check() compares everything with it. The pages must all be
 * resident and the locks plain mlocks (every newly locked page counts once
 * in unevictable_pgs_mlocked and culled, every newly unlocked one once in
 * munlocked and rescued).
 */
struct nt_lkmodel {
	struct nt_lk *lk;	/* region, label, base counters */
	bool *locked;		/* per page */
	long mlocked, munlocked;	/* events expected since lk->base */
	long vmlck_kb;		/* VmLck expected since lk->base */
};

/* Allocates the model of lk's region, nothing locked. 0 or -ENOMEM. */
int nt_lkm_init(struct nt_lkmodel *m, struct nt_lk *lk);
void nt_lkm_free(struct nt_lkmodel *m);
/* Pages [first, first + n) became locked (locked true) or unlocked; VmLck moves with them. */
void nt_lkm_set(struct nt_lkmodel *m, size_t first, size_t n, bool locked);
/*
 * Checks, after step: the number of VMAs in the region (vmas), smaps Locked,
 * VmLck, per-node Mlocked and Unevictable (from where each page is now),
 * the events, and KPF_MLOCKED / KPF_UNEVICTABLE of every page. Drains all
 * CPUs first when drain is set.
 */
#define NT_LKM_CHECKS	7
void nt_lkm_check(struct nt_lkmodel *m, int vmas, bool drain, const char *step);

/*
 * A child process for one case: pinned to one CPU of cpu_node (any CPU when
 * cpu_node < 0 or it has none), THP off unless thp, the allocator kept from
 * returning or growing memory during the checks (so that mlockall() cases
 * lock no page after their baseline), every check's code and buffers used
 * once on a scratch area. Returns the CPU's node in the child (bails there on
 * errors), and the child's pid in the parent (nt_tap_wait() it).
 */
pid_t nt_lk_fork(const struct nt_topology *t, int cpu_node, bool thp, size_t len, int *local_node);

/*
 * The start every locked-memory test shares: the area size (-s SIZE, else
 * NUMA_TESTS_AREA_SIZE, else def), "TAP version 13", the whole plan skipped
 * without root (stat_refresh, /proc/kpageflags and pagemap frame numbers are
 * root's) or without NUMA, and the machine's nodes in t. Returns the size.
 */
size_t nt_lk_start(int argc, char **argv, size_t def, struct nt_topology *t);
/*
 * Runs fn(t, len, local_node, arg) in a child made by nt_lk_fork() (base
 * pages only) that must report exactly checks subtests, and waits for it.
 */
void nt_lk_in_child(const struct nt_topology *t, size_t len, unsigned int checks,
		    const char *what,
		    void (*fn)(const struct nt_topology *t, size_t len, int local_node, void *arg),
		    void *arg);
/* The same with the child on a CPU of cpu_node (-1: the CPU it runs on). */
void nt_lk_in_child_on(const struct nt_topology *t, int cpu_node, size_t len,
		       unsigned int checks, const char *what,
		       void (*fn)(const struct nt_topology *t, size_t len, int local_node,
				  void *arg),
		       void *arg);
/*
 * Runs fn(arg) in a child pinned to cpu that must report exactly checks
 * subtests, and waits for it; for tests that race two CPUs of their own
 * choosing (nt_two_cpus()).
 */
void nt_in_child_on_cpu(int cpu, unsigned int checks, const char *what, void (*fn)(void *arg),
			void *arg);
/* The same with transparent huge pages allowed in the child when thp is set. */
void nt_lk_in_child_thp(const struct nt_topology *t, int cpu_node, bool thp, size_t len,
			unsigned int checks, const char *what,
			void (*fn)(const struct nt_topology *t, size_t len, int local_node,
				   void *arg),
			void *arg);
/*
 * Maps len bytes of kind as lk->r (nt_region_map(), page-aligned), applies
 * pol to it with mbind(), mlocks it when lock, and models its VMA in vma,
 * faults on local_node. Bails on errors.
 */
void nt_lk_map(struct nt_lk *lk, enum nt_kind kind, size_t len, const struct nt_policy *pol,
	       bool lock, int local_node, struct nt_vma *vma);

/*
 * Maps len bytes of private anonymous memory aligned to align as r, locked
 * and populated by mmap() (MAP_LOCKED | MAP_POPULATE) with pol as the task
 * policy: mmap() faults the pages in before an mbind() could apply. Whether
 * they are huge pages is the THP mode's and the process's choice. Bails on
 * errors.
 */
void nt_lk_map_populated(struct nt_region *r, size_t len, size_t align,
			 const struct nt_policy *pol);

/*
 * Maps len bytes (a multiple of hpage) of private anonymous memory aligned to
 * hpage with MADV_HUGEPAGE, applies pol, mlocks it (populating it with huge
 * pages), models its VMA, and sets lk->thp_pages. Bails on errors. The
 * process must allow THP (nt_lk_in_child_thp()).
 */
void nt_lk_map_thp(struct nt_lk *lk, size_t len, size_t hpage, const struct nt_policy *pol,
		   int local_node, struct nt_vma *vma);
/*
 * The size of a PMD-mapped transparent huge page, or 0 with *why saying
 * why there are none for MADV_HUGEPAGE here (no THP, or THP "never").
 */
size_t nt_thp_size(const char **why);

/* debugfs' way to split the huge pages of a range (CONFIG_DEBUG_FS, mounted). */
#define NT_THP_SPLIT	"/sys/kernel/debug/split_huge_pages"
/*
 * Splits every transparent huge page mapped in [start, end) of process pid
 * into base pages ("PID,0xSTART,0xEND"). A huge page the kernel cannot split
 * (an extra reference on it, say) stays whole, and that is not an error:
 * look at the pages afterwards. 0, or -errno of the write.
 */
int nt_thp_split(pid_t pid, const void *start, const void *end);

#endif
