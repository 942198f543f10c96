// SPDX-License-Identifier: GPL-2.0
/*
 * RLIMIT_MEMLOCK is enforced for an unprivileged process, and a refused lock
 * locks nothing.
 *
 * A worker process maps a range bound to one node and faults it in, sets
 * RLIMIT_MEMLOCK to half of it, and drops root (setuid to nobody, 65534: no
 * CAP_IPC_LOCK). The test process, still root, tells it what to do, one
 * request at a time, and checks the machine after each (VmLck from the
 * worker's /proc/PID/status, per-node Mlocked and Unevictable, the
 * unevictable_pgs_* events):
 *
 *   mlock() of exactly the limit          0: VmLck and the node's Mlocked and
 *                                            Unevictable grow by it
 *   mlock() of one more page              ENOMEM  (mm/mlock.c do_mlock())
 *   mlock2(MLOCK_ONFAULT) of that page    ENOMEM
 *   mmap(MAP_LOCKED) of one page          EAGAIN  (mm/mmap.c mlock_future_check())
 *   mlockall(MCL_CURRENT)                 ENOMEM  (the process maps more than
 *                                                  the limit)
 *   munlock() of the locked part          0: everything back at its baseline
 *   RLIMIT_MEMLOCK 0, mlock() of one page EPERM   (can_do_mlock())
 *
 * After each refusal nothing may have changed: VmLck, per-node Mlocked and
 * Unevictable, the events.
 *
 * Usage: rlimit_memlock [-s SIZE]  (or NUMA_TESTS_AREA_SIZE; default 1M)
 */
#include <errno.h>
#include <grp.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "locked.h"
#include "tap.h"
#include "values.h"

#define DEFAULT_SIZE	(1UL << 20)
#define NOBODY		65534
#define CHECKS		20

enum request { LOCK_LIMIT, LOCK_MORE, LOCK2_MORE, MAP_LOCKED_PAGE, LOCK_ALL, UNLOCK_LIMIT,
	       ZERO_LIMIT_LOCK };

struct worker {
	pid_t pid;
	int to, from;		/* request and answer pipes */
	int node;		/* where its range is */
	long limit;		/* bytes */
};

static int do_request(enum request req, char *range, long limit, long page)
{
	struct rlimit none = { 0, 0 };
	void *p;

	switch (req) {
	case LOCK_LIMIT:
		return mlock(range, limit) ? errno : 0;
	case LOCK_MORE:
		return mlock(range + limit, page) ? errno : 0;
	case LOCK2_MORE:
		return mlock2(range + limit, page, MLOCK_ONFAULT) ? errno : 0;
	case MAP_LOCKED_PAGE:
		p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_LOCKED, -1, 0);
		return p == MAP_FAILED ? errno : 0;
	case LOCK_ALL:
		return mlockall(MCL_CURRENT) ? errno : 0;
	case UNLOCK_LIMIT:
		return munlock(range, limit) ? errno : 0;
	case ZERO_LIMIT_LOCK:
		if (setrlimit(RLIMIT_MEMLOCK, &none))
			return errno;
		return mlock(range, page) ? errno : 0;
	default:
		return 0;
	}
}

/* The worker: serves requests until the pipe closes, answering each with an errno (0: success). */
static void serve(int in, int out, int node, size_t len, long limit)
{
	struct rlimit rl = { limit, limit };
	long page = sysconf(_SC_PAGESIZE);
	struct nt_policy pol;
	struct nt_region r;
	unsigned char req;
	int err;

	nt_policy_one(&pol, MPOL_BIND, node);
	err = nt_region_map(&r, NT_PRIVATE_ANON, len, page, 0);
	if (!err)
		err = nt_area_mbind(&r.a, &pol);
	if (err)
		nt_tap_bail("worker: mapping its range: %s", strerror(-err));
	nt_area_fill(&r.a, 1);
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) || setgid(NOBODY) ||
	    setuid(NOBODY))
		nt_tap_bail("worker: dropping privileges: %s", strerror(errno));
	while (read(in, &req, 1) == 1) {
		err = do_request(req, r.a.addr, limit, page);
		if (write(out, &err, sizeof(err)) != sizeof(err))
			break;
	}
	_exit(0);
}

static struct worker start_worker(const struct nt_topology *t, int node, size_t len)
{
	struct worker w = { .node = node, .limit = len / 2 };
	int to[2], from[2], local_node;

	if (pipe(to) || pipe(from))
		nt_tap_bail("pipe: %s", strerror(errno));
	w.pid = nt_lk_fork(t, node, false, len, &local_node);
	if (!w.pid) {
		close(to[1]);
		close(from[0]);
		serve(to[0], from[1], node, len, w.limit);
	}
	close(to[0]);
	close(from[1]);
	w.to = to[1];
	w.from = from[0];
	return w;
}

