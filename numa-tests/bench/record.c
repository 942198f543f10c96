// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <numaif.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"

static const char *model_file;
static unsigned long long model_region;

/* The last record in the model's file, "" when there is none; -1 and why if unreadable. */
static int model_last(char *last, size_t len, char *why, size_t wlen)
{
	char line[2048];
	FILE *f = fopen(model_file, "r");

	if (!f) {
		snprintf(why, wlen, "cannot read the cost model's records %s: %s", model_file,
			 strerror(errno));
		return -1;
	}
	last[0] = 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "region=", 7))
			snprintf(last, len, "%s", line);
	fclose(f);
	return 0;
}

int bench_model_start(char *why, size_t len)
{
	char last[2048];

	model_file = getenv("NUMA_MATRIX_MODEL");
	if (!model_file)
		return 0;
	if (model_last(last, sizeof(last), why, len))
		return -1;
	if (last[0] && sscanf(last, "region=%llu", &model_region) != 1) {
		snprintf(why, len, "%s: a record without a region number: %.200s", model_file,
			 last);
		return -1;
	}
	return 0;
}

int bench_model_print(unsigned int it, char *why, size_t len)
{
	unsigned long long region = 0;
	char last[2048], *counts;

	if (!model_file)
		return 0;
	if (model_last(last, sizeof(last), why, len))
		return -1;
	counts = strstr(last, " insns=");
	if (sscanf(last, "region=%llu", &region) != 1 || region != model_region + 1 ||
	    !counts) {
		snprintf(why, len, "no cost model record for iteration %u in %s (last region "
			 "%llu, expected %llu)", it, model_file, region, model_region + 1);
		return -1;
	}
	model_region = region;
	printf("# model iteration=%u%s", it, counts);
	return 0;
}

int bench_vmstat_read(struct bench_vmstat *s, const char *const *prefixes, int nr)
{
	static bool warned;
	char line[256], name[64];
	long long val;
	FILE *f;
	int i;

	s->n = 0;
	if (!nr)
		return 0;
	f = fopen("/proc/vmstat", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %lld", name, &val) != 2)
			continue;
		for (i = 0; i < nr; i++)
			if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
				break;
		if (i == nr || s->n == 64)
			continue;
		snprintf(s->name[s->n], sizeof(s->name[0]), "%s", name);
		s->val[s->n++] = val;
	}
	fclose(f);
	if (!s->n && !warned) {
		/* Not an error: counters a kernel does not have are not figures. */
		printf("# vmstat: no /proc/vmstat item starts with the --vmstat prefixes\n");
		warned = true;
	}
	return 0;
}

void bench_vmstat_print(unsigned int it, const struct bench_vmstat *a,
			const struct bench_vmstat *b)
{
	int i;

	if (!b->n)
		return;
	printf("# vmstat iteration=%u", it);
	for (i = 0; i < a->n && i < b->n; i++)
		printf(" %s=%lld", b->name[i], b->val[i] - a->val[i]);
	printf("\n");
}

void bench_summary(const char *op, unsigned int iterations, const double *secs,
		   unsigned int n)
{
	double sum = 0, sq = 0, min = INFINITY, max = 0, mean;
	unsigned int i;

	for (i = 0; i < n; i++) {
		sum += secs[i];
		min = secs[i] < min ? secs[i] : min;
		max = secs[i] > max ? secs[i] : max;
	}
	mean = sum / n;
	for (i = 0; i < n; i++)
		sq += (secs[i] - mean) * (secs[i] - mean);
	printf("# summary op=%s iterations=%u samples=%u min=%.9f mean=%.9f max=%.9f "
	       "stddev=%.9f\n", op, iterations, n, min, mean, max, sqrt(sq / n));
}

void *bench_workers_shared(size_t len, unsigned int n, pid_t **pids, char *why,
			   size_t wlen)
{
	void *sh;

	if (getpgrp() != getpid() && setpgid(0, 0)) {
		snprintf(why, wlen, "setpgid: %s", strerror(errno));
		return NULL;
	}
	sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	*pids = calloc(n, sizeof(**pids));
	if (sh == MAP_FAILED || !*pids) {
		snprintf(why, wlen, "out of memory");
		return NULL;
	}
	return sh;
}

void bench_barrier_shared(pthread_barrier_t *b, unsigned int parties)
{
	pthread_barrierattr_t attr;

	pthread_barrierattr_init(&attr);
	pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(b, &attr, parties);
	pthread_barrierattr_destroy(&attr);
}

unsigned int bench_workers_wait(const pid_t *pids, unsigned int n)
{
	unsigned int w, failed = 0;
	int status;

	for (w = 0; w < n; w++)
		if (waitpid(pids[w], &status, 0) != pids[w] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			failed++;
	return failed;
}

static int fail(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int bench_parse_policy(const char *s, const struct nt_nodemask *memory, struct nt_policy *pol,
		       char *text, size_t tlen, char *why, size_t wlen)
{
	const char *colon = strchr(s, ':');
	size_t mode_len = colon ? (size_t)(colon - s) : 0;
	char nodes[128];
	int node;

	if (!colon)
		return fail(why, wlen, "policy '%s': expected MODE:NODES", s);
	if (mode_len == 4 && !strncmp(s, "bind", 4))
		pol->mode = MPOL_BIND;
	else if (mode_len == 10 && !strncmp(s, "interleave", 10))
		pol->mode = MPOL_INTERLEAVE;
	else if (mode_len == 9 && !strncmp(s, "preferred", 9))
		pol->mode = MPOL_PREFERRED;
	else
		return fail(why, wlen, "policy '%s': unknown mode (bind, interleave, preferred)", s);
	if (!strcmp(colon + 1, "all"))
		pol->nodes = *memory;
	else if (nt_mask_parse(colon + 1, &pol->nodes) || !nt_mask_weight(&pol->nodes))
		return fail(why, wlen, "policy '%s': bad node list", s);
	if (pol->mode == MPOL_PREFERRED && nt_mask_weight(&pol->nodes) != 1)
		return fail(why, wlen, "policy '%s': preferred takes one node", s);
	nt_mask_for_each(node, &pol->nodes)
		if (!nt_mask_isset(memory, node))
			return fail(why, wlen, "policy '%s': node %d has no memory", s, node);
	snprintf(text, tlen, "%.*s:%s", (int)mode_len, s,
		 nt_mask_format(&pol->nodes, nodes, sizeof(nodes)));
	return 0;
}
