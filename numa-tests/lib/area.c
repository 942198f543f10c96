// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "area.h"
#include "nodes.h"

static int base_pages_only(void)
{
	return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) ? -errno : 0;
}

/*
 * Per VMA as well, so the area stays base pages if the caller turns THP back
 * on. A kernel without ADVISE_SYSCALLS (ENOSYS) or THP (EINVAL) refuses it;
 * PR_SET_THP_DISABLE covers that case.
 */
static int no_hugepage(const struct nt_area *a)
{
	if (!madvise(a->addr, a->len, MADV_NOHUGEPAGE))
		return 0;
	return errno == ENOSYS || errno == EINVAL ? 0 : -errno;
}

int nt_area_map(struct nt_area *a, size_t len, int flags)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;
	int err;

	if (page <= 0 || !len || len % page)
		return -EINVAL;
	err = base_pages_only();
	if (err)
		return err;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	a->addr = p;
	a->len = len;
	a->page_size = page;
	a->npages = len / page;
	err = no_hugepage(a);
	if (err)
		nt_area_unmap(a);
	return err;
}

int nt_area_unmap(struct nt_area *a)
{
	if (munmap(a->addr, a->len))
		return -errno;
	a->addr = NULL;
	return 0;
}

int nt_area_mbind(const struct nt_area *a, const struct nt_policy *pol)
{
	if (mbind(a->addr, a->len, pol->mode | pol->flags, pol->nodes.bits, NT_MASK_MAXNODE, 0))
		return -errno;
	return 0;
}

int nt_area_lock(const struct nt_area *a)
{
	return mlock(a->addr, a->len) ? -errno : 0;
}

int nt_area_unlock(const struct nt_area *a)
{
	return munlock(a->addr, a->len) ? -errno : 0;
}

int nt_set_task_policy(const struct nt_policy *pol)
{
	long err;

	if (pol)
		err = set_mempolicy(pol->mode | pol->flags, pol->nodes.bits, NT_MASK_MAXNODE);
	else
		err = set_mempolicy(MPOL_DEFAULT, NULL, 0);
	return err ? -errno : 0;
}

/*
 * One page interleaved over nodes, faulted in: the node the kernel put it
 * on, and the index it was placed by (vm_pgoff of an anonymous mapping is
 * its start address in pages).
 */
static int probe_page(const struct nt_nodemask *nodes, unsigned long *index, int *node)
{
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE, .nodes = *nodes };
	long page = sysconf(_SC_PAGESIZE);
	struct nt_area a = { .len = page, .page_size = page, .npages = 1 };
	void *addr;
	int err = 0, status = -1;

	/*
	 * One page (never a huge page, nothing to change for the process) at
	 * 16 TiB + 16 MiB: its index is 2^32 + 4096, where the two rules
	 * differ for three nodes ((2^32 + 4096) mod 3 is 2, 4096 mod 3 is 1).
	 */
	a.addr = mmap((void *)((1UL << 44) + (16UL << 20)), page, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (a.addr == MAP_FAILED)
		return -errno;
	err = nt_area_mbind(&a, &pol);
	if (!err) {
		a.addr[0] = 1;
		addr = a.addr;
		if (move_pages(0, 1, &addr, NULL, &status, 0))
			err = -errno;
		else if (status < 0)
			err = status;
	}
	*index = (unsigned long)a.addr / page;
	*node = status;
	munmap(a.addr, page);
	return err;
}

/*
 * The documented rule is the full index modulo the nodes (ULONG). Up to
 * 6.6 offset_il_node() cut the index to 32 bits first; the two differ only
 * for indexes from 2^32 (every anonymous mapping above 16 TiB) when the
 * number of nodes is not a power of two. Rather than guess from the
 * version, look: interleave one page over three usable memory nodes, at
 * an index where the rules differ, and see which rule put it where it is.
 * With fewer than three usable nodes the rules never differ.
 * The page is faulted and unmapped at once: call this before a test's
 * counter baseline or mlockall() (nt_lk_fork() does); later calls answer
 * from the first.
 */
