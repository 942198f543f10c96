// SPDX-License-Identifier: GPL-2.0
/* Host unit test of the /proc and /sys value parser and of size arguments (lib/values.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "values.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static int parse(const char *text, const char *const *keys, long *vals, int n,
		 const char **missing)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int err;

	if (!f)
		nt_tap_bail("fmemopen: %s", strerror(errno));
	err = nt_parse_values(f, keys, vals, n, missing);
	fclose(f);
	return err;
}

static void test_vmstat(void)
{
	static const char text[] = "nr_mlock_x 7\nnr_mlock 5\nunevictable_pgs_mlocked 12\n";
	static const char tiny[] = "nr_mlock 5\nnr_unevictable 9\n";
	static const char *const keys[] = { "nr_mlock", "unevictable_pgs_mlocked" };
	const char *missing;
	long v[2] = { 0, 0 };

	nt_tap_result(!parse(text, keys, v, 2, &missing) && v[0] == 5 && v[1] == 12,
		      "vmstat: nr_mlock 5 and unevictable_pgs_mlocked 12, not nr_mlock_x");
	nt_tap_result(parse(tiny, keys, v, 2, &missing) == -ENOENT,
		      "vmstat without unevictable_pgs_* (no VM_EVENT_COUNTERS) is -ENOENT, not 0");
	nt_tap_result(missing && !strcmp(missing, "unevictable_pgs_mlocked"),
		      "vmstat: the missing key is named");
}

static void test_meminfo_status(void)
{
	static const char node[] = "Node 1 Mlocked:        2048 kB\nNode 1 Unevictable:   4096 kB\n";
	static const char status[] = "VmLib:\t    2000 kB\nVmLck:\t    8192 kB\n";
	static const char *const keys[] = { "Node 1 Unevictable", "Node 1 Mlocked" };
	const char *mlock = "Node 1 Mlock", *vmlck = "VmLck";
	const char *missing;
	long v[2];

	nt_tap_result(!parse(node, keys, v, 2, &missing) && v[0] == 4096 && v[1] == 2048,
		      "node meminfo: Unevictable 4096 kB, Mlocked 2048 kB");
	nt_tap_result(parse(node, &mlock, v, 1, &missing) == -ENOENT,
		      "node meminfo: key \"Mlock\" does not match \"Mlocked\"");
	nt_tap_result(!parse(status, &vmlck, v, 1, &missing) && v[0] == 8192,
		      "status: VmLck 8192 kB");
	nt_tap_result(parse("VmLck:\t  kB\n", &vmlck, v, 1, &missing) == -EINVAL,
		      "status: a key without a number is -EINVAL");
}

static void test_size(void)
{
	static const struct {
		const char *arg;
		int err;
		size_t size;
	} cases[] = {
		{ "4096", 0, 4096 }, { "64K", 0, 65536 }, { "8M", 0, 8388608 },
		{ "1g", 0, 1073741824 }, { "", -EINVAL, 0 }, { "M", -EINVAL, 0 },
		{ "8X", -EINVAL, 0 }, { "8MB", -EINVAL, 0 },
	};
	size_t i, size;
	int err;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		size = 0;
		err = nt_parse_size(cases[i].arg, &size);
		if (cases[i].err)
			nt_tap_result(err == cases[i].err, "size: \"%s\" is rejected",
				      cases[i].arg);
		else
			nt_tap_result(!err && size == cases[i].size, "size: \"%s\" is %zu bytes",
				      cases[i].arg, cases[i].size);
	}
}

int main(void)
{
	nt_tap_start();
	nt_tap_plan(15);
	test_vmstat();
	test_meminfo_status();
	test_size();
	return nt_tap_finish();
}
