#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of ./numa-matrix: help never does work, an unknown
option or a kernel spec naming nothing is an error. Each command runs
with a build dir and a cache that do not exist yet: help and errors must
leave them so."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import TOP  # noqa: E402

ENTRY = os.path.join(TOP, "numa-matrix")
COMMANDS = ("run", "test", "deps", "setup", "kernel", "config", "guest",
            "topologies")


class Help(unittest.TestCase):
    def run_it(self, *args):
        """Run it with a build dir and cache of its own that do not exist."""
        with tempfile.TemporaryDirectory() as tmp:
            self.build = os.path.join(tmp, "build")
            self.cache = os.path.join(tmp, "cache")
            env = dict(os.environ, NUMA_MATRIX_BUILD=self.build,
                       NUMA_MATRIX_CACHE=self.cache)
            out = subprocess.run([ENTRY, *args], capture_output=True,
                                 text=True, env=env, timeout=60, check=False)
            out.made = [p for p in (self.build, self.cache)
                        if os.path.exists(p)]
        return out

    def test_help_does_nothing_else(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                out = self.run_it(command, "--help")
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertIn("usage", out.stdout.lower())
                self.assertEqual(out.made, [], f"{command} --help made them")

    def test_unknown_options_are_errors(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                out = self.run_it(command, "--no-such-option")
                self.assertNotEqual(out.returncode, 0, out.stdout)
                self.assertTrue(out.stderr.strip())
                self.assertEqual(out.made, [], f"{command} did work first")

    def test_main_job_options_accepted(self):
        # The README's main job with its defaults, and with options given,
        # passes the check made before any work (it once refused the
        # default flavour, which it had not filled in yet).
        matrix = os.path.join(TOP, "results", "matrix")
        for args in ((), ("--kernels", "baseline,patched", "--topologies", "2node"),
                     ("--flavour", "debug", "--clock", "wall")):
            with self.subTest(args=args):
                out = subprocess.run([matrix, "run", "--check-args", *args],
                                     capture_output=True, text=True, timeout=60,
                                     check=False)
                self.assertEqual(out.returncode, 0, out.stderr)

    def test_kernel_specs_are_checked_first(self):
        for args in (("run", "--kernels"), ("test", "--kernel")):
            for spec in ("no-such-kernel", "/nonexistent/linux@HEAD"):
                with self.subTest(args=args, spec=spec):
                    out = self.run_it(*args, spec)
                    self.assertNotEqual(out.returncode, 0, out.stdout)
                    self.assertIn(spec, out.stderr)
                    self.assertEqual(out.made, [], f"{args[0]} did work first")


class BadInput(unittest.TestCase):
    """Every bad input: one line naming the cause, exit 2, no traceback,
    and nothing made (no build dir, no cache)."""

    CASES = [
        (("foo",), "unknown command 'foo'"),
        ((), "no command"),
        (("deps", "extra"), "deps takes no arguments"),
        (("setup", "extra"), "setup takes no arguments"),
        (("topologies", "extra"), "topologies takes no arguments"),
        (("kernel",), "kernel: give a kernel spec"),
        (("kernel", "--flavour", "perf"), "kernel: give a kernel spec"),
        (("kernel", "--frob"), "kernel: unknown option '--frob'"),
        (("kernel", "patched", "--flavour", "bogus"), "invalid choice: 'bogus'"),
        (("config", "extra"), "config: unexpected 'extra'"),
        (("test", "--frob"), "test: unknown option '--frob'"),
        (("test", "--kernel"), "test --kernel needs a value"),
        (("test", "--full", "--kernel", "patched"), "--full or --kernel"),
        (("test", "--full", "concurrent_mlock"), "--full runs everything"),
        (("test", "--flavour", "debug"), "--flavour is for the tests"),
        (("test", "--topology", "2node"), "--topology is for the tests"),
        (("test", "--flavour", "bogus", "x"), "test --flavour bogus: use one of"),
        (("test", "--topology", "nosuch", "x"), "no such machine"),
        (("test", "--kernel", "no-such-kernel"), "no-such-kernel"),
        (("test", "--list", "x"), "give no test names"),
        (("run", "--size", "bogus"), "--size bogus"),
        (("run", "--iterations", "0"), "--iterations 0"),
        (("run", "--jobs", "0"), "--jobs 0"),
        (("run", "--resume", "/nonexistent"), "/nonexistent is not a matrix run"),
        (("run", "--kernels", "no-such-kernel"), "no-such-kernel"),
        (("run", "--frob"), "unrecognized arguments: --frob"),
    ]

    def test_each_bad_input(self):
        for args, cause in self.CASES:
            with self.subTest(args=args):
                out = Help.run_it(self, *args)
                self.assertEqual(out.returncode, 2, out.stderr)
                self.assertNotIn("Traceback", out.stderr)
                errors = [line for line in out.stderr.splitlines()
                          if "error" in line]
                self.assertEqual(len(errors), 1, out.stderr)
                self.assertIn(cause, errors[0])
                self.assertEqual(out.made, [], f"{args} did work first")

    def test_unknown_test_name_after_configuring(self):
        # Names are Meson's: the build dir is configured to know them.
        for args, cause in ((("test", "nosuch"), "no test named 'nosuch'"),
                            (("test", "--suite", "nosuch"),
                             "--suite nosuch: no such suite")):
            with self.subTest(args=args):
                out = Help.run_it(self, *args)
                self.assertEqual(out.returncode, 2, out.stderr)
                self.assertIn(cause, out.stderr.strip().splitlines()[-1])


class Selecting(unittest.TestCase):
    """test --list, test NAME --dry-run, test --suite --dry-run, run
    --dry-run: what a user reaches for before running anything."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.env = dict(os.environ,
                       NUMA_MATRIX_BUILD=os.path.join(cls.tmp.name, "build"),
                       NUMA_MATRIX_CACHE=os.path.join(cls.tmp.name, "cache"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def entry(self, *args):
        return subprocess.run([ENTRY, *args], capture_output=True, text=True,
                              env=self.env, timeout=300, check=False)

    def test_list_names_every_test_with_its_suite(self):
        out = self.entry("test", "--list")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn("numa:concurrent_mlock  (in a guest)", lines)
        self.assertIn("unit:numa_matrix.test_cli", lines)
        self.assertIn("kvm:kvm-probe", lines)
        self.assertIn("selftests:selftest-mlock2-tests  (in a guest)", lines)
        out = self.entry("test", "--list", "--suite", "topology")
        self.assertEqual(out.stdout.splitlines(),
                         ["topology:guest-hotplug  (in a guest)",
                          "topology:guest-matches-topology  (in a guest)"])

    def test_named_tests_dry_run(self):
        out = self.entry("test", "--dry-run", "--topology", "2node",
                         "--flavour", "debug", "concurrent_mlock",
                         "unit:numa_matrix.test_util", "selftest-mlock2-tests")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0], "  on the host: meson test --suite unit "
                         "numa_matrix.test_util")
        self.assertRegex(lines[1], r"^  (build kernel patched --flavour debug|"
                         r"kernel patched --flavour debug: built already)")
        self.assertRegex(lines[2], r"the mm selftests of patched")
        self.assertEqual(lines[3], "  one guest on 2node (--kernel patched "
                         "--flavour debug): meson test --suite numa "
                         "concurrent_mlock --suite selftests "
                         "selftest-mlock2-tests")
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "cache",
                                                     "kernels")))

    def test_suite_dry_run_and_ci_dry_run(self):
        out = self.entry("test", "--dry-run", "--suite", "unit", "--suite",
                         "numa")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("  on the host: meson test --suite unit", out.stdout)
        self.assertIn("meson test --suite numa", out.stdout)
        out = self.entry("test", "--dry-run")
        self.assertEqual(out.returncode, 0, out.stderr)
        for step in ("on the host: meson test --suite unit",
                     "patched --flavour debug",
                     "one guest on 4node (--flavour debug): meson test --suite "
                     "selftests", "on the host: meson test --suite kvm"):
            self.assertIn(step, out.stdout)

    def test_run_dry_run_and_help_name_this_entry_point(self):
        out = self.entry("run", "--dry-run", "--interleave-worst-case",
                         "--topologies", "4node", "--kernels", "patched")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("cells: 1, 0 done already, 1 to run", out.stdout)
        self.assertEqual(os.listdir(self.tmp.name), ["build"]
                         if os.path.exists(os.path.join(self.tmp.name, "build"))
                         else [])
        out = self.entry("run", "--help")
        self.assertTrue(out.stdout.startswith(f"usage: {ENTRY} run "),
                        out.stdout[:60])


class BackgroundBuilds(unittest.TestCase):
    """test's kernel built beside its suites (start_build, wait_build of
    ./numa-matrix alone, with a stand-in build-kernel): it runs while the
    next step does, a failed one is counted with its log's tail, and a
    terminated test stops it."""

    FAKE = """#!/bin/sh
echo "$$ $*" >>"$FAKE_DIR/started"
trap 'echo "$$" >>"$FAKE_DIR/terminated"; exit 143' TERM
sleep "${FAKE_SECONDS:-1}" &
wait $!
echo "compiling ... the last words of make"
[ "${FAKE_RC:-0}" = 0 ] && echo /cache/kernels/x/bzImage
exit "${FAKE_RC:-0}"
"""

    def run_script(self, body, **env):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "build-kernel")
            with open(fake, "w") as f:
                f.write(self.FAKE)
            os.chmod(fake, 0o755)
            os.makedirs(os.path.join(d, "build", "meson-logs", "numa-matrix"))
            script = (
                "say() { echo \"$*\" >&2; }\n"
                "step() { say \"step: $*\"; }\n"
                "failure() { say \"FAILED: $*\"; FAILED=$((FAILED + 1)); }\n"
                "build() { :; }\n"
                f"eval \"$(sed -n '/^start_build()/,/^# What CI runs/p' '{ENTRY}')\"\n"
                f"DRY_RUN=0 FAILED=0 LOGDIR=numa-matrix BUILD='{d}/build' "
                f"BUILD_KERNEL='{fake}'\n" + body)
            proc = subprocess.Popen(
                ["sh", "-c", script], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True,
                env=dict(os.environ, FAKE_DIR=d, **env))
            self.proc = proc
            out, err = proc.communicate(timeout=60)
            files = {}
            for name in ("started", "terminated"):
                path = os.path.join(d, name)
                files[name] = open(path).read() if os.path.exists(path) else ""
        return proc.returncode, out, err, files

    def test_runs_beside_the_next_step(self):
        rc, out, err, files = self.run_script(
            "start_build debug 19 patched --flavour debug\n"
            "echo next step while it builds: $(cat \"$FAKE_DIR/started\" "
            "2>/dev/null | wc -l) started\n"
            "wait_build debug\necho failed=$FAILED\n", FAKE_SECONDS="1")
        self.assertEqual(rc, 0, err)
        self.assertIn("failed=0", out)
        self.assertIn("step: kernel patched --flavour debug: built "
                      "(/cache/kernels/x/bzImage)", err)
        self.assertTrue(files["started"].endswith(" patched --flavour debug\n"))

    def test_a_failed_build_is_counted_with_its_log(self):
        rc, out, err, _ = self.run_script(
            "start_build perf 0 patched\nwait_build perf\necho failed=$FAILED\n",
            FAKE_RC="2", FAKE_SECONDS="0")
        self.assertIn("failed=1", out)
        self.assertIn("compiling ... the last words of make", err)
        self.assertRegex(err, r"FAILED: building kernel patched failed \(log: "
                         r".*/meson-logs/numa-matrix/kernel-perf.log\)")

    def test_terminated_test_stops_its_build(self):
        rc, out, err, files = self.run_script(
            "start_build debug 19 patched --flavour debug\n"
            "while [ ! -s \"$FAKE_DIR/started\" ]; do sleep 0.1; done\n"
            "kill -TERM $$\nsleep 30\necho not reached\n", FAKE_SECONDS="30")
        self.assertEqual(rc, 143, err)
        self.assertNotIn("not reached", out)
        pid = files["started"].split()[0]
        self.assertEqual(files["terminated"].strip(), pid)


class GuestEnds(unittest.TestCase):
    """A suite inside one guest (in_guest of ./numa-matrix, with a stand-in
    run-guest): the guest's end is read from run-guest's --record, and a
    splat or hang is one failure named with run-guest's summary even when
    every test passed."""

    FAKE = """#!/bin/sh
while [ $# -gt 0 ]; do
	case $1 in
	--record) record=$2; shift ;;
	--logbase) base=$2; shift ;;
	esac
	shift
