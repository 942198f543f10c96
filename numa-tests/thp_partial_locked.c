// SPDX-License-Identifier: GPL-2.0
/*
 * mlock() of part of a transparent huge page, and the page split.
 *
 * Documentation/mm/unevictable-lru.rst, "MLOCKING Transparent Huge Pages":
 * a THP is one LRU entry, so only a whole one can be unevictable; "If a user
 * tries to mlock() part of a huge page, and no user mlock()s the whole of
 * the huge page, we want the rest of the page to be reclaimable", so the
 * page is not split on partial mlock(): "the PMD on the border of a
 * VM_LOCKED VMA will be split into a PTE table" and the huge page stays on
 * an evictable LRU; "/proc/meminfo's Unevictable and Mlocked amounts do not
 * include those parts of a transparent huge page which are mapped only by
 * PTEs in VM_LOCKED VMAs".
 *
 * One child (THP allowed, MADV_HUGEPAGE) maps two huge pages, bound to one
 * node and touched, and then:
 * 1. mlock() of the first half of huge page 0: two VMAs, VmLck and smaps
 *    Locked count the half, but nothing is mlocked: per-node Mlocked and
 *    Unevictable and unevictable_pgs_mlocked unchanged, the page still one
 *    THP, its head neither KPF_MLOCKED nor KPF_UNEVICTABLE.
 * 2. The THP split (/sys/kernel/debug/split_huge_pages, pid and range), as
 *    reclaim would split it: "subpages which belong to VM_LOCKED VMAs will
 *    be moved to the unevictable LRU and the rest can be reclaimed". Every
 *    page of huge page 0 a base page now, the 256 of the locked half mlocked
 *    (unevictable_pgs_mlocked and culled, per-node Mlocked and Unevictable
 *    by 1 MiB, KPF_MLOCKED and KPF_UNEVICTABLE), the other half not; huge
 *    page 1 untouched (a THP).
 * 3. munlock() and mlock() of the half again: the same state.
 * 4. munlock() of everything: every counter at its baseline.
 *
 * Usage: thp_partial_locked
 * Needs root, THP (MADV_HUGEPAGE: "madvise" or "always"; the test sets
 * "madvise" when it is "never", and puts it back) and debugfs with
 * split_huge_pages.
 */
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "locked.h"
#include "pageflags.h"
#include "snapshot.h"
#include "sysfile.h"
#include "tap.h"

#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define THP_SIZE	"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
#define CHECKS		(1 + 7 + 5 + 5 + 4)

static char saved_mode[32];

static void restore_mode(void)
{
	if (saved_mode[0] && nt_file_write(THP_ENABLED, saved_mode))
		fprintf(stderr, "thp_partial_locked: cannot put THP back to %s\n", saved_mode);
	saved_mode[0] = '\0';
}

/* Pages of [first, first + n) with KPF_THP, KPF_MLOCKED, KPF_UNEVICTABLE, absent. */
struct census {
	long thp, mlocked, unevictable, absent;
};

static void census(const struct nt_area *a, size_t first, size_t n, struct census *c)
{
	uint64_t *f = nt_flags_of(a->addr + first * a->page_size, n, a->page_size);
	size_t i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < n; i++) {
		c->absent += !!(f[i] & NT_PAGE_ABSENT);
		c->thp += !!(f[i] & NT_KPF(NT_KPF_THP));
		c->mlocked += !!(f[i] & NT_KPF(NT_KPF_MLOCKED));
		c->unevictable += !!(f[i] & NT_KPF(NT_KPF_UNEVICTABLE));
	}
	free(f);
}

static int vmas_of(const struct nt_area *a, long *locked_kb)
{
	int n = -1;

	if (nt_smaps_sum(a->addr, a->len, "Locked", locked_kb, &n))
		nt_tap_bail("reading smaps");
	return n;
}

/* Per-node Mlocked and Unevictable moved by pages on node (or nothing), events by mlocked. */
static void check_counters(struct nt_lk *lk, int node, long pages, long mlocked, long munlocked,
			   bool drain, const char *step)
{
	long per[NT_MAX_NODES] = { 0 };
	struct nt_lk_events ev = {
		.mlocked = mlocked, .culled = mlocked, .munlocked = munlocked, .rescued = munlocked,
	};
	char label[sizeof(lk->label)];

	memcpy(label, lk->label, sizeof(label));
	snprintf(lk->label, sizeof(lk->label), "%.100s: %.56s", label, step);
	per[node] = pages;
	nt_lk_snapshot(lk, drain);
	nt_lk_check_nodes(lk, false, per);
	nt_lk_check_nodes(lk, true, per);
	nt_lk_check_events(lk, &ev);
	memcpy(lk->label, label, sizeof(label));
}

/* The first half KPF_MLOCKED and KPF_UNEVICTABLE, the rest of the huge page neither. */
static void check_halves(const struct nt_lk *lk, const struct nt_area *a, size_t half,
			 size_t per_huge, const char *step)
{
	struct census c, c1;

	census(a, 0, half, &c);
	census(a, half, per_huge - half, &c1);
	nt_tap_result(c.mlocked == (long)half && c.unevictable == (long)half && !c1.mlocked &&
		      !c1.unevictable,
		      "%s: %s: the locked half's %zu pages KPF_MLOCKED and KPF_UNEVICTABLE, the other half neither",
		      lk->label, step, half);
}

static void split(const struct nt_area *a, size_t hpage)
{
	int err = nt_thp_split(getpid(), a->addr, a->addr + hpage);

	if (err)
		nt_tap_bail("writing to %s: %s", NT_THP_SPLIT, strerror(-err));
}

