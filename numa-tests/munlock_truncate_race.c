// SPDX-License-Identifier: GPL-2.0
/*
 * munlock() racing truncation and hole punching of a locked shared file
 * mapping, on a file system with a page cache (ext4 on a loop device over a
 * file in tmpfs: lib/ext4.h).
 *
 * Truncation, hole punching and invalidation unmap file pages without the
 * mmap_lock of the processes that map them, so they run concurrently with
 * a munlock() walk of the same pages. Documentation/mm/unevictable-lru.rst
 * ("Truncating MLOCKED Pages") says what must come out: each page unmapped
 * from a VM_LOCKED vma counted out of its mlock_count once, PG_mlocked
 * cleared once, and a page that a racing munlock() left mlocked cleared by
 * the free path (unevictable_pgs_cleared). A kernel that reads VM_LOCKED
 * before taking the page table lock can munlock a page twice: once from the
 * munlock() walk, once from the zap.
 *
 * Each round: process A maps the file MAP_SHARED | MAP_LOCKED | MAP_POPULATE
 * and holds it; process B maps it the same way, then munlock()s its mapping
 * while the parent punches a hole in the middle half of the file (even
 * rounds) or truncates it to its first half (odd rounds). Checked:
 * - every round: both operations succeeded, and every page A still maps
 *   (the part of the file left) is mlocked and unevictable (A's VM_LOCKED
 *   vma maps it: the mlock B's munlock() and the zap took off, and no
 *   more);
 * - after all rounds, A and B gone, every CPU drained: nr_mlock and each
 *   node's Mlocked and Unevictable back at their baseline, and every page
 *   that became mlocked counted out once: the unevictable_pgs_mlocked
 *   events equal munlocked + stranded + cleared.
 * A page munlocked twice is always a page being truncated, freed right
 * after, so a double munlock leaves no trace in these counters: the check
 * that can see one is on the pages that stay (and, on the debug flavour,
 * VM_BUG_ON and lockdep).
 *
 * Usage: munlock_truncate_race [-s SIZE]  (default 4M). Needs root.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "counters.h"
#include "ext4.h"
#include "handshake.h"
#include "harness.h"
#include "nodes.h"
#include "pageflags.h"
#include "snapshot.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(4UL << 20)
#define IMAGE_SIZE	(64UL << 20)
#define ROUNDS		16
#define WAIT_S		60.0

/* Flags shared with the two children of a round. */
struct round {
	int a_ready, b_ready, go, b_done, check, a_checked, leave;
	int b_err;		/* errno of B's munlock(), 0 */
	long a_bad;		/* pages A maps that are not mlocked+unevictable */
};

static struct {
	size_t len, page;
	struct nt_ext4 fs;
	char file[128];
	struct round *r;
} g;

static void cleanup(void)
{
	if (g.file[0])
		unlink(g.file);
	nt_ext4_remove(&g.fs);
}

/*
 * The whole file written afresh: every page in the page cache, and on an
 * LRU list. A page written last on a CPU the writer then left waits in that
 * CPU's LRU add batch, off the LRU: an mlock finding it there cannot count
 * itself, and the page reaches the unevictable list with mlock_count 0
 * (Documentation/mm/unevictable-lru.rst, "Basic Management": "always err
 * with mlock_count on the low side"), so B's munlock() would take A's mlock
 * away. That undercount is documented, and not the race this test is after.
 */
static void fill_file(void)
{
	char *buf = malloc(g.len);
	int fd = open(g.file, O_RDWR | O_CREAT, 0600);
	int err;

	if (!buf || fd < 0)
		nt_tap_bail("opening %s: %s", g.file, strerror(errno));
	memset(buf, 0x5a, g.len);
	if (ftruncate(fd, 0) || pwrite(fd, buf, g.len, 0) != (ssize_t)g.len ||
	    fsync(fd))
		nt_tap_bail("writing %s: %s", g.file, strerror(errno));
	close(fd);
	free(buf);
	err = nt_drain_all();
	if (err)
		nt_tap_bail("draining the CPUs' LRU batches: %s", strerror(-err));
}

