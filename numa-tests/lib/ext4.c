// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ext4.h"

static int fail(int err, char *why, size_t len, const char *what)
{
	snprintf(why, len, "%s: %s", what, strerror(-err));
	return err;
}

/*
 * The backing file: size bytes of zeros on tmpfs. Allocated now when asked:
 * its pages then follow the caller's memory policy, not the node of
 * whichever CPU the loop worker writes them from.
 */
static int make_image(struct nt_ext4 *fs, size_t size, bool allocate)
{
	int fd, err = 0;

	fd = open(fs->image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, size))
		err = -errno;
	if (!err && allocate)
		err = -posix_fallocate(fd, 0, size);
	close(fd);
	return err;
}

/*
 * mkfs.ext4 -q -F image (or busybox mke2fs): 0, -ENOENT when neither can be
 * run, -EIO when it failed.
 */
static int mkfs(const char *image)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp("mkfs.ext4", "mkfs.ext4", "-q", "-F", image, (char *)NULL);
		/*
		 * An initramfs root has busybox and no e2fsprogs: its ext2
		 * layout, which the ext4 driver mounts, in 4 KiB blocks like
		 * mkfs.ext4's so that a page is one block either way.
		 */
		execlp("busybox", "busybox", "mke2fs", "-F", "-b", "4096", "-m", "0", image,
		       (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return -ENOENT;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EIO;
}

/*
 * A free loop device bound to image; returns its open fd (0+) or -errno.
 * LO_FLAGS_AUTOCLEAR frees the device at its last close, so the caller
 * keeps the fd open until the file system is mounted (the mount holds the
 * device then, and its umount frees it).
 */
static int attach(struct nt_ext4 *fs)
{
	struct loop_config cfg;
	int ctl, n, lfd, ifd, err = 0;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	if (n < 0)
		return -errno;
	snprintf(fs->loop, sizeof(fs->loop), "/dev/loop%d", n);
	lfd = open(fs->loop, O_RDWR | O_CLOEXEC);
	ifd = open(fs->image, O_RDWR | O_CLOEXEC);
	if (lfd < 0 || ifd < 0)
		err = -errno;
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = ifd;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	if (!err && ioctl(lfd, LOOP_CONFIGURE, &cfg))
		err = -errno;
	if (ifd >= 0)
		close(ifd);
	if (err) {
		if (lfd >= 0)
			close(lfd);
		fs->loop[0] = '\0';
		return err;
	}
	return lfd;
}

static int make(struct nt_ext4 *fs, size_t size, bool allocate, char *why, size_t len)
{
	int err, lfd;

	memset(fs, 0, sizeof(*fs));
	snprintf(fs->dir, sizeof(fs->dir), "/tmp/nt-ext4-XXXXXX");
	if (!mkdtemp(fs->dir)) {
		fs->dir[0] = '\0';
		return fail(-errno, why, len, "mkdtemp");
	}
	snprintf(fs->image, sizeof(fs->image), "%s.img", fs->dir);
	err = make_image(fs, size, allocate);
	if (err)
		return fail(err, why, len, "making the image file");
	err = mkfs(fs->image);
	if (err == -ENOENT)
		return fail(err, why, len,
			    "neither mkfs.ext4 (e2fsprogs) nor busybox mke2fs can be run");
	if (err)
		return fail(err, why, len, "mkfs.ext4 failed");
	lfd = attach(fs);
	if (lfd == -ENODEV)
		return fail(lfd, why, len, "no /dev/loop-control (CONFIG_BLK_DEV_LOOP)");
	if (lfd < 0)
		return fail(lfd, why, len, "setting up a loop device");
	err = mount(fs->loop, fs->dir, "ext4", 0, NULL) ? -errno : 0;
	close(lfd);
	if (err)
		return fail(err, why, len, err == -ENODEV ? "no ext4 in this kernel (CONFIG_EXT4_FS)" :
			    "mounting ext4");
	fs->mounted = true;
	return 0;
}

void nt_ext4_remove(struct nt_ext4 *fs)
{
	/* The loop device goes with its last user (LO_FLAGS_AUTOCLEAR). */
	if (fs->mounted && umount(fs->dir))
		fprintf(stderr, "numa-tests: umount %s: %s\n", fs->dir, strerror(errno));
	fs->mounted = false;
	if (fs->image[0] && unlink(fs->image) && errno != ENOENT)
		fprintf(stderr, "numa-tests: removing %s: %s\n", fs->image, strerror(errno));
	fs->image[0] = '\0';
	if (fs->dir[0] && rmdir(fs->dir) && errno != ENOENT)
		fprintf(stderr, "numa-tests: rmdir %s: %s\n", fs->dir, strerror(errno));
	fs->dir[0] = '\0';
}

int nt_ext4_make(struct nt_ext4 *fs, size_t size, char *why, size_t len)
{
	return make(fs, size, false, why, len);
}

int nt_ext4_make_allocated(struct nt_ext4 *fs, size_t size, char *why, size_t len)
{
	return make(fs, size, true, why, len);
}
