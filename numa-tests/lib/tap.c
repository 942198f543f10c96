// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

#define BAIL_STATUS	2

/*
 * The counters, in a shared page after nt_tap_start() so that forked children
 * number and count their results in the parent's plan.
 */
struct tap_state {
	unsigned int planned, done, failed;
	pid_t owner;		/* the process that started TAP */
	char last[160];		/* the name of the last subtest reported */
};

static struct tap_state private_state;
static struct tap_state *st = &private_state;

/* One line, flushed at once so that a crash or a timeout loses nothing printed. */
static void line(const char *prefix, const char *fmt, va_list ap, const char *suffix)
{
	if (printf("%s", prefix) < 0 || vprintf(fmt, ap) < 0 || printf("%s\n", suffix) < 0 ||
	    fflush(stdout)) {
		perror("numa-tests: writing TAP to stdout");
		exit(BAIL_STATUS);
	}
}

static void linef(const char *fmt, ...) NT_PRINTF(1, 2);
static void linef(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	line("", fmt, ap, "");
	va_end(ap);
}

#define TAP_FD_ENV	"NT_TAP_FD"

static struct tap_state *map_state(int fd)
{
	void *p = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * The shared page: a memfd kept open across exec (see nt_tap_resume()), or
 * anonymous memory when memfds are missing; the private copy as a last resort.
 */
static void share_state(void)
{
	struct tap_state *p = NULL;
	char num[16];
	int fd;

	fd = memfd_create("numa-tests-tap", 0);
	if (fd >= 0 && !ftruncate(fd, sizeof(*st)))
		p = map_state(fd);
	if (p) {
		snprintf(num, sizeof(num), "%d", fd);
		if (setenv(TAP_FD_ENV, num, 1))
			unsetenv(TAP_FD_ENV);
	} else {
		if (fd >= 0)
			close(fd);
		p = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			 -1, 0);
	}
	if (p != MAP_FAILED)
		st = p;
}

void nt_tap_start(void)
{
	share_state();
	memset(st, 0, sizeof(*st));
	st->owner = getpid();
	linef("TAP version 13");
}

int nt_tap_resume(void)
{
	const char *env = getenv(TAP_FD_ENV);
	struct tap_state *p;
	char *end;
	long fd;

	if (!env || !*env)
		return -ENOENT;
	errno = 0;
	fd = strtol(env, &end, 10);
	if (errno || *end || fd < 0 || fd > INT32_MAX)
		return -EINVAL;
	p = map_state(fd);
	if (!p)
		return -errno;
	st = p;
	return 0;
}

void nt_tap_plan(unsigned int count)
{
	st->planned = count;
	linef("1..%u", count);
}

void nt_tap_skip_all(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	line("1..0 # SKIP ", fmt, ap, "");
	va_end(ap);
	exit(0);
}

static void result(const char *status, const char *fmt, va_list ap, const char *reason)
{
	char prefix[32];
	va_list copy;

	va_copy(copy, ap);
	vsnprintf(st->last, sizeof(st->last), fmt, copy);
	va_end(copy);
	snprintf(prefix, sizeof(prefix), "%s %u - ", status, ++st->done);
	line(prefix, fmt, ap, reason);
}

bool nt_tap_result(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (!ok)
		st->failed++;
	va_start(ap, fmt);
	result(ok ? "ok" : "not ok", fmt, ap, "");
	va_end(ap);
	return ok;
}

bool nt_tap_todo(bool ok, const char *known, const char *fmt, ...)
{
	char suffix[512] = "";
	va_list ap;

	if (!ok && known)
		snprintf(suffix, sizeof(suffix), " # TODO %s", known);
	else if (!ok)
		st->failed++;
	va_start(ap, fmt);
	result(ok ? "ok" : "not ok", fmt, ap, suffix);
	va_end(ap);
	return ok;
}

void nt_tap_skip(const char *reason, const char *fmt, ...)
{
	char suffix[256];
	va_list ap;

	if (!reason || !*reason)
		nt_tap_bail("skip of test %u without a reason", st->done + 1);
	snprintf(suffix, sizeof(suffix), " # SKIP %s", reason);
	va_start(ap, fmt);
	result("ok", fmt, ap, suffix);
	va_end(ap);
}

void nt_tap_diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	line("# ", fmt, ap, "");
	va_end(ap);
}

void nt_tap_bail(const char *fmt, ...)
{
	bool child = st->owner && getpid() != st->owner;
	va_list ap;

	va_start(ap, fmt);
	line(child ? "# child gives up: " : "Bail out! ", fmt, ap, "");
	va_end(ap);
	if (child)
		_exit(BAIL_STATUS);
	exit(BAIL_STATUS);
}

unsigned int nt_tap_count(void)
{
	return st->done;
}

const char *nt_tap_last(void)
{
	return st->done ? st->last : "none yet";
}

bool nt_tap_owner(void)
{
	return st->owner == getpid();
}

pid_t nt_fork(void)
{
	pid_t pid;

	if (fflush(NULL))
		nt_tap_bail("flushing output before fork()");
	pid = fork();
	/*
	 * A child must not outlive a parent that gave up (a watchdog, a bail):
	 * one left locking or faulting memory moves the counters of the tests
	 * that run after it.
	 */
	if (!pid && prctl(PR_SET_PDEATHSIG, SIGKILL))
		_exit(BAIL_STATUS);
	return pid;
}

pid_t nt_tap_fork(void)
{
	if (st == &private_state)
		nt_tap_bail("nt_tap_fork() before nt_tap_start(), or no shared page for the counters");
	return nt_fork();
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "wait status %#x", status);
}

int nt_tap_wait(pid_t pid, unsigned int until, const char *what)
{
	char how[96];
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			nt_tap_bail("%s: waitpid: %s", what, strerror(errno));
	if (st->done > until)
		nt_tap_bail("%s: the child reported %u subtests, %u were planned for it", what,
			    st->done, until);
	if (st->done == until && WIFEXITED(status) && !WEXITSTATUS(status))
		return status;
	describe_status(status, how, sizeof(how));
	if (st->done == until)
		nt_tap_result(false, "%s: child ended with %s", what, how);
	while (st->done < until)
		nt_tap_result(false, "%s: check %u not reached: the child ended with %s", what,
			      st->done + 1, how);
	return status;
}

int nt_tap_finish(void)
{
	if (st->done != st->planned) {
		nt_tap_diag("planned %u tests but ran %u", st->planned, st->done);
		return 1;
	}
	if (st->failed)
		nt_tap_diag("%u of %u tests failed", st->failed, st->done);
	return st->failed ? 1 : 0;
}
