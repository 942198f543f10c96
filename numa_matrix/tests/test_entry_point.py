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
                      f"PASSED=0 FAILED=0 SKIPPED=0 XFAILED=0 FAILURES='{failures}'\n"
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
