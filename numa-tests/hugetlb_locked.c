// SPDX-License-Identifier: GPL-2.0
/*
 * mlock() and MAP_LOCKED of hugetlb memory, interleaved over the nodes.
 *
 * Documentation/mm/unevictable-lru.rst, "Filtering Special VMAs": VMAs
 * mapping hugetlbfs pages "are already effectively pinned into memory. We
 * neither need nor want to mlock() these pages. But __mm_populate() includes
 * hugetlbfs ranges, allocating the huge pages and populating the PTEs", and
 * mlock_fixup() neither sets VM_LOCKED on them nor accounts them in the
 * task's locked_vm. So locking a hugetlb range must:
 * - populate it: every huge page present, each on the node the policy puts
 *   it (interleave by the huge page's index, lib/expect.h, shift 21), and
 *   the node's HugePages_Free down by its huge pages;
 * - not lock it: VmLck +0, smaps Locked 0, no page KPF_MLOCKED or
 *   KPF_UNEVICTABLE (hugetlb pages are on no LRU), per-node Mlocked and
 *   Unevictable and every unevictable_pgs_* event unchanged;
 * - keep the data (fresh pages read as zeros; a pattern written then reads
 *   back after munlock()), and every page KPF_HUGE;
 * and munmap() gives the huge pages back (HugePages_Free at its baseline).
 *
 * Two cases in a child each: a private MAP_HUGETLB mapping locked with
 * mlock(), and a shared hugetlb memfd (MFD_HUGETLB) mapped
 * MAP_LOCKED | MAP_POPULATE under an interleave task policy.
 * The test reserves HUGE_PER_NODE 2 MiB pages on every usable node
 * (nodeN/hugepages/hugepages-2048kB/nr_hugepages) and puts the old counts
 * back at the end.
 *
 * Usage: hugetlb_locked  (the size: two huge pages per usable node)
 * Needs root and CONFIG_HUGETLBFS.
 */
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "counters.h"
#include "harness.h"
#include "locked.h"
#include "pageflags.h"
#include "placement.h"
#include "snapshot.h"
#include "sysfile.h"
#include "tap.h"
#include "values.h"

#ifndef MFD_HUGETLB
#define MFD_HUGETLB	0x0004U
#endif

#define HPAGE		(2UL << 20)
#define HPAGE_SHIFT	21
#define HUGE_PER_NODE	4
#define PER_NODE_USED	2	/* huge pages each case maps per node */
#define CASE_CHECKS	10
#define NCASES		2

static struct {
	struct nt_topology t;
	long saved[NT_MAX_NODES];	/* nr_hugepages before, -1: not changed */
	size_t len;
} g;

static int huge_path(char *buf, size_t len, int node, const char *file)
{
	return snprintf(buf, len, "/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/%s",
			node, file);
}

static int nr_huge(int node, const char *file, long *v)
{
	char path[128], line[32];
	int err;

	huge_path(path, sizeof(path), node, file);
	err = nt_file_read_line(path, line, sizeof(line));
	if (!err && sscanf(line, "%ld", v) != 1)
		err = -EINVAL;
	return err;
}

static int set_nr_huge(int node, long n)
{
	char path[128], text[32];

	huge_path(path, sizeof(path), node, "nr_hugepages");
	snprintf(text, sizeof(text), "%ld", n);
	return nt_file_write(path, text);
}

static void restore(void)
{
	int node;

	for (node = 0; node < NT_MAX_NODES; node++) {
		if (g.saved[node] < 0)
			continue;
		if (set_nr_huge(node, g.saved[node]))
			fprintf(stderr, "hugetlb_locked: cannot put node %d's nr_hugepages back to %ld\n",
				node, g.saved[node]);
		g.saved[node] = -1;
	}
}

static void free_huge(long free[NT_MAX_NODES])
{
	int node;

	memset(free, 0, NT_MAX_NODES * sizeof(free[0]));
	nt_mask_for_each(node, &g.t.allowed)
		if (nr_huge(node, "free_hugepages", &free[node]))
			nt_tap_bail("reading node %d's free_hugepages", node);
}

enum way { MLOCK_PRIVATE, MAP_LOCKED_MEMFD };
static const char *const way_names[NCASES] = {
	[MLOCK_PRIVATE] = "private MAP_HUGETLB, mlock",
	[MAP_LOCKED_MEMFD] = "hugetlb memfd shared, MAP_LOCKED|MAP_POPULATE",
};

