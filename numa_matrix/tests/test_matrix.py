#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of results/matrix: mmtests' percentages, the statistics,
reading a cell, a whole report from a synthetic run, resume bookkeeping."""

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import MATRIX, QEMU_TOPOLOGIES  # noqa: E402
from numa_matrix.tests.helpers import (fake_bzimage, fake_qemu_boots,  # noqa: E402
                                       fake_qemu_env)
from numa_matrix import matrix as mx  # noqa: E402
from numa_matrix import report as rp  # noqa: E402
from numa_matrix import rundir as rd  # noqa: E402
from numa_matrix.types import RunParams, RunRequest, Source  # noqa: E402
from numa_matrix.tests.helpers import kernel_plan  # noqa: E402
from numa_matrix.util import atomic_write  # noqa: E402
from numa_matrix.errors import UsageError  # noqa: E402

CELL = """# timedmunlock policy=interleave:0-3 size=67108864 thp=never op=munlock \
iterations=3 clock=CLOCK_MONOTONIC kernel=6.1.192-nm0-perf #1
iteration,op,pages,seconds
1,munlock,16384,{a}
2,munlock,16384,{b}
3,munlock,16384,{c}
# summary op=munlock iterations=3
"""


def write_env(rundir, clock, topologies, iterations, **extra):
    """env.json of a synthetic run: baseline and patched, bind and interleave."""
    kernels = {k: {"variant": k, "patches": n, "patch_names": [],
                   "flavour": "perf", "series_hash": f"h{n}",
                   "config_hash": "c", "source_version": "6.1.192-3",
                   "source_package": "linux-source-6.1", "image": "/x"}
               for n, k in enumerate(("baseline", "patched"))}
    env = {"clock": clock, "accel": "tcg", "iterations": iterations, "size": "64M",
           "flavour": "perf", "numa_matrix": "abc",
           "host": {"cpu_model": "cpu", "cpus": 2, "memory_mib": 1,
                    "host_kernel": "k", "qemu": "QEMU 7.2"},
           "kernels": kernels, "topologies": topologies,
           "scenarios": {s: mx.SCENARIOS[s] for s in ("bind", "interleave")},
           **extra}
    with open(os.path.join(rundir, "env.json"), "w") as f:
        json.dump(env, f)


class ModelRecords(unittest.TestCase):
    """A guest booted from an initramfs cannot read the cost model's
    records: the cell gets them after each iteration's line, as
    timedmunlock prints them itself when it can."""
    OUT = ("# timedmunlock op=munlock\niteration,op,pages,seconds\n"
           "1,munlock,16384,0.005\n2,munlock,16384,0.006\n# placement\n")
    RECS = ("region=3 vcpu=0 insns=10 cycles=20\n"
            "region=4 vcpu=0 insns=11 cycles=21\n# total vcpu=0 insns=99\n")

    def test_each_iteration_gets_its_record(self):
        merged = mx.merge_model_records(self.OUT, self.RECS)
        self.assertEqual(merged.splitlines()[2:6], [
            "1,munlock,16384,0.005", "# model iteration=1 insns=10 cycles=20",
            "2,munlock,16384,0.006", "# model iteration=2 insns=11 cycles=21"])
        self.assertTrue(merged.endswith("# placement\n"))

    def test_missing_extra_or_skipped_records_fail(self):
        with self.assertRaisesRegex(mx.MatrixError, "no cost model record for iteration 2"):
            mx.merge_model_records(self.OUT, self.RECS.splitlines()[0])
        with self.assertRaisesRegex(mx.MatrixError, "3 cost model records for 2 iterations"):
            mx.merge_model_records(self.OUT, self.RECS + "region=5 vcpu=0 insns=1\n")
        with self.assertRaisesRegex(mx.MatrixError, "not the next region after 3"):
            mx.merge_model_records(self.OUT, self.RECS.replace("region=4", "region=6"))


class Arithmetic(unittest.TestCase):
    def test_mmtests_percentage(self):
        # The seed: 3.38 -> 1.91 is 43.49% better; 3.38 -> 3.39 is -0.30%.
        self.assertAlmostEqual(rp.pct(3.38, 1.91), 43.49, places=2)
        self.assertAlmostEqual(rp.pct(3.38, 3.39), -0.30, places=2)
        self.assertEqual(rp.pct(0, 0), 0.0)

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
        s = rp.stats([1.0, 2.0, 3.0])
        self.assertEqual((s["min"], s["mean"], s["max"], s["range"]), (1, 2, 3, 2))
        self.assertAlmostEqual(s["stddev"], 1.0)    # sample stddev, n - 1
        self.assertEqual(rp.stats([5.0])["stddev"], 0.0)


class Run(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.dir, "topologies"))
        for t in ("2node", "4node"):
            shutil.copy(os.path.join(QEMU_TOPOLOGIES, t + ".topo"),
                        os.path.join(self.dir, "topologies"))
        write_env(self.dir, "icount", ["2node", "4node"], 3)
        figures = {("bind", "baseline"): (0.0117, 0.0117, 0.0117),
                   ("interleave", "baseline"): (0.0121, 0.0121, 0.0122),
                   ("bind", "patched"): (0.0080, 0.0080, 0.0080),
                   ("interleave", "patched"): (0.0080, 0.0081, 0.0080)}
        for t in ("2node", "4node"):
            for (s, k), (a, b, c) in figures.items():
                atomic_write(rd.cell_path(self.dir, t, s, k),
                                CELL.format(a=a, b=b, c=c))
        # One failed cell must be reported, not lost.
        os.unlink(rd.cell_path(self.dir, "2node", "interleave", "patched"))
        atomic_write(rd.cell_path(self.dir, "2node", "interleave", "patched")[:-4]
                        + ".failed", "exit status 123\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_read_cell(self):
        c = rd.read_cell(rd.cell_path(self.dir, "4node", "interleave", "baseline"))
        self.assertEqual(c["pages"], 16384)
        self.assertEqual(c["seconds"], [0.0121, 0.0121, 0.0122])
        self.assertEqual(c["meta"]["policy"], "interleave:0-3")

    def test_report(self):
        path = rp.write_report(self.dir)
        with open(path) as f:
            text = f.read()
        self.assertIn("Elapsed mean    ms      12.133 (   0.00%)", text)
        # patched vs baseline, interleave, 4node: (12.133 - 8.033) / 12.133
        self.assertIn("8.033 (  33.79%)", text)
        self.assertIn("2node interleave patched: see `cells/2node/interleave/"
                      "patched.failed`", text)
        self.assertIn("| 4node | 1.0370 | 1.0042 |", text)
        self.assertIn("clock: **icount**", text)

    def test_plots_label_every_machine(self):
        if not shutil.which("gnuplot"):
            self.skipTest("gnuplot is not installed (gnuplot-nox)")
        # 1, 2, 4 and 8 nodes: gnuplot dropped the label of 8, on the border.
        env = rd.load_env(self.dir)
        for t in ("1node", "8node"):
            shutil.copy(os.path.join(QEMU_TOPOLOGIES, t + ".topo"),
                        os.path.join(self.dir, "topologies"))
            for (s, k) in (("bind", "baseline"), ("bind", "patched")):
                atomic_write(rd.cell_path(self.dir, t, s, k),
                                CELL.format(a=0.01, b=0.01, c=0.01))
        env["topologies"] += ["1node", "8node"]
        with open(os.path.join(self.dir, "env.json"), "w") as f:
            json.dump(env, f)
        rp.write_report(self.dir)
        with open(os.path.join(self.dir, "plots", "per-page-bind.svg")) as f:
            svg = f.read()
        labels = re.findall(r'text-anchor="middle">\s*<text><tspan[^>]*>\s*'
                            r'(\d+)</tspan>', svg)
        self.assertEqual(labels, ["1", "2", "4", "8"])

    def test_damaged_cell_costs_only_itself(self):
        path = rd.cell_path(self.dir, "4node", "bind", "patched")
        with open(path, "a") as f:
            f.write("Segmentation fault\n")
        env, cells, failed = rd.load_run(self.dir)
        self.assertNotIn(("4node", "bind", "patched"), cells)
        self.assertRegex(failed[("4node", "bind", "patched")],
                         r"^damaged: cells/4node/bind/patched.csv:7: not a "
                         r"result line")
        with open(rp.write_report(self.dir)) as f:
            text = f.read()
        self.assertIn("4node bind patched: damaged: cells/4node/bind/"
                      "patched.csv:7", text)
        self.assertIn("8.033 (  33.79%)", text)     # the rest stands

    def test_missing_first_column_is_said(self):
        os.unlink(rd.cell_path(self.dir, "4node", "bind", "baseline"))
        env, cells, _ = rd.load_run(self.dir)
        table = rp.seed_table(list(env["kernels"]), cells, env, "4node", "bind")
        self.assertEqual(table.splitlines()[0], "(no figures of baseline on "
                         "4node: percentages are against patched)")
        full = rp.seed_table(list(env["kernels"]), cells, env, "4node",
                             "interleave")
        self.assertNotIn("no figures", full)

    def test_seed_table_columns(self):
        env, cells, failed = rd.load_run(self.dir)
        table = rp.seed_table(list(env["kernels"]), cells, env, "4node", "bind")
        lines = table.splitlines()
        self.assertEqual(len(lines), 2 + len(rp.ROWS) + 1)
        self.assertIn("baseline", lines[1])
        self.assertIn("patched", lines[1])
        self.assertIn("ns/page mean", lines[-1])
        self.assertIn("714.1 (   0.00%)", lines[-1])    # 11.7 ms / 16384 pages



MODEL = ("# model iteration={i} insns={insns} user=11 kernel={k} atomics={a} "
         "loads=1 stores=1 io=0 l1_miss={l1} l2_miss={l2} llc_miss={llc} "
         "remote={r} unmapped=0 node_miss={llc}:0 cycles={c}\n")


def model_cell(cycles, atomics=16384, remote=0):
    """A --clock model cell: icount seconds, and one record per iteration."""
    lines = CELL.split("\n")[:2]
    for i, c in enumerate(cycles, 1):
        lines.append(f"{i},munlock,16384,0.005")
        lines.append(MODEL.format(i=i, insns=5000000, k=4999989, a=atomics,
                                  l1=32768, l2=16384, llc=1638, r=remote,
                                  c=c).rstrip())
    return "\n".join(lines) + "\n"


class ModelClock(unittest.TestCase):
    """A run under the cost model: cycles in the seed tables, the counts per
    page, the interleave/bind ratio in cycles, and cells running at once."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.dir, "topologies"))
        shutil.copy(os.path.join(QEMU_TOPOLOGIES, "4node.topo"),
                    os.path.join(self.dir, "topologies"))
        write_env(self.dir, "model", ["4node"], 2,
                  cost_model={"plugin": "/b/costmodel.so", "sha256": "f" * 64},
                  bench="/b/numa-tests/bench/timedmunlock")
        cycles = {("bind", "baseline"): (8000000, 8000000),
                  ("interleave", "baseline"): (10000000, 10000000),
                  ("bind", "patched"): (6000000, 6000000),
                  ("interleave", "patched"): (6300000, 6300000)}
        for (s, k), c in cycles.items():
            atomic_write(rd.cell_path(self.dir, "4node", s, k), model_cell(c))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_read_model_cell(self):
        c = rd.read_cell(rd.cell_path(self.dir, "4node", "interleave", "baseline"))
        self.assertEqual(len(c["model"]), 2)
        self.assertEqual(c["model"][0]["cycles"], 10000000)
        self.assertEqual(c["model"][0]["node_miss"], "1638:0")
        self.assertEqual(rd.figures(c, "model"), [10000000, 10000000])
        self.assertEqual(rd.figures(c, "icount"), [0.005, 0.005])

    def test_records_must_match_iterations(self):
        path = os.path.join(self.dir, "bad.csv")
        with open(path, "w") as f:
            f.write(model_cell([1, 2]).replace("# model iteration=2", "# x"))
        with self.assertRaisesRegex(rd.RunDirError, "2 iterations but 1 cost model"):
            rd.read_cell(path)
        with open(path, "w") as f:
            f.write(CELL.format(a=1, b=2, c=3))
        with self.assertRaisesRegex(rd.RunDirError, "no '# model' lines"):
            rd.figures(rd.read_cell(path), "model")

    def test_report_in_cycles(self):
        with open(rp.write_report(self.dir)) as f:
            text = f.read()
        self.assertIn("clock: **model**", text)
        self.assertIn("Cycles mean    M       10.000 (   0.00%)", text)
        # patched against baseline, interleave: (10 - 6.3) / 10
        self.assertIn("6.300 (  37.00%)", text)
        self.assertIn("cycles/page mean        610.4 (   0.00%)", text)
        # Per page: 5000000 / 16384 instructions, 16384 / 16384 atomics.
        self.assertRegex(text, r"instructions +305\.18 +305\.18")
        self.assertRegex(text, r"atomics +1\.00 +1\.00")
        self.assertRegex(text, r"LLC misses +0\.10 +0\.10")
        # Interleaved / bound in modelled cycles: 10 / 8 and 6.3 / 6.
        self.assertIn("## interleaved / bound, modelled cycles per page", text)
        self.assertIn("| 4node | 1.2500 | 1.0500 |", text)

    def test_jobs(self):
        self.assertEqual(mx.jobs_for("icount", None), os.cpu_count())
        self.assertEqual(mx.jobs_for("model", 3), 3)
        self.assertEqual(mx.jobs_for("wall", None), 1)
        with self.assertRaisesRegex(UsageError, "never run beside other cells"):
            mx.jobs_for("wall", 2)
        with self.assertRaisesRegex(UsageError, "1 or more"):
            mx.jobs_for("model", 0)

    def test_cells_run_at_once(self):
        """--jobs 2: two guests at a time, every cell run once."""
        import threading
        env = rd.load_env(self.dir)
        cells = [(k, "4node", s) for s in ("bind", "interleave")
                 for k in ("baseline", "patched")]
        lock, now, most, ran = threading.Lock(), [0], [0], []

        def fake_cell(env, rundir, kernel, topo, scenario):
            with lock:
                now[0] += 1
                most[0] = max(most[0], now[0])
            time.sleep(0.2)
            with lock:
                now[0] -= 1
                ran.append((kernel, topo, scenario))
            return True, ""

        for c in cells:
            os.unlink(rd.cell_path(self.dir, c[1], c[2], c[0]))
        req = RunRequest(jobs=2)
        planned = (self.dir, RunParams(clock="model"), {}, {}, [])
        with mock.patch.object(mx, "plan_run", return_value=planned), \
                mock.patch.object(mx, "create_run",
                                  return_value=(self.dir, env, cells)), \
                mock.patch.object(mx, "build_kernels"), \
                mock.patch.object(mx, "run_cell", fake_cell), \
                mock.patch.object(mx, "finish_run", return_value="report.md"), \
                mock.patch.object(mx, "headline", return_value=""), \
                mock.patch.object(mx.os, "access", return_value=True), \
                contextlib.redirect_stderr(io.StringIO()) as err, \
                contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(mx.run(req), 0)
        self.assertEqual(sorted(ran), sorted(cells))
        self.assertEqual(most[0], 2, "never two cells at once")
        self.assertIn("4 cells in", err.getvalue())
        self.assertIn("with 2 at a time", err.getvalue())


