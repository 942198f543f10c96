// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <numa.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "locked.h"
#include "pageflags.h"
#include "placement.h"
#include "snapshot.h"
#include "sysfile.h"
#include "tap.h"
#include "values.h"

const char *const nt_kind_names[NT_KINDS_ALL] = {
	[NT_FILE] = "ext4 file shared",
	[NT_PRIVATE_ANON] = "private anonymous",
	[NT_SHARED_ANON] = "shared anonymous",
	[NT_MEMFD] = "memfd shared",
	[NT_MEMFD_PRIVATE] = "memfd private",
};

static size_t page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

static int kind_flags(enum nt_kind kind)
{
	if (kind == NT_PRIVATE_ANON)
		return MAP_PRIVATE | MAP_ANONYMOUS;
	if (kind == NT_SHARED_ANON)
		return MAP_SHARED | MAP_ANONYMOUS;
	return kind == NT_MEMFD_PRIVATE ? MAP_PRIVATE : MAP_SHARED;
}

static int open_memfd(size_t len)
{
	int fd = memfd_create("numa-tests", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* A guard page on each side, and room to align: the start of the mapping in r->resv. */
static int reserve(struct nt_region *r, size_t len, size_t align, uintptr_t *start)
{
	size_t page = page_size();
	void *p;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (!len || len % page || align < page || (align & (align - 1)))
		return -EINVAL;
	r->resv_len = len + align + page;
	p = mmap(NULL, r->resv_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->resv = p;
	*start = ((uintptr_t)p + page + align - 1) & ~(uintptr_t)(align - 1);
	return 0;
}

static int map_over(struct nt_region *r, enum nt_kind kind, uintptr_t start, size_t len,
		    int mflags)
{
	void *p = mmap((void *)start, len, PROT_READ | PROT_WRITE, mflags | MAP_FIXED, r->fd, 0);

	if (p == MAP_FAILED) {
		int err = -errno;

		nt_region_unmap(r);
		return err;
	}
	r->kind = kind;
	r->a.addr = p;
	r->a.len = len;
	r->a.page_size = page_size();
	r->a.npages = len / page_size();
	return 0;
}

int nt_region_map(struct nt_region *r, enum nt_kind kind, size_t len, size_t align, int flags)
{
	uintptr_t start;
	int err = reserve(r, len, align, &start);

	if (err)
		return err;
	if (kind == NT_MEMFD || kind == NT_MEMFD_PRIVATE) {
		r->fd = open_memfd(len);
		if (r->fd < 0) {
			err = r->fd;
			r->fd = -1;
			nt_region_unmap(r);
			return err;
		}
	}
	return map_over(r, kind, start, len, kind_flags(kind) | flags);
}

int nt_region_map_fd(struct nt_region *r, int fd, size_t len, size_t align, int flags)
{
	uintptr_t start;
	int err = reserve(r, len, align, &start);

	if (err)
		return err;
	r->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (r->fd < 0) {
		err = -errno;
		r->fd = -1;
		nt_region_unmap(r);
		return err;
	}
	return map_over(r, NT_FILE, start, len, MAP_SHARED | flags);
}

int nt_region_unmap(struct nt_region *r)
{
	int err = 0;

	if (r->resv && munmap(r->resv, r->resv_len))
		err = -errno;
	if (r->fd >= 0 && close(r->fd) && !err)
		err = -errno;
	r->resv = NULL;
	r->a.addr = NULL;
	r->fd = -1;
	return err;
}

/*
 * One page copied on write in a private mapping of a fresh memfd whose inode
 * number and offset 0 put it on different nodes of the interleave set with
 * and without the inode bias: 1 when the copy went where the bias puts it,
 * 0 where the offset alone does, -EAGAIN when this inode cannot tell.
 */
static int probe_bias(const struct nt_nodemask *nodes)
{
	struct nt_policy il = { .mode = MPOL_INTERLEAVE, .nodes = *nodes };
	long page = page_size();
	int fd, w = nt_mask_weight(nodes), status = -1, ret = -EAGAIN;
	struct stat st;
	void *addr;
	char *p;

	fd = memfd_create("numa-tests-bias", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, page) || fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	if (st.st_ino % w == 0)
		goto out;
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	ret = mbind(p, page, il.mode, il.nodes.bits, NT_MASK_MAXNODE, 0) ? -errno : 0;
	if (!ret) {
		p[0] = 1;
		addr = p;
		ret = move_pages(0, 1, &addr, NULL, &status, 0) ? -errno : 0;
	}
	if (!ret)
		ret = status == nt_mask_nth(nodes, st.st_ino % w) ? 1 :
		      status == nt_mask_nth(nodes, 0) ? 0 : -EPROTO;
	munmap(p, page);
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

int nt_kernel_private_shmem_bias(bool *biased)
{
	static int known = -1;
	struct nt_topology t;
	int i, ret = 0;

	if (known >= 0) {
		*biased = known;
		return 0;
	}
	ret = nt_topology_read(&t);
	if (ret)
		return ret;
	*biased = false;
	if (nt_mask_weight(&t.allowed) < 2) {
		known = 0;
		return 0;
	}
	/* Inode numbers are handed out in turn: a few memfds give one that tells. */
	for (i = 0, ret = -EAGAIN; ret == -EAGAIN && i < 16; i++)
		ret = probe_bias(&t.allowed);
	if (ret < 0)
		return ret;
	known = *biased = ret;
	return 0;
}

int nt_region_vma(const struct nt_region *r, int local_node, struct nt_vma *vma)
{
	unsigned int shift = __builtin_ctzl(r->a.page_size);
	struct nt_maps_entry e;
	enum nt_il_rule rule;
	bool biased;
	int err;

	if (r->kind == NT_PRIVATE_ANON) {
		err = nt_area_vma(&r->a, vma);
	} else {
		err = nt_kernel_il_rule(&rule);
		if (!err)
			err = nt_kernel_private_shmem_bias(&biased);
		if (!err)
			err = nt_maps_find(r->a.addr, &e);
		/*
		 * shmem: the page's index in the object plus the inode number
		 * (expect.h); the anonymous copies in a private mapping of a
		 * memfd: the file offset, plus the inode number where the
		 * kernel biases those too (nt_kernel_private_shmem_bias()); a
		 * disk file's page cache: the task policy, which interleaves by
		 * a per-task rotor (bind those).
		 */
		if (!err)
			nt_vma_file(vma, e.start, (e.offset >> shift) +
				    (r->kind == NT_FILE ||
				     (r->kind == NT_MEMFD_PRIVATE && !biased) ? 0 : e.inode),
				    shift, rule);
	}
	if (!err) {
		nt_vma_set_local(vma, local_node);
		nt_vma_set_distances(vma, nt_distances());
	}
	return err;
}

void nt_lk_snapshot(struct nt_lk *lk, bool drain)
{
	nt_snapshot(&lk->now, &lk->t->online, drain);
}

void nt_lk_baseline(struct nt_lk *lk)
{
	nt_lk_snapshot(lk, true);
	lk->base = lk->now;
	lk->deviation = NULL;
}

static long page_kb(const struct nt_lk *lk)
{
	return lk->r->a.page_size / 1024;
}

/* a + b, where a may be NT_LK_ANY (and stays so). */
static long plus(long a, long b)
{
	return a == NT_LK_ANY ? a : a + b;
}

long nt_lk_placement(struct nt_lk *lk, const struct nt_policy *pol, const struct nt_vma *vma)
{
	unsigned int shift = vma->page_shift;
	char counts[256];
	size_t used = 0;
	long bad;
	int node;

	if (lk->thp_pages)
		shift += __builtin_ctzl(lk->thp_pages);
	bad = nt_check_placement_shift(&lk->r->a, pol, vma, shift, lk->found);
	if (bad < 0)
		nt_tap_diag("move_pages: %s", strerror(-bad));
	counts[0] = '\0';
	for (node = 0; node < NT_MAX_NODES && used < sizeof(counts); node++)
		if (lk->found[node])
			used += snprintf(counts + used, sizeof(counts) - used, " node%d:%ld", node,
					 lk->found[node]);
	nt_tap_diag("%s: pages found on%s", lk->label, counts);
	return bad;
}

void nt_lk_check_placement(struct nt_lk *lk, const struct nt_policy *pol, const struct nt_vma *vma,
			   const char *where)
{
	long bad = nt_lk_placement(lk, pol, vma);

	nt_tap_result(bad == 0, "%s: all %zu pages on %s", lk->label, lk->r->a.npages, where);
}

void nt_lk_check_data(const struct nt_lk *lk, unsigned long seed)
{
	size_t bad = nt_area_verify(&lk->r->a, seed);

	if (bad)
		nt_tap_diag("%zu pages read back wrong", bad);
	nt_tap_result(!bad, "%s: the data of all %zu pages reads back", lk->label,
		      lk->r->a.npages);
}

void nt_lk_check_zeros(const struct nt_lk *lk)
{
	size_t bad = nt_area_verify_zero(&lk->r->a);

	if (bad)
		nt_tap_diag("%zu pages do not read as zeros", bad);
	nt_tap_result(!bad, "%s: all %zu fresh pages read as zeros", lk->label, lk->r->a.npages);
}

void nt_lk_check_vmlck(const struct nt_lk *lk, long want_kb)
{
	long got = lk->now.vmlck_kb - lk->base.vmlck_kb;

	if (got != want_kb)
		nt_tap_diag("VmLck %+ld kB, expected %+ld kB", got, want_kb);
	nt_tap_result(got == want_kb, "%s: VmLck %+ld kB", lk->label, want_kb);
}

void nt_lk_check_smaps(const struct nt_lk *lk, const char *key, long want_kb)
{
	long kb = -1;
	int vmas = 0, err;

	err = nt_smaps_sum(lk->r->a.addr, lk->r->a.len, key, &kb, &vmas);
	if (!err && kb != want_kb)
		nt_tap_diag("smaps %s %ld kB over %d VMA(s), expected %ld kB", key, kb, vmas,
			    want_kb);
	nt_tap_result(!err && kb == want_kb, "%s: smaps %s %ld kB", lk->label, key, want_kb);
}

/*
 * Documentation/mm/unevictable-lru.rst: "For each PTE (or PMD) being
 * faulted into a VMA, the page add rmap function calls mlock_vma_folio()",
 * and a migrated page's PG_mlocked is "set when the new page is mapped in
 * place of migration entry in a VM_LOCKED VMA". Since v6.7 (the series
 * "support large folio for mlock"), folio_add_{anon,file}_rmap_pmd() mlock
 * small folios only and leave a large one to reclaim, so a huge page
 * faulted in (tmpfs) or migrated into a VM_LOCKED VMA is not mlocked.
 */
#define LARGE_FOLIO_NOT_MLOCKED "known deviation (mm/rmap.c since 6.7, \"support large folio " \
	"for mlock\"): a PMD-mapped huge page added to a VM_LOCKED VMA by a fault or a " \
	"migration is left to reclaim, not mlocked as unevictable-lru.rst says; no upstream fix"

/*
 * Which known deviation explains a failed check of lk's range, or NULL:
 * the large folio one when the range is THP-backed, its VMA is locked
 * (smaps Locked covers it) and no huge page head is mlocked. Small pages
 * mlocked in the same kernel keep every other check strict, so a kernel
 * that forgets to mlock on every rmap add still fails.
 */
static const char *lk_deviation(struct nt_lk *lk)
{
	long kb = -1;
	int vmas = 0;

	if (lk->deviation || !lk->thp_pages)
		return lk->deviation;
	if (nt_smaps_sum(lk->r->a.addr, lk->r->a.len, "Locked", &kb, &vmas) ||
	    kb != (long)(lk->r->a.len / 1024))
		return NULL;
	if (nt_thp_heads_unmlocked(lk->r->a.addr, lk->r->a.npages, lk->r->a.page_size,
				   lk->thp_pages))
		lk->deviation = LARGE_FOLIO_NOT_MLOCKED;
	return lk->deviation;
}

void nt_lk_check_nodes(struct nt_lk *lk, bool unevictable, const long *pages)
{
	const char *name = unevictable ? "Unevictable" : "Mlocked";
	long total = 0;
	bool ok;
	int node;

	if (unevictable)
		ok = nt_nodes_moved(&lk->t->online, lk->now.unevictable_kb, lk->base.unevictable_kb,
				    pages, page_kb(lk), name);
	else
		ok = nt_nodes_moved(&lk->t->online, lk->now.mlocked_kb, lk->base.mlocked_kb, pages,
				    page_kb(lk), name);
	nt_mask_for_each(node, &lk->t->online)
		total += pages ? pages[node] * page_kb(lk) : 0;
	if (pages)
		nt_tap_todo(ok, ok ? NULL : lk_deviation(lk),
			    "%s: per-node %s moved by the locked pages on each node (%+ld kB in all)",
			    lk->label, name, total);
	else
		nt_tap_result(ok, "%s: %s of every node back at its baseline", lk->label, name);
}

static bool event_ok(const struct nt_lk *lk, enum nt_vmstat_item item, long want)
{
	long got = lk->now.vmstat[item] - lk->base.vmstat[item];

	if (want == NT_LK_ANY || got == want)
		return true;
	nt_tap_diag("%s %+ld, expected %+ld", nt_vmstat_names[item], got, want);
	return false;
}

void nt_lk_check_events(struct nt_lk *lk, const struct nt_lk_events *want)
{
	bool ok;

	ok = event_ok(lk, NT_PGS_MLOCKED, want->mlocked);
	ok = event_ok(lk, NT_PGS_MUNLOCKED, want->munlocked) && ok;
	ok = event_ok(lk, NT_PGS_CULLED, want->culled) && ok;
	ok = event_ok(lk, NT_PGS_RESCUED, want->rescued) && ok;
	ok = event_ok(lk, NT_PGS_STRANDED, want->stranded) && ok;
	ok = event_ok(lk, NT_PGS_CLEARED, want->cleared) && ok;
	if (!nt_events_agree(&lk->now, &lk->base, lk->label)) {
		nt_tap_diag("nr_mlock does not move by mlocked - munlocked - stranded - cleared");
		ok = false;
	}
	nt_tap_todo(ok, ok ? NULL : lk_deviation(lk),
		    "%s: unevictable_pgs_* moved as expected and nr_mlock agrees with them",
		    lk->label);
}

void nt_lk_check_flags(struct nt_lk *lk, bool mlocked, bool unevictable)
{
	struct nt_flags_want want = {
		.mlocked = mlocked, .unevictable = unevictable, .thp_pages = lk->thp_pages,
	};
	long bad = nt_check_flags(lk->r->a.addr, lk->r->a.npages, lk->r->a.page_size, &want);

	nt_tap_todo(bad == 0, bad == 0 || !mlocked ? NULL : lk_deviation(lk),
		    "%s: every %s KPF_MLOCKED %s, KPF_UNEVICTABLE %s", lk->label,
		    lk->thp_pages ? "huge page head has" : "page has", mlocked ? "set" : "clear",
		    unevictable ? "set" : "clear");
}

#define SEED	0x6c6f636bUL

/* Puts "label: step" in lk->label for a composite check; saved holds the label. */
static void step_begin(struct nt_lk *lk, const char *def, char *saved)
{
	memcpy(saved, lk->label, sizeof(lk->label));
	snprintf(lk->label, sizeof(lk->label), "%.100s: %.56s", saved, lk->step ? lk->step : def);
}

static void step_end(struct nt_lk *lk, const char *saved)
{
	memcpy(lk->label, saved, sizeof(lk->label));
}

void nt_lk_locked(struct nt_lk *lk, const struct nt_policy *pol, const struct nt_vma *vma,
		  long vmlck_kb, const char *where, bool drain)
{
	long n = lk->r->a.npages;
	struct nt_lk_events ev = lk->extra;
	char saved[sizeof(lk->label)];

	step_begin(lk, "locked", saved);
	ev.mlocked = plus(ev.mlocked, n);
	ev.culled = plus(ev.culled, n);
	nt_lk_snapshot(lk, drain);
	nt_lk_check_placement(lk, pol, vma, where);
	if (!lk->seed)
		lk->seed = SEED;
	if (lk->filled) {
		nt_lk_check_data(lk, lk->seed);
	} else {
		nt_lk_check_zeros(lk);
		nt_area_fill(&lk->r->a, lk->seed);
		lk->filled = true;
	}
	nt_lk_check_vmlck(lk, vmlck_kb);
	nt_lk_check_smaps(lk, "Locked", lk->r->a.len / 1024);
	nt_lk_check_nodes(lk, false, lk->found);
	nt_lk_check_nodes(lk, true, lk->found);
	nt_lk_check_events(lk, &ev);
	nt_lk_check_flags(lk, true, true);
	step_end(lk, saved);
}

/* Every page mlocked since base munlocked, every page culled rescued; plus lk->extra. */
static void released_events(const struct nt_lk *lk, struct nt_lk_events *ev)
{
	long n = lk->r->a.npages;

	*ev = lk->extra;
	ev->mlocked = plus(ev->mlocked, n + lk->rest_mlocked);
	ev->munlocked = plus(ev->munlocked, n + lk->rest_mlocked);
	ev->culled = plus(ev->culled, n + lk->rest_culled);
	ev->rescued = plus(ev->rescued, n + lk->rest_culled);
}

void nt_lk_unlocked(struct nt_lk *lk, long vmlck_kb)
{
	char saved[sizeof(lk->label)];
	struct nt_lk_events ev;

	step_begin(lk, "unlocked", saved);
	nt_lk_snapshot(lk, false);
	nt_lk_check_nodes(lk, false, NULL);
	nt_lk_check_nodes(lk, true, NULL);
	nt_lk_check_vmlck(lk, vmlck_kb);
	nt_lk_check_smaps(lk, "Locked", 0);
	released_events(lk, &ev);
	nt_lk_check_events(lk, &ev);
	nt_lk_check_flags(lk, false, false);
	nt_lk_check_data(lk, lk->seed ? lk->seed : SEED);
	step_end(lk, saved);
}

void nt_lk_munlock(struct nt_lk *lk)
{
	int err = nt_area_unlock(&lk->r->a);

	if (err)
		nt_tap_bail("%s: munlock: %s", lk->label, strerror(-err));
	nt_lk_unlocked(lk, 0);
}

void nt_lk_gone(struct nt_lk *lk)
{
	char saved[sizeof(lk->label)];
	struct nt_lk_events ev;

	step_begin(lk, "gone", saved);
	nt_lk_snapshot(lk, true);
	nt_lk_check_nodes(lk, false, NULL);
	nt_lk_check_nodes(lk, true, NULL);
	released_events(lk, &ev);
	nt_lk_check_events(lk, &ev);
	step_end(lk, saved);
}

int nt_lkm_init(struct nt_lkmodel *m, struct nt_lk *lk)
{
	memset(m, 0, sizeof(*m));
	m->lk = lk;
	m->locked = calloc(lk->r->a.npages, sizeof(*m->locked));
	return m->locked ? 0 : -ENOMEM;
}

void nt_lkm_free(struct nt_lkmodel *m)
{
	free(m->locked);
	m->locked = NULL;
}

void nt_lkm_set(struct nt_lkmodel *m, size_t first, size_t n, bool locked)
{
	size_t i;

	for (i = first; i < first + n; i++) {
		if (m->locked[i] == locked)
			continue;
		m->locked[i] = locked;
		if (locked)
			m->mlocked++;
		else
			m->munlocked++;
		m->vmlck_kb += (locked ? 1 : -1) * page_kb(m->lk);
	}
}

/* The pages the model says are locked, per node, from where they are now. */
static void locked_per_node(struct nt_lkmodel *m, long pages[NT_MAX_NODES], long *locked)
{
	const struct nt_area *a = &m->lk->r->a;
	int *status = malloc(a->npages * sizeof(*status));
	size_t i;
	int err;

	if (!status)
		nt_tap_bail("%s: no memory", m->lk->label);
	err = nt_pages_nodes(a->addr, a->npages, a->page_size, status);
	if (err)
		nt_tap_bail("%s: move_pages: %s", m->lk->label, strerror(-err));
	memset(pages, 0, NT_MAX_NODES * sizeof(pages[0]));
	*locked = 0;
	for (i = 0; i < a->npages; i++) {
		if (status[i] < 0 || status[i] >= NT_MAX_NODES)
			nt_tap_bail("%s: page %zu is not resident (%d)", m->lk->label, i, status[i]);
		if (m->locked[i]) {
			pages[status[i]]++;
			(*locked)++;
		}
	}
	free(status);
}

/* KPF_MLOCKED and KPF_UNEVICTABLE of every page as the model says. */
static void check_model_flags(struct nt_lkmodel *m, const char *step)
{
	const struct nt_area *a = &m->lk->r->a;
	uint64_t *flags = malloc(a->npages * sizeof(*flags));
	uint64_t both = NT_KPF(NT_KPF_MLOCKED) | NT_KPF(NT_KPF_UNEVICTABLE);
	size_t i, bad = 0;
	int err;

	if (!flags)
		nt_tap_bail("%s: no memory", m->lk->label);
	err = nt_pages_flags(a->addr, a->npages, a->page_size, flags);
	for (i = 0; !err && i < a->npages; i++) {
		uint64_t want = m->locked[i] ? both : 0;

		if ((flags[i] & (both | NT_PAGE_ABSENT)) == want)
			continue;
		if (bad++ < 8)
			nt_tap_diag("page %zu: kpageflags %#llx, expected KPF_MLOCKED and KPF_UNEVICTABLE %s",
				    i, (unsigned long long)flags[i], want ? "set" : "clear");
	}
	free(flags);
	nt_tap_result(!err && !bad, "%s: %s: every page's KPF_MLOCKED and KPF_UNEVICTABLE as expected",
		      m->lk->label, step);
}

void nt_lkm_check(struct nt_lkmodel *m, int vmas, bool drain, const char *step)
{
	struct nt_lk *lk = m->lk;
	struct nt_lk_events ev = {
		.mlocked = m->mlocked, .culled = m->mlocked,
		.munlocked = m->munlocked, .rescued = m->munlocked,
	};
	long pages[NT_MAX_NODES], locked, kb = -1;
	char label[sizeof(lk->label)];
	int n = -1;
	bool ok;

	nt_lk_snapshot(lk, drain);
	locked_per_node(m, pages, &locked);
	ok = !nt_smaps_sum(lk->r->a.addr, lk->r->a.len, "Locked", &kb, &n);
	if (ok && n != vmas)
		nt_tap_diag("%d VMAs", n);
	nt_tap_result(ok && n == vmas, "%s: %s: %d VMA(s)", lk->label, step, vmas);
	if (ok && kb != locked * page_kb(lk))
		nt_tap_diag("smaps Locked %ld kB", kb);
	nt_tap_result(ok && kb == locked * page_kb(lk), "%s: %s: smaps Locked %ld kB", lk->label,
		      step, locked * page_kb(lk));
	/* The single checks name the case by lk->label: say the step there too. */
	memcpy(label, lk->label, sizeof(label));
	snprintf(lk->label, sizeof(lk->label), "%.100s: %.56s", label, step);
	nt_lk_check_vmlck(lk, m->vmlck_kb);
	nt_lk_check_nodes(lk, false, pages);
	nt_lk_check_nodes(lk, true, pages);
	nt_lk_check_events(lk, &ev);
	memcpy(lk->label, label, sizeof(label));
	check_model_flags(m, step);
}

/* Grows the stack by len bytes once, so that later calls fault no new stack page. */
static void __attribute__((noinline)) touch_stack(size_t len)
{
	volatile char buf[256 << 10];
	size_t i;

	for (i = 0; i < len && i < sizeof(buf); i += 1024)
		buf[i] = 1;
}

/*
 * Runs every reader the checks use once, on a scratch mapping, so that their
 * buffers exist before a baseline is taken.
 */
static void warm_up(const struct nt_topology *t, size_t len)
{
	struct nt_region scratch;
	struct nt_counters c;
	size_t npages = len / page_size() + 16;
	enum nt_il_rule rule;
	bool biased;
	uint64_t flags[4];
	int status[4];
	long kb;
	void *p;
	int err;

	/* Every allocation from the heap, which never shrinks: no mmap()/munmap() later. */
	if (!mallopt(M_MMAP_THRESHOLD, 256 << 20) || !mallopt(M_TRIM_THRESHOLD, INT_MAX))
		nt_tap_bail("mallopt() refused the settings");
	p = malloc(npages * 64 + (1 << 20));
	if (!p)
		nt_tap_bail("no memory for the heap reserve");
	memset(p, 0, npages * 64 + (1 << 20));
	free(p);
	touch_stack(256 << 10);
	if (nt_kernel_il_rule(&rule) || nt_kernel_private_shmem_bias(&biased))
		nt_tap_bail("finding the kernel's interleave rules");
	err = nt_region_map(&scratch, NT_PRIVATE_ANON, 4 * page_size(), page_size(), MAP_POPULATE);
	if (err)
		nt_tap_bail("mapping a scratch area: %s", strerror(-err));
	if (nt_drain_all() || nt_counters_read(&c, &t->online) ||
	    nt_smaps_sum(scratch.a.addr, scratch.a.len, "Locked", &kb, NULL) ||
	    nt_pages_flags(scratch.a.addr, 4, page_size(), flags) ||
	    nt_pages_nodes(scratch.a.addr, 4, page_size(), status))
		nt_tap_bail("the readers the checks use do not work here");
	nt_region_unmap(&scratch);
}

pid_t nt_lk_fork(const struct nt_topology *t, int cpu_node, bool thp, size_t len, int *local_node)
{
	cpu_set_t saved;
	pid_t pid;
	int cpu, node;

	pid = nt_tap_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (pid)
		return pid;
	cpu = nt_pin_cpu(cpu_node, &saved);
	if (cpu < 0)
		nt_tap_bail("pinning to a CPU: %s", strerror(-cpu));
	node = numa_node_of_cpu(cpu);
	if (node < 0)
		nt_tap_bail("node of CPU %d: %s", cpu, strerror(errno));
	*local_node = nt_mask_isset(&t->memory, node) ? node : NT_NODE_ANY;
	if (!thp && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		nt_tap_bail("PR_SET_THP_DISABLE: %s", strerror(errno));
	warm_up(t, len);
	return 0;
}

size_t nt_lk_start(int argc, char **argv, size_t def, struct nt_topology *t)
{
	size_t len = nt_area_size_arg(argc, argv, def);
	int err;

	nt_test_start();
	if (geteuid())
		nt_tap_skip_all("needs root: /proc/sys/vm/stat_refresh, /proc/kpageflags and pagemap frame numbers are root's");
	if (numa_available() < 0)
		nt_tap_skip_all("libnuma says NUMA is not available (numa_available() < 0)");
	err = nt_topology_read(t);
	if (err)
		nt_tap_bail("reading the node topology: %s", strerror(-err));
	return len;
}

void nt_lk_in_child(const struct nt_topology *t, size_t len, unsigned int checks,
		    const char *what,
		    void (*fn)(const struct nt_topology *t, size_t len, int local_node, void *arg),
		    void *arg)
{
	nt_lk_in_child_on(t, -1, len, checks, what, fn, arg);
}

void nt_lk_in_child_on(const struct nt_topology *t, int cpu_node, size_t len,
		       unsigned int checks, const char *what,
		       void (*fn)(const struct nt_topology *t, size_t len, int local_node,
				  void *arg),
		       void *arg)
{
	nt_lk_in_child_thp(t, cpu_node, false, len, checks, what, fn, arg);
}

void nt_lk_in_child_thp(const struct nt_topology *t, int cpu_node, bool thp, size_t len,
			unsigned int checks, const char *what,
			void (*fn)(const struct nt_topology *t, size_t len, int local_node,
				   void *arg),
			void *arg)
{
	unsigned int until = nt_tap_count() + checks;
	int local_node;
	pid_t pid;

	pid = nt_lk_fork(t, cpu_node, thp, len, &local_node);
	if (!pid) {
		fn(t, len, local_node, arg);
		_exit(0);
	}
	nt_tap_wait(pid, until, what);
}

void nt_lk_map(struct nt_lk *lk, enum nt_kind kind, size_t len, const struct nt_policy *pol,
	       bool lock, int local_node, struct nt_vma *vma)
{
	const char *what = "mapping";
	int err;

	err = nt_region_map(lk->r, kind, len, page_size(), 0);
	if (!err) {
		what = "mbind";
		err = nt_area_mbind(&lk->r->a, pol);
	}
	if (!err && lock) {
		what = "mlock";
		err = nt_area_lock(&lk->r->a);
	}
	if (!err) {
		what = "finding the VMA";
		err = nt_region_vma(lk->r, local_node, vma);
	}
	if (err)
		nt_tap_bail("%s: %s of the range: %s", lk->label, what, strerror(-err));
}

void nt_lk_map_thp(struct nt_lk *lk, size_t len, size_t hpage, const struct nt_policy *pol,
		   int local_node, struct nt_vma *vma)
{
	int err = nt_region_map(lk->r, NT_PRIVATE_ANON, len, hpage, 0);

	if (!err && madvise(lk->r->a.addr, len, MADV_HUGEPAGE))
		err = -errno;
	if (!err)
		err = nt_area_mbind(&lk->r->a, pol);
	if (!err)
		err = nt_area_lock(&lk->r->a);
	if (!err)
		err = nt_region_vma(lk->r, local_node, vma);
	if (err)
		nt_tap_bail("%s: mapping and locking huge pages: %s", lk->label, strerror(-err));
	lk->thp_pages = hpage / lk->r->a.page_size;
}

#define THP_DIR	"/sys/kernel/mm/transparent_hugepage"

size_t nt_thp_size(const char **why)
{
	char text[32], mode[32];
	size_t size;

	if (nt_file_read_line(THP_DIR "/hpage_pmd_size", text, sizeof(text)) ||
	    nt_file_read_choice(THP_DIR "/enabled", mode, sizeof(mode))) {
		*why = "no transparent huge pages here (" THP_DIR ")";
		return 0;
	}
	if (!strcmp(mode, "never")) {
		*why = "transparent huge pages set to never here";
		return 0;
	}
	size = strtoul(text, NULL, 10);
	*why = size ? NULL : "no PMD size in " THP_DIR "/hpage_pmd_size";
	return size;
}

int nt_thp_split(pid_t pid, const void *start, const void *end)
{
	char req[96];

	snprintf(req, sizeof(req), "%d,0x%lx,0x%lx", (int)pid, (unsigned long)start,
		 (unsigned long)end);
	return nt_file_write(NT_THP_SPLIT, req);
}

void nt_in_child_on_cpu(int cpu, unsigned int checks, const char *what, void (*fn)(void *arg),
			void *arg)
{
	unsigned int until = nt_tap_count() + checks;
	pid_t pid = nt_tap_fork();
	int err;

	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid) {
		err = nt_run_on_cpu(cpu);
		if (err)
			nt_tap_bail("pinning to CPU %d: %s", cpu, strerror(-err));
		fn(arg);
		_exit(0);
	}
	nt_tap_wait(pid, until, what);
}

void nt_lk_map_populated(struct nt_region *r, size_t len, size_t align,
			 const struct nt_policy *pol)
{
	int err = nt_set_task_policy(pol);

	if (!err)
		err = nt_region_map(r, NT_PRIVATE_ANON, len, align, MAP_LOCKED | MAP_POPULATE);
	if (!err)
		err = nt_set_task_policy(NULL);
	if (err)
		nt_tap_bail("mapping %zu kB locked and populated: %s", len >> 10, strerror(-err));
}
