// SPDX-License-Identifier: GPL-2.0
/*
 * mlock_held: how many freshly locked pages wait in the CPU's mlock batches,
 * off the LRU, after they were faulted in.
 *
 * A page faulted into a VM_LOCKED vma is queued for mlock_new_page()'s LRU
 * work and stays off the LRU, holding a reference, until its batch drains:
 * compaction skips it, and migration fails on it unless it first drains
 * every CPU (lru_cache_disable()). 6.1 keeps one pagevec of 15 per CPU,
 * drained when it fills, so up to 14 wait; a series that keeps one batch
 * per node keeps up to one less than a batch per node and CPU.
 *
 * mmap(MAP_LOCKED | MAP_POPULATE) and mlock() drain the CPU's batches before
 * they return (populate_vma_page_range(), mlock_vma_pages_range()); faults
 * in a locked area do not. So each iteration maps a fresh area
 * MAP_PRIVATE | MAP_ANONYMOUS under the task policy (--interleave: over
 * every memory node; else the default), locks it with
 * mlock2(MLOCK_ONFAULT), writes every page (one fault each), reads every
 * page's flags from /proc/kpageflags at once, and prints the pages not on
 * an LRU list (KPF_LRU clear), then unmaps it.
 * A figure, not a verdict: the exit status says only whether it measured.
 *
 * Usage: mlock_held [--interleave] [--size S] [--iterations N]  (needs root)
 */
#include <errno.h>
#include <getopt.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "area.h"
#include "expect.h"
#include "nodes.h"
#include "pageflags.h"
#include "values.h"

static void die(const char *what)
{
	fprintf(stderr, "mlock_held: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: mlock_held [--interleave] [--size S] [--iterations N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interleave", no_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 's' },
		{ "iterations", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 }
	};
	size_t len = 4UL << 20, page = sysconf(_SC_PAGESIZE), npages, i;
	struct nt_policy pol = { .mode = MPOL_INTERLEAVE };
	int c, it, iterations = 10, interleave = 0;
	struct nt_topology t;
	uint64_t *flags;
	long held;
	char *p;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			interleave = 1;
			break;
		case 's':
			if (nt_parse_size(optarg, &len) || !len || len % page)
				usage();
			break;
		case 'n':
			iterations = atoi(optarg);
			if (iterations <= 0)
				usage();
			break;
		default:
			usage();
		}
	}
	npages = len / page;
	flags = malloc(npages * sizeof(*flags));
	if (!flags)
		die("malloc");
	if (interleave) {
		if (nt_topology_read(&t))
			die("reading the node topology");
		pol.nodes = t.memory;
		if (nt_set_task_policy(&pol))
			die("set_mempolicy(MPOL_INTERLEAVE)");
	}
	printf("# mlock_held size=%zu policy=%s: pages off the LRU after faulting "
	       "in an mlock2(MLOCK_ONFAULT) area\n", len,
	       interleave ? "interleave:all" : "default");
	printf("iteration,pages,off_lru\n");
	for (it = 1; it <= iterations; it++) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		if (p == MAP_FAILED)
			die("mmap");
		if (mlock2(p, len, MLOCK_ONFAULT))
			die("mlock2(MLOCK_ONFAULT)");
		for (i = 0; i < npages; i++)
			p[i * page] = 1;
		if (nt_pages_flags(p, npages, page, flags))
			die("reading pagemap and kpageflags");
		for (held = 0, i = 0; i < npages; i++)
			held += !(flags[i] & NT_KPF(NT_KPF_LRU));
		printf("%d,%zu,%ld\n", it, npages, held);
		if (munmap(p, len))
			die("munmap");
	}
	free(flags);
	return 0;
}
