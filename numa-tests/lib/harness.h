/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every NUMA test does before its first subtest, and what keeps the
 * machine as the test found it.
 *
 * The NUMA tests offline CPUs, change THP, hot-add memory and create
 * cgroups: nt_test_start() runs them only in a guest that numa-matrix's
 * run-guest started (its guest-init mounts the "nmrun" share on
 * /run/numa-matrix) or where the user opted in with NUMA_TESTS_ON_HOST=1
 * (a NUMA machine set aside for it). Anywhere else the whole plan is
 * skipped with that reason, so `meson test --suite numa` on a workstation
 * changes nothing.
 *
 * A watchdog: a test that has not ended NT_WATCHDOG_S seconds after
 * nt_test_start() (NUMA_TESTS_WATCHDOG=seconds overrides it, 0 turns it
 * off) prints "Bail out!" with the last subtest reported, so a hang is
 * seen, and where, well before Meson's or the guest's timeout.
 *
 * Cleanups: nt_cleanup_push() registers a function that puts back what the
 * test changed (a THP mode, a CPU's online state, a cgroup). They run once,
 * last pushed first, in the process that started TAP, whichever way it
 * ends: returning from main() or exit(), nt_tap_bail(), the watchdog, or
 * SIGTERM, SIGINT and SIGHUP. Children never run them.
 */
#ifndef NT_HARNESS_H
#define NT_HARNESS_H

#include <stdbool.h>

#define NT_WATCHDOG_S	240
#define NT_ON_HOST_ENV	"NUMA_TESTS_ON_HOST"

/* nt_tap_start(), the host guard and the watchdog (see above). */
void nt_test_start(void);
/* Whether this runs in a guest started by run-guest. */
bool nt_in_guest(void);
/* Re-arms the watchdog: the test must end within seconds from now (0: never). */
void nt_watchdog_set(unsigned int seconds);
/* Registers fn to put something back; at most NT_MAX_CLEANUPS. */
#define NT_MAX_CLEANUPS	8
void nt_cleanup_push(void (*fn)(void));
/* Runs the registered cleanups now (once); later exits do not run them again. */
void nt_cleanup_run(void);

#endif
