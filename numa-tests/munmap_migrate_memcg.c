// SPDX-License-Identifier: GPL-2.0
/*
 * munmap() of a locked shared file mapping while another CPU migrates the
 * same folios, the folios charged to a memory cgroup.
 *
 * munmap() of a VM_LOCKED mapping munlocks each folio as its mapping goes
 * (Documentation/mm/unevictable-lru.rst, "munmap()/exit()/exec() System
 * Call Handling"), and the munlock finds some of them isolated by the
 * migration: it must still leave them munlocked once the last locked
 * mapping is gone, whoever holds them then. Migration moves the memcg
 * charge to the new folio (mem_cgroup_migrate()), so a munlock that looks
 * up the lruvec of a folio someone else has isolated may find its memcg
 * changing under it; with CONFIG_DEBUG_VM, lruvec_memcg_debug() checks
 * that the lruvec locked is the folio's.
 *
 * A child in a scratch memcg fills a memfd (shmem, charged to the memcg);
 * a mover maps it too, unlocked, and moves all its pages between two
 * nodes with migrate_pages(2) (CAP_SYS_NICE: MPOL_MF_MOVE_ALL, pages
 * mapped by several processes move too), over and over, while the child,
 * on another CPU, maps the memfd MAP_LOCKED | MAP_POPULATE and unmaps it,
 * ROUNDS times. Then, with every CPU drained:
 * - no page of the memfd is KPF_MLOCKED or KPF_UNEVICTABLE;
 * - nr_mlock and every node's Mlocked and Unevictable are back at their
 *   baseline, and nr_mlock moved by mlocked - munlocked - stranded -
 *   cleared;
 * - no folio was freed still mlocked (unevictable_pgs_cleared): each one
 *   the migration replaced was munlocked first, by the munmap() or by the
 *   migration (unmapping the old folio munlocks it);
 * - the memcg's memory.stat "unevictable" is 0;
 * and the guest's kernel log has no splat (run-guest fails the run on one).
 *
 * Usage: munmap_migrate_memcg [-s SIZE]  (the memfd; default 1M)
 * Needs root, two CPUs, two memory nodes and the memory controller.
 */
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "handshake.h"
#include "harness.h"
#include "locked.h"
#include "pageflags.h"
#include "snapshot.h"
#include "tap.h"

#define DEFAULT_SIZE	(1UL << 20)
#define ROUNDS		200
#define WAIT_S		60.0
#define CHECKS		6

static struct {
	struct nt_topology t;
	size_t len, page;
	int fd, cpu[2], node[2];
	const char *memcg;
	struct {
		int ready, stop, err;
		long moves;
	} *sh;
} g;

/* The mover: migrates the memfd's pages between the two nodes until told to stop. */
static void __attribute__((noreturn)) mover(void)
{
	struct nt_nodemask from, to;
	double until = nt_now_s() + WAIT_S;
	char *p;
	int err = nt_run_on_cpu(g.cpu[1]);

	p = mmap(NULL, g.len, PROT_READ, MAP_SHARED | MAP_POPULATE, g.fd, 0);
	if (err || p == MAP_FAILED) {
		g.sh->err = err ? -err : errno;
		_exit(1);
	}
	__atomic_store_n(&g.sh->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&g.sh->stop, __ATOMIC_ACQUIRE) && nt_now_s() < until) {
		long n = g.sh->moves++;

		nt_mask_clear(&from);
		nt_mask_clear(&to);
		nt_mask_set(&from, g.node[n % 2]);
		nt_mask_set(&to, g.node[(n + 1) % 2]);
		if (migrate_pages(0, NT_MASK_MAXNODE, from.bits, to.bits) < 0) {
			g.sh->err = errno;
			_exit(1);
		}
	}
	_exit(0);
}

