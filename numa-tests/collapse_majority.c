// SPDX-License-Identifier: GPL-2.0
/*
 * madvise(MADV_COLLAPSE) of a 2 MiB range of base pages bound to one node,
 * and of one interleaved over every node with one node holding the most:
 * where the huge page lands, from the count of pages per node the
 * collapse takes while it isolates every page, a lruvec lock each.
 *
 * madvise(2), MADV_COLLAPSE (since 6.1): "Perform a best-effort
 * synchronous collapse of the native pages mapped by the memory range into
 * Transparent Huge Pages", independent of the sysfs THP settings; "When
 * the system has multiple NUMA nodes, the hugepage will be allocated from
 * the node providing the most native pages". So, for a fully populated,
 * aligned range, after it:
 * - madvise() returned 0 (every region collapsed);
 * - every page of the range is part of one transparent huge page
 *   (Documentation/admin-guide/mm/pagemap.rst: KPF_THP on each, one
 *   KPF_COMPOUND_HEAD, the first);
 * - that huge page is on the node that held the most pages before (any
 *   of them on a tie);
 * - the data is what was written.
 * The interleaved range has its first MAJORITY pages on the last memory
 * node, the rest page by page over all of them (move_pages() places
 * them), so the last node holds the most and the first node, where a
 * count that stopped at the first node seen would put it, does not.
 *
 * THP is set to "never" for the test (and put back): base pages are
 * faulted, and khugepaged never collapses the range first.
 *
 * Usage: collapse_majority
 */
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "lrupath.h"
#include "pageflags.h"
#include "placement.h"
#include "sysfile.h"
#include "tap.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

#define THP_DIR		"/sys/kernel/mm/transparent_hugepage"
#define THP_SIZE	(2UL << 20)
#define MAJORITY	64
#define SEED		0x636f6c6cUL
#define CHECKS		4

static struct nt_lru_test lt;
static char saved[32];	/* the THP mode before the test */

static void restore_mode(void)
{
	int err;

	if (!saved[0])
		return;
	err = nt_file_write(THP_DIR "/enabled", saved);
	if (err)
		fprintf(stderr, "collapse_majority: restoring THP %s: %s\n", saved, strerror(-err));
	saved[0] = '\0';
}

/* Where page i goes: the home node when bound; else the majority node first, then round robin. */
static int target_of(enum nt_place p, size_t i)
{
	int n = nt_mask_weight(&lt.t.allowed);

	if (p == NT_PLACE_BOUND)
		return lt.home;
	if (i < MAJORITY)
		return nt_mask_nth(&lt.t.allowed, n - 1);
	return nt_mask_nth(&lt.t.allowed, i % n);
}

static void run(enum nt_place p)
{
	const size_t page = sysconf(_SC_PAGESIZE), npages = THP_SIZE / page;
	const char *pn = nt_place_names[p];
	long counts[NT_MAX_NODES], most = 0, bad = 0;
	int *target = calloc(npages, sizeof(*target));
	int *status = calloc(npages, sizeof(*status));
	void **pages = calloc(npages, sizeof(*pages));
	struct nt_area a;
	char *raw;
	size_t i;
	int node, err;

	if (!target || !status || !pages)
		nt_tap_bail("out of memory");
	/* An aligned 2 MiB of its own VMA, base pages only (THP "never"). */
	raw = mmap(NULL, 2 * THP_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	a.addr = (char *)(((unsigned long)raw + THP_SIZE - 1) & ~(THP_SIZE - 1));
	a.len = THP_SIZE;
	a.page_size = page;
	a.npages = npages;
	nt_area_fill(&a, SEED);
	for (i = 0; i < npages; i++) {
		pages[i] = a.addr + i * page;
		target[i] = target_of(p, i);
	}
	if (move_pages(0, npages, pages, target, status, MPOL_MF_MOVE))
		nt_tap_bail("%s: placing the pages with move_pages(): %s", pn, strerror(errno));
	if (nt_pages_per_node(a.addr, npages, page, status, counts))
		nt_tap_bail("%s: pages of the range on no node", pn);
	for (i = 0; i < npages; i++)
		bad += status[i] != target[i];
	if (bad)
		nt_tap_bail("%s: %ld pages not where move_pages() sent them", pn, bad);
	nt_mask_for_each(node, &lt.t.allowed)
		if (counts[node] > most)
			most = counts[node];
	nt_tap_diag("%s: %zu pages, %zu node changes between neighbours, %ld on the fullest node",
		    pn, npages, nt_node_changes(status, npages), most);

	err = madvise(a.addr, THP_SIZE, MADV_COLLAPSE) ? errno : 0;
	if (err)
		nt_tap_diag("madvise: %s", strerror(err));
	nt_tap_result(!err, "%s: madvise(MADV_COLLAPSE) of the range returns 0", pn);
	bad = nt_pages_flags_not(a.addr, 1, page, NT_KPF(NT_KPF_THP) | NT_KPF(NT_KPF_COMPOUND_HEAD),
				 NT_KPF(NT_KPF_THP) | NT_KPF(NT_KPF_COMPOUND_HEAD), "a THP head");
	if (bad >= 0)
		bad += nt_pages_flags_not(a.addr + page, npages - 1, page,
					  NT_KPF(NT_KPF_THP) | NT_KPF(NT_KPF_COMPOUND_TAIL),
					  NT_KPF(NT_KPF_THP) | NT_KPF(NT_KPF_COMPOUND_TAIL),
					  "a THP tail");
	if (bad < 0)
		nt_tap_bail("kpageflags: %s", strerror(-bad));
	nt_tap_result(!bad, "%s: the range is one transparent huge page (kpageflags)", pn);
	err = nt_pages_nodes(a.addr, npages, page, status);
	if (err)
		nt_tap_bail("move_pages() query: %s", strerror(-err));
	for (i = 0, bad = 0; i < npages; i++)
		bad += status[i] != status[0];
	node = status[0];
	if (bad || node < 0 || node >= NT_MAX_NODES || counts[node] != most)
		nt_tap_diag("huge page on node %d (%ld pages elsewhere), which held %ld pages, the fullest %ld",
			    node, bad, node >= 0 && node < NT_MAX_NODES ? counts[node] : -1, most);
	nt_tap_result(!bad && node >= 0 && node < NT_MAX_NODES && counts[node] == most,
		      "%s: the huge page on a node that held the most pages", pn);
	nt_tap_result(nt_area_verify(&a, SEED) == 0, "%s: every page's data intact", pn);
	munmap(raw, 2 * THP_SIZE);
	free(target);
	free(status);
	free(pages);
}

int main(int argc, char **argv)
{
	char text[32];
	int err;

	nt_lru_start(&lt, argc, argv, THP_SIZE);
	if (nt_file_read_line(THP_DIR "/hpage_pmd_size", text, sizeof(text)) ||
	    strtoul(text, NULL, 10) != THP_SIZE ||
	    nt_file_read_choice(THP_DIR "/enabled", saved, sizeof(saved)))
		nt_tap_skip_all("no 2 MiB transparent huge pages here (%s)", THP_DIR);
	nt_cleanup_push(restore_mode);
	err = nt_file_write(THP_DIR "/enabled", "never");
	if (err)
		nt_tap_bail("setting THP never: %s", strerror(-err));
	nt_lru_plan(&lt, CHECKS);
	return nt_lru_run(run);
}
