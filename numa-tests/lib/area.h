/* SPDX-License-Identifier: GPL-2.0 */
/* Anonymous test areas of base pages, the policies applied to them, their data. */
#ifndef NT_AREA_H
#define NT_AREA_H

#include <stddef.h>

#include "expect.h"

struct nt_area {
	char *addr;
	size_t len;
	size_t page_size;
	size_t npages;
};

/*
 * mmap()s len bytes (a multiple of the page size) PROT_READ | PROT_WRITE,
 * MAP_PRIVATE | MAP_ANONYMOUS | flags (e.g. MAP_LOCKED | MAP_POPULATE), with
 * base pages only whatever the THP mode: it sets PR_SET_THP_DISABLE for the
 * process first (MAP_POPULATE faults inside mmap(), before any madvise()),
 * then MADV_NOHUGEPAGE on the area. 0 or -errno.
 */
int nt_area_map(struct nt_area *a, size_t len, int flags);
int nt_area_unmap(struct nt_area *a);
/* mbind() of the whole area, no MPOL_MF_* flags. */
int nt_area_mbind(const struct nt_area *a, const struct nt_policy *pol);
/* mlock() of the whole area: locks and populates it. */
int nt_area_lock(const struct nt_area *a);
int nt_area_unlock(const struct nt_area *a);
/* The task policy; pol NULL means MPOL_DEFAULT. */
int nt_set_task_policy(const struct nt_policy *pol);
/*
 * Which interleave rule the running kernel follows, found by placing one
 * interleaved page (see area.c). 0, or -errno (-EPROTO: neither rule).
 */
int nt_kernel_il_rule(enum nt_il_rule *rule);
/* A line of /proc/self/maps: the VMA's bounds, file offset (bytes) and inode number. */
struct nt_maps_entry {
	unsigned long start, end, offset, inode;
};

/* The /proc/self/maps line of the VMA holding addr. 0, -ENOENT or -errno. */
int nt_maps_find(const void *addr, struct nt_maps_entry *e);
/* The VMA holding the area's first page, from /proc/self/maps; anonymous-mapping rule for pgoff. */
int nt_area_vma(const struct nt_area *a, struct nt_vma *vma);
/* Writes a pattern that differs per page and per seed into every page. */
void nt_area_fill(const struct nt_area *a, unsigned long seed);
/* Number of pages whose pattern does not read back. */
size_t nt_area_verify(const struct nt_area *a, unsigned long seed);
/* Number of pages whose first or last word is not zero (fresh memory must be). */
size_t nt_area_verify_zero(const struct nt_area *a);

#endif
