// SPDX-License-Identifier: GPL-2.0
/*
 * mremap() of a locked range: moving it keeps every page, on its node and
 * locked; growing it locks and populates the new part under the VMA's
 * policy; shrinking it munlocks what goes.
 *
 * In a child pinned to one CPU, a range interleaved over every usable
 * memory node (VMA policy), private anonymous or a memfd mapped shared (its
 * interleave index is the file's, which no move changes; the file is made
 * longer before the range grows over it, and the part mbind() did not name
 * falls back to the task policy, set to the same interleave for that), is
 * mlocked and checked
 * (lib/locked.h nt_lk_locked()), then:
 *
 * 1. moved (MREMAP_MAYMOVE | MREMAP_FIXED) into another reserved place: the
 *    page tables move, so every page must be on the very node it was on, and
 *    the whole locked state must hold at the new address with no
 *    unevictable_pgs_* event. move_vma() keeps vm_pgoff, so the VMA's
 *    interleave index still counts from the old address (lib/expect.h).
 * 2. grown in place (the space after it is freed first): mremap() adds the
 *    new pages to locked_vm and populates them (mm_populate()), each mlocked
 *    and culled once, placed by the same VMA policy; the old pages keep
 *    their data, the new ones read as zeros.
 * 3. shrunk to half: the pages cut off are munlocked (munlocked and rescued
 *    once each) and freed (a memfd's stay in its page cache); the unmap leaves up to 14 of them queued on this
 *    CPU's mlock batch, so the check drains every CPU first.
 * 4. munmap(): everything back at its baseline.
 *
 * Usage: mremap_locked [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "locked.h"
#include "placement.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(1UL << 20)
#define CHECKS		(4 * NT_LK_LOCKED_CHECKS + 5 + NT_LK_GONE_CHECKS + 1)

struct state {
	struct nt_lk lk;
	struct nt_region r;
	struct nt_vma vma;
	struct nt_policy pol;
	const char *where;
};

static void check(struct state *s, bool drain, const char *step)
{
	s->lk.step = step;
	nt_lk_locked(&s->lk, &s->pol, &s->vma, s->r.a.len / 1024, s->where, drain);
}

static int *nodes_now(struct state *s)
{
	int *status = malloc(s->r.a.npages * sizeof(*status));
	int err;

	if (!status)
		nt_tap_bail("no memory");
	err = nt_pages_nodes(s->r.a.addr, s->r.a.npages, s->r.a.page_size, status);
	if (err)
		nt_tap_bail("move_pages: %s", strerror(-err));
	return status;
}

/* The range is now at addr with len bytes; its VMA keeps vm_pgoff, from the first address. */
static void moved_to(struct state *s, char *addr, size_t len, unsigned long pgoff)
{
	s->r.a.addr = addr;
	s->r.a.len = len;
	s->r.a.npages = len / s->r.a.page_size;
	nt_vma_file(&s->vma, (uintptr_t)addr, pgoff, s->vma.page_shift, s->vma.il_rule);
	nt_vma_set_distances(&s->vma, nt_distances());
}

static void move(struct state *s, char *dest)
{
	unsigned long pgoff = s->vma.pgoff;
	int *before = nodes_now(s), *after;
	size_t i, bad = 0;
	void *p;

	p = mremap(s->r.a.addr, s->r.a.len, s->r.a.len, MREMAP_MAYMOVE | MREMAP_FIXED, dest);
	if (p != dest)
		nt_tap_diag("mremap: %s", p == MAP_FAILED ? strerror(errno) : "another address");
	nt_tap_result(p == dest, "%s: mremap() moves the range to %p", s->lk.label, dest);
	if (p != dest)
		nt_tap_bail("cannot go on without the move");
	moved_to(s, dest, s->r.a.len, pgoff);
	after = nodes_now(s);
	for (i = 0; i < s->r.a.npages; i++)
		if (after[i] != before[i] && bad++ < 8)
			nt_tap_diag("page %zu: node %d before the move, %d after", i, before[i],
				    after[i]);
	nt_tap_result(!bad, "%s: after the move every page is on the node it was on", s->lk.label);
	free(before);
	free(after);
	check(s, false, "moved");
}

