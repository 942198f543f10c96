#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of the numa_matrix package itself: one cache root for
every program, and every program an entry point into the package rather
than a loader of another script."""

import json
import os
import re
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
import numa_matrix  # noqa: E402

ENTRY_POINTS = (numa_matrix.BUILD_KERNEL, numa_matrix.RUN_GUEST,
                numa_matrix.MATRIX, numa_matrix.SLURM_SUBMIT)


class CacheRoot(unittest.TestCase):
    def test_environment_wins(self):
        with mock.patch.dict(os.environ, {"NUMA_MATRIX_CACHE": "rel/cache",
                                          "XDG_CACHE_HOME": "/x"}):
            self.assertEqual(numa_matrix.cache_root(),
                             os.path.join(os.getcwd(), "rel/cache"))

    def test_xdg_then_home(self):
        env = {k: v for k, v in os.environ.items()
               if k not in ("NUMA_MATRIX_CACHE", "XDG_CACHE_HOME")}
        with mock.patch.dict(os.environ, env | {"XDG_CACHE_HOME": "/x"},
                             clear=True):
            self.assertEqual(numa_matrix.cache_root(), "/x/numa-matrix")
        with mock.patch.dict(os.environ, env | {"HOME": "/h"}, clear=True):
            self.assertEqual(numa_matrix.cache_root(), "/h/.cache/numa-matrix")


class EntryPoints(unittest.TestCase):
    def test_thin_and_executable(self):
        for path in ENTRY_POINTS:
            self.assertTrue(os.access(path, os.X_OK), path)
            with open(path) as f:
                text = f.read()
            self.assertRegex(text, r"from numa_matrix import \w+", path)
            self.assertLess(len(text.splitlines()), 15, path)

    def test_no_script_loads_another_by_path(self):
        scripts = []
        for folder in ("kernel-series", "kernel-series/mutants",
                       "qemu-topologies", "qemu-topologies/tests", "results",
                       "results/tests", "numa_matrix", "numa_matrix/tests"):
            d = os.path.join(numa_matrix.TOP, folder)
            scripts += [os.path.join(d, f) for f in os.listdir(d)
                        if os.path.isfile(os.path.join(d, f))
                        and os.path.join(d, f) != os.path.abspath(__file__)]
        for path in scripts:
            with open(path, errors="replace") as f:
                first = f.readline()
                text = first + f.read()
            if "python" not in first and not path.endswith(".py"):
                continue
            self.assertNotRegex(text, r"SourceFileLoader|exec_module|"
                                r"runpy\.|exec\(open", path)
            # Only the package's top folder goes on sys.path.
            for m in re.finditer(r"^sys\.path\.insert\(0, (.*)", text, re.M):
                self.assertIn("dirname(os.path.dirname(", m.group(1), path)


class UnitTestsFound(unittest.TestCase):
    """The unit tests are found by a glob when Meson configures: a file
    added since is not run until the build dir is reconfigured, which
    ./numa-matrix setup does when the set of files changes."""

    def test_every_test_file_is_a_meson_test(self):
        build = os.environ.get("NUMA_MATRIX_MESON_BUILD")
        if not build:
            self.skipTest("not run by meson test: no NUMA_MATRIX_MESON_BUILD")
        with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
            registered = {os.path.realpath(t["cmd"][-1])
                          for t in json.load(f) if t["cmd"]}
        here = os.path.dirname(os.path.abspath(__file__))
        on_disk = {os.path.realpath(os.path.join(here, f))
                   for f in os.listdir(here)
                   if re.fullmatch(r"test_\w+\.py", f)}
        self.assertEqual(on_disk - registered, set(),
                         "reconfigure: ./numa-matrix setup")


if __name__ == "__main__":
    unittest.main(verbosity=2)
