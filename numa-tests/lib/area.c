// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "area.h"

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

int nt_kernel_il_rule(enum nt_il_rule *rule)
{
	unsigned int major, minor;
	struct utsname u;

	if (uname(&u))
		return -errno;
	if (sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return -EINVAL;
	if (major > 6 || (major == 6 && minor >= 7))
		*rule = NT_IL_INDEX_ULONG;
	else
		*rule = NT_IL_INDEX_U32;
	return 0;
}

int nt_maps_find(const void *addr, struct nt_maps_entry *e)
{
	unsigned long a = (unsigned long)addr;
	char line[512];
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -errno;
	while (err == -ENOENT && fgets(line, sizeof(line), f)) {
		/* start-end perms offset dev inode [path] */
		if (sscanf(line, "%lx-%lx %*s %lx %*s %lu", &e->start, &e->end, &e->offset,
			   &e->inode) != 4)
			err = -EINVAL;
		else if (a >= e->start && a < e->end)
			err = 0;
	}
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
	if (!err)
		nt_vma_anon(vma, e.start, __builtin_ctzl(a->page_size), rule);
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

size_t nt_area_verify(const struct nt_area *a, unsigned long seed)
{
	size_t i, bad = 0;

	for (i = 0; i < a->npages; i++)
		if (*page_word(a, i, 0) != pattern(i, seed) ||
		    *page_word(a, i, 1) != ~pattern(i, seed))
			bad++;
	return bad;
}