int nt_kernel_il_rule(enum nt_il_rule *rule)
{
	static int known = -1;
	struct nt_topology t;
	struct nt_nodemask three;
	unsigned long index = 0;
	int err, node = -1, u32, full, i;

	if (known >= 0) {
		*rule = known;
		return 0;
	}
	err = nt_topology_read(&t);
	if (err)
		return err;
	*rule = NT_IL_INDEX_ULONG;
	/*
	 * Three nodes: 2^32 is not a multiple of 3, so the rules differ. With
	 * fewer usable nodes every set a test can interleave over has 1 or 2
	 * nodes, where they agree.
	 */
	nt_mask_clear(&three);
	for (i = 0; i < 3; i++)
		if (nt_mask_nth(&t.allowed, i) >= 0)
			nt_mask_set(&three, nt_mask_nth(&t.allowed, i));
	if (nt_mask_weight(&three) < 3) {
		known = *rule;
		return 0;
	}
	err = probe_page(&three, &index, &node);
	if (err)
		return err;
	u32 = nt_il_node(&three, index, NT_IL_INDEX_U32);
	full = nt_il_node(&three, index, NT_IL_INDEX_ULONG);
	if (node == u32 && node != full)
		*rule = NT_IL_INDEX_U32;
	else if (node != full)
		return -EPROTO;	/* neither rule: the placement checks will say more */
	known = *rule;
	return 0;
}

/*
 * A maps line can be longer than any buffer (a path of PATH_MAX bytes): read
 * each with getline(), so that a long one is never split into two.
 */
int nt_maps_find(const void *addr, struct nt_maps_entry *e)
{
	unsigned long a = (unsigned long)addr;
	char *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -errno;
	while (err == -ENOENT && getline(&line, &cap, f) > 0) {
		/* start-end perms offset dev inode [path] */
		if (sscanf(line, "%lx-%lx %*s %lx %*s %lu", &e->start, &e->end, &e->offset,
			   &e->inode) != 4)
			err = -EINVAL;
		else if (a >= e->start && a < e->end)
			err = 0;
	}
	free(line);
	fclose(f);
	return err;
}

int nt_area_vma(const struct nt_area *a, struct nt_vma *vma)
{
	struct nt_maps_entry e;
	enum nt_il_rule rule;
	int err;

	err = nt_kernel_il_rule(&rule);
	if (!err)
		err = nt_maps_find(a->addr, &e);
	if (!err) {
		nt_vma_anon(vma, e.start, __builtin_ctzl(a->page_size), rule);
		nt_vma_set_distances(vma, nt_distances());
	}
	return err;
}

static unsigned long pattern(size_t page, unsigned long seed)
{
	/* Odd multiplier: distinct pages give distinct words. */
	return seed ^ ((page + 1) * 0x9e3779b97f4a7c15UL);
}

/* The first and the last word of each page: catches misplaced or shared pages, cheap under TCG. */
static unsigned long *page_word(const struct nt_area *a, size_t page, int last)
{
	char *p = a->addr + page * a->page_size;

	if (last)
		p += a->page_size - sizeof(unsigned long);
	return (unsigned long *)p;
}

void nt_area_fill(const struct nt_area *a, unsigned long seed)
{
	size_t i;

	for (i = 0; i < a->npages; i++) {
		*page_word(a, i, 0) = pattern(i, seed);
		*page_word(a, i, 1) = ~pattern(i, seed);
	}
}

size_t nt_area_verify_zero(const struct nt_area *a)
{
	size_t i, bad = 0;

	for (i = 0; i < a->npages; i++)
		if (*page_word(a, i, 0) || *page_word(a, i, 1))
			bad++;
	return bad;
}

size_t nt_area_verify(const struct nt_area *a, unsigned long seed)
{
	size_t i, bad = 0;

	for (i = 0; i < a->npages; i++)
		if (*page_word(a, i, 0) != pattern(i, seed) ||
		    *page_word(a, i, 1) != ~pattern(i, seed))
			bad++;
	return bad;
}