class Topologies(unittest.TestCase):
    """--topologies /path/mine.topo: the cell is keyed by the machine's
    name, the run keeps a copy and boots that copy."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.mine = os.path.join(self.dir, "my_box.topo")
        with open(self.mine, "w") as f:
            f.write("description mine\nnode 0 cpus=0 mem=512M\n"
                    "node 1 cpus=1 mem=512M\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_path_becomes_a_name(self):
        got = mx.select_topologies(f"2node,{self.mine}")
        self.assertEqual(list(got), ["2node", "my_box"])
        self.assertEqual(got["my_box"], self.mine)

    def test_plan_copies_the_file_and_keeps_it(self):
        run = os.path.join(self.dir, "run")
        with open(self.mine) as f:
            before = f.read()
        params = RunParams(clock="icount", iterations=1, size="1M",
                           timeout=9, bench="/b")
        with mock.patch.object(rd, "host_env", return_value={}), \
                mock.patch.object(rd, "git_describe", return_value="x"):
            env = rd.write_env(run, params, {}, mx.select_topologies(self.mine),
                               {"bind": mx.SCENARIOS["bind"]})
        self.assertEqual(env["topologies"], ["my_box"])
        with open(rd.topo_copy(run, "my_box")) as f:
            self.assertEqual(f.read(), before)
        with open(self.mine) as f:
            self.assertEqual(f.read(), before)
        self.assertTrue(os.path.isfile(os.path.join(run, "env.json")))

    def test_catalogue_name_taken(self):
        other = os.path.join(self.dir, "sub")
        os.makedirs(other)
        shutil.copy(self.mine, os.path.join(other, "4node.topo"))
        with self.assertRaisesRegex(UsageError, "another machine called 4node"):
            mx.select_topologies(os.path.join(other, "4node.topo"))
        # The catalogue's own file, given by path, is the same machine.
        mx.select_topologies(os.path.join(QEMU_TOPOLOGIES, "4node.topo"))

    def test_cell_boots_the_runs_copy(self):
        run = os.path.join(self.dir, "run")
        topos = mx.select_topologies(self.mine)
        os.makedirs(os.path.join(run, "topologies"))
        shutil.copy(self.mine, rd.topo_copy(run, "my_box"))
        os.unlink(self.mine)        # the run must not need the original
        self.assertEqual(mx.select_topologies("my_box", run),
                         {"my_box": rd.topo_copy(run, "my_box")})
        env = {"kernels": {"k": {"image": "/x"}}, "flavour": "perf",
               "clock": "icount", "timeout": 9, "bench": "/b",
               "size": "1M", "iterations": 1}
        seen = []

        def fake_run(cmd, **kw):
            seen.append(cmd)
            return mock.Mock(returncode=1, stdout="", stderr="boom\n")

        with mock.patch.object(mx, "run_child", fake_run):
            ok, why = mx.run_cell(env, run, "k", "my_box", "bind")
        self.assertFalse(ok)
        cmd = seen[0]
        self.assertEqual(cmd[cmd.index("--topology") + 1],
                         rd.topo_copy(run, "my_box"))
        self.assertTrue(os.path.exists(os.path.join(
            run, "cells", "my_box", "bind", "k.failed")))
        self.assertIn("my_box", topos)


class WhereCellsRan(unittest.TestCase):
    """Each cell keeps the accelerator and host it ran on; the report shows
    them (one line when every cell ran alike)."""

    HOST = {"accel": "tcg", "host": "node1", "cpu_model": "AMD EPYC 7742",
            "host_kernel": "6.1.0", "qemu": "QEMU emulator version 7.2.22"}

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.dir, "topologies"))
        shutil.copy(os.path.join(QEMU_TOPOLOGIES, "4node.topo"),
                    os.path.join(self.dir, "topologies"))
        write_env(self.dir, "wall", ["4node"], 3)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def cell(self, scenario, kernel, where):
        atomic_write(rd.cell_path(self.dir, "4node", scenario, kernel),
                        "# cell " + json.dumps(where) + "\n"
                        + CELL.format(a=0.01, b=0.01, c=0.01))

    def report(self):
        with open(rp.write_report(self.dir)) as f:
            return f.read()

    def test_one_line_when_alike(self):
        for s in ("bind", "interleave"):
            for k in ("baseline", "patched"):
                self.cell(s, k, self.HOST)
        self.assertIn("- every cell: tcg on node1 (AMD EPYC 7742; kernel "
                      "6.1.0; QEMU emulator version 7.2.22)", self.report())

    def test_cells_of_another_host_or_accelerator_are_named(self):
        self.cell("bind", "baseline", self.HOST)
        self.cell("bind", "patched", dict(self.HOST, accel="kvm", host="node7"))
        self.cell("interleave", "baseline", self.HOST)
        report = self.report()
        self.assertIn("- 2 cell(s): 4node bind baseline, 4node interleave "
                      "baseline: tcg on node1", report)
        self.assertIn("- 1 cell(s): 4node bind patched: kvm on node7", report)

    def test_run_cell_keeps_the_record(self):
        env = {"kernels": {"k": {"image": "/x"}}, "flavour": "perf",
               "clock": "wall", "accel": "auto", "timeout": 9, "bench": "/b",
               "size": "1M", "iterations": 1}

        def fake_run(cmd, **kw):
            path = cmd[cmd.index("--record") + 1]
            with open(path, "w") as f:
                json.dump(dict(self.HOST, accel="kvm", exit=0), f)
            return mock.Mock(returncode=0, stderr="",
                             stdout=CELL.format(a=0.01, b=0.01, c=0.01))

        with mock.patch.object(mx, "run_child", fake_run):
            self.assertEqual(mx.run_cell(env, self.dir, "k", "4node", "bind"),
                             (True, ""))
        c = rd.read_cell(rd.cell_path(self.dir, "4node", "bind", "k"))
        self.assertEqual((c["where"]["accel"], c["where"]["host"]),
                         ("kvm", "node1"))
        self.assertEqual(c["seconds"], [0.01, 0.01, 0.01])
        left = os.listdir(os.path.dirname(rd.cell_path(self.dir, "4node",
                                                       "bind", "k")))
        self.assertEqual(left, ["k.csv"])


class WallClockCells(unittest.TestCase):
    """A --clock wall run with --accel auto, planned and run cell by cell
    through results/matrix and qemu-topologies/run-guest themselves, with
    the stand-in QEMU (tests/data/fake-qemu): the cell runs on KVM when the
    probe says KVM works, on TCG when it does not, and a failed guest's
    cell says why in run-guest's own summary."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.image = os.path.join(self.tmp.name, "bzImage")
        fake_bzimage(self.image, "6.1.192-nm14-perf (me@box) (gcc 12.2.0)")
        self.run_dir = os.path.join(self.tmp.name, "run")

    def tearDown(self):
        self.tmp.cleanup()

    def matrix(self, *args, kvm="works"):
        env = fake_qemu_env(self.tmp.name, kvm, FAKE_QEMU_STDOUT=CELL.format(
            a=0.01, b=0.01, c=0.01))
        return subprocess.run([MATRIX, *args], capture_output=True, text=True,
                              env=env, timeout=120, check=False)

    def plan(self, accel="auto"):
        out = self.matrix("plan", "--kernels", f"mine={self.image}",
                          "--topologies", "1node", "--scenarios", "bind",
                          "--clock", "wall", "--accel", accel,
                          "--iterations", "3", "--run-dir", self.run_dir)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split("\n")[1], "mine 1node bind")

    def test_cell_runs_on_kvm_where_it_works(self):
        self.plan()
        out = self.matrix("cell", self.run_dir, "mine", "1node", "bind")
        self.assertEqual(out.returncode, 0, out.stderr)
        cell = rd.read_cell(rd.cell_path(self.run_dir, "1node", "bind", "mine"))
        self.assertEqual(cell["where"]["accel"], "kvm")
        self.assertEqual(cell["seconds"], [0.01, 0.01, 0.01])
        self.assertNotIn("summary", cell["where"])
        self.assertEqual([b["accel"] for b in fake_qemu_boots(self.tmp.name)],
                         ["kvm", "kvm"])

    def test_cell_runs_on_tcg_where_kvm_cannot(self):
        self.plan()
        out = self.matrix("cell", self.run_dir, "mine", "1node", "bind",
                          kvm="fails")
        self.assertEqual(out.returncode, 0, out.stderr)
        cell = rd.read_cell(rd.cell_path(self.run_dir, "1node", "bind", "mine"))
        self.assertEqual(cell["where"]["accel"], "tcg")

    def test_failed_guest_says_why_in_one_line(self):
        self.plan(accel="kvm")
        out = self.matrix("cell", self.run_dir, "mine", "1node", "bind",
                          kvm="splat")
        self.assertEqual(out.returncode, 1)
        self.assertRegex(out.stderr, r"1node bind mine: FAILED: kernel problem "
                         r"in the guest \(the command exited with status 0\): "
                         r"\[ +1\.0+\] WARNING: CPU: 0 PID: 1")
        failed = rd.cell_path(self.run_dir, "1node", "bind", "mine")[:-4]
        with open(failed + ".failed") as f:
            self.assertTrue(f.read().startswith("exit status 123\n# cell "))


