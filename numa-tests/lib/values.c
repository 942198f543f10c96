// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "values.h"

/* Keys per call: enough for every file read here, and no variable-length array. */
#define NT_MAX_KEYS	16

/* line starts with key and the key ends there: "nr_mlock" must not match "nr_mlock_x". */
static const char *after_key(const char *line, const char *key)
{
	size_t len = strlen(key);

	if (strncmp(line, key, len))
		return NULL;
	line += len;
	if (*line == ':')
		return line + 1;
	return isspace((unsigned char)*line) ? line : NULL;
}

static int parse_number(const char *s, long *val)
{
	char *end;

	errno = 0;
	*val = strtol(s, &end, 10);
	if (end == s)
		return -EINVAL;
	return errno ? -errno : 0;
}

static int match_line(const char *line, const char *const *keys, long *vals, bool *found,
		      int n)
{
	const char *rest;
	int i, err;

	for (i = 0; i < n; i++) {
		if (found[i])
			continue;
		rest = after_key(line, keys[i]);
		if (!rest)
			continue;
		err = parse_number(rest, &vals[i]);
		if (err)
			return err;
		found[i] = true;
	}
	return 0;
}

int nt_parse_values(FILE *f, const char *const *keys, long *vals, int n,
		    const char **missing)
{
	bool found[NT_MAX_KEYS] = { false };
	char *line = NULL;
	size_t cap = 0;
	int i, err = 0;

	*missing = NULL;
	if (n > NT_MAX_KEYS)
		return -E2BIG;
	while (!err && getline(&line, &cap, f) >= 0)
		err = match_line(line, keys, vals, found, n);
	if (!err && ferror(f))
		err = -EIO;
	free(line);
	for (i = 0; !err && i < n; i++) {
		if (!found[i]) {
			*missing = keys[i];
			err = -ENOENT;
		}
	}
	return err;
}

int nt_read_values(const char *path, const char *const *keys, long *vals, int n)
{
	const char *missing;
	FILE *f;
	int err;

	f = fopen(path, "r");
	if (!f) {
		err = -errno;
		nt_tap_diag("cannot open %s: %s", path, strerror(-err));
		return err;
	}
	err = nt_parse_values(f, keys, vals, n, &missing);
	fclose(f);
	if (missing)
		nt_tap_diag("%s has no \"%s\" line", path, missing);
	else if (err)
		nt_tap_diag("cannot read %s: %s", path, strerror(-err));
	return err;
}

int nt_parse_size(const char *s, size_t *size)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (toupper((unsigned char)*end)) {
	case 'G':
		shift += 10;
		/* fall through */
	case 'M':
		shift += 10;
		/* fall through */
	case 'K':
		shift += 10;
		end++;
		break;
	}
	if (*end)
		return -EINVAL;
	if (v > (SIZE_MAX >> shift))
		return -ERANGE;
	*size = v << shift;
	return 0;
}

#define SIZE_ENV	"NUMA_TESTS_AREA_SIZE"

static void size_usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-s SIZE]  (bytes, or with K/M/G; also %s)\n", prog,
		SIZE_ENV);
	exit(2);
}

size_t nt_area_size_arg(int argc, char **argv, size_t def)
{
	const char *arg = getenv(SIZE_ENV);
	long page = sysconf(_SC_PAGESIZE);
	size_t size = def;
	int opt;

	while ((opt = getopt(argc, argv, "s:h")) != -1) {
		if (opt != 's')
			size_usage(argv[0]);
		arg = optarg;
	}
	if (optind != argc || page <= 0)
		size_usage(argv[0]);
	if (arg && (nt_parse_size(arg, &size) || !size))
		size_usage(argv[0]);
	return (size + page - 1) / page * page;
}