static void run(void)
{
	struct nt_flags_want clear = { 0 };
	struct nt_counters base, now;
	long unevictable = -1, bad;
	int round, status, err;
	pid_t pid;
	char *p;

	nt_scratch_enter(g.memcg);
	err = nt_run_on_cpu(g.cpu[0]);
	if (err)
		nt_tap_bail("pinning to CPU %d: %s", g.cpu[0], strerror(-err));
	p = mmap(NULL, g.len, PROT_READ | PROT_WRITE, MAP_SHARED, g.fd, 0);
	if (p == MAP_FAILED)
		nt_tap_bail("mmap of the memfd: %s", strerror(errno));
	/* Charged to the memcg: the task that first touches a page pays for it. */
	memset(p, 0x6d, g.len);
	nt_snapshot(&base, &g.t.online, true);

	pid = nt_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid)
		mover();
	if (!nt_flag_wait(&g.sh->ready, 1, WAIT_S))
		nt_tap_bail("the mover did not start (%s)", strerror(g.sh->err));
	for (round = 0; round < ROUNDS && !g.sh->err; round++) {
		char *l = mmap(NULL, g.len, PROT_READ, MAP_SHARED | MAP_LOCKED | MAP_POPULATE,
			       g.fd, 0);

		if (l == MAP_FAILED)
			nt_tap_bail("round %d: mmap(MAP_LOCKED): %s", round, strerror(errno));
		if (munmap(l, g.len))
			nt_tap_bail("round %d: munmap: %s", round, strerror(errno));
	}
	__atomic_store_n(&g.sh->stop, 1, __ATOMIC_RELEASE);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		nt_tap_bail("the mover failed (status %#x: %s)", status, strerror(g.sh->err));
	nt_tap_diag("%d maps and unmaps of %zu kB locked, %ld migrate_pages() calls beside them",
		    ROUNDS, g.len >> 10, g.sh->moves);

	nt_snapshot(&now, &g.t.online, true);
	bad = nt_check_flags(p, g.len / g.page, g.page, &clear);
	nt_tap_result(bad == 0, "no page of the memfd KPF_MLOCKED or KPF_UNEVICTABLE");
	nt_tap_result(now.vmstat[NT_NR_MLOCK] == base.vmstat[NT_NR_MLOCK] &&
		      nt_events_agree(&now, &base, "after the race"),
		      "nr_mlock back at its baseline, and moved by mlocked - munlocked - stranded - cleared");
	if (now.vmstat[NT_PGS_CLEARED] != base.vmstat[NT_PGS_CLEARED])
		nt_tap_diag("unevictable_pgs_cleared %+ld",
			    now.vmstat[NT_PGS_CLEARED] - base.vmstat[NT_PGS_CLEARED]);
	nt_tap_result(now.vmstat[NT_PGS_CLEARED] == base.vmstat[NT_PGS_CLEARED],
		      "no folio freed while mlocked (unevictable_pgs_cleared)");
	nt_tap_result(nt_nodes_moved(&g.t.online, now.mlocked_kb, base.mlocked_kb, NULL,
				     g.page / 1024, "Mlocked"),
		      "every node's Mlocked back at its baseline");
	nt_tap_result(nt_nodes_moved(&g.t.online, now.unevictable_kb, base.unevictable_kb, NULL,
				     g.page / 1024, "Unevictable"),
		      "every node's Unevictable back at its baseline");
	err = nt_cgroup_flush(g.memcg);
	if (!err)
		err = nt_cgroup_stat(g.memcg, "memory.stat", "unevictable", &unevictable);
	if (err)
		nt_tap_bail("reading %s memory.stat: %s", g.memcg, strerror(-err));
	if (unevictable)
		nt_tap_diag("memory.stat unevictable %ld", unevictable);
	nt_tap_result(!unevictable, "the memcg's memory.stat unevictable 0");
	munmap(p, g.len);
	nt_scratch_enter(NULL);
}

int main(int argc, char **argv)
{
	unsigned int until;
	pid_t pid;

	g.len = nt_lk_start(argc, argv, DEFAULT_SIZE, &g.t);
	g.page = sysconf(_SC_PAGESIZE);
	g.node[0] = nt_mask_next(&g.t.allowed, -1);
	g.node[1] = nt_mask_next(&g.t.allowed, g.node[0]);
	if (g.node[1] < 0)
		nt_tap_skip_all("needs two memory nodes: the folios move between two");
	if (nt_two_cpus(&g.cpu[0], &g.cpu[1]))
		nt_tap_skip_all("needs two CPUs: the unmaps run on one, the migration on the other");
	nt_scratch_start(true);
	g.memcg = nt_scratch_create("nt-munmap-migrate-%d", getpid());
	g.fd = memfd_create("munmap_migrate_memcg", MFD_CLOEXEC);
	if (g.fd < 0 || ftruncate(g.fd, g.len))
		nt_tap_bail("memfd of %zu kB: %s", g.len >> 10, strerror(errno));
	g.sh = mmap(NULL, sizeof(*g.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		    0);
	if (g.sh == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	nt_tap_plan(CHECKS);
	nt_tap_diag("memfd %zu kB in %s, nodes %d and %d, CPUs %d and %d", g.len >> 10, g.memcg,
		    g.node[0], g.node[1], g.cpu[0], g.cpu[1]);
	until = nt_tap_count() + CHECKS;
	pid = nt_tap_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid) {
		run();
		_exit(0);
	}
	nt_tap_wait(pid, until, "munmap racing migration");
	close(g.fd);
	nt_scratch_end();
	return nt_tap_finish();
}
