// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tap.h"

#define GUEST_SHARE	"nmrun /run/numa-matrix "

static void (*cleanups[NT_MAX_CLEANUPS])(void);
static volatile sig_atomic_t ncleanups;
static unsigned int watchdog_s;

void nt_cleanup_run(void)
{
	if (!nt_tap_owner())
		return;
	while (ncleanups > 0)
		cleanups[--ncleanups]();
}

void nt_cleanup_push(void (*fn)(void))
{
	if (ncleanups == NT_MAX_CLEANUPS)
		nt_tap_bail("more than %d cleanups", NT_MAX_CLEANUPS);
	cleanups[ncleanups++] = fn;
}

/*
 * The test hangs (or crawls): say where, put things back, and end. The
 * main flow is stuck in a system call or a loop, so using stdio here is a
 * risk worth taking for the message.
 */
static void on_alarm(int sig)
{
	(void)sig;
	if (!nt_tap_owner()) {
		printf("# child %d: watchdog: no end within %u s after subtest %u (%s)\n",
		       getpid(), watchdog_s, nt_tap_count(), nt_tap_last());
		fflush(stdout);
		_exit(2);
	}
	printf("Bail out! watchdog: the test did not end within %u s; the last subtest reported was %u (%s)\n",
	       watchdog_s, nt_tap_count(), nt_tap_last());
	fflush(stdout);
	nt_cleanup_run();
	_exit(2);
}

static void on_signal(int sig)
{
	nt_cleanup_run();
	signal(sig, SIG_DFL);
	raise(sig);
}

void nt_watchdog_set(unsigned int seconds)
{
	watchdog_s = seconds;
	alarm(seconds);
}

bool nt_in_guest(void)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/mounts", "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = !strncmp(line, GUEST_SHARE, strlen(GUEST_SHARE));
	if (f)
		fclose(f);
	return found;
}

static unsigned int watchdog_seconds(void)
{
	const char *env = getenv("NUMA_TESTS_WATCHDOG");
	unsigned long s;
	char *end;

	if (!env || !*env)
		return NT_WATCHDOG_S;
	errno = 0;
	s = strtoul(env, &end, 10);
	if (errno || *end || s > 86400)
		nt_tap_bail("NUMA_TESTS_WATCHDOG=%s: give whole seconds, 0 for no watchdog", env);
	return s;
}

void nt_test_start(void)
{
	const char *opt_in = getenv(NT_ON_HOST_ENV);
	struct sigaction sa = { .sa_handler = on_signal };

	nt_tap_start();
	if (!nt_in_guest() && !(opt_in && !strcmp(opt_in, "1")))
		nt_tap_skip_all("not in a numa-matrix guest: this test changes the running kernel's state (CPUs offline, THP, cgroups, memory hotplug) and judges it; run it with qemu-topologies/run-guest, or set %s=1 to run it on this machine's own kernel",
				NT_ON_HOST_ENV);
	if (atexit(nt_cleanup_run))
		nt_tap_bail("atexit() failed");
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL) ||
	    sigaction(SIGHUP, &sa, NULL))
		nt_tap_bail("installing the signal handlers: %s", strerror(errno));
	sa.sa_handler = on_alarm;
	if (sigaction(SIGALRM, &sa, NULL))
		nt_tap_bail("installing the watchdog: %s", strerror(errno));
	nt_watchdog_set(watchdog_seconds());
}
