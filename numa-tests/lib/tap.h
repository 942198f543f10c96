/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TAP 13 on stdout, one flushed line at a time: "TAP version 13" first (Meson
 * 1.0 requires it), then the plan, results, "# " diagnostics. Exit status from
 * nt_tap_finish(): 0 when everything passed or was skipped, 1 otherwise.
 * Test names and reasons must not contain '#'.
 */
#ifndef NT_TAP_H
#define NT_TAP_H

#include <stdbool.h>
#include <sys/types.h>

#define NT_PRINTF(f, a)	__attribute__((format(printf, f, a)))

void nt_tap_start(void);
void nt_tap_plan(unsigned int count);
/* Plans nothing, says why, and exits 0. */
void nt_tap_skip_all(const char *fmt, ...) NT_PRINTF(1, 2) __attribute__((noreturn));
/* "ok N - name" or "not ok N - name"; returns ok. */
bool nt_tap_result(bool ok, const char *fmt, ...) NT_PRINTF(2, 3);
/*
 * A check of documented behaviour that some kernels are known to fail.
 * "ok N - name" when ok. Otherwise, when known names the deviation (what
 * the kernel does instead, and the upstream fix if there is one), "not ok
 * N - name # TODO known": an expected failure, which Meson counts as one
 * and which does not fail the test; with known NULL, a plain failure.
 * Decide known from what was observed, so that a kernel that fixes the
 * deviation passes and any other failure still fails. Returns ok.
 */
bool nt_tap_todo(bool ok, const char *known, const char *fmt, ...) NT_PRINTF(3, 4);
/* "ok N - name # SKIP reason"; the reason is mandatory. */
void nt_tap_skip(const char *reason, const char *fmt, ...) NT_PRINTF(2, 3);
void nt_tap_diag(const char *fmt, ...) NT_PRINTF(1, 2);
/* "Bail out! reason" for an unexpected error, and exit 2. */
void nt_tap_bail(const char *fmt, ...) NT_PRINTF(1, 2) __attribute__((noreturn));
/*
 * Subtests reported by forked children. After nt_tap_start() the counters live
 * in a shared page, so a child's results take the next numbers of the
 * parent's plan; run one reporting child at a time. In a child,
 * nt_tap_bail() says why in a diagnostic and ends only the child.
 *
 * nt_tap_fork(): fflush() and fork(). nt_tap_wait(): waits for the child and,
 * when it did not exit 0 having reported exactly up to subtest number until,
 * reports each missing subtest (or one extra) as failed, naming what and how
 * the child ended. Returns its wait status. Compute until before the child
 * can report anything (before fork(), or before letting it go on).
 */
pid_t nt_tap_fork(void);
/* fflush() and fork(), the child killed when the parent dies (PR_SET_PDEATHSIG). */
pid_t nt_fork(void);
int nt_tap_wait(pid_t pid, unsigned int until, const char *what);
/*
 * For a child that exec()ed a program (e.g. this one under numactl): the
 * counters live in a memfd that nt_tap_start() leaves open across exec and
 * names in NT_TAP_FD; this maps it again, so the program reports the next
 * subtests of the parent's plan without a TAP header. 0 or -errno.
 */
int nt_tap_resume(void);
/* Subtests reported so far (the number of the last one). */
unsigned int nt_tap_count(void);
/* The name of the last subtest reported, by this process or a child ("none yet"). */
const char *nt_tap_last(void);
/* Whether this is the process that called nt_tap_start(), not a child of it. */
bool nt_tap_owner(void);
/* Exit status: 1 if a test failed or the plan was not met, else 0. */
int nt_tap_finish(void);

#endif