static char *map_locked(void)
{
	int fd = open(g.file, O_RDWR);
	char *p;

	if (fd < 0)
		_exit(2);
	p = mmap(NULL, g.len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_LOCKED | MAP_POPULATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		_exit(3);
	return p;
}

/* The part of the file a round leaves: [*off, *off + *len) in bytes. */
static void kept(int round, size_t *off, size_t *len, size_t *off2, size_t *len2)
{
	if (round % 2) {	/* truncated to its first half */
		*off = 0;
		*len = g.len / 2;
		*off2 = *len2 = 0;
	} else {		/* the middle half punched out */
		*off = 0;
		*len = g.len / 4;
		*off2 = g.len / 4 * 3;
		*len2 = g.len / 4;
	}
}

static void child_a(int round)
{
	struct nt_flags_want locked = { .mlocked = true, .unevictable = true };
	size_t off, len, off2, len2;
	char *p = map_locked();
	long bad;

	nt_flag_set(&g.r->a_ready, 1);
	if (!nt_flag_wait(&g.r->check, 1, WAIT_S))
		_exit(4);
	kept(round, &off, &len, &off2, &len2);
	if (nt_drain_all())
		_exit(5);
	bad = nt_check_flags(p + off, len / g.page, g.page, &locked);
	if (bad >= 0 && len2)
		bad += nt_check_flags(p + off2, len2 / g.page, g.page, &locked);
	g.r->a_bad = bad;
	nt_flag_set(&g.r->a_checked, 1);
	_exit(nt_flag_wait(&g.r->leave, 1, WAIT_S) ? 0 : 4);
}

static void child_b(int round)
{
	char *p = map_locked();

	(void)round;
	nt_flag_set(&g.r->b_ready, 1);
	if (!nt_flag_wait(&g.r->go, 1, WAIT_S))
		_exit(4);
	g.r->b_err = munlock(p, g.len) ? errno : 0;
	nt_flag_set(&g.r->b_done, 1);
	_exit(nt_flag_wait(&g.r->leave, 1, WAIT_S) ? 0 : 4);
}

static pid_t spawn(void (*fn)(int), int round)
{
	pid_t pid = fork();

	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid)
		fn(round);
	return pid;
}

/* One round; false with a diagnostic when something failed. */
static bool one_round(int round, long *bad_total)
{
	const char *what = round % 2 ? "truncation" : "hole punch";
	int fd, err = 0, sa, sb;
	pid_t a, b;

	memset(g.r, 0, sizeof(*g.r));
	fill_file();
	/*
	 * Every CPU drained after each mapping: an mlock that finds the page
	 * still queued for another CPU's mlock cannot count itself (6.1's
	 * mlock_count "might undercount"), and B's munlock() would then take
	 * A's mlock away; that race is not the one this test is after.
	 */
	a = spawn(child_a, round);
	if (!nt_flag_wait(&g.r->a_ready, 1, WAIT_S) || nt_drain_all())
		nt_tap_bail("round %d: the locked process did not map the file", round);
	b = spawn(child_b, round);
	if (!nt_flag_wait(&g.r->b_ready, 1, WAIT_S) || nt_drain_all())
		nt_tap_bail("round %d: the munlocking process did not map the file", round);
	fd = open(g.file, O_RDWR);
	if (fd < 0)
		nt_tap_bail("opening %s: %s", g.file, strerror(errno));
	nt_flag_set(&g.r->go, 1);
	if (round % 2 ? ftruncate(fd, g.len / 2) :
	    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, g.len / 4, g.len / 2))
		err = errno;
	close(fd);
	if (!nt_flag_wait(&g.r->b_done, 1, WAIT_S))
		nt_tap_bail("round %d: munlock() did not return", round);
	nt_flag_set(&g.r->check, 1);
	if (!nt_flag_wait(&g.r->a_checked, 1, WAIT_S))
		nt_tap_bail("round %d: the locked process did not check its pages", round);
	nt_flag_set(&g.r->leave, 1);
	if (waitpid(a, &sa, 0) != a || waitpid(b, &sb, 0) != b)
		nt_tap_bail("waitpid: %s", strerror(errno));
	if (err || g.r->b_err || g.r->a_bad < 0 || !WIFEXITED(sa) || WEXITSTATUS(sa) ||
	    !WIFEXITED(sb) || WEXITSTATUS(sb)) {
		nt_tap_diag("round %d: %s: %s; munlock: %s; check: %ld; exits %#x %#x", round,
			    what, strerror(err), strerror(g.r->b_err), g.r->a_bad, sa, sb);
		return false;
	}
	if (g.r->a_bad)
		nt_tap_diag("round %d (%s): %ld pages the locked process maps are not mlocked",
			    round, what, g.r->a_bad);
	*bad_total += g.r->a_bad;
	return true;
}

