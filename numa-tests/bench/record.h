/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every benchmark of this folder prints besides its figures: the cost
 * model's record of each timed region (docs/cost-model.md) and the change
 * of chosen /proc/vmstat items across it.
 */
#ifndef BENCH_RECORD_H
#define BENCH_RECORD_H

#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include "expect.h"
#include "nodemask.h"

/*
 * Under run-guest --clock model, NUMA_MATRIX_MODEL names the records file.
 * Notes the last region there; 0, or -1 with why (len bytes) filled in.
 */
int bench_model_start(char *why, size_t len);
/*
 * Prints "# model iteration=IT insns=..." from the record of the region
 * that just ended: it must be the next one. Nothing without the model.
 */
int bench_model_print(unsigned int it, char *why, size_t len);

#define BENCH_MAX_VMSTAT	16

/* /proc/vmstat items whose names start with one of the prefixes. */
struct bench_vmstat {
	int n;
	char name[64][64];
	long long val[64];
};

/* Reads the items starting with prefixes[0..nr-1]; 0 or -errno. */
int bench_vmstat_read(struct bench_vmstat *s, const char *const *prefixes, int nr);
/* "# vmstat iteration=IT name=delta ..." when there is anything to print. */
void bench_vmstat_print(unsigned int it, const struct bench_vmstat *a,
			const struct bench_vmstat *b);

/* The "# summary op=... min= mean= max= stddev=" line of n figures. */
/*
 * --policy MODE:NODES of both benchmarks: MODE bind, interleave or
 * preferred (one node), NODES a list (0-3,5) or "all", every node of
 * memory, each of them with memory. 0, or -EINVAL with why said; text
 * gets the policy with its nodes spelled out ("interleave:0-3").
 */
int bench_parse_policy(const char *s, const struct nt_nodemask *memory, struct nt_policy *pol,
		       char *text, size_t tlen, char *why, size_t wlen);

void bench_summary(const char *op, unsigned int iterations, const double *secs,
		   unsigned int n);

/*
 * --processes: len bytes of zeroed memory shared with the n workers to be
 * forked, in a process group of their own (a failing worker signals its
 * group), and room for their pids. NULL and why filled in on failure.
 */
void *bench_workers_shared(size_t len, unsigned int n, pid_t **pids, char *why,
			   size_t wlen);
/* A barrier in that memory for parties processes. */
void bench_barrier_shared(pthread_barrier_t *b, unsigned int parties);
/* Waits for n workers; how many did not exit 0. */
unsigned int bench_workers_wait(const pid_t *pids, unsigned int n);

#endif