static void grow(struct state *s, size_t new_len)
{
	struct nt_area added;
	size_t bad, fresh;
	void *p;

	/*
	 * A shared mapping grows over file pages that must exist. Its mbind()
	 * policy is the file's, for the range mbind() named only
	 * (numa_memory_policy.rst, "Shared Policy"): the new part falls back
	 * to the task policy, which is made the same interleave here.
	 */
	if (s->r.fd >= 0 && (ftruncate(s->r.fd, new_len) || nt_set_task_policy(&s->pol)))
		nt_tap_bail("growing the memfd: %s", strerror(errno));
	/* Free the reserved space after the range, then grow into it. */
	if (munmap(s->r.a.addr + s->r.a.len, new_len - s->r.a.len))
		nt_tap_bail("munmap after the range: %s", strerror(errno));
	p = mremap(s->r.a.addr, s->r.a.len, new_len, 0);
	if (p != s->r.a.addr)
		nt_tap_diag("mremap: %s", p == MAP_FAILED ? strerror(errno) : "another address");
	nt_tap_result(p == s->r.a.addr, "%s: mremap() grows the range in place to %zu kB",
		      s->lk.label, new_len >> 10);
	if (p != s->r.a.addr)
		nt_tap_bail("cannot go on without the growth");
	bad = nt_area_verify(&s->r.a, s->lk.seed);
	added = (struct nt_area){ .addr = s->r.a.addr + s->r.a.len, .len = new_len - s->r.a.len,
				  .page_size = s->r.a.page_size };
	added.npages = added.len / added.page_size;
	fresh = nt_area_verify_zero(&added);
	if (bad || fresh)
		nt_tap_diag("%zu old pages read back wrong, %zu new ones not as zeros", bad, fresh);
	nt_tap_result(!bad && !fresh,
		      "%s: the pages it had keep their data, the new ones read as zeros",
		      s->lk.label);
	moved_to(s, s->r.a.addr, new_len, s->vma.pgoff);
	if (s->r.fd >= 0 && nt_set_task_policy(NULL))
		nt_tap_bail("resetting the task policy: %s", strerror(errno));
	nt_area_fill(&s->r.a, s->lk.seed);
	/* Populated by mremap(), which drains this CPU's batch. */
	check(s, false, "grown");
}

static void shrink(struct state *s, size_t new_len)
{
	long cut = (s->r.a.len - new_len) / s->r.a.page_size;
	void *p;

	p = mremap(s->r.a.addr, s->r.a.len, new_len, 0);
	nt_tap_result(p == s->r.a.addr, "%s: mremap() shrinks the range to %zu kB", s->lk.label,
		      new_len >> 10);
	if (p != s->r.a.addr)
		nt_tap_bail("mremap: %s", strerror(errno));
	moved_to(s, s->r.a.addr, new_len, s->vma.pgoff);
	s->lk.extra.mlocked += cut;
	s->lk.extra.culled += cut;
	s->lk.extra.munlocked += cut;
	s->lk.extra.rescued += cut;
	check(s, true, "shrunk");
}

static const enum nt_kind kinds[] = { NT_PRIVATE_ANON, NT_MEMFD };

#define NKINDS	(sizeof(kinds) / sizeof(kinds[0]))

static void run(const struct nt_topology *t, size_t len, int local_node, void *arg)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct state s = { .lk.t = t, .where = "their interleave node" };
	enum nt_kind kind = *(const enum nt_kind *)arg;
	char *dest;

	snprintf(s.lk.label, sizeof(s.lk.label), "%s", nt_kind_names[kind]);
	s.lk.r = &s.r;
	s.pol.mode = MPOL_INTERLEAVE;
	s.pol.nodes = t->allowed;
	nt_lk_baseline(&s.lk);
	nt_lk_map(&s.lk, kind, len, &s.pol, true, local_node, &s.vma);
	check(&s, false, "mapped");

	/* Room for the range grown to twice its size, between guard pages. */
	dest = mmap(NULL, 2 * len + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		    MAP_NORESERVE, -1, 0);
	if (dest == MAP_FAILED)
		nt_tap_bail("reserving the destination: %s", strerror(errno));
	move(&s, dest + page);
	grow(&s, 2 * len);
	shrink(&s, len / 2);
	if (munmap(s.r.a.addr, s.r.a.len))
		nt_tap_bail("munmap: %s", strerror(errno));
	s.lk.step = NULL;
	nt_lk_gone(&s.lk);
	nt_lk_check_vmlck(&s.lk, 0);
}

int main(int argc, char **argv)
{
	struct nt_topology t;
	size_t len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	unsigned int i;

	if (len < 2 * (size_t)sysconf(_SC_PAGESIZE))
		nt_tap_skip_all("the range needs at least two pages");
	nt_tap_plan(NKINDS * CHECKS);
	for (i = 0; i < NKINDS; i++)
		nt_lk_in_child(&t, len, CHECKS, nt_kind_names[kinds[i]], run, (void *)&kinds[i]);
	return nt_tap_finish();
}
