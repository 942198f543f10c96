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

#define NT_PRINTF(f, a)	__attribute__((format(printf, f, a)))

void nt_tap_start(void);
void nt_tap_plan(unsigned int count);
/* Plans nothing, says why, and exits 0. */
void nt_tap_skip_all(const char *fmt, ...) NT_PRINTF(1, 2) __attribute__((noreturn));
/* "ok N - name" or "not ok N - name"; returns ok. */
bool nt_tap_result(bool ok, const char *fmt, ...) NT_PRINTF(2, 3);
/* "ok N - name # SKIP reason"; the reason is mandatory. */
void nt_tap_skip(const char *reason, const char *fmt, ...) NT_PRINTF(2, 3);
void nt_tap_diag(const char *fmt, ...) NT_PRINTF(1, 2);
/* "Bail out! reason" for an unexpected error, and exit 2. */
void nt_tap_bail(const char *fmt, ...) NT_PRINTF(1, 2) __attribute__((noreturn));
/* Exit status: 1 if a test failed or the plan was not met, else 0. */
int nt_tap_finish(void);

#endif