def start_run(tmp, topologies, scenarios, **fake):
    """results/matrix run of a fake kernel and benchmark in TMP, two cells
    at a time under fake QEMU (FAKE settings), once two guests booted."""
    image = os.path.join(tmp, "bzImage")
    fake_bzimage(image, "6.1.192-nm0-perf (x) (gcc 12.2.0)")
    build = os.path.join(tmp, "build")
    bench = os.path.join(build, "numa-tests", "bench", "timedmunlock")
    os.makedirs(os.path.dirname(bench))
    with open(bench, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(bench, 0o755)
    env = fake_qemu_env(tmp, **fake)
    run_dir = os.path.join(tmp, "run")
    subprocess.run([MATRIX, "plan", "--kernels", f"k={image}", "--topologies",
                    topologies, "--scenarios", scenarios, "--run-dir", run_dir,
                    "--build-dir", build], env=env, check=True,
                   capture_output=True)
    proc = subprocess.Popen([MATRIX, "run", "--resume", run_dir, "--jobs", "2"],
                            env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    t0 = time.time()
    while len(fake_qemu_boots(tmp)) < 2 and time.time() - t0 < 30:
        time.sleep(0.1)
    return proc


class Terminated(unittest.TestCase):
    """SIGTERM to results/matrix run (a Slurm time limit, kill, a CI
    timeout) stops the guests it started, rather than leaving run-guest and
    its QEMU running, and keeps the run to resume."""

    def test_guests_stop_with_the_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc = start_run(tmp, "1node,2node", "bind", FAKE_QEMU_HANG="1")
            boots = fake_qemu_boots(tmp)
            self.assertEqual(len(boots), 2, "two guests never started")
            proc.terminate()
            out, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 130, err)
            self.assertIn("interrupted: finished cells are kept; resume with",
                          err)
            self.assertNotIn("Traceback", err)
            for boot in boots:
                pid = boot["pid"]
                gone = not os.path.exists(f"/proc/{pid}") or \
                    open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
                self.assertTrue(gone, f"QEMU {pid} still runs")

    def test_no_guest_starts_after_sigterm(self):
        # Guests that end on their own: the workers are between cells as
        # often as in them, and a signal may reach one of their threads.
        with tempfile.TemporaryDirectory() as tmp:
            proc = start_run(tmp, "1node,2node,4node,8node", "bind,interleave",
                             FAKE_QEMU_SLEEP="3")
            self.assertEqual(len(fake_qemu_boots(tmp)), 2)
            proc.terminate()
            t1 = time.time()
            out, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 130, err)
            # Stopped within a guest's time, and nothing booted after it.
            took = time.time() - t1
            self.assertEqual(len(fake_qemu_boots(tmp)), 2, err)
            self.assertLess(took, 3, err)


