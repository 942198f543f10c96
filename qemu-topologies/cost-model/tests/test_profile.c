// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of the instruction profile (profile.c) with synthetic
 * executions: an execution is what the plugin's inline add does, one added
 * to the counter of the instruction's translation. Only executions inside
 * closed regions count; translations of one address are merged; the file
 * is "# ..." header lines, then "ADDRESS COUNT" ascending.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "tap.h"

#define A	0xffffffff81000010ULL
#define B	0xffffffff81000020ULL
#define U	0x0000000000401000ULL

static void run(uint64_t *counter, unsigned int times)
{
	*counter += times;
}

/* What cm_profile_write() prints, in a buffer the caller frees. */
static char *written(struct cm_profile *p, uint64_t region_insns)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f || cm_profile_write(p, f, region_insns))
		nt_tap_bail("cannot write the profile");
	fclose(f);
	return buf;
}

/* The count of an address in a written profile, or -1 if absent. */
static long long count_of(const char *text, uint64_t addr)
{
	char want[32];
	const char *at;

	snprintf(want, sizeof(want), "\n%016llx ", (unsigned long long)addr);
	at = strstr(text, want);
	return at ? atoll(at + strlen(want)) : -1;
}

static void test_regions(void)
{
	struct cm_profile p;
	uint64_t *a1, *a2, *b, *u;
	char *text, *line;

	cm_profile_init(&p);
	a1 = cm_profile_slot(&p, A);
	b = cm_profile_slot(&p, B);
	run(a1, 100);			/* before any region: not counted */
	run(b, 7);
	cm_profile_start(&p);
	run(a1, 3);
	run(b, 1);
	a2 = cm_profile_slot(&p, A);	/* A translated again inside the region */
	run(a2, 2);
	cm_profile_end(&p);
	run(a1, 50);			/* between regions */
	cm_profile_start(&p);
	run(b, 40);			/* undone by the start below */
	cm_profile_start(&p);
	run(b, 4);
	u = cm_profile_slot(&p, U);
	run(u, 1);
	cm_profile_end(&p);
	cm_profile_start(&p);		/* never ended: not counted */
	run(a1, 1000);

	text = written(&p, 11);
	nt_tap_result(count_of(text, A) == 5,
		      "an address counts its executions inside regions over all its "
		      "translations: 3 + 2 (%lld)", count_of(text, A));
	nt_tap_result(count_of(text, B) == 5,
		      "a start inside a region starts it again: 1 + 4 (%lld)", count_of(text, B));
	nt_tap_result(count_of(text, U) == 1,
		      "an instruction translated inside a region counts from its translation");
	nt_tap_result(strstr(text, "# regions=2 insns=11 region_insns=11 translations=4 "
				   "lost=0\n") != NULL,
		      "the header gives the closed regions, the sum and the caller's count");
	if (!nt_tap_result(strstr(text, "\n0000000000401000 1\nffffffff81000010 5\n"
					"ffffffff81000020 5\n") != NULL &&
			   !strstr(text, "ffffffff81000010 5\nffffffff81000010"),
			   "one line per address, ascending, 16 hex digits"))
		for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
			nt_tap_diag("written: %s", line);
	free(text);
	cm_profile_free(&p);

	cm_profile_init(&p);
	a1 = cm_profile_slot(&p, A);
	cm_profile_start(&p);
	cm_profile_end(&p);
	run(a1, 9);
	text = written(&p, 0);
	nt_tap_result(count_of(text, A) == -1 && strstr(text, " insns=0 "),
		      "an address that ran only outside regions is not written");
	free(text);
	cm_profile_free(&p);
}

static void test_many(void)
{
	enum { N = 200000 };		/* more than one chunk of slots */
	struct cm_profile p;
	uint64_t *c[4], i;
	char *text;
	long long total = 0;
	const char *line;

	cm_profile_init(&p);
	for (i = 0; i < N; i++) {
		uint64_t *slot = cm_profile_slot(&p, 0x1000 + (i % 1000) * 4);

		if (i < 4)
			c[i] = slot;
		*slot = i;	/* executed before the region: not counted */
	}
	cm_profile_start(&p);
	for (i = 0; i < 4; i++)
		run(c[i], 1);
	run(cm_profile_slot(&p, 0x1000), 10);
	cm_profile_end(&p);
	text = written(&p, 14);
	for (line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n'))
		if (line[1] != '#')
			total += atoll(strchr(line + 1, ' ') + 1);
	nt_tap_result(total == 14 && count_of(text, 0x1000) == 11,
		      "%d translations: the lines add up to the instructions of the "
		      "regions (%lld)", N, total);
	free(text);
	cm_profile_free(&p);
}

static void test_params(void)
{
	struct cm_params p;
	char err[256];

	cm_params_default(&p);
	nt_tap_result(!p.profile[0], "no profile by default");
	nt_tap_result(!cm_params_set(&p, "profile=/x/profile.txt", err, sizeof(err)) &&
		      !strcmp(p.profile, "/x/profile.txt"), "profile=PATH names the file");
	nt_tap_result(cm_params_set(&p, "profile=", err, sizeof(err)) != 0,
		      "an empty profile= is refused");
}

int main(void)
{
	nt_tap_start();
	nt_tap_plan(10);
	test_regions();
	test_many();
	test_params();
	return nt_tap_finish();
}
