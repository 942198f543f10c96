// SPDX-License-Identifier: GPL-2.0
/*
 * move_pages(2) sending every page of an area to the node after the one it
 * is on: the runs do_pages_move() cuts the request into.
 *
 * do_pages_move() (mm/migrate.c) collects pages while the target node stays
 * the same and migrates them, storing their status, when it changes. An
 * area bound to one node sent one node on is one run; an interleaved one
 * sent so is a run of one page per page, every page's status stored by a
 * flush of its own.
 *
 * Expected, from move_pages(2): the call returns 0 ("On success
 * move_pages() returns zero"; a positive value is the number of pages not
 * migrated); status[i] is "the node on which the page resides", here the
 * node page i was sent to; asked again with nodes NULL, every page is on
 * it; its data did not change. From Documentation/mm/page_migration.rst
 * (PGMIGRATE_SUCCESS "Normal page migration success. Each count means that
 * a page was migrated", one per base page; PGMIGRATE_FAIL likewise for
 * failures): pgmigrate_success rises by the pages that changed node,
 * pgmigrate_fail by 0. With one node, the node after a page's is its own:
 * nothing moves, and the same checks hold with 0 pages moved.
 *
 * Usage: move_pages_rotate [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 8M)
 */
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "locked.h"
#include "lrupath.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(8UL << 20)
#define SEED		0x726f7461UL
#define CHECKS		6
#define SHOWN		4	/* wrong pages named per check */

static const char *const events[] = { "pgmigrate_success", "pgmigrate_fail" };

static struct nt_lru_test lt;

/* The memory node after node, wrapping around the nodes the task may use. */
static int next_node(int node)
{
	int next = nt_mask_next(&lt.t.allowed, node);

	return next >= 0 ? next : nt_mask_next(&lt.t.allowed, -1);
}

/* Pages whose want[i] != got[i], naming the first few. */
static size_t mismatches(const int *want, const int *got, size_t n, const char *what)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++) {
		if (want[i] == got[i])
			continue;
		if (bad++ < SHOWN)
			nt_tap_diag("page %zu: %s %d, sent to node %d", i, what, got[i], want[i]);
	}
	if (bad)
		nt_tap_diag("%zu of %zu pages: %s not the node sent to", bad, n, what);
	return bad;
}

static void run(enum nt_place p)
{
	const char *pn = nt_place_names[p];
	long before[2], after[2], counts[NT_MAX_NODES], moved = 0, off;
	int *from, *target, *status, *now;
	struct nt_area a;
	void **pages;
	size_t i;
	long rc;
	int err;

	from = nt_lru_area(&lt, p, &a, SEED, counts);
	pages = calloc(a.npages, sizeof(*pages));
	target = calloc(a.npages, sizeof(*target));
	status = calloc(a.npages, sizeof(*status));
	now = calloc(a.npages, sizeof(*now));
	if (!pages || !target || !status || !now)
		nt_tap_bail("out of memory");
	for (i = 0; i < a.npages; i++) {
		pages[i] = a.addr + i * a.page_size;
		target[i] = next_node(from[i]);
		moved += target[i] != from[i];
		status[i] = -1000;	/* not a node, nor an errno the kernel stores */
	}
	nt_tap_diag("%s: %ld pages to move", pn, moved);

	if (nt_read_values("/proc/vmstat", events, before, 2))
		nt_tap_bail("reading /proc/vmstat");
	rc = move_pages(0, a.npages, pages, target, status, MPOL_MF_MOVE);
	err = errno;
	if (nt_read_values("/proc/vmstat", events, after, 2))
		nt_tap_bail("reading /proc/vmstat");
	if (rc)
		nt_tap_diag("move_pages() returned %ld (%s)", rc, rc < 0 ? strerror(err) : "pages not migrated");
	nt_tap_result(rc == 0, "%s: move_pages() to the next node returns 0", pn);
	nt_tap_result(mismatches(target, status, a.npages, "status") == 0,
		      "%s: status[i] is the node page i was sent to", pn);
	off = nt_pages_per_node(a.addr, a.npages, a.page_size, now, counts);
	if (off < 0)
		nt_tap_bail("move_pages() query: %s", strerror(-off));
	nt_tap_result(mismatches(target, now, a.npages, "queried node") == 0,
		      "%s: every page on the node it was sent to (move_pages() query)", pn);
	nt_tap_result(nt_area_verify(&a, SEED) == 0, "%s: every page's data intact", pn);
	if (after[0] - before[0] != moved)
		nt_tap_diag("pgmigrate_success %+ld, expected %+ld", after[0] - before[0], moved);
	nt_tap_result(after[0] - before[0] == moved,
		      "%s: pgmigrate_success up by the pages that changed node", pn);
	if (after[1] != before[1])
		nt_tap_diag("pgmigrate_fail %+ld", after[1] - before[1]);
	nt_tap_result(after[1] == before[1], "%s: pgmigrate_fail unchanged", pn);

	nt_area_unmap(&a);
	free(pages);
	free(from);
	free(target);
	free(status);
	free(now);
}

int main(int argc, char **argv)
{
	nt_lru_start(&lt, argc, argv, DEFAULT_SIZE);
	nt_lru_plan(&lt, CHECKS);
	return nt_lru_run(run);
}