class Sources(unittest.TestCase):
    """A run mixing sources: which column is which, compare across them,
    and a resume that would mix two kernels under one name."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.run_a = os.path.join(self.dir, "a")
        self.run_b = os.path.join(self.dir, "b")
        base = {"spec": "linux-source-6.1@baseline", "kind": "package",
                "source_kind": "package", "source_package": "linux-source-6.1",
                "source": "/usr/src/linux-source-6.1.tar.xz",
                "source_id": "ae10", "source_version": "6.1.192-3",
                "compiler": "gcc 12.2.0", "commit": None, "patches": 0,
                "series_hash": "e3b0", "config_hash": "c1", "image": "/x"}
        new = dict(base, spec="linux-source-6.12@baseline",
                   source_package="linux-source-6.12", source_id="bfa4",
                   source_version="6.12.118-1~deb12u1", config_hash="c2")
        mine = dict(base, spec="/src/linux@1a2b", kind="git", source_kind="git",
                    source_package=None, source="/src/linux", source_id="git-1a2b",
                    source_version="6.12", commit="1a2b3c4d5e6f7a8b",
                    subject="mm: mine")
        for run, kernels, t in ((self.run_a, {"baseline": base,
                                              "6.12-baseline": new,
                                              "1a2b3c4d5e6f": mine}, 0.0100),
                                (self.run_b, {"baseline": dict(base, compiler="gcc 13"),
                                              "6.12-baseline": new}, 0.0090)):
            os.makedirs(os.path.join(run, "topologies"))
            shutil.copy(os.path.join(QEMU_TOPOLOGIES, "2node.topo"),
                        os.path.join(run, "topologies"))
            env = {"clock": "icount", "accel": "tcg", "iterations": 3,
                   "size": "64M", "flavour": "perf", "numa_matrix": "abc",
                   "host": {"cpu_model": "cpu", "cpus": 2, "memory_mib": 1,
                            "host_kernel": "k", "qemu": "QEMU 7.2"},
                   "kernels": kernels, "topologies": ["2node"],
                   "scenarios": {"interleave": mx.SCENARIOS["interleave"]}}
            with open(os.path.join(run, "env.json"), "w") as f:
                json.dump(env, f)
            for i, k in enumerate(kernels):
                v = t * (1 + i / 10)
                atomic_write(rd.cell_path(run, "2node", "interleave", k),
                                CELL.format(a=v, b=v, c=v))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def compare(self, a, b):
        return rp.compare(a, b)

    def test_report_says_which_column_is_which_source(self):
        with open(rp.write_report(self.run_a)) as f:
            text = f.read()
        self.assertIn("| baseline | linux-source-6.1 | 6.1.192-3 |", text)
        self.assertIn("| 6.12-baseline | linux-source-6.12 | 6.12.118-1~deb12u1 |",
                      text)
        self.assertIn('| 1a2b3c4d5e6f | commit 1a2b3c4d5e6f "mm: mine" of linux '
                      "| 6.12 |", text)
        # The seed table's first header line: each column's source version.
        head = [line for line in text.splitlines() if "6.1.192-3" in line
                and "6.12.118" in line]
        self.assertTrue(head, text)

    def test_compare_two_sources(self):
        out = self.compare(f"{self.run_a}:baseline", f"{self.run_b}:6.12-baseline")
        self.assertIn("A  a:baseline\n   linux-source-6.1 6.1.192-3\n", out)
        self.assertIn("B  b:6.12-baseline\n   linux-source-6.12 "
                      "6.12.118-1~deb12u1\n", out)
        # A 10.0 ms, B 9.9 ms a run of 16384 pages: 1% fewer, better.
        self.assertRegex(out, r"2node\n  interleave +610\.4 +604\.2 +-1\.00%  "
                         r"better")
        out = self.compare(f"{self.run_a}:baseline", f"{self.run_a}:1a2b3c4d5e6f")
        self.assertRegex(out, r"\+20\.00%  worse")

    def test_compare_whole_runs_notes_a_different_kernel(self):
        out = self.compare(self.run_a, self.run_b)
        self.assertIn("note: baseline is not the same kernel in A and B: "
                      "compiler gcc 12.2.0 -> gcc 13", " ".join(out.split()))
        self.assertNotIn("note: 6.12-baseline", out)

    def test_compare_errors(self):
        with self.assertRaises(UsageError) as cm:
            self.compare(f"{self.run_a}:nosuch", self.run_b)
        self.assertIn("has no kernel 'nosuch'", str(cm.exception))
        with self.assertRaises(UsageError) as cm:
            self.compare(f"{self.run_a}:baseline", self.run_b)
        self.assertIn("on every side", str(cm.exception))

    def test_resume_refuses_another_kernel_under_the_same_name(self):
        env = rd.load_env(self.run_a)
        plan = kernel_plan(
            store="/s", source=Source(kind="package", package="linux-source-6.1",
                                      id="ae10", version="6.1.193-1",
                                      tarball="/usr/src/linux-source-6.1.tar.xz"),
            source_version="6.1.193-1", compiler="gcc 12.2.0",
            series_hash="e3b0", config_hash="c1")
        params = RunParams(iterations=3, bench="/b")
        with mock.patch.object(rd, "host_env", return_value=env["host"]), \
                self.assertRaises(UsageError) as cm:
            rd.write_env(self.run_a, params, {"baseline": plan}, ["2node"],
                         {"interleave": mx.SCENARIOS["interleave"]})
        self.assertIn("kernel baseline is not the one this run started with "
                      "(source_version 6.1.192-3 -> 6.1.193-1)", str(cm.exception))
        # A run recorded before kernels carried their compiler.
        self.assertIn("recorded before", rd.identity_change(
            {"series_hash": "e3b0", "config_hash": "c1"},
            rd.kernel_info(plan))[0])

    def test_duplicate_columns_refused(self):
        with mock.patch.object(mx.kernelspec, "package_info", lambda p: Source(
                kind="package", tarball="/t", package=p, version="1",
                id="0123")):
            with self.assertRaises(UsageError) as cm:
                mx.select_kernels("baseline,linux-source-6.1", "perf")
            self.assertIn("called 'baseline'", str(cm.exception))
            self.assertEqual(list(mx.select_kernels("baseline,b=linux-source-6.1",
                                                    "perf")), ["baseline", "b"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
