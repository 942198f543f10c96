#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of report.py's narrow tables (at most 72 columns) and of
compare, on a fixture run (tests/data/runs/three-kernels: three kernels,
made-up figures chosen for each verdict): two to four kernels side by
side, a series patch by patch, and compare's verdicts identical, within
noise, better and worse."""

import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import report as rp  # noqa: E402
from numa_matrix import rundir as rd  # noqa: E402
from numa_matrix.errors import UsageError  # noqa: E402
from numa_matrix.tests.helpers import DATA  # noqa: E402

RUN = os.path.join(DATA, "runs", "three-kernels")


def rows(text):
    """{(heading, label): [fields after the label]} of a narrow table."""
    out, heading = {}, None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            heading = line
        elif line.startswith("  ") and not line.startswith("   "):
            label, *rest = line.split()
            out[(heading, label)] = rest
    return out


class Narrow(unittest.TestCase):
    def assertNarrow(self, text):
        wide = [line for line in text.splitlines() if len(line) > rp.NARROW]
        self.assertEqual(wide, [], "lines wider than 72 columns")

    def test_compare_two_kernels_with_each_verdict(self):
        text = rp.compare(f"{RUN}:baseline", f"{RUN}:series-1")
        self.assertNarrow(text)
        got = rows(text)
        # 0.010263 s over 16384 pages: 626.4 instructions a page.
        self.assertEqual(got[("2node", "bind")],
                         ["626.4", "626.4", "+0.00%", "identical"])
        self.assertEqual(got[("2node", "interleave")][2:],
                         ["+0.01%", "within", "noise"])
        self.assertEqual(got[("4node", "bind")],
                         ["627.4", "616.5", "-1.73%", "better"])
        self.assertEqual(got[("4node", "interleave")],
                         ["649.8", "665.3", "+2.39%", "worse"])
        self.assertIn("A  three-kernels:baseline", text)
        self.assertIn("   linux-source-6.1 6.1.192-3, 1 patch\n", text)

    def test_verdicts(self):
        a = [100.0, 101.0, 99.0]
        self.assertEqual(rp.verdict(a, list(a)), "identical")
        # 2 x the larger sample standard deviation (1.0) is the noise.
        self.assertEqual(rp.verdict(a, [102.0, 101.0, 103.0]), "within noise")
        self.assertEqual(rp.verdict(a, [102.1, 102.1, 102.1]), "worse")
        self.assertEqual(rp.verdict(a, [97.9, 97.9, 97.9]), "better")

    def test_compare_four_columns(self):
        text = rp.compare(f"{RUN}:baseline", f"{RUN}:series-1",
                          f"{RUN}:patched", f"{RUN}:baseline")
        self.assertNarrow(text)
        head = [line for line in text.splitlines() if line.endswith("D vs A")]
        self.assertEqual(len(head), 1)
        self.assertEqual(rows(text)[("4node", "interleave")],
                         ["649.8", "665.3", "259.6", "649.8", "+0.00%"])
        self.assertNotIn("verdict", text)

    def test_compare_whole_runs(self):
        with tempfile.TemporaryDirectory() as d:
            other = os.path.join(d, "other")
            shutil.copytree(RUN, other)
            env = rd.load_env(other)
            env["kernels"]["patched"]["compiler"] = "gcc 13"
            with open(os.path.join(other, "env.json"), "w") as f:
                json.dump(env, f)
            text = rp.compare(RUN, other)
        self.assertNarrow(text)
        self.assertIn("note: patched is not the same kernel in A and B: "
                      "compiler gcc (Debian 12.2.0-14) 12.2.0 -> gcc 13",
                      " ".join(text.split()))
        headings = [line for line in text.splitlines() if " on " in line
                    and not line.startswith(" ")]
        self.assertEqual(headings[0], "baseline on 2node")
        self.assertEqual(headings[-1], "patched on 4node")
        self.assertEqual(rows(text)[("patched on 4node", "bind")],
                         ["259.5", "259.5", "+0.00%", "identical"])

    def test_compare_refuses(self):
        for sides, cause in (((RUN,), "two to four"),
                             ((RUN,) * 5, "two to four"),
                             ((f"{RUN}:baseline", RUN), "on every side"),
                             ((f"{RUN}:nosuch", RUN), "no kernel 'nosuch'")):
            with self.subTest(sides=sides), \
                    self.assertRaisesRegex(UsageError, cause):
                rp.compare(*sides)

    def test_report_has_the_narrow_table(self):
        with tempfile.TemporaryDirectory() as d:
            run = os.path.join(d, "run")
            shutil.copytree(RUN, run)
            with open(rp.write_report(run)) as f:
                text = f.read()
        section = text.split("## the same, at most 72 columns")[1]
        section = section.split("```")[1]
        self.assertNarrow(section)
        self.assertIn("A  baseline\n", section)
        self.assertIn("C  patched\n", section)
        self.assertEqual(rows(section)[("4node", "interleave")],
                         ["649.8", "665.3", "259.6", "-60.05%"])

    def test_a_series_patch_by_patch(self):
        with tempfile.TemporaryDirectory() as d:
            run = os.path.join(d, "run")
            shutil.copytree(RUN, run)
            env = rd.load_env(run)
            # Five kernels: two more, copies of series-1's figures.
            for k in ("series-2", "series-3"):
                env["kernels"] = dict(list(env["kernels"].items())[:-1]
                                      + [(k, env["kernels"]["series-1"])]
                                      + [("patched", env["kernels"]["patched"])])
                for t in env["topologies"]:
                    for s in env["scenarios"]:
                        shutil.copy(rd.cell_path(run, t, s, "series-1"),
                                    rd.cell_path(run, t, s, k))
            with open(os.path.join(run, "env.json"), "w") as f:
                json.dump(env, f)
            env, cells, _ = rd.load_run(run)
            table = rp.per_patch_table(list(env["kernels"]), cells, "4node",
                                       "interleave", "icount")
            with open(rp.write_report(run)) as f:
                report = f.read()
        self.assertNarrow(table)
        lines = table.splitlines()
        self.assertEqual([line.split()[0] for line in lines],
                         ["kernel", "baseline", "series-1", "series-2",
                          "series-3", "patched"])
        self.assertEqual(lines[1].split(), ["baseline", "649.8"])
        self.assertEqual(lines[2].split(), ["series-1", "665.3", "+2.39%",
                                            "+2.39%"])
        self.assertEqual(lines[3].split(), ["series-2", "665.3", "+0.00%",
                                            "+2.39%"])
        self.assertEqual(lines[5].split(), ["patched", "259.6", "-60.98%",
                                            "-60.05%"])
        self.assertIn("interleave on 4node, 3 iterations, instructions per "
                      "page (icount):\nkernel ", report)


if __name__ == "__main__":
    unittest.main(verbosity=2)