int main(int argc, char **argv)
{
	struct nt_counters base, end, d;
	struct nt_topology t;
	char why[160];
	long bad = 0, clears;
	bool ok = true;
	int round, err;

	g.len = nt_area_size_arg(argc, argv, DEFAULT_SIZE);
	g.page = sysconf(_SC_PAGESIZE);
	nt_test_start();
	if (g.len % (4 * g.page))
		nt_tap_bail("the size %zu is not a multiple of 4 pages", g.len);
	if (geteuid())
		nt_tap_skip_all("needs root: mounts a file system, reads /proc/kpageflags");
	if (numa_available() < 0 || nt_topology_read(&t))
		nt_tap_bail("cannot read the node topology");
	g.r = mmap(NULL, sizeof(*g.r), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		   -1, 0);
	if (g.r == MAP_FAILED)
		nt_tap_bail("mmap: %s", strerror(errno));
	nt_cleanup_push(cleanup);
	err = nt_ext4_make(&g.fs, IMAGE_SIZE, why, sizeof(why));
	if (err == -ENODEV || err == -ENOENT)
		nt_tap_skip_all("no ext4 on a loop device here: %s", why);
	if (err)
		nt_tap_bail("making an ext4 file system: %s", why);
	snprintf(g.file, sizeof(g.file), "%s/locked", g.fs.dir);
	nt_tap_plan(6);
	nt_snapshot(&base, &t.memory, true);
	for (round = 0; round < ROUNDS; round++)
		ok &= one_round(round, &bad);
	nt_tap_result(ok, "%d rounds: munlock() and the truncation or hole punch racing it "
		      "both succeeded", ROUNDS);
	nt_tap_result(ok && !bad, "every round: each page the locked process still maps is "
		      "mlocked and unevictable");
	unlink(g.file);
	g.file[0] = 0;
	nt_snapshot(&end, &t.memory, true);
	nt_counters_delta(&end, &base, &d);
	nt_tap_result(!d.vmstat[NT_NR_MLOCK], "after the rounds: nr_mlock back at its baseline "
		      "(%+ld)", d.vmstat[NT_NR_MLOCK]);
	nt_tap_result(nt_nodes_moved(&t.memory, end.mlocked_kb, base.mlocked_kb, NULL, 0, "Mlocked"),
		      "after the rounds: Mlocked of every node back at its baseline");
	nt_tap_result(nt_nodes_moved(&t.memory, end.unevictable_kb, base.unevictable_kb, NULL,
				     0, "Unevictable"),
		      "after the rounds: Unevictable of every node back at its baseline");
	clears = d.vmstat[NT_PGS_MUNLOCKED] + d.vmstat[NT_PGS_STRANDED] +
		 d.vmstat[NT_PGS_CLEARED];
	nt_tap_diag("events: mlocked %+ld munlocked %+ld stranded %+ld cleared %+ld",
		    d.vmstat[NT_PGS_MLOCKED], d.vmstat[NT_PGS_MUNLOCKED],
		    d.vmstat[NT_PGS_STRANDED], d.vmstat[NT_PGS_CLEARED]);
	nt_tap_result(d.vmstat[NT_PGS_MLOCKED] && d.vmstat[NT_PGS_MLOCKED] == clears,
		      "after the rounds: every page mlocked was counted out once "
		      "(unevictable_pgs_mlocked == munlocked + stranded + cleared)");
	return nt_tap_finish();
}
