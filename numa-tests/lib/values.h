/* SPDX-License-Identifier: GPL-2.0 */
/* Numbers out of /proc and /sys text files, and out of command lines. */
#ifndef NT_VALUES_H
#define NT_VALUES_H

#include <stddef.h>
#include <stdio.h>

/*
 * For each keys[i], the number after it on the first line of f that starts
 * with it, followed by ':' or white space: fits "name 12" (/proc/vmstat),
 * "Node 0 Mlocked:   12 kB" (node meminfo) and "VmLck:\t 12 kB" (status).
 * 0 when every key was found; -ENOENT when one is missing (a missing line
 * is never a 0: the kernel may simply not have that counter); -EINVAL when
 * one has no number; -errno on read errors. *missing is the first key not
 * found, or NULL.
 */
int nt_parse_values(FILE *f, const char *const *keys, long *vals, int n,
		    const char **missing);
/* The same, on the file at path; says in a diagnostic which key or file failed. */
int nt_read_values(const char *path, const char *const *keys, long *vals, int n);
/* "4096", "64K", "8M", "1G" (binary units) -> bytes; 0 or -EINVAL/-ERANGE. */
int nt_parse_size(const char *s, size_t *size);
/*
 * A test's area size: -s SIZE on the command line, else the environment
 * variable NUMA_TESTS_AREA_SIZE, else def; rounded up to whole pages. Prints
 * the usage and exits 2 on anything else.
 */
size_t nt_area_size_arg(int argc, char **argv, size_t def);

#endif
