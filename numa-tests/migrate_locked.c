// SPDX-License-Identifier: GPL-2.0
/*
 * Locked pages migrated between nodes stay locked, and the per-node
 * accounting moves with them.
 *
 * For private anonymous memory, a memfd, and private anonymous memory in
 * transparent huge pages (MADV_HUGEPAGE; each huge page migrated whole,
 * still one huge page, its 512 base pages counted): a range bound to node A
 * (VMA policy) is mlocked, then move_pages() moves every page to node B,
 * then migrate_pages() moves the process's pages from node B to node C (the
 * next usable node after B, which is A again on two nodes). After each step
 * every page must be on its new node, mlocked and unevictable (kpageflags),
 * VmLck and smaps Locked unchanged, the data intact, and per-node Mlocked and
 * Unevictable must have left the old node for the new one exactly. Then
 * munlock() must bring every counter back to its baseline.
 *
 * The events a migration of a locked page counts, from 6.1's code
 * (mm/migrate.c migrate_folio_move(), mm/mlock.c, mm/swap.c lru_add_fn()):
 * - unmapping the old page for migration munlocks it (try_to_migrate_one()
 *   -> page_remove_rmap() -> munlock_vma_page()); it is isolated from the LRU
 *   but still PG_unevictable, so that counts unevictable_pgs_stranded;
 * - the new page inherits PG_unevictable (folio_migrate_flags()) and goes on
 *   the LRU before it is mapped ("push dst to LRU immediately"): not mlocked
 *   yet, it is evictable, so lru_add_fn() clears PG_unevictable and counts
 *   unevictable_pgs_rescued;
 * - mapping it mlocks it (remove_migration_pte() -> page_add_*_rmap() ->
 *   mlock_vma_page()): unevictable_pgs_mlocked, and the mlock batch moves it
 *   to the unevictable LRU: unevictable_pgs_culled.
 * Per page moved: stranded, rescued, mlocked and culled +1 each; nr_mlock
 * unchanged (mlocked - stranded = 0).
 *
 * move_pages() and migrate_pages() disable the LRU caches while they work
 * (lru_cache_disable()), so no page waits on a CPU's batch afterwards: the
 * checks drain nothing.
 *
 * Usage: migrate_locked [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 * Needs root and two usable memory nodes.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "locked.h"
#include "placement.h"
#include "sysfile.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(1UL << 20)
#define KIND_CHECKS	(3 * NT_LK_LOCKED_CHECKS + 2 + NT_LK_UNLOCKED_CHECKS)

static const struct mkind {
	enum nt_kind kind;
	bool thp;		/* private anonymous in transparent huge pages */
	const char *name;
} kinds[] = {
	{ NT_PRIVATE_ANON, false, "private anonymous" },
	{ NT_MEMFD, false, "memfd shared" },
	{ NT_PRIVATE_ANON, true, "private anonymous THP" },
};

static size_t hpage;	/* PMD size; 0 without THP */

/* The usable node after node, wrapping around. */
static int next_node(const struct nt_topology *t, int node)
{
	int next = nt_mask_next(&t->allowed, node);

	return next >= 0 ? next : nt_mask_next(&t->allowed, -1);
}

static void where(char *buf, size_t len, int node)
{
	snprintf(buf, len, "node %d", node);
}

/*
 * move_pages() of every page to node: 0 and every status node, or a
 * failure. For huge pages, one address per huge page (its head): moving any
 * part of a THP moves all of it, and the other addresses of one already on
 * its way report -EBUSY.
 */
static void move_all(struct nt_lk *lk, int node)
{
	struct nt_area *a = &lk->r->a;
	size_t step = lk->thp_pages ? lk->thp_pages : 1, n = a->npages / step, i, bad = 0;
	void **pages = malloc(n * sizeof(*pages));
	int *nodes = malloc(n * sizeof(*nodes));
	int *status = malloc(n * sizeof(*status));
	long ret;

	if (!pages || !nodes || !status)
		nt_tap_bail("no memory");
	for (i = 0; i < n; i++) {
		pages[i] = a->addr + i * step * a->page_size;
		nodes[i] = node;
	}
	ret = move_pages(0, n, pages, nodes, status, MPOL_MF_MOVE);
	if (ret)
		nt_tap_diag("move_pages returned %ld (%s)", ret, ret < 0 ? strerror(errno) : "pages not moved");
	for (i = 0; i < n; i++)
		if (status[i] != node && bad++ < 8)
			nt_tap_diag("page %zu: status %d", i * step, status[i]);
	nt_tap_result(!ret && !bad, "%s: move_pages() to node %d returns 0, every status %d",
		      lk->label, node, node);
	free(pages);
	free(nodes);
	free(status);
}

