#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of results/matrix: mmtests' percentages, the statistics,
reading a cell, a whole report from a synthetic run, resume bookkeeping."""

import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import QEMU_TOPOLOGIES  # noqa: E402
from numa_matrix import matrix as mx  # noqa: E402

CELL = """# timedmunlock policy=interleave:0-3 size=67108864 thp=never op=munlock \
iterations=3 clock=CLOCK_MONOTONIC kernel=6.1.192-nm0-perf #1
iteration,op,pages,seconds
1,munlock,16384,{a}
2,munlock,16384,{b}
3,munlock,16384,{c}
# summary op=munlock iterations=3
"""


class Arithmetic(unittest.TestCase):
    def test_mmtests_percentage(self):
        # The seed: 3.38 -> 1.91 is 43.49% better; 3.38 -> 3.39 is -0.30%.
        self.assertAlmostEqual(mx.pct(3.38, 1.91), 43.49, places=2)
        self.assertAlmostEqual(mx.pct(3.38, 3.39), -0.30, places=2)
        self.assertEqual(mx.pct(0, 0), 0.0)

    def test_time_left_follows_the_machine(self):
        took = {("baseline", "2node", "bind"): 10.0,
                ("baseline", "8node", "bind"): 100.0,
                ("baseline", "8node", "exit"): 40.0}
        left = mx.time_left(took, [("patched", "8node", "bind"),   # 100
                                   ("patched", "8node", "exit"),   # 40
                                   ("patched", "8node", "thp"),    # 70: topology
                                   ("patched", "4node", "bind")])  # 50: all
        self.assertAlmostEqual(left, 260.0)
        self.assertEqual(mx.time_left({}, [("k", "t", "s")]), 0.0)

    def test_stats(self):
        s = mx.stats([1.0, 2.0, 3.0])
        self.assertEqual((s["min"], s["mean"], s["max"], s["range"]), (1, 2, 3, 2))
        self.assertAlmostEqual(s["stddev"], 1.0)    # sample stddev, n - 1
        self.assertEqual(mx.stats([5.0])["stddev"], 0.0)


class Run(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.dir, "topologies"))
        for t in ("2node", "4node"):
            shutil.copy(os.path.join(QEMU_TOPOLOGIES, t + ".topo"),
                        os.path.join(self.dir, "topologies"))
        kernels = {k: {"variant": k, "patches": n, "patch_names": [],
                       "flavour": "perf", "series_hash": f"h{n}",
                       "config_hash": "c", "source_version": "6.1.192-3",
                       "source_package": "linux-source-6.1", "image": "/x"}
                   for n, k in enumerate(("baseline", "patched"))}
        env = {"clock": "icount", "accel": "tcg", "iterations": 3, "size": "64M",
               "flavour": "perf", "numa_matrix": "abc",
               "host": {"cpu_model": "cpu", "cpus": 2, "memory_mib": 1,
                        "host_kernel": "k", "qemu": "QEMU 7.2"},
               "kernels": kernels, "topologies": ["2node", "4node"],
               "scenarios": {s: mx.SCENARIOS[s] for s in ("bind", "interleave")}}
        with open(os.path.join(self.dir, "env.json"), "w") as f:
            json.dump(env, f)
        figures = {("bind", "baseline"): (0.0117, 0.0117, 0.0117),
                   ("interleave", "baseline"): (0.0121, 0.0121, 0.0122),
                   ("bind", "patched"): (0.0080, 0.0080, 0.0080),
                   ("interleave", "patched"): (0.0080, 0.0081, 0.0080)}
        for t in ("2node", "4node"):
            for (s, k), (a, b, c) in figures.items():
                mx.atomic_write(mx.cell_path(self.dir, t, s, k),
                                CELL.format(a=a, b=b, c=c))
        # One failed cell must be reported, not lost.
        os.unlink(mx.cell_path(self.dir, "2node", "interleave", "patched"))
        mx.atomic_write(mx.cell_path(self.dir, "2node", "interleave", "patched")[:-4]
                        + ".failed", "exit status 123\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_read_cell(self):
        c = mx.read_cell(mx.cell_path(self.dir, "4node", "interleave", "baseline"))
        self.assertEqual(c["pages"], 16384)
        self.assertEqual(c["seconds"], [0.0121, 0.0121, 0.0122])
        self.assertEqual(c["meta"]["policy"], "interleave:0-3")

    def test_report(self):
        path = mx.write_report(self.dir)
        with open(path) as f:
            text = f.read()
        self.assertIn("Elapsed mean    ms      12.133 (   0.00%)", text)
        # patched vs baseline, interleave, 4node: (12.133 - 8.033) / 12.133
        self.assertIn("8.033 (  33.79%)", text)
        self.assertIn("2node interleave patched: see `cells/2node/interleave/"
                      "patched.failed`", text)
        self.assertIn("| 4node | 1.0370 | 1.0042 |", text)
        self.assertIn("clock: **icount**", text)

    def test_seed_table_columns(self):
        env, cells, failed = mx.load_run(self.dir)
        table = mx.seed_table(list(env["kernels"]), cells, env, "4node", "bind")
        lines = table.splitlines()
        self.assertEqual(len(lines), 2 + len(mx.ROWS) + 1)
        self.assertIn("baseline", lines[1])
        self.assertIn("patched", lines[1])
        self.assertIn("ns/page mean", lines[-1])
        self.assertIn("714.1 (   0.00%)", lines[-1])    # 11.7 ms / 16384 pages


if __name__ == "__main__":
    unittest.main(verbosity=2)
