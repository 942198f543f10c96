// SPDX-License-Identifier: GPL-2.0
/*
 * Locked transparent huge pages, with THP "madvise" (MADV_HUGEPAGE on the
 * range) and "always": every huge page must land where the policy puts it,
 * be locked as a whole and unlocked as a whole.
 *
 * Per huge page, from 6.1's code: a PMD-mapped THP is mlocked through its
 * head (mlock_new_page()/mlock_folio() with thp_nr_pages()): NR_MLOCK and
 * unevictable_pgs_mlocked, culled, and on munlock munlocked and rescued all
 * move by its 512 base pages at once, and the batch is drained at once for a
 * head page. kpageflags shows PG_mlocked and PG_unevictable on the head page
 * only (stable_page_flags() copies each page's own flags), KPF_THP on every
 * page; so the checks (lib/locked.h with thp_pages) expect every page of the
 * range to be part of a THP with one head per huge page, each head
 * KPF_MLOCKED and KPF_UNEVICTABLE while locked and neither after. The
 * interleave index of a huge page counts huge pages: (vm_pgoff >> 9) + its
 * offset in the VMA in huge pages (interleave_nid() with order 9).
 *
 * Cells: THP "madvise" with MADV_HUGEPAGE then mlock(); THP "always" with
 * MAP_LOCKED | MAP_POPULATE under the task policy (mmap() populates it);
 * THP "always" with mlock2(MLOCK_ONFAULT) and touching every page; each with
 * the range bound to the last usable memory node and interleaved over all
 * of them, and unlocked by munlock() and by exit. How a cell runs:
 * lib/lockcase.h. The test sets /sys/kernel/mm/transparent_hugepage/enabled
 * for each mode and restores it at the end.
 *
 * Huge pages need free contiguous memory on the node: on a fresh test guest
 * there is. Where a THP cannot be had the page-flag check fails, saying
 * which page is not part of a huge page.
 *
 * Usage: thp_locked [-s SIZE]  (a multiple of the huge page size; default
 * one huge page per usable memory node, two to eight)
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lockcase.h"
#include "sysfile.h"
#include "tap.h"
#include "values.h"

#define THP_DIR		"/sys/kernel/mm/transparent_hugepage"
#define MAX_CASES	16

static const struct {
	const char *mode;
	enum nt_lock_way lock;
	bool madvise;
} ways[] = {
	{ "madvise", NT_LOCK_MLOCK, true },
	{ "always", NT_LOCK_MAP_LOCKED_POPULATE, false },
	{ "always", NT_LOCK_MLOCK2_ONFAULT, false },
};

#define WAYS	(sizeof(ways) / sizeof(ways[0]))

static char saved[32];	/* the THP mode before the test, put back whichever way it ends */

static void restore_mode(void)
{
	int err;

	if (!saved[0])
		return;
	err = nt_file_write(THP_DIR "/enabled", saved);
	if (err)
		fprintf(stderr, "thp_locked: restoring THP %s: %s\n", saved, strerror(-err));
	saved[0] = '\0';
}

int main(int argc, char **argv)
{
	static struct nt_lk_case cases[MAX_CASES];
	static char labels[MAX_CASES][32];
	unsigned int i, w, p, u, n = 0, plan = 0;
	char text[32];
	struct nt_topology t;
	size_t huge, len;
	int err, last = -1, node;

	/* 0 unless -s or NUMA_TESTS_AREA_SIZE gives a size. */
	len = nt_lk_start(argc, argv, 0, &t);
	if (nt_file_read_line(THP_DIR "/hpage_pmd_size", text, sizeof(text)) ||
	    nt_file_read_choice(THP_DIR "/enabled", saved, sizeof(saved)))
		nt_tap_skip_all("no transparent huge pages here (%s)", THP_DIR);
	huge = strtoul(text, NULL, 10);
	/* By default one huge page per usable node (two to eight): interleave reaches them all. */
	w = nt_mask_weight(&t.allowed);
	if (!len)
		len = (w < 2 ? 2 : w > 8 ? 8 : w) * huge;
	if (!huge || len % huge)
		nt_tap_skip_all("the size must be a multiple of the huge page size, %zu", huge);
	nt_mask_for_each(node, &t.allowed)
		last = node;
	for (w = 0; w < WAYS; w++)
		for (p = 0; p < 2; p++)
			for (u = 0; u < 2; u++) {
				struct nt_lk_case *c = &cases[n];

				c->kind = NT_PRIVATE_ANON;
				c->lock = ways[w].lock;
				c->unlock = u ? NT_UNLOCK_EXIT : NT_UNLOCK_MUNLOCK;
				c->task_policy = nt_lock_way_at_mmap(c->lock);
				c->len = len;
				c->cpu_node = -1;
				c->huge = huge;
				c->madvise_huge = ways[w].madvise;
				if (p) {
					c->user.mode = MPOL_INTERLEAVE;
					c->user.nodes = t.allowed;
					c->where = "their interleave node";
				} else {
					nt_policy_one(&c->user, MPOL_BIND, last);
					snprintf(labels[n], sizeof(labels[n]), "node %d", last);
					c->where = labels[n];
				}
				snprintf(c->label, sizeof(c->label), "THP %s, %s, %s, %s", ways[w].mode,
					 p ? "interleave" : "bind", nt_lock_way_names[c->lock],
					 nt_unlock_way_names[c->unlock]);
				plan += nt_lk_case_checks(c);
				n++;
			}
	nt_cleanup_push(restore_mode);
	nt_tap_plan(plan);
	nt_tap_diag("huge page %zu kB, range %zu kB, THP mode was %s", huge >> 10, len >> 10, saved);
	for (i = 0; i < n; i++) {
		w = i / 4;
		err = nt_file_write(THP_DIR "/enabled", ways[w].mode);
		if (err)
			nt_tap_bail("setting THP %s: %s", ways[w].mode, strerror(-err));
		nt_lk_case_run(&cases[i], &t);
	}
	restore_mode();
	return nt_tap_finish();
}