/* The mapping, locked the case's way, and its VMA model. */
static void map_locked(enum way way, const struct nt_policy *pol, struct nt_area *a, int *fd,
		       struct nt_vma *vma)
{
	struct nt_maps_entry e;
	enum nt_il_rule rule;
	int err = 0;

	a->len = g.len;
	a->page_size = sysconf(_SC_PAGESIZE);
	a->npages = g.len / a->page_size;
	*fd = -1;
	if (way == MLOCK_PRIVATE) {
		a->addr = mmap(NULL, g.len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (a->addr == MAP_FAILED)
			nt_tap_bail("%s: mmap: %s", way_names[way], strerror(errno));
		err = nt_area_mbind(a, pol);
		if (!err)
			err = nt_area_lock(a);
	} else {
		*fd = memfd_create("hugetlb_locked", MFD_HUGETLB | MFD_CLOEXEC);
		if (*fd < 0 || ftruncate(*fd, g.len))
			nt_tap_bail("%s: a hugetlb memfd: %s", way_names[way], strerror(errno));
		err = nt_set_task_policy(pol);
		a->addr = mmap(NULL, g.len, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_LOCKED | MAP_POPULATE, *fd, 0);
		if (a->addr == MAP_FAILED)
			nt_tap_bail("%s: mmap: %s", way_names[way], strerror(errno));
		err = err ? err : nt_set_task_policy(NULL);
	}
	if (!err)
		err = nt_maps_find(a->addr, &e);
	if (err)
		nt_tap_bail("%s: locking: %s", way_names[way], strerror(-err));
	/*
	 * hugetlb interleaves by the huge page's index: vm_pgoff (base pages)
	 * plus the offset, with no inode bias. Both cases map a hugetlbfs
	 * file: MAP_HUGETLB | MAP_ANONYMOUS too (hugetlb_file_setup(), mapped
	 * from offset 0), so vm_pgoff is the file offset, not the address.
	 */
	if (nt_kernel_il_rule(&rule))
		nt_tap_bail("finding the kernel's interleave rule");
	nt_vma_file(vma, e.start, e.offset / a->page_size, __builtin_ctzl(a->page_size), rule);
}

/* Every page KPF_HUGE, none KPF_MLOCKED or KPF_UNEVICTABLE. */
static long bad_flags(const struct nt_area *a)
{
	uint64_t *f = nt_flags_of(a->addr, a->npages, a->page_size);
	long bad = 0;
	size_t i;

	for (i = 0; i < a->npages; i++) {
		if ((f[i] & NT_PAGE_ABSENT) || !(f[i] & NT_KPF(NT_KPF_HUGE)) ||
		    (f[i] & (NT_KPF(NT_KPF_MLOCKED) | NT_KPF(NT_KPF_UNEVICTABLE)))) {
			if (bad++ < 4)
				nt_tap_diag("page %zu: kpageflags %#llx", i, (unsigned long long)f[i]);
		}
	}
	free(f);
	return bad;
}

/* Nothing of the mlock accounting moved since base. */
static bool nothing_locked(struct nt_lk *lk)
{
	long kb = lk->r->a.page_size / 1024;
	bool ok = lk->now.vmlck_kb == lk->base.vmlck_kb;
	int i;

	for (i = 0; i < NT_VMSTAT_ITEMS; i++)
		ok = ok && lk->now.vmstat[i] == lk->base.vmstat[i];
	if (!ok)
		nt_events_agree(&lk->now, &lk->base, lk->label);
	return ok && nt_nodes_moved(&lk->t->online, lk->now.mlocked_kb, lk->base.mlocked_kb, NULL,
				    kb, "Mlocked") &&
	       nt_nodes_moved(&lk->t->online, lk->now.unevictable_kb, lk->base.unevictable_kb,
			      NULL, kb, "Unevictable");
}

static void run_case(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	enum way way = *(const enum way *)arg;
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = t->allowed };
	long free0[NT_MAX_NODES], free1[NT_MAX_NODES], want[NT_MAX_NODES], found[NT_MAX_NODES];
	struct nt_region r = { .fd = -1 };
	struct nt_lk lk = { .t = t, .r = &r };
	struct nt_vma vma;
	bool ok = true;
	long bad, kb = -1;
	int node, fd;

	(void)len;
	snprintf(lk.label, sizeof(lk.label), "%s", way_names[way]);
	free_huge(free0);
	nt_lk_baseline(&lk);
	map_locked(way, &pol, &r.a, &fd, &vma);
	nt_vma_set_local(&vma, local_node);

