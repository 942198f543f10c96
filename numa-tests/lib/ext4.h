/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An ext4 file system of its own for a test: a file on tmpfs made into a
 * loop device, formatted with mkfs.ext4 (e2fsprogs, from the root file
 * system) and mounted on a fresh directory. It needs CONFIG_BLOCK,
 * CONFIG_BLK_DEV_LOOP and CONFIG_EXT4_FS (the guests have them) and nothing
 * from QEMU, so the page cache of a real disk file system is tested the same
 * way on any machine. Without e2fsprogs (an initramfs root) busybox mke2fs
 * makes an ext2 layout, which the ext4 driver mounts.
 */
#ifndef NT_EXT4_H
#define NT_EXT4_H

#include <stdbool.h>
#include <stddef.h>

struct nt_ext4 {
	char dir[64];		/* the mount point */
	char image[96];		/* the backing file */
	char loop[32];		/* /dev/loopN */
	bool mounted;
};

/*
 * Makes a size-byte file system and mounts it on fs->dir. 0, -ENODEV when
 * the kernel has no loop devices or no ext4 (say which in why), -ENOENT
 * when mkfs.ext4 is missing, or -errno; why (len bytes) says what failed.
 */
int nt_ext4_make(struct nt_ext4 *fs, size_t size, char *why, size_t len);
/*
 * The same with the image's memory allocated at once, under the caller's
 * memory policy: a benchmark keeps the image off the node it measures.
 */
int nt_ext4_make_allocated(struct nt_ext4 *fs, size_t size, char *why, size_t len);
/* Unmounts it, frees the loop device, removes the files. Safe to call twice. */
void nt_ext4_remove(struct nt_ext4 *fs);

#endif
