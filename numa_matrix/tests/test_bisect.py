#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of results/matrix bisect's search and bookkeeping, with
stand-in figures instead of builds and guests: it names the first commit
beyond the threshold in either direction, measures few commits, says so when
good and bad do not differ, and refuses bad input. The real thing, with
kernels and guests, is bisect_planted.py (suite bisect)."""

import contextlib
import io
import os
import shutil
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import bisect, matrix as mx  # noqa: E402
from numa_matrix.errors import UsageError  # noqa: E402
from numa_matrix import rundir as rd  # noqa: E402
from numa_matrix.types import BisectRequest, CellsRequest, RunParams  # noqa: E402
from numa_matrix.util import atomic_write  # noqa: E402
from numa_matrix.types import Source  # noqa: E402
from numa_matrix.tests.helpers import kernel_plan  # noqa: E402


class Fake(bisect.Bisect):
    """measure() from a list of costs instead of a kernel and a guest."""

    def __init__(self, costs, limit=5.0):
        self.params = RunParams(iterations=3)
        self.scenario = "interleave"
        self.plans = [kernel_plan(label=f"c{i:011d}", commit=f"{i:040d}",
                                  subject=f"commit {i}")
                      for i in range(len(costs))]
        self.limit, self.costs, self.lines = limit, {}, []
        self.figures, self.measured = costs, []
        self.topo = "2node"

    def measure(self, i):
        self.measured.append(i)
        self.costs[i] = self.figures[i]
        return self.costs[i]

    def run(self):
        with contextlib.redirect_stdout(io.StringIO()):
            return super().run()


class Search(unittest.TestCase):
    def test_first_commit_beyond_the_threshold(self):
        # 9 commits, the 5th (index 4) doubles the cost; small moves before.
        costs = [650, 645, 640, 652, 1300, 1250, 990, 990, 975]
        b = Fake(costs)
        first = b.run()
        self.assertEqual(first.commit, f"{4:040d}")
        # good, bad and log2(8) = 3 steps: 5 kernels, not 9.
        self.assertEqual(b.measured, [0, 8, 4, 2, 3])
        self.assertIn(f"{4:040d}", b.lines[-1])
        self.assertIn("+100.00%", b.lines[-1])

    def test_a_cheaper_commit_is_found_too(self):
        b = Fake([600, 601, 400, 399, 398])
        self.assertEqual(b.run().commit, f"{2:040d}")

    def test_adjacent_good_and_bad(self):
        b = Fake([600, 700])
        self.assertEqual(b.run().commit, f"{1:040d}")
        self.assertEqual(b.measured, [0, 1])

    def test_nothing_to_bisect(self):
        b = Fake([600, 610, 620], limit=5.0)
        self.assertIsNone(b.run())
        self.assertIn("within the threshold of 5%", b.lines[-1])
        self.assertEqual(b.measured, [0, 2])

    def test_threshold_is_exclusive(self):
        # +5.00% exactly is not beyond 5%.
        self.assertIsNone(Fake([1000, 1050]).run())
        self.assertIsNotNone(Fake([1000, 1051]).run())


class Input(unittest.TestCase):
    def test_threshold_parsing(self):
        self.assertEqual(bisect.threshold("5%"), 5.0)
        self.assertEqual(bisect.threshold("2.5"), 2.5)
        for bad in ("0%", "-1", "five", ""):
            with self.assertRaises(UsageError):
                bisect.threshold(bad)

    def test_refuses_what_is_not_a_git_commit(self):
        with mock.patch.object(bisect.kernelspec, "package_info", lambda p: Source(
                kind="package", tarball="/t", package=p, version="1",
                id="0123")):
            with self.assertRaises(UsageError) as cm:
                bisect.commit_plans("baseline", "patched", "perf")
        self.assertIn("give GITDIR@COMMIT", str(cm.exception))


class RunDir(unittest.TestCase):
    def test_a_new_bisect_writes_env_and_its_machine(self):
        # The real constructor, as cmd_bisect calls it: env.json names the
        # machine and the run directory holds its copy, whether it was given
        # by catalogue name or by a file's path.
        for topo in ("2node", os.path.join(mx.topology.QEMU_TOPOLOGIES,
                                           "2node.topo")):
            d = tempfile.mkdtemp()
            try:
                req = BisectRequest("g", "b", 5.0, CellsRequest(
                    "interleave", topo, RunParams(iterations=3, bench="/b"),
                    run_dir=d))
                b = bisect.Bisect(req, [kernel_plan(kernel_version="6.12.0")])
                env = rd.load_env(d)
                self.assertEqual(b.topo, "2node")
                self.assertEqual(env["topologies"], ["2node"])
                self.assertTrue(os.path.isfile(rd.topo_copy(d, "2node")))
            finally:
                shutil.rmtree(d)


class Cost(unittest.TestCase):
    def test_minimum_over_iterations_per_page(self):
        d = tempfile.mkdtemp()
        try:
            atomic_write(rd.cell_path(d, "2node", "interleave", "k"),
                            "iteration,op,pages,seconds\n1,munlock,16384,0.0110\n"
                            "2,munlock,16384,0.0106\n3,munlock,16384,0.0106\n")
            self.assertAlmostEqual(bisect.cost(d, "2node", "interleave", "k"),
                                   0.0106 / 16384 * 1e9)
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main(verbosity=2)