static int ask(struct worker *w, enum request req)
{
	unsigned char c = req;
	int err;

	if (write(w->to, &c, 1) != 1 || read(w->from, &err, sizeof(err)) != sizeof(err))
		nt_tap_bail("the worker stopped answering");
	return err;
}

static long worker_vmlck(struct worker *w)
{
	long kb = -1;

	if (nt_vmlck_read_pid(w->pid, &kb))
		nt_tap_bail("reading the worker's VmLck");
	return kb;
}

static void check_answer(int err, int want, const char *what)
{
	if (err != want)
		nt_tap_diag("got %s", err ? strerror(err) : "success");
	nt_tap_result(err == want, "%s: %s", what, want ? strerror(want) : "succeeds");
}

/* A request that must succeed, leaving locked pages of the worker's node locked. */
static void granted(struct nt_lk *lk, struct worker *w, enum request req, const char *what,
		    long locked, const struct nt_lk_events *ev)
{
	long pages[NT_MAX_NODES] = { 0 }, kb, want = locked * lk->r->a.page_size / 1024;

	check_answer(ask(w, req), 0, what);
	kb = worker_vmlck(w);
	if (kb != want)
		nt_tap_diag("VmLck %ld kB", kb);
	nt_tap_result(kb == want, "%s: the worker's VmLck %ld kB", what, want);
	pages[w->node] = locked;
	snprintf(lk->label, sizeof(lk->label), "%s", what);
	nt_lk_snapshot(lk, false);
	nt_lk_check_nodes(lk, false, pages);
	nt_lk_check_nodes(lk, true, pages);
	nt_lk_check_events(lk, ev);
}

/* A request that must fail with want, changing nothing. */
static void refused(struct nt_lk *lk, struct worker *w, enum request req, const char *what,
		    int want)
{
	struct nt_counters before;
	long kb = worker_vmlck(w);
	bool same;
	int node;

	nt_lk_snapshot(lk, false);
	before = lk->now;
	check_answer(ask(w, req), want, what);
	nt_lk_snapshot(lk, false);
	same = worker_vmlck(w) == kb &&
	       !memcmp(before.vmstat, lk->now.vmstat, sizeof(before.vmstat));
	nt_mask_for_each(node, &lk->t->online)
		if (before.mlocked_kb[node] != lk->now.mlocked_kb[node] ||
		    before.unevictable_kb[node] != lk->now.unevictable_kb[node])
			same = false;
	if (!same)
		nt_tap_diag("VmLck %ld -> %ld kB; nr_mlock %ld -> %ld", kb, worker_vmlck(w),
			    before.vmstat[NT_NR_MLOCK], lk->now.vmstat[NT_NR_MLOCK]);
	nt_tap_result(same, "%s: nothing locked: VmLck, per-node Mlocked and Unevictable, unevictable_pgs_* unchanged",
		      what);
}

int main(int argc, char **argv)
{
	struct nt_region dummy = { .a.page_size = sysconf(_SC_PAGESIZE) };
	struct nt_lk lk = { .r = &dummy };
	struct nt_lk_events ev = { 0 };
	struct nt_topology t;
	struct worker w;
	long n;
	size_t len;

	len = nt_lk_start(argc, argv, DEFAULT_SIZE, &t);
	if (len < 4 * dummy.a.page_size)
		nt_tap_skip_all("the range needs at least four pages");
	lk.t = &t;
	nt_tap_plan(CHECKS);
	w = start_worker(&t, nt_mask_next(&t.allowed, -1), len);
	n = w.limit / dummy.a.page_size;
	snprintf(lk.label, sizeof(lk.label), "worker");
	nt_tap_diag("worker %d, unprivileged (uid %d), RLIMIT_MEMLOCK %ld kB, range on node %d",
		    w.pid, NOBODY, w.limit >> 10, w.node);
	nt_lk_baseline(&lk);
	ev.mlocked = ev.culled = n;
	granted(&lk, &w, LOCK_LIMIT, "mlock() of exactly RLIMIT_MEMLOCK", n, &ev);
	refused(&lk, &w, LOCK_MORE, "mlock() of one page more", ENOMEM);
	refused(&lk, &w, LOCK2_MORE, "mlock2(MLOCK_ONFAULT) of one page more", ENOMEM);
	refused(&lk, &w, MAP_LOCKED_PAGE, "mmap(MAP_LOCKED) of one page more", EAGAIN);
	refused(&lk, &w, LOCK_ALL, "mlockall(MCL_CURRENT) beyond the limit", ENOMEM);
	ev.munlocked = ev.rescued = n;
	granted(&lk, &w, UNLOCK_LIMIT, "munlock() of it", 0, &ev);
	refused(&lk, &w, ZERO_LIMIT_LOCK, "RLIMIT_MEMLOCK 0, mlock() of one page", EPERM);
	close(w.to);	/* end of requests */
	nt_tap_wait(w.pid, CHECKS, "worker");
	return nt_tap_finish();
}
