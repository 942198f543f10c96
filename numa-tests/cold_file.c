// SPDX-License-Identifier: GPL-2.0
/*
 * madvise(MADV_COLD) of active page-cache pages of an ext4 file, bound to
 * one node and interleaved: the per-CPU deactivate batch, which relocks
 * the lruvec at every page of an interleaved file when it drains.
 *
 * The file is written (its pages inactive), read twice (the second read of
 * a referenced inactive page activates it: folio_mark_accessed(), whose
 * kernel-doc 6.12 renders in Documentation/core-api/mm-api.rst,
 * "inactive,referenced -> active,unreferenced"), mapped once and
 * populated. Then MADV_COLD, and every CPU's batches drained. Documented:
 * - madvise(2): MADV_COLD "Deactivate a given range of pages ... This is a
 *   nondestructive operation": the pages stay resident;
 * - Documentation/admin-guide/cgroup-v2.rst, memory.stat: pgdeactivate
 *   "Amount of pages moved to the inactive LRU list", the same event as
 *   /proc/vmstat's: up by the file's pages, which were all active;
 * - Documentation/admin-guide/mm/pagemap.rst: KPF_ACTIVE "The page is in
 *   the active LRU list", KPF_LRU "in one of the LRU lists": every page
 *   on an LRU list, none on the active one;
 * - each node's Active(file) down and Inactive(file) up by the file's
 *   pages on it (node meminfo after stat_refresh).
 * That every page is active before MADV_COLD is checked too: the other
 * checks mean nothing without it.
 * On the multi-gen LRU the active and inactive lists are a view of
 * generations and reads do not activate: the checks that name them are
 * skipped there.
 *
 * Usage: cold_file [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 8M)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "counters.h"
#include "lrupath.h"
#include "pageflags.h"
#include "snapshot.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(8UL << 20)
#define CHECKS		7

static const char *const file_lists[] = { "Active(file)", "Inactive(file)" };
static const char *const deactivate_event[] = { "pgdeactivate" };

static struct nt_lru_test lt;
static const char *dir;

/* Each node's Active(file) and Inactive(file), and pgdeactivate, every CPU drained first. */
static void snap(long active[NT_MAX_NODES], long inactive[NT_MAX_NODES], long *events)
{
	int err = nt_drain_all();

	if (!err)
		err = nt_nodes_meminfo_sum(&lt.t.online, file_lists, 1, active);
	if (!err)
		err = nt_nodes_meminfo_sum(&lt.t.online, file_lists + 1, 1, inactive);
	if (err)
		nt_tap_bail("reading node meminfo: %s", strerror(-err));
	if (nt_read_values("/proc/vmstat", deactivate_event, events, 1))
		nt_tap_bail("reading /proc/vmstat");
}

static void lru_gen_skip(const char *pn, const char *check)
{
	nt_tap_skip("multi-gen LRU: active and inactive are generations, not lists", "%s: %s",
		    pn, check);
}

static void run(enum nt_place p)
{
	long counts[NT_MAX_NODES], neg[NT_MAX_NODES], act0[NT_MAX_NODES], inact0[NT_MAX_NODES];
	long act1[NT_MAX_NODES], inact1[NT_MAX_NODES], ev0, ev1, bad;
	const uint64_t lru_active = NT_KPF(NT_KPF_LRU) | NT_KPF(NT_KPF_ACTIVE);
	const char *pn = nt_place_names[p];
	size_t npages = lt.len / sysconf(_SC_PAGESIZE);
	int *status = calloc(npages, sizeof(*status));
	int fd, err, node, pass;
	char path[128];
	char *m;

	if (!status)
		nt_tap_bail("out of memory");
	snprintf(path, sizeof(path), "%s/%s", dir, pn);
	fd = nt_lru_file_write(&lt, p, path);
	/* The first read references each page, the second activates it. */
	for (pass = 0; pass < 2; pass++)
		if (nt_lru_file_bad(&lt, p, fd))
			nt_tap_bail("%s: the file does not read back as written", pn);
	m = nt_lru_file_map(&lt, p, fd, status, counts);
	snap(act0, inact0, &ev0);
	if (lt.lru_gen) {
		lru_gen_skip(pn, "every page of the file active after two reads (kpageflags)");
	} else {
		bad = nt_pages_flags_not(m, npages, sysconf(_SC_PAGESIZE),
					 lru_active, lru_active, "active");
		if (bad < 0)
			nt_tap_bail("kpageflags: %s", strerror(-bad));
		nt_tap_result(!bad, "%s: every page of the file active after two reads (kpageflags)",
			      pn);
	}

	err = madvise(m, lt.len, MADV_COLD) ? errno : 0;
	if (err)
		nt_tap_diag("madvise: %s", strerror(err));
	nt_tap_result(!err, "%s: madvise(MADV_COLD) of the mapped file returns 0", pn);
	snap(act1, inact1, &ev1);
	nt_tap_result(nt_residency_not(m, npages, true) == 0,
		      "%s: every page of the file still resident (mincore)", pn);
	if (lt.lru_gen) {
		lru_gen_skip(pn, "pgdeactivate up by the file's pages");
		lru_gen_skip(pn, "every page on an LRU list, none active (kpageflags)");
		lru_gen_skip(pn, "each node's Active(file) down by the file's pages on it");
		lru_gen_skip(pn, "each node's Inactive(file) up by the file's pages on it");
		goto out;
	}
	if (ev1 - ev0 != (long)npages)
		nt_tap_diag("pgdeactivate %+ld, expected +%zu", ev1 - ev0, npages);
	nt_tap_result(ev1 - ev0 == (long)npages, "%s: pgdeactivate up by the file's pages", pn);
	bad = nt_pages_flags_not(m, npages, sysconf(_SC_PAGESIZE), lru_active,
				 NT_KPF(NT_KPF_LRU), "inactive");
	if (bad < 0)
		nt_tap_bail("kpageflags: %s", strerror(-bad));
	nt_tap_result(!bad, "%s: every page on an LRU list, none active (kpageflags)", pn);
	nt_mask_for_each(node, &lt.t.online)
		neg[node] = -counts[node];
	nt_tap_result(nt_nodes_moved(&lt.t.online, act1, act0, neg, sysconf(_SC_PAGESIZE) / 1024,
				     "Active(file)"),
		      "%s: each node's Active(file) down by the file's pages on it", pn);
	nt_tap_result(nt_nodes_moved(&lt.t.online, inact1, inact0, counts,
				     sysconf(_SC_PAGESIZE) / 1024, "Inactive(file)"),
		      "%s: each node's Inactive(file) up by the file's pages on it", pn);
out:
	munmap(m, lt.len);
	close(fd);
	unlink(path);
	free(status);
}

int main(int argc, char **argv)
{
	enum nt_place p;

	/* MADV_COLD passes over a page still in a CPU's lru_add batch: one CPU, drained by it. */
	nt_lru_start(&lt, argc, argv, DEFAULT_SIZE);
	dir = nt_lru_ext4(&lt);
	nt_lru_plan(&lt, CHECKS);
	for (p = 0; p < NT_PLACES; p++)
		run(p);
	return nt_tap_finish();
}
