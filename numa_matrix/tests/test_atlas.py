#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of the batching atlas: its scenarios reach timedbatch
with the right options, the paths that move pages are left out where a
machine has one memory node, and the report's penalty table ranks the
paths, stays 72 columns wide and marks what did not run. The run is made
up here: two kernels, 1node and 2node, figures chosen per path."""

import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import QEMU_TOPOLOGIES, atlas, matrix  # noqa: E402
from numa_matrix import report as rp  # noqa: E402
from numa_matrix import rundir as rd  # noqa: E402
from numa_matrix.errors import UsageError  # noqa: E402
from numa_matrix.types import RunParams, Selection  # noqa: E402

# {path: (bound, interleaved)} seconds per iteration of 16384 pages.
FIGURES = {"move": (0.100, 0.120), "dontneed": (0.010, 0.0105),
           "pageout": (0.050, 0.050)}


def cell_text(scenario, seconds):
    spec = matrix.SCENARIOS[scenario]
    lines = [f"# timedbatch policy={spec['policy']} size=67108864 "
             f"op={spec['op']} iterations=2 clock=CLOCK_MONOTONIC kernel=x",
             "iteration,op,pages,seconds"]
    lines += [f"{i},{spec['op']},16384,{seconds:.6f}" for i in (1, 2)]
    return "\n".join(lines) + "\n"


def make_run(d, fail=()):
    """A run of the three paths of FIGURES on 1node and 2node, kernels a
    and b (b's interleaved cells 10% dearer), no cell of FAIL."""
    scenarios = {s: matrix.SCENARIOS[s] for p in FIGURES
                 for s in (p, p + "-bind")}
    env = {"clock": "icount", "iterations": 2, "size": "64M",
           "kernels": {"a": {}, "b": {}}, "topologies": ["1node", "2node"],
           "scenarios": scenarios,
           "memory_nodes": {"1node": 1, "2node": 2}}
    os.makedirs(os.path.join(d, "topologies"))
    for t in env["topologies"]:
        shutil.copy(os.path.join(QEMU_TOPOLOGIES, t + ".topo"),
                    rd.topo_copy(d, t))
    with open(os.path.join(d, "env.json"), "w") as f:
        json.dump(env, f)
    for k, t, s in rd.plan_cells(env):
        if s in fail:
            continue
        bound, inter = FIGURES[s.replace("-bind", "")]
        secs = bound if s.endswith("-bind") or t == "1node" else \
            inter * (1.1 if k == "b" else 1.0)
        path = rd.cell_path(d, t, s, k)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(cell_text(s, secs))
    return env


class Scenarios(unittest.TestCase):
    def test_every_path_has_both_scenarios(self):
        for p in atlas.PATHS:
            with self.subTest(path=p.label):
                self.assertIn(p.interleaved, matrix.SCENARIOS)
                self.assertIn(p.bound, matrix.SCENARIOS)
                self.assertLessEqual(len(p.label), 24)
        self.assertEqual(len(set(atlas.scenarios())), 2 * len(atlas.PATHS))

    def test_timedbatch_command(self):
        env = {"bench": "/b/numa-tests/bench/timedmunlock", "size": "64M",
               "iterations": 3}
        self.assertEqual(matrix.bench_command(env, "pageout-bind", "2node", "/r"),
                         ["/b/numa-tests/bench/timedbatch", "--op", "pageout",
                          "--policy", "bind:0", "--size", "64M",
                          "--iterations", "3"])
        # swapout asks for the vmstat counts that say what its writeback did.
        self.assertEqual(matrix.bench_command(env, "swapout", "2node", "/r")[-4:],
                         ["--vmstat", "pswpout", "--vmstat", "pgrotated"])

    def test_moves_need_two_memory_nodes(self):
        with tempfile.TemporaryDirectory() as d:
            env = make_run(d)
            cells = rd.plan_cells(env)
        on_1node = {s for _, t, s in cells if t == "1node"}
        self.assertNotIn("move", on_1node)
        self.assertNotIn("move-bind", on_1node)
        self.assertIn("dontneed", on_1node)
        self.assertIn(("a", "2node", "move"), cells)


    def test_a_selection_with_no_cell_is_refused(self):
        params = RunParams(bench="/b/numa-tests/bench/timedmunlock")
        with self.assertRaisesRegex(UsageError, "no cell to run: move, "
                                    "move-bind need two memory nodes"):
            matrix.parse_selection(Selection("baseline", "1node",
                                             "move,move-bind"), params)
        _, topos, _ = matrix.parse_selection(
            Selection("baseline", "1node,2node", "move"), params)
        self.assertEqual(list(topos), ["1node", "2node"])


class Table(unittest.TestCase):
    def test_ranked_narrow_and_marked(self):
        with tempfile.TemporaryDirectory() as d:
            env = make_run(d, fail=("dontneed",))
            env, cells, _ = rd.load_run(d)
            lines = atlas.table(d, env, cells, "b")
        self.assertEqual([len(x) <= rp.NARROW for x in lines], [True] * len(lines))
        labels = [line[:24].strip() for line in lines[1:]]
        # move 1.2 x 1.1, then pageout 1.1, then dontneed, which failed.
        self.assertEqual(labels, ["move_pages", "reclaim: MADV_PAGEOUT",
                                  "release: MADV_DONTNEED"])
        self.assertEqual(lines[1].split()[-2:], ["-", "1.320"])
        self.assertEqual(lines[3].split()[-2:], ["-", "-"])

    def test_report_leads_with_the_atlas(self):
        with tempfile.TemporaryDirectory() as d:
            make_run(d)
            env, cells, _ = rd.load_run(d)
            md = atlas.section(d, env, cells, lambda *a: None)
        self.assertEqual(md[0], "## the batching atlas")
        self.assertIn("a:", md)
        self.assertIn("b:", md)


if __name__ == "__main__":
    unittest.main()
