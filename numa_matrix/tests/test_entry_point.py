#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of ./numa-matrix: help never does work, an unknown
option or a kernel spec naming nothing is an error. Each command runs
with a build dir and a cache that do not exist yet: help and errors must
leave them so."""

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

    def test_kernel_specs_are_checked_first(self):
        for args in (("run", "--kernels"), ("test", "--kernel")):
            for spec in ("no-such-kernel", "/nonexistent/linux@HEAD"):
                with self.subTest(args=args, spec=spec):
                    out = self.run_it(*args, spec)
                    self.assertNotEqual(out.returncode, 0, out.stdout)
                    self.assertIn(spec, out.stderr)
                    self.assertEqual(out.made, [], f"{args[0]} did work first")


if __name__ == "__main__":
    unittest.main(verbosity=2)
