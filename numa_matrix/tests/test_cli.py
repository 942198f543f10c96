#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of results/matrix's command line (numa_matrix.cli):
every bad input ends in one line naming the cause and exit 2, without a
traceback and before any work; run --dry-run says what a run would do and
does nothing."""

import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import cli  # noqa: E402
from numa_matrix import matrix as mx  # noqa: E402
from numa_matrix.tests.helpers import fake_bzimage  # noqa: E402


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(list(argv))
        except SystemExit as e:         # --help
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


class BadInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.results = os.path.join(self.tmp.name, "results")
        self.image = os.path.join(self.tmp.name, "bzImage")
        fake_bzimage(self.image, "6.1.192-nm0-perf (x) (gcc 12.2.0)")
        # A run directory with one kernel, for compare and cell.
        self.run_dir = os.path.join(self.tmp.name, "run")
        rc, _, err = run("plan", "--kernels", f"k={self.image}", "--topologies",
                         "1node", "--scenarios", "bind", "--run-dir",
                         self.run_dir)
        self.assertEqual(rc, 0, err)

    def tearDown(self):
        self.tmp.cleanup()

    def refused(self, argv, cause):
        rc, out, err = run(*argv)
        self.assertEqual(rc, 2, f"{argv}: {err}")
        self.assertNotIn("Traceback", err)
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, f"{argv}: {err}")
        self.assertTrue(lines[0].startswith("matrix: error: "), lines[0])
        self.assertIn(cause, lines[0])
        self.assertFalse(os.path.exists(self.results), f"{argv} made results")

    def test_each_bad_input(self):
        check = ["run", "--check-args", "--results", self.results]
        cases = [
            (["compare", "/nonexistent/a", "/nonexistent/b"],
             "/nonexistent/a is not a matrix run directory (no such directory)"),
            (["compare", f"{self.run_dir}:k", self.run_dir],
             "name a kernel on every side"),
            (["compare", f"{self.run_dir}:nosuch", f"{self.run_dir}:k"],
             "has no kernel 'nosuch'"),
            (["report", "/nonexistent"], "not a matrix run directory"),
            (["cell", self.run_dir, "k", "1node", "interleave"],
             "scenario interleave is not in this run"),
            (["cell", "/nonexistent", "k", "1node", "bind"],
             "not a matrix run directory"),
            (check + ["--size", "bogus"], "--size bogus: give a size"),
            (check + ["--size", "1000"], "--size 1000: give a positive whole "
             "number of 4 KiB pages"),
            (check + ["--scenarios", "thp-always", "--size", "1M"],
             "not a multiple of 2M"),
            (check + ["--iterations", "0"], "--iterations 0: give 1 or more"),
            (check + ["--timeout", "0"], "--timeout 0"),
            (check + ["--jobs", "0"], "--jobs 0: give 1 or more"),
            (check + ["--jobs", "2", "--clock", "wall"],
             "wall-clock cells measure the host too"),
            (check + ["--resume", "/nonexistent"],
             "/nonexistent is not a matrix run directory"),
            (check + ["--kernels", "no-such-kernel"], "names no kernel"),
            (check + ["--scenarios", "nosuch"], "unknown scenario 'nosuch'"),
            (check + ["--scenarios", "concurrent"], "needs --clock wall"),
            (check + ["--topologies", "nosuch"], "no such topology"),
            (check + ["--clock", "sundial"], "invalid choice: 'sundial'"),
            (check + ["--iterations", "many"], "invalid int value: 'many'"),
            (["run", "--no-such-option"], "unrecognized arguments"),
            (["frob"], "invalid choice: 'frob'"),
            ([], "the following arguments are required: COMMAND"),
            (["bisect", "--good", "x@HEAD"], "required: --bad"),
            (["bisect", "--good", "x", "--bad", "y", "--threshold", "0"],
             "--threshold 0: give a percentage above 0"),
            (["profile", "--kernel", "patched", "--top", "-1"], "--top -1"),
            (["profile", "--kernel", "patched", "--scenario", "nosuch"],
             "unknown scenario 'nosuch'"),
            (["list", "--flavour", "bogus"], "invalid choice: 'bogus'"),
        ]
        for argv, cause in cases:
            with self.subTest(argv=argv):
                self.refused(argv, cause)

    def test_a_good_command_line_passes_the_check(self):
        rc, _, err = run("run", "--check-args", "--kernels", "baseline,patched",
                         "--topologies", "2node", "--results", self.results)
        self.assertEqual(rc, 0, err)
        self.assertFalse(os.path.exists(self.results))

    def test_prog_is_the_entry_points(self):
        rc, out, _ = run("run", "--help")
        self.assertEqual(rc, 0)
        self.assertTrue(out.startswith("usage: matrix run "), out[:40])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                self.assertRaises(SystemExit):
            cli.main(["run", "--help"], prog="./numa-matrix")
        self.assertTrue(out.getvalue().startswith("usage: ./numa-matrix run "))


class DryRun(unittest.TestCase):
    def test_says_what_and_does_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            image = os.path.join(tmp, "bzImage")
            fake_bzimage(image, "6.1.192-nm0-perf (x) (gcc 12.2.0)")
            results = os.path.join(tmp, "results")
            rc, out, err = run("run", "--dry-run", "--kernels",
                               f"mine={image}", "--topologies", "1node,2node",
                               "--scenarios", "bind,interleave",
                               "--iterations", "3", "--results", results)
            self.assertEqual(rc, 0, err)
            self.assertEqual(os.listdir(tmp), ["bzImage"])
        # Filed under the first kernel's make kernelversion.
        self.assertIn(f"run directory: {results}/6.1.192/", out)
        self.assertIn("(new)", out)
        self.assertIn("clock icount, accelerator tcg, 3 iterations of 64M", out)
        self.assertIn(f"  mine           built: {image}", out)
        self.assertIn("topologies: 1node, 2node", out)
        self.assertIn("cells: 4, 0 done already, 4 to run", out)
        self.assertIn("--clock icount --timeout 900 --root initramfs --", out)

    def test_resumed_run_counts_what_is_done(self):
        with tempfile.TemporaryDirectory() as tmp:
            image = os.path.join(tmp, "bzImage")
            fake_bzimage(image, "6.1.192-nm0-perf (x) (gcc 12.2.0)")
            rundir = os.path.join(tmp, "run")
            rc, _, err = run("plan", "--kernels", f"mine={image}",
                             "--topologies", "1node", "--scenarios",
                             "bind,interleave", "--clock", "wall",
                             "--run-dir", rundir)
            self.assertEqual(rc, 0, err)
            done = mx.cell_path(rundir, "1node", "bind", "mine")
            os.makedirs(os.path.dirname(done))
            open(done, "w").close()
            rc, out, err = run("run", "--dry-run", "--resume", rundir)
        self.assertEqual(rc, 0, err)
        self.assertIn("(resumed)", out)
        self.assertIn("clock wall, accelerator auto", out)
        self.assertIn("cells: 2, 1 done already, 1 to run", out)
        self.assertNotIn("--root initramfs", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
