/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page flags of the pages behind user addresses: /proc/self/pagemap gives
 * each page's frame number (root only: others read 0), /proc/kpageflags its
 * flags (Documentation/admin-guide/mm/pagemap.rst).
 *
 * kpageflags copies each page's own flag bits (stable_page_flags() in
 * fs/proc/page.c, 6.1): for a transparent huge page, PG_mlocked, PG_unevictable
 * and PG_lru live on the head page only; every page of it has KPF_THP.
 */
#ifndef NT_PAGEFLAGS_H
#define NT_PAGEFLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bit numbers of include/uapi/linux/kernel-page-flags.h. */
#define NT_KPF_LRU		5
#define NT_KPF_ACTIVE		6
#define NT_KPF_ANON		12
#define NT_KPF_SWAPBACKED	14
#define NT_KPF_COMPOUND_HEAD	15
#define NT_KPF_COMPOUND_TAIL	16
#define NT_KPF_HUGE		17
#define NT_KPF_UNEVICTABLE	18
#define NT_KPF_THP		22
#define NT_KPF_MLOCKED		33

#define NT_KPF(bit)	(UINT64_C(1) << (bit))

/* Flags of one page, with a pseudo bit for "not present" (no frame mapped). */
#define NT_PAGE_ABSENT	(UINT64_C(1) << 63)

/*
 * Flags of the npages pages of page_size from start, one entry each:
 * kpageflags of the page mapped there, or NT_PAGE_ABSENT. 0, or -errno
 * (-EPERM when pagemap hides frame numbers: not root).
 */
int nt_pages_flags(const void *start, size_t npages, size_t page_size, uint64_t *flags);

/*
 * The frame number behind each of npages pages of page_size from start
 * (pagemap, root only), 0 for a page not present. 0 or -errno (-EPERM when
 * pagemap hides frame numbers).
 */
int nt_pages_pfns(const void *start, size_t npages, size_t page_size, uint64_t *pfns);

/* nt_pages_flags() into a new array (free() it); bails on errors. */
uint64_t *nt_flags_of(const void *start, size_t npages, size_t page_size);

/* A frame: its number, kpageflags and map count. */
struct nt_frame {
	uint64_t pfn, flags, mapcount;
};

/*
 * Every frame the kernel has with any of the kpageflags bits in mask set
 * (/proc/kpageflags), in pfn order, with how many page tables map it
 * (/proc/kpagecount); a THP is one frame, its head, for PG_mlocked and
 * PG_unevictable. E.g. NT_KPF(NT_KPF_MLOCKED): with nothing locked, each is
 * an mlock never undone. Up to max of them in out; returns how many there
 * are, or -errno.
 */
long nt_frames_flagged(uint64_t mask, struct nt_frame *out, size_t max);

/* What a range of pages must show. */
struct nt_flags_want {
	bool mlocked;		/* KPF_MLOCKED set (true) or clear (false) */
	bool unevictable;	/* KPF_UNEVICTABLE likewise */
	size_t thp_pages;	/* base pages per huge page when the range is THPs (every page
				   KPF_THP, one head each, lock flags on heads only), else 0 */
};

/*
 * Checks every page of the range against want, giving the first few
 * mismatches as diagnostics (absent pages are mismatches). Returns the
 * number of bad pages, or -errno when the flags could not be read.
 */
long nt_check_flags(const void *start, size_t npages, size_t page_size,
		    const struct nt_flags_want *want);

/*
 * Every page of the range is present and part of a huge page of thp_pages
 * base pages, and no head has KPF_MLOCKED. Reports nothing.
 */
bool nt_thp_heads_unmlocked(const void *start, size_t npages, size_t page_size,
			    size_t thp_pages);

#endif
