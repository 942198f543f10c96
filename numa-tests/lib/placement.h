/* SPDX-License-Identifier: GPL-2.0 */
/* Where pages actually are: move_pages() in query mode. */
#ifndef NT_PLACEMENT_H
#define NT_PLACEMENT_H

#include <stddef.h>

#include "area.h"
#include "expect.h"

/*
 * move_pages(0, npages, pages, NULL, status, 0) over npages pages of
 * page_size from start: status[i] is the node of page i, or -errno for a page
 * that is not there (-ENOENT not present, -EFAULT no VMA, ...). Returns 0, or
 * -errno when the call itself failed (then status means nothing).
 */
int nt_pages_nodes(const void *start, size_t npages, size_t page_size, int *status);

/*
 * Checks every page of a against pol, reporting the first few pages that are
 * misplaced or whose node cannot be read as diagnostics. per_node[n] counts the
 * pages found on node n. Returns the number of bad pages, or -errno.
 */
long nt_check_placement(const struct nt_area *a, const struct nt_policy *pol,
			const struct nt_vma *vma, long per_node[NT_MAX_NODES]);
/*
 * The same for an area of pages of 1 << shift bytes (a THP-backed area:
 * shift 21), still reading and counting every base page.
 */
long nt_check_placement_shift(const struct nt_area *a, const struct nt_policy *pol,
			      const struct nt_vma *vma, unsigned int shift,
			      long per_node[NT_MAX_NODES]);

#endif
