/* SPDX-License-Identifier: GPL-2.0 */
/* One-line files of /sys and /proc: read the first line, write a value. */
#ifndef NT_SYSFILE_H
#define NT_SYSFILE_H

#include <stddef.h>

/* The first line of path, without its '\n'. 0 or -errno (-ENODATA: empty file). */
int nt_file_read_line(const char *path, char *buf, size_t len);
/*
 * The word in brackets on the first line of path, the setting chosen among
 * those listed ("always [madvise] never" -> "madvise"). 0 or -errno
 * (-EINVAL: no bracketed word).
 */
int nt_file_read_choice(const char *path, char *buf, size_t len);
/*
 * Writes text to path in one write(), as echo does: 0, or -errno of open()
 * or write() (what the kernel refused with) or close().
 */
int nt_file_write(const char *path, const char *text);

#endif
