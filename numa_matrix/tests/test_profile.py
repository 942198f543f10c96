#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of results/matrix profile (numa_matrix/profile.py):
naming addresses by the nearest text symbol, reading the plugin's profile
file, the tables and the two-kernel diff, the check that the profile adds
up to the cell's records, and the whole command with a stand-in guest. The
plugin's side of the profile is qemu-topologies/cost-model/tests/
test_profile.c; finding a kernel's System.map, test_system_map.py."""

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
from numa_matrix import matrix as mx  # noqa: E402
from numa_matrix import profile as prof  # noqa: E402
from numa_matrix import cli  # noqa: E402
from numa_matrix import rundir as rd  # noqa: E402
from numa_matrix.util import atomic_write  # noqa: E402
from numa_matrix.tests.helpers import kernel_plan  # noqa: E402
from numa_matrix.types import Source  # noqa: E402

# Per-CPU data at small offsets, the start of text with a function at the
# same address as its markers, aliases, a section marker sharing a
# function's address, data after _etext.
SYSTEM_MAP = """\
0000000000000000 D __per_cpu_start
0000000000001000 D cpu_debug_store
000000000000002a A some_absolute
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000000 T startup_64
ffffffff81000100 t mlock_pagevec
ffffffff81000200 W weak_alias
ffffffff81000200 T munlock_page
ffffffff81000280 t __do_sys_munlockall
ffffffff81000280 T __x64_sys_munlockall
ffffffff81000300 T __sched_text_start
ffffffff81000300 T schedule
ffffffff81000400 T __sched_text_end
ffffffff81000410 T _raw_spin_lock_irq
ffffffff81000500 T _etext
ffffffff81000600 r some_rodata
ffffffff81001000 D some_data
"""