	bad = nt_check_placement_shift(&r.a, &pol, &vma, HPAGE_SHIFT, found);
	nt_tap_result(bad == 0, "%s: every huge page present, on its interleave node", lk.label);
	free_huge(free1);
	nt_mask_for_each(node, &t->allowed) {
		want[node] = found[node] * r.a.page_size / HPAGE;
		if (free0[node] - free1[node] == want[node])
			continue;
		nt_tap_diag("node %d: free_hugepages %ld -> %ld, %ld huge pages of the range there",
			    node, free0[node], free1[node], want[node]);
		ok = false;
	}
	nt_tap_result(ok, "%s: each node's free huge pages down by the range's huge pages there",
		      lk.label);
	nt_lk_check_zeros(&lk);
	nt_area_fill(&r.a, 0x68756765UL);
	nt_lk_snapshot(&lk, true);
	nt_tap_result(nothing_locked(&lk),
		      "%s: locked: VmLck, per-node Mlocked and Unevictable, unevictable_pgs_* all unchanged",
		      lk.label);
	if (nt_smaps_sum(r.a.addr, r.a.len, "Locked", &kb, NULL))
		kb = -1;
	nt_tap_result(kb == 0, "%s: locked: smaps Locked 0 kB (the VMA is not VM_LOCKED)",
		      lk.label);
	nt_tap_result(bad_flags(&r.a) == 0,
		      "%s: locked: every page KPF_HUGE, none KPF_MLOCKED or KPF_UNEVICTABLE",
		      lk.label);

	if (munlock(r.a.addr, r.a.len))
		nt_tap_bail("%s: munlock: %s", lk.label, strerror(errno));
	nt_lk_snapshot(&lk, true);
	nt_tap_result(nothing_locked(&lk),
		      "%s: munlocked: VmLck, per-node Mlocked and Unevictable, unevictable_pgs_* all unchanged",
		      lk.label);
	nt_tap_result(bad_flags(&r.a) == 0,
		      "%s: munlocked: every page KPF_HUGE, none KPF_MLOCKED or KPF_UNEVICTABLE",
		      lk.label);
	lk.seed = 0x68756765UL;
	nt_lk_check_data(&lk, lk.seed);

	if (munmap(r.a.addr, r.a.len) || (fd >= 0 && close(fd)))
		nt_tap_bail("%s: munmap: %s", lk.label, strerror(errno));
	free_huge(free1);
	ok = true;
	nt_mask_for_each(node, &t->allowed)
		ok = ok && free1[node] == free0[node];
	nt_tap_result(ok, "%s: unmapped: every node's free huge pages back at the baseline",
		      lk.label);
}

int main(int argc, char **argv)
{
	static enum way ways[NCASES] = { MLOCK_PRIVATE, MAP_LOCKED_MEMFD };
	long have, n;
	int node, err, i;

	(void)nt_lk_start(argc, argv, 0, &g.t);
	for (node = 0; node < NT_MAX_NODES; node++)
		g.saved[node] = -1;
	n = nt_mask_weight(&g.t.allowed);
	if (!n)
		nt_tap_skip_all("no memory node this task may use");
	if (nr_huge(nt_mask_next(&g.t.allowed, -1), "nr_hugepages", &have))
		nt_tap_skip_all("no 2 MiB hugetlb pages here (%s missing: CONFIG_HUGETLBFS)",
				"nodeN/hugepages/hugepages-2048kB");
	nt_cleanup_push(restore);
	nt_mask_for_each(node, &g.t.allowed) {
		if (nr_huge(node, "nr_hugepages", &g.saved[node]))
			nt_tap_bail("reading node %d's nr_hugepages", node);
		err = set_nr_huge(node, HUGE_PER_NODE);
		if (!err)
			err = nr_huge(node, "nr_hugepages", &have);
		if (err || have != HUGE_PER_NODE)
			nt_tap_bail("reserving %d huge pages on node %d: %s (got %ld)", HUGE_PER_NODE,
				    node, err ? strerror(-err) : "too few", have);
	}
	g.len = n * PER_NODE_USED * HPAGE;
	nt_tap_plan(NCASES * CASE_CHECKS);
	nt_tap_diag("%ld usable nodes, %d huge pages reserved on each, %zu MiB per case", n,
		    HUGE_PER_NODE, g.len >> 20);
	for (i = 0; i < NCASES; i++)
		nt_lk_in_child(&g.t, g.len, CASE_CHECKS, way_names[i], run_case, &ways[i]);
	restore();
	return nt_tap_finish();
}
