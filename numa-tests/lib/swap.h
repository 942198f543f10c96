/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A swap file of a test's own, on a file system it made (lib/ext4.h): the
 * guests have no swap device, and anonymous reclaim needs one. The file is
 * written out in full (swapon refuses holes), given a version-1 swap header
 * (include/linux/swap.h's union swap_header: "SWAPSPACE2" in the last 10
 * bytes of the first page) and enabled with swapon(2) at the highest priority,
 * so that nothing else a machine may have takes the pages.
 */
#ifndef NT_SWAP_H
#define NT_SWAP_H

#include <stddef.h>

/* 0 or -errno; why (len bytes) says what failed. Needs CONFIG_SWAP. */
int nt_swap_on(const char *path, size_t size, char *why, size_t len);
/* swapoff(2) and unlink; 0 or -errno. Safe on a path never enabled. */
int nt_swap_off(const char *path);

#endif