done
printf '%s\\n' '{"name": "numa / lock_methods", "result": "OK", "stdout": "1..1\\nok 1 a\\n"}' \
	>"$BUILD/meson-logs/$base.json"
[ -n "$FAKE_EXIT" ] || exit 0
printf '{"exit": %s, "reason": "splat", "summary": "%s"}\\n' "$FAKE_EXIT" \
	"kernel problem in the guest (the command exited with status 0): WARNING: x" >"$record"
exit "$FAKE_EXIT"
"""

    def in_guest(self, **env):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "run-guest")
            with open(fake, "w") as f:
                f.write(self.FAKE)
            os.chmod(fake, 0o755)
            build = os.path.join(d, "build")
            os.makedirs(os.path.join(build, "meson-logs", "numa-matrix"))
            failures = os.path.join(d, "failures.txt")
            script = (
                "say() { echo \"$*\" >&2; }\nstep() { :; }\n"
                f"eval \"$(sed -n '/^failure()/,/^}}/p;/^tally()/,/^}}/p;"
                f"/^log_name()/,/^}}/p;/^counted()/,/^}}/p;/^in_guest()/,/^}}/p'"
                f" '{ENTRY}')\"\n"
                f"PASSED=0 FAILED=0 SKIPPED=0 XFAILED=0 NLOG=0 DRY_RUN=0 "
                f"LOGDIR=numa-matrix TOP='{TOP}' BUILD='{build}' "
                f"RUN_GUEST='{fake}' FAILURES='{failures}'\n"
                "export BUILD\n"
                "in_guest 4node 'suite numa' '--suite numa'\n"
                'echo "$PASSED $FAILED"\n')
            out = subprocess.run(["sh", "-c", script], capture_output=True,
                                 text=True, timeout=60,
                                 env=dict(os.environ, **env))
        return out

    def test_a_splat_fails_the_run_in_its_words(self):
        out = self.in_guest(FAKE_EXIT="123")
        self.assertEqual(out.stdout.split(), ["1", "1"], out.stderr)
        self.assertIn("the guest of 01-suite-numa-in-4node- failed: kernel "
                      "problem in the guest (the command exited with status "
                      "0): WARNING: x", out.stderr)

    def test_a_clean_guest_is_no_failure(self):
        out = self.in_guest()
        self.assertEqual(out.stdout.split(), ["1", "0"], out.stderr)


class Tally(unittest.TestCase):
    """The summary's counts: a TAP test Meson calls OK whose failure is a
    known one ("not ok ... # TODO reason") is an expected failure, named
    with its reason, not a pass."""

    def tally(self, *tests):
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "log.json")
            failures = os.path.join(tmp, "failures.txt")
            with open(log, "w") as f:
                for name, result, stdout in tests:
                    f.write(json.dumps({"name": name, "result": result,
                                        "stdout": stdout}) + "\n")
            # tally() of ./numa-matrix alone, with say() beside it
            script = (f"say() {{ echo \"$*\" >&2; }}\n"
                      f"eval \"$(sed -n '/^tally()/,/^}}/p' '{ENTRY}')\"\n"
                      f"PASSED=0 FAILED=0 SKIPPED=0 XFAILED=0 FAILURES='{failures}' "
                      f"TOP='{TOP}'\n"
                      f"tally '{log}'\n"
                      'echo "$PASSED $FAILED $SKIPPED $XFAILED"\n')
            out = subprocess.run(["sh", "-c", script], capture_output=True,
                                 text=True, timeout=60, check=True)
            self.failures = ""
            if os.path.exists(failures):
                with open(failures) as f:
                    self.failures = f.read()
        return [int(x) for x in out.stdout.split()], out.stderr

    def test_known_failure_is_not_a_pass(self):
        counts, err = self.tally(
            ("s / selftest-a", "OK", "1..1\nok 1 selftests: vm: a\n"),
            ("s / selftest-b", "OK", "1..1\nnot ok 1 selftests: vm: b "
             "# TODO known failure of b.x (exit=1): the test's flaw\n"),
            ("s / selftest-c", "SKIP", "1..1\nok 1 c # SKIP no swap\n"),
            ("s / selftest-d", "FAIL", "1..1\nnot ok 1 d # exit=1\n"),
            ("s / selftest-e", "TIMEOUT", ""))
        self.assertEqual(counts, [1, 2, 1, 1])
        self.assertIn("expected failure: s / selftest-b: known failure of "
                      "b.x (exit=1): the test's flaw", err)
        self.assertNotIn("selftest-a", err)
        # What the summary repeats: each failed test, its failing subtests.
        self.assertIn("FAILED: s / selftest-d (FAIL, ", self.failures)
        self.assertIn("  not ok 1 d # exit=1\n", self.failures)
        self.assertIn("FAILED: s / selftest-e (TIMEOUT, ", self.failures)
        self.assertNotIn("selftest-b", self.failures)

    def test_failure_keeps_its_diagnostics(self):
        # The diagnostics just before a failing subtest say why; a known
        # failure's are left out.
        counts, _ = self.tally(
            ("s / t", "FAIL", "1..3\n# far\nok 1 a\n# node 0: +4 kB\n"
             "not ok 2 b\n# x\nnot ok 3 c # TODO why\n"))
        self.assertEqual(counts, [0, 1, 0, 0])
        self.assertIn("  # node 0: +4 kB\n  not ok 2 b\n", self.failures)
        self.assertNotIn("far", self.failures)
        self.assertNotIn("# x", self.failures)

    def test_meson_todo_verdicts(self):
        # "ok ... # TODO" is a known failure that now passes: Meson says
        # UNEXPECTEDPASS, which the summary counts as a failure to look at.
        counts, _ = self.tally(
            ("s / t", "UNEXPECTEDPASS", "1..1\nok 1 t # TODO fixed?\n"),
            ("s / u", "EXPECTEDFAIL", "1..1\nnot ok 1 u # TODO why\n"))
        self.assertEqual(counts, [0, 1, 0, 1])


if __name__ == "__main__":
    unittest.main(verbosity=2)
