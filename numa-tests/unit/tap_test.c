// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of the TAP writer's expected failures (lib/tap.c,
 * nt_tap_todo()): a child writes TAP into a pipe, the parent checks the
 * lines Meson will parse and the child's exit status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

/* What the child reports: one passing known check, one known and one plain failure. */
static void __attribute__((noreturn)) child(int fd, bool plain_failure)
{
	if (dup2(fd, STDOUT_FILENO) < 0)
		_exit(3);
	nt_tap_start();
	nt_tap_plan(plain_failure ? 3 : 2);
	nt_tap_todo(true, "deviation A", "holds");
	nt_tap_todo(false, "deviation B", "known");
	if (plain_failure)
		nt_tap_todo(false, NULL, "unknown");
	fflush(stdout);
	_exit(nt_tap_finish());
}

/* Runs the child; its output in out, its exit status returned (-1 on error). */
static int run_child(bool plain_failure, char *out, size_t len)
{
	int fds[2], status;
	size_t used = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(fds))
		nt_tap_bail("pipe: %s", strerror(errno));
	pid = nt_tap_fork();
	if (pid < 0)
		nt_tap_bail("fork: %s", strerror(errno));
	if (!pid)
		child(fds[1], plain_failure);
	close(fds[1]);
	while (used < len - 1 && (n = read(fds[0], out + used, len - 1 - used)) > 0)
		used += n;
	out[used] = '\0';
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid)
		nt_tap_bail("waitpid: %s", strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void)
{
	char out[1024];
	int rc;

	nt_tap_start();
	nt_tap_plan(5);
	rc = run_child(false, out, sizeof(out));
	nt_tap_result(strstr(out, "\nok 1 - holds\n") != NULL,
		      "a known check that holds is a plain ok, not an unexpected pass");
	nt_tap_result(strstr(out, "\nnot ok 2 - known # TODO deviation B\n") != NULL,
		      "a known deviation is reported not ok with a TODO directive and its reason");
	nt_tap_result(rc == 0, "an expected failure alone does not fail the program (exit %d)", rc);
	rc = run_child(true, out, sizeof(out));
	nt_tap_result(strstr(out, "\nnot ok 3 - unknown\n") != NULL,
		      "a failure that is not the known deviation is a plain not ok");
	nt_tap_result(rc == 1, "and fails the program (exit %d)", rc);
	return nt_tap_finish();
}