class Symbols(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.map = os.path.join(self.dir, "System.map")
        atomic_write(self.map, SYSTEM_MAP)
        self.sym = prof.Symbols(self.map)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_nearest_text_symbol_at_or_below(self):
        name = self.sym.name
        self.assertEqual(name(0xffffffff81000100), "mlock_pagevec")
        self.assertEqual(name(0xffffffff810001ff), "mlock_pagevec")
        self.assertEqual(name(0xffffffff81000450), "_raw_spin_lock_irq")

    def test_a_function_is_named_before_the_markers_at_its_address(self):
        self.assertEqual(self.sym.name(0xffffffff81000000), "startup_64")
        self.assertEqual(self.sym.name(0xffffffff81000310), "schedule")

    def test_a_global_name_before_a_weak_or_local_alias(self):
        self.assertEqual(self.sym.name(0xffffffff81000234), "munlock_page")
        self.assertEqual(self.sym.name(0xffffffff81000280), "__x64_sys_munlockall")

    def test_addresses_of_no_function(self):
        name = self.sym.name
        # Past a section's end marker, past _etext, in data, below text.
        self.assertEqual(name(0xffffffff81000404), prof.UNKNOWN)
        self.assertEqual(name(0xffffffff81000510), prof.UNKNOWN)
        self.assertEqual(name(0xffffffff81000600), prof.UNKNOWN)
        self.assertEqual(name(0xffffffff80000000), prof.UNKNOWN)

    def test_user_space_and_no_address(self):
        self.assertEqual(self.sym.name(0x555555556020), prof.USER)
        self.assertEqual(self.sym.name(0x1000), prof.USER)
        self.assertEqual(self.sym.name(prof.NOWHERE), prof.UNPROFILED)

    def test_by_function_sums_the_addresses_of_a_function(self):
        funcs = prof.by_function({0xffffffff81000100: 5, 0xffffffff81000180: 7,
                                  0xffffffff81000200: 1, 0x401000: 3}, self.sym)
        self.assertEqual(funcs, {"mlock_pagevec": 12, "munlock_page": 1,
                                 prof.USER: 3})

    def test_a_file_that_is_not_a_system_map(self):
        atomic_write(self.map, "hello world again\n")
        with self.assertRaises(prof.ProfileError):
            prof.Symbols(self.map)
        atomic_write(self.map, "0000000000000010 D only_per_cpu\n")
        with self.assertRaises(prof.ProfileError):
            prof.Symbols(self.map)


HEADER = ("# costmodel profile: instructions executed inside marked regions\n"
          "# regions=2 insns={} region_insns={} translations=9 lost=0\n")


class ProfileFile(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "k.profile")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_reads_header_and_counts(self):
        atomic_write(self.path, HEADER.format(12, 12) +
              "0000000000401000 2\nffffffff81000100 10\n")
        header, counts = prof.read_profile(self.path)
        self.assertEqual(header["regions"], 2)
        self.assertEqual(header["insns"], 12)
        self.assertEqual(counts, {0x401000: 2, 0xffffffff81000100: 10})

    def test_lines_that_do_not_add_up_are_refused(self):
        atomic_write(self.path, HEADER.format(13, 13) + "ffffffff81000100 12\n")
        with self.assertRaisesRegex(prof.ProfileError, "add up to 12"):
            prof.read_profile(self.path)

    def test_an_unfinished_or_damaged_file_is_refused(self):
        atomic_write(self.path, "")
        with self.assertRaisesRegex(prof.ProfileError, "did the guest finish"):
            prof.read_profile(self.path)
        atomic_write(self.path, HEADER.format(1, 1) + "ffffffff81000100\n")
        with self.assertRaisesRegex(prof.ProfileError, ":3: not 'ADDRESS COUNT'"):
            prof.read_profile(self.path)

    def test_the_sum_check(self):
        cell = {"model": [{"insns": 5}, {"insns": 7}]}
        line = prof.checked(cell, {"regions": 2, "insns": 12,
                                   "region_insns": 12}, "k")
        self.assertIn("12 instructions in 2 regions", line)
        for header in ({"regions": 2, "insns": 13, "region_insns": 13},
                       {"regions": 3, "insns": 12, "region_insns": 12},
                       {"regions": 2, "insns": 12, "region_insns": 11}):
            with self.assertRaises(prof.ProfileError):
                prof.checked(cell, header, "k")


class Tables(unittest.TestCase):
    FUNCS = {"a": 600, "b": 300, "c": 60, "d": 40}

    def test_table_rows_largest_first_per_page_and_iteration(self):
        text = prof.table("T", self.FUNCS, regions=2, pages=10)
        lines = text.splitlines()
        self.assertEqual(lines[0], "T")
        self.assertEqual([line.split()[-1] for line in lines[2:]],
                         ["a", "b", "c", "d", "total"])
        # a: 600 of 1000, over 2 iterations of 10 pages.
        self.assertEqual(lines[2].split()[:3], ["60.00%", "30.00", "300.0"])
        self.assertEqual(lines[-1].split()[:3], ["100.00%", "50.00", "500.0"])

    def test_table_top_folds_the_rest_into_one_row(self):
        lines = prof.table("T", self.FUNCS, 1, 1, top=2).splitlines()
        self.assertEqual(lines[4].split()[:2], ["10.00%", "100.00"])
        self.assertIn("(2 more functions)", lines[4])
        self.assertEqual(len(lines), 6)

    def test_ties_are_ordered_by_name(self):
        lines = prof.table("T", {"y": 5, "x": 5}, 1, 1).splitlines()
        self.assertEqual([line.split()[-1] for line in lines[2:4]], ["x", "y"])

    def test_diff_largest_change_first_either_way(self):
        a = {"mlock_pagevec": 500, "lock": 100, "same": 50, "gone": 30}
        b = {"mlock_pagevec": 200, "lock": 160, "same": 50, "new": 35}
        self.assertEqual(prof.diff(a, b), [
            ("mlock_pagevec", 500, 200, -300), ("lock", 100, 160, 60),
            ("new", 0, 35, 35), ("gone", 30, 0, -30), ("same", 50, 50, 0)])

    def test_diff_table_per_page_with_the_change_as_a_share_of_a(self):
        a, b = {"f": 800, "g": 200}, {"f": 300, "g": 300}
        # A: 2 iterations, B: 1; 10 pages each.
        lines = prof.diff_table("D", a, 2, b, 1, 10).splitlines()
        self.assertEqual(lines[2].split(), ["40.00", "30.00", "-10.00",
                                            "-20.00%", "f"])
        self.assertEqual(lines[3].split(), ["10.00", "30.00", "+20.00",
                                            "+40.00%", "g"])
        self.assertEqual(lines[-1].split()[:4], ["50.00", "60.00", "+10.00",
                                                 "+20.00%"])


class Command(unittest.TestCase):
    """matrix profile end to end, the guest and the build stood in for."""

    def setUp(self):
        self.root = tempfile.mkdtemp()
        build = os.path.join(self.root, "build")
        atomic_write(os.path.join(build, "qemu-topologies/cost-model/costmodel.so"),
              "... profile= ...")
        self.bench = os.path.join(build, "numa-tests/bench/timedmunlock")
        atomic_write(self.bench, "")
        os.chmod(self.bench, 0o755)
        self.plans = {}
        for label in ("A", "B"):
            store = os.path.join(self.root, "kernels", label)
            atomic_write(os.path.join(store, "bzImage"), "img")
            atomic_write(os.path.join(store, "System.map"), SYSTEM_MAP)
            self.plans[label] = kernel_plan(
                label=label, spec=label, store=store, source_version="6.1",
                source=Source(kind="package", package="p", tarball="/t",
                              version="6.1.192-3", id=label))
        # What each kernel's guest executes in its two regions.
        self.runs = {"A": {0xffffffff81000100: 300, 0xffffffff81000410: 100,
                           0x401000: 4},
                     "B": {0xffffffff81000100: 100, 0xffffffff81000410: 120,
                           0x401000: 4}}

    def tearDown(self):
        shutil.rmtree(self.root)

    def fake_cell(self, env, rundir, kernel, topo, scenario, profile=None):
        counts = self.runs[kernel]
        total = sum(counts.values())
        first = total // 2
        atomic_write(rd.cell_path(rundir, topo, scenario, kernel),
                        "iteration,op,pages,seconds\n"
                        f"1,munlock,2,0.1\n# model iteration=1 insns={first} "
                        "cycles=1\n"
                        f"2,munlock,2,0.1\n# model iteration=2 "
                        f"insns={total - first} cycles=1\n")
        atomic_write(profile, HEADER.format(total, total) + "".join(
            f"{a:016x} {n}\n" for a, n in sorted(counts.items())))
        self.ran.append(kernel)
        return True, ""

    def run_command(self, run_dir):
        """results/matrix profile, its command line and all."""
        argv = ["profile", "--kernel", "A", "--kernel", "B", "--scenario",
                "interleave", "--topology", "2node", "--iterations", "2",
                "--size", "8K", "--timeout", "60", "--top", "0",
                "--run-dir", run_dir, "--results", self.root,
                "--build-dir", os.path.join(self.root, "build")]
        self.ran = []
        out, self.err = io.StringIO(), io.StringIO()
        with mock.patch.object(mx, "select_kernels",
                               lambda text, flavour: {k: self.plans[k]
                                                      for k in text.split(",")}), \
                mock.patch.object(mx, "build_kernels", lambda env, rundir: None), \
                mock.patch.object(mx, "run_cell", self.fake_cell), \
                contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(self.err):
            rc = cli.main(argv)
        return rc, out.getvalue()

    def test_tables_diff_and_sums(self):
        run_dir = os.path.join(self.root, "run")
        rc, out = self.run_command(run_dir)
        self.assertEqual(rc, 0)
        self.assertEqual(self.ran, ["A", "B"])
        # A: 404 instructions over 2 iterations of 2 pages: 101 a page.
        self.assertIn("   74.26%       75.00        150.0  mlock_pagevec", out)
        self.assertIn("  100.00%      101.00        202.0  total", out)
        self.assertIn("instructions per page: A = A, B = B", out)
        self.assertIn("       75.00       25.00      -50.00   -49.50%  "
                      "mlock_pagevec", out)
        self.assertIn("A: 404 instructions in 2 regions, the sum of the cell's "
                      "records' insns: 404", out)
        with open(os.path.join(run_dir, "profile.txt")) as f:
            self.assertEqual(f.read(), out)
        self.assertEqual(rd.load_env(run_dir)["clock"], "model")
        # Again with the same run directory: nothing runs again.
        rc, again = self.run_command(run_dir)
        self.assertEqual((rc, self.ran, again), (0, [], out))

    def test_a_plugin_without_profile_is_refused(self):
        atomic_write(os.path.join(self.root, "build/qemu-topologies/cost-model/"
                           "costmodel.so"), "old")
        rc, _ = self.run_command(os.path.join(self.root, "run"))
        self.assertEqual(rc, 1)
        self.assertRegex(self.err.getvalue(), r"^matrix: error: the cost model "
                         r"plugin .* predates profile=")


if __name__ == "__main__":
    unittest.main(verbosity=2)
