/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One locked-memory case: a kind of memory, a NUMA policy, a way to lock it
 * and a way to unlock it, run in a child process and checked exactly with
 * lib/locked.h, then (for exit) checked again by the parent.
 *
 * The child is pinned to one CPU: mlockall() and the task policy stay in it,
 * exit is one of the ways to unlock, and mlock(), mlockall(), munlock(),
 * munlockall() and mmap()'s populate drain the batch of the CPU that queued
 * every page before they return (mlock_vma_pages_range(),
 * populate_vma_page_range()), so the counters after them are checked with no
 * further drain. Faults from touching, munmap() and exit leave up to 14 pages
 * queued on that CPU's mlock batch (measured: 2 of 512 pages still counted in
 * Mlocked after an exit), so those checks drain every CPU first
 * (nt_drain_all()).
 *
 * For mlockall(MCL_CURRENT) (and MCL_CURRENT | MCL_ONFAULT) the child locks
 * itself with MCL_CURRENT once before its baseline
 * (program, libraries, heap, stack), maps the range, and calls it again: the
 * second call locks only the new VMAs, the range and its two PROT_NONE guard
 * VMAs (VmLck counts those by size: locked_vm counts VM_LOCKED VMAs, populated
 * or not). munlockall() and exit then unlock the rest of the process too, and
 * the checks expect those pages among the munlocked ones.
 */
#ifndef NT_LOCKCASE_H
#define NT_LOCKCASE_H

#include "locked.h"

enum nt_lock_way {
	NT_LOCK_MLOCK,			/* mlock() of an untouched range */
	NT_LOCK_MLOCK_FAULTED,		/* mlock() of a range already faulted in */
	NT_LOCK_MLOCK2_ONFAULT,		/* mlock2(MLOCK_ONFAULT), then every page touched */
	NT_LOCK_MCL_CURRENT,		/* mlockall(MCL_CURRENT) */
	NT_LOCK_MCL_CURRENT_ONFAULT,	/* mlockall(MCL_CURRENT | MCL_ONFAULT), then touching */
	NT_LOCK_MCL_FUTURE,		/* mlockall(MCL_FUTURE), then mmap() */
	NT_LOCK_MCL_ONFAULT,		/* mlockall(MCL_FUTURE | MCL_ONFAULT), mmap(), touch */
	NT_LOCK_MAP_LOCKED,		/* mmap(MAP_LOCKED) */
	NT_LOCK_MAP_LOCKED_POPULATE,	/* mmap(MAP_LOCKED | MAP_POPULATE) */
	NT_LOCK_WAYS
};

enum nt_unlock_way {
	NT_UNLOCK_MUNLOCK,
	NT_UNLOCK_MUNLOCKALL,
	NT_UNLOCK_MUNMAP,
	NT_UNLOCK_EXIT,
	NT_UNLOCK_WAYS
};

extern const char *const nt_lock_way_names[NT_LOCK_WAYS];
extern const char *const nt_unlock_way_names[NT_UNLOCK_WAYS];

/*
 * Whether mmap() populates the range itself under this way (do_mmap()
 * populates every VM_LOCKED mapping, with or without MAP_POPULATE): then
 * only the task policy can place its pages.
 */
bool nt_lock_way_at_mmap(enum nt_lock_way way);

struct nt_lk_case {
	char label[160];
	enum nt_kind kind;
	enum nt_lock_way lock;
	enum nt_unlock_way unlock;
	struct nt_policy user;	/* as passed to set_mempolicy() or mbind(), flags included */
	bool task_policy;	/* set_mempolicy() around mapping and locking, else mbind() */
	const char *where;	/* where the pages must be, in words, for test names */
	size_t len;
	int cpu_node;		/* run on a CPU of this node; -1: any CPU */
	/*
	 * Transparent huge pages: the size of one (the range is aligned to it
	 * and THP stays allowed for the child), or 0 for base pages only
	 * (PR_SET_THP_DISABLE). madvise_huge: MADV_HUGEPAGE on the range
	 * before it is populated (not for ways that populate in mmap()).
	 */
	size_t huge;
	bool madvise_huge;
};

/* How many subtests the case reports. */
unsigned int nt_lk_case_checks(const struct nt_lk_case *c);
/*
 * Runs the case: a child maps, locks, checks, unlocks and checks; for exit
 * the parent checks after it. The expected placement is the policy the kernel
 * installs for c->user (nt_mpol_install()) with the child's CPU's node as the
 * local node.
 */
void nt_lk_case_run(const struct nt_lk_case *c, const struct nt_topology *t);
/* Reports every subtest of the case as skipped, for reason. */
void nt_lk_case_skip(const struct nt_lk_case *c, const char *reason);

#endif