static void run(const struct nt_topology *t, size_t len, size_t hpage)
{
	size_t page = sysconf(_SC_PAGESIZE), per_huge = hpage / page, half = per_huge / 2;
	struct nt_lk lk = { .t = t };
	struct nt_policy bind;
	struct nt_region r;
	struct census c, c1;
	int node = -1, n, vmas;
	long kb;

	nt_mask_for_each(n, &t->allowed)
		node = n;
	nt_policy_one(&bind, MPOL_BIND, node);
	snprintf(lk.label, sizeof(lk.label), "two huge pages on the last node");
	lk.r = &r;
	if (nt_region_map(&r, NT_PRIVATE_ANON, len, hpage, 0) || nt_area_mbind(&r.a, &bind) ||
	    madvise(r.a.addr, r.a.len, MADV_HUGEPAGE))
		nt_tap_bail("mapping two huge pages: %s", strerror(errno));
	nt_area_fill(&r.a, 0x70617274UL);
	census(&r.a, 0, r.a.npages, &c);
	nt_tap_result(c.thp == (long)r.a.npages && !c.absent,
		      "%s: touched, every page part of a THP (%ld of %zu)", lk.label, c.thp,
		      r.a.npages);
	nt_lk_baseline(&lk);

	/* 1. Half of huge page 0 locked: nothing mlocked. */
	if (mlock(r.a.addr, half * page))
		nt_tap_bail("mlock of half a huge page: %s", strerror(errno));
	vmas = vmas_of(&r.a, &kb);
	nt_tap_result(vmas == 2, "%s: half locked: two VMAs (%d)", lk.label, vmas);
	nt_lk_snapshot(&lk, false);
	nt_lk_check_vmlck(&lk, half * page / 1024);
	nt_tap_result(kb == (long)(half * page / 1024), "%s: half locked: smaps Locked %zu kB",
		      lk.label, half * page / 1024);
	check_counters(&lk, node, 0, 0, 0, false, "half locked, nothing mlocked");
	census(&r.a, 0, per_huge, &c);
	nt_tap_result(c.thp == (long)per_huge && !c.mlocked && !c.unevictable,
		      "%s: half locked: huge page 0 still a THP, neither KPF_MLOCKED nor KPF_UNEVICTABLE",
		      lk.label);

	/*
	 * 2. The split: the subpages that belong to the VM_LOCKED VMA are
	 * mlocked and unevictable now, the others not.
	 */
	split(&r.a, hpage);
	census(&r.a, 0, per_huge, &c);
	census(&r.a, per_huge, per_huge, &c1);
	nt_tap_result(!c.thp && !c.absent && c1.thp == (long)per_huge,
		      "%s: split: huge page 0 is %zu base pages now (%ld still THP), huge page 1 untouched",
		      lk.label, per_huge, c.thp);
	check_counters(&lk, node, half, half, 0, true, "split");
	check_halves(&lk, &r.a, half, per_huge, "split");

	/* 3. munlock() and mlock() of the half again: the same state. */
	if (munlock(r.a.addr, half * page) || mlock(r.a.addr, half * page))
		nt_tap_bail("munlock and mlock of the half: %s", strerror(errno));
	check_counters(&lk, node, half, 2 * half, half, false, "the half locked again");
	check_halves(&lk, &r.a, half, per_huge, "the half locked again");
	vmas = vmas_of(&r.a, &kb);
	nt_tap_result(vmas == 2 && kb == (long)(half * page / 1024),
		      "%s: the half locked again: two VMAs, smaps Locked %zu kB", lk.label,
		      half * page / 1024);

	/* 4. Everything unlocked. */
	if (munlock(r.a.addr, r.a.len))
		nt_tap_bail("munlock: %s", strerror(errno));
	check_counters(&lk, node, 0, 2 * half, 2 * half, false, "munlocked");
	lk.seed = 0x70617274UL;
	lk.filled = true;
	nt_lk_check_data(&lk, lk.seed);
	nt_region_unmap(&r);
}

int main(int argc, char **argv)
{
	struct nt_topology t;
	char mode[32], text[32];
	unsigned int until;
	size_t hpage;
	int local_node, err;
	pid_t pid;

	(void)nt_lk_start(argc, argv, 0, &t);
	if (nt_file_read_line(THP_SIZE, text, sizeof(text)) ||
	    nt_file_read_choice(THP_ENABLED, mode, sizeof(mode)))
		nt_tap_skip_all("no transparent huge pages here (%s)", THP_ENABLED);
	if (access(NT_THP_SPLIT, W_OK))
		nt_tap_skip_all("no %s (debugfs not mounted, or no CONFIG_DEBUG_FS)", NT_THP_SPLIT);
	hpage = strtoul(text, NULL, 10);
	if (!strcmp(mode, "never")) {
		snprintf(saved_mode, sizeof(saved_mode), "%s", mode);
		nt_cleanup_push(restore_mode);
		err = nt_file_write(THP_ENABLED, "madvise");
		if (err)
			nt_tap_bail("setting THP to madvise: %s", strerror(-err));
	}
	nt_tap_plan(CHECKS);
	until = nt_tap_count() + CHECKS;
	pid = nt_lk_fork(&t, -1, true, 2 * hpage, &local_node);
	if (!pid) {
		run(&t, 2 * hpage, hpage);
		_exit(0);
	}
	nt_tap_wait(pid, until, "partial THP lock");
	restore_mode();
	return nt_tap_finish();
}
