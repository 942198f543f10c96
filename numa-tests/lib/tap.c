// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

#define BAIL_STATUS	2

static unsigned int planned, done, failed;

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

void nt_tap_start(void)
{
	linef("TAP version 13");
}

void nt_tap_plan(unsigned int count)
{
	planned = count;
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

	snprintf(prefix, sizeof(prefix), "%s %u - ", status, ++done);
	line(prefix, fmt, ap, reason);
}

bool nt_tap_result(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (!ok)
		failed++;
	va_start(ap, fmt);
	result(ok ? "ok" : "not ok", fmt, ap, "");
	va_end(ap);
	return ok;
}

void nt_tap_skip(const char *reason, const char *fmt, ...)
{
	char suffix[256];
	va_list ap;

	if (!reason || !*reason)
		nt_tap_bail("skip of test %u without a reason", done + 1);
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
	va_list ap;

	va_start(ap, fmt);
	line("Bail out! ", fmt, ap, "");
	va_end(ap);
	exit(BAIL_STATUS);
}

int nt_tap_finish(void)
{
	if (done != planned) {
		nt_tap_diag("planned %u tests but ran %u", planned, done);
		return 1;
	}
	if (failed)
		nt_tap_diag("%u of %u tests failed", failed, done);
	return failed ? 1 : 0;
}