static void migrate_all(struct nt_lk *lk, int from, int to)
{
	struct nt_nodemask old, new;
	long ret;

	nt_mask_clear(&old);
	nt_mask_clear(&new);
	nt_mask_set(&old, from);
	nt_mask_set(&new, to);
	ret = migrate_pages(0, NT_MASK_MAXNODE, old.bits, new.bits);
	if (ret)
		nt_tap_diag("migrate_pages returned %ld (%s)", ret,
			    ret < 0 ? strerror(errno) : "pages not moved");
	nt_tap_result(!ret, "%s: migrate_pages() from node %d to node %d returns 0", lk->label,
		      from, to);
}

/* One migration of every page done: each counts four events (see above). */
static void moved(struct nt_lk *lk)
{
	long n = lk->r->a.npages;

	lk->extra.stranded += n;
	lk->extra.rescued += n;
	lk->extra.mlocked += n;
	lk->extra.culled += n;
}

static void run_kind(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	int a = nt_mask_next(&t->allowed, -1), b = next_node(t, a), c = next_node(t, b);
	const struct mkind *k = arg;
	struct nt_lk lk = { .t = t };
	struct nt_policy pol;
	struct nt_region r;
	struct nt_vma vma;
	char at[32];

	snprintf(lk.label, sizeof(lk.label), "%s", k->name);
	lk.r = &r;
	nt_lk_baseline(&lk);
	nt_policy_one(&pol, MPOL_BIND, a);
	if (k->thp)
		nt_lk_map_thp(&lk, len, hpage, &pol, local_node, &vma);
	else
		nt_lk_map(&lk, k->kind, len, &pol, true, local_node, &vma);
	where(at, sizeof(at), a);
	lk.step = "mapped";
	nt_lk_locked(&lk, &pol, &vma, len / 1024, at, false);

	move_all(&lk, b);
	moved(&lk);
	nt_policy_one(&pol, MPOL_BIND, b);
	where(at, sizeof(at), b);
	lk.step = "after move_pages";
	nt_lk_locked(&lk, &pol, &vma, len / 1024, at, false);

	migrate_all(&lk, b, c);
	moved(&lk);
	nt_policy_one(&pol, MPOL_BIND, c);
	where(at, sizeof(at), c);
	lk.step = "after migrate_pages";
	nt_lk_locked(&lk, &pol, &vma, len / 1024, at, false);

	lk.step = NULL;
	nt_lk_munlock(&lk);
	nt_region_unmap(&r);
}

int main(int argc, char **argv)
{
	unsigned int i, nkinds = sizeof(kinds) / sizeof(kinds[0]);
	const char *thp_skip;
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);

	if (nt_mask_weight(&t.allowed) < 2)
		nt_tap_skip_all("needs two usable memory nodes to migrate between, this machine has %d",
				nt_mask_weight(&t.allowed));
	nt_tap_plan(nkinds * KIND_CHECKS);
	hpage = nt_thp_size(&thp_skip);
	for (i = 0; i < nkinds; i++) {
		unsigned int c;

		if (kinds[i].thp && thp_skip) {
			for (c = 1; c <= KIND_CHECKS; c++)
				nt_tap_skip(thp_skip, "%s: check %u of %d", kinds[i].name, c,
					    KIND_CHECKS);
			continue;
		}
		/* Two huge pages at least for the THP kind. */
		nt_lk_in_child_thp(&t, -1, kinds[i].thp,
				   kinds[i].thp && len < 2 * hpage ? 2 * hpage :
				   kinds[i].thp ? len / hpage * hpage : len,
				   KIND_CHECKS, kinds[i].name, run_kind, (void *)&kinds[i]);
	}
	return nt_tap_finish();
}
