// SPDX-License-Identifier: GPL-2.0
#include "swap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/swap.h>
#include <unistd.h>

/* The first page's layout of include/linux/swap.h's union swap_header. */
struct header_info {
	char bootbits[1024];
	uint32_t version;
	uint32_t last_page;
	uint32_t nr_badpages;
	unsigned char uuid[16];
	unsigned char volume[16];
};

static int fail(int err, char *why, size_t len, const char *what)
{
	snprintf(why, len, "%s: %s", what, strerror(-err));
	return err;
}

static int write_all(int fd, const char *buf, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

int nt_swap_on(const char *path, size_t size, char *why, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = size / page, i;
	struct header_info *info;
	char *buf;
	int fd, err = 0;

	if (pages < 2)
		return fail(-EINVAL, why, len, "a swap file needs two pages or more");
	buf = calloc(1, page);
	if (!buf)
		return fail(-ENOMEM, why, len, "allocating a page");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(buf);
		return fail(-errno, why, len, "creating the swap file");
	}
	/* Every block written: swapon() refuses a file with holes. */
	for (i = 0; !err && i < pages; i++)
		err = write_all(fd, buf, page);
	info = (struct header_info *)buf;
	info->version = 1;
	info->last_page = (uint32_t)(pages - 1);
	memcpy(buf + page - 10, "SWAPSPACE2", 10);
	if (!err && lseek(fd, 0, SEEK_SET))
		err = -errno;
	if (!err)
		err = write_all(fd, buf, page);
	if (!err && fsync(fd))
		err = -errno;
	close(fd);
	free(buf);
	if (err) {
		unlink(path);
		return fail(err, why, len, "writing the swap file");
	}
	if (swapon(path, SWAP_FLAG_PREFER | SWAP_FLAG_PRIO_MASK)) {
		err = -errno;
		unlink(path);
		return fail(err, why, len, err == -ENOSYS ? "swapon (no CONFIG_SWAP)" : "swapon");
	}
	return 0;
}

int nt_swap_off(const char *path)
{
	int err = 0;

	if (swapoff(path) && errno != EINVAL && errno != ENOENT)
		err = -errno;
	if (unlink(path) && errno != ENOENT && !err)
		err = -errno;
	return err;
}
