// SPDX-License-Identifier: GPL-2.0
/*
 * Freeing an anonymous area of a memory cgroup's task by MADV_DONTNEED,
 * munmap() or exit, the area bound to one node and interleaved: the
 * batched release of freed folios (release_pages() in 6.1,
 * folios_put_refs() in 6.12), which takes each folio off its LRU list
 * under its lruvec's lock, relocking at every page of an interleaved area.
 *
 * A child in the test's memory cgroup maps, places and writes the area,
 * then frees it; the test itself stays outside the cgroup, so that what
 * the cgroup counts is the child's alone. Documented: madvise(2)
 * MADV_DONTNEED ("subsequent accesses of pages in the range will succeed,
 * but will result in ... zero-fill-on-demand pages for anonymous private
 * mappings": the pages are gone), munmap(2) and the end of a process
 * release the memory. The cgroup's memory.numa_stat
 * (Documentation/admin-guide/cgroup-v2.rst: memory.stat's entries broken
 * down per node) anon ("Amount of memory used in anonymous mappings") and
 * active_anon + inactive_anon (the anon LRU lists), read with every CPU
 * drained and the cgroup's statistics folded, go down by the area's pages
 * on each node for MADV_DONTNEED and munmap() (the child still there),
 * and back to where they were before the fork for exit (everything the
 * child had goes).
 * memory.current is not compared: charges go through a per-CPU stock of
 * up to MEMCG_CHARGE_BATCH pages charged ahead, so it is not exact.
 *
 * Usage: release_memcg [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 8M)
 * Needs the memory controller.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "handshake.h"
#include "lrupath.h"
#include "snapshot.h"
#include "tap.h"

#define DEFAULT_SIZE	(8UL << 20)
#define SEED		0x72656c65UL
#define WAIT_S		60.0
#define CHECKS		2

enum way { DONTNEED, MUNMAP, EXIT, WAYS };

static const char *const way_names[WAYS] = {
	[DONTNEED] = "MADV_DONTNEED",
	[MUNMAP] = "munmap",
	[EXIT] = "exit",
};

static struct nt_lru_test lt;
static struct {
	int ready, go, done, quit;
	long counts[NT_MAX_NODES];
} *sh;

/* The child: the area in the memcg, freed the chosen way when told to. */
static void __attribute__((noreturn)) child(enum nt_place p, enum way w)
{
	struct nt_area a;

	nt_scratch_enter(lt.memcg);
	free(nt_lru_area(&lt, p, &a, SEED, sh->counts));
	nt_flag_set(&sh->ready, 1);
	if (!nt_flag_wait(&sh->go, 1, WAIT_S))
		_exit(1);
	if (w == EXIT)
		_exit(0);
	if (w == DONTNEED ? madvise(a.addr, a.len, MADV_DONTNEED) : munmap(a.addr, a.len))
		_exit(1);
	nt_flag_set(&sh->done, 1);
	nt_flag_wait(&sh->quit, 1, WAIT_S);
	_exit(0);
}

static void cell(enum nt_place p, enum way w)
{
	const char *pn = nt_place_names[p], *wn = way_names[w];
	struct nt_lru_reading r0, r1, r2, *base = w == EXIT ? &r0 : &r1;
	const long *pages = w == EXIT ? NULL : sh->counts;
	const long zero[NT_MAX_NODES] = { 0 };
	const char *by = w == EXIT ? "back where it was before the fork" :
				     "down by the area's pages on it";
	int status;
	pid_t pid;

	memset(sh, 0, sizeof(*sh));
	nt_lru_read(&lt, NULL, &r0);
	pid = nt_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid)
		child(p, w);
	if (!nt_flag_wait(&sh->ready, 1, WAIT_S))
		nt_tap_bail("%s, %s: the child did not place its area", pn, wn);
	nt_lru_read(&lt, NULL, &r1);
	nt_flag_set(&sh->go, 1);
	if (w == EXIT) {
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			nt_tap_bail("%s, %s: the child failed (%#x)", pn, wn, status);
	} else if (!nt_flag_wait(&sh->done, 1, WAIT_S)) {
		nt_tap_bail("%s, %s: the child did not free its area", pn, wn);
	}
	nt_lru_read(&lt, NULL, &r2);
	if (w != EXIT) {
		nt_flag_set(&sh->quit, 1);
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			nt_tap_bail("%s, %s: the child failed (%#x)", pn, wn, status);
	}
	nt_tap_result(nt_lru_moved(&lt, &r2, base, NT_ANON, -1, pages ? pages : zero),
		      "%s, %s: each node's anon (memory.numa_stat) %s", pn, wn, by);
	nt_tap_result(nt_lru_moved(&lt, &r2, base, NT_ANON_LRU, -1, pages ? pages : zero),
		      "%s, %s: each node's active_anon + inactive_anon (memory.numa_stat) %s", pn,
		      wn, by);
}

static void run(enum nt_place p)
{
	enum way w;

	for (w = 0; w < WAYS; w++)
		cell(p, w);
}

int main(int argc, char **argv)
{
	/* One CPU for the test and its children: the batches they fill are its. */
	nt_lru_start(&lt, argc, argv, DEFAULT_SIZE);
	nt_scratch_enter(NULL);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	nt_lru_plan(&lt, WAYS * CHECKS);
	return nt_lru_run(run);
}
