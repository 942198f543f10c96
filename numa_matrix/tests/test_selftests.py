#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of numa_matrix.selftests: the catalogue of the kernel's
mm selftests, what Meson gets from it, and the guest side's plumbing around
the kselftest runner (with a stand-in runner: nothing here runs a selftest)."""

import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stdout
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import selftests as st  # noqa: E402

CI = {"mlock2-tests", "mlock-random-test", "on-fault-limit", "migration"}


def parse(text):
    return st.parse_catalogue(text, "x.list")


class Catalogue(unittest.TestCase):
    def test_the_catalogue_parses(self):
        entries = st.load_catalogue()
        self.assertGreater(len(entries), 40)
        for d in st.DIRS:
            ci = {n for n, e in st.for_dir(entries, d).items()
                  if e.suite == "selftests"}
            self.assertEqual(ci, CI, d)

    def test_line_fields(self):
        (e,) = parse("mig selftests vm,mm nodes=2,nobody migration -x 3\n")
        self.assertEqual(e.name, "mig")
        self.assertEqual(e.dirs, ["vm", "mm"])
        self.assertEqual(e.needs, {"nodes": "2", "nobody": True})
        self.assertEqual(e.argv, ["migration", "-x", "3"])
        self.assertEqual(e.timeout(45), 45)
        (e,) = parse("a selftests vm timeout=300 a\n")
        self.assertEqual(e.timeout(45), 300)

    def test_errors_name_the_line(self):
        bad = {
            "a selftests vm -\n": "x.list:1: expected NAME",
            "a ci vm - a\n": "x.list:1: suite 'ci'",
            "a selftests v6 - a\n": "x.list:1: directory 'v6'",
            "a selftests vm wings=2 a\n": "x.list:1: unknown need 'wings'",
            "a selftests vm nodes a\n": "x.list:1: 'nodes' needs a value",
            "a selftests vm nodes=two a\n": "x.list:1: nodes=two",
            "a selftests vm nobody=1 a\n": "x.list:1: 'nobody' takes no value",
            "a selftests vm hugetlbfs=/mnt a\n": "x.list:1: hugetlbfs=/mnt",
            "# c\na selftests vm - a\na selftests vm - b\n":
                "x.list:3: a for vm again (first at line 2)",
            "a selftests vm - a\na selftests-all mm - a\n":
                "x.list:2: a is in suite selftests",
            "a/b selftests vm - a\n": "x.list:1: 'a/b' is not a test name",
        }
        for text, msg in bad.items():
            with self.subTest(text=text):
                with self.assertRaises(st.SelftestsError) as cm:
                    parse(text)
                self.assertIn(msg, str(cm.exception))

    def test_one_line_per_tree(self):
        entries = parse("m selftests vm timeout=300 m\nm selftests mm - m\n")
        self.assertEqual(st.for_dir(entries, "vm")["m"].needs["timeout"], "300")
        self.assertNotIn("timeout", st.for_dir(entries, "mm")["m"].needs)


class Meson(unittest.TestCase):
    def test_one_test_per_name(self):
        tests = st.meson_tests(st.load_catalogue())
        names = [t[0] for t in tests]
        self.assertEqual(len(names), len(set(names)))
        for name, suites, timeout in tests:
            self.assertIn("selftests-all", suites)
            self.assertEqual("selftests" in suites, name in CI, name)

    def test_meson_waits_for_the_runner(self):
        entries = parse("a selftests vm timeout=400 a\na selftests mm - a\n"
                        "b selftests-all vm - b\n")
        got = {t[0]: t[2] for t in st.meson_tests(entries)}
        self.assertEqual(got["a"], 400 + st.MESON_MARGIN)
        self.assertEqual(got["b"], st.TREE_TIMEOUT_MAX + st.MESON_MARGIN)


class Runner(unittest.TestCase):
    def test_args_variable_is_the_runners(self):
        # runner.sh: basename, [:alnum:]_ kept, others to _, upper case
        self.assertEqual(st.sanitized("on-fault-limit"),
                         "KSELFTEST_ON_FAULT_LIMIT_ARGS")
        self.assertEqual(st.sanitized("test_vmalloc.sh"),
                         "KSELFTEST_TEST_VMALLOC_SH_ARGS")

    def filtered(self, lines):
        k = st.KtapFilter()
        return [k.line(x) for x in lines]

    def test_all_subtests_skipped_is_a_skip(self):
        out = self.filtered([
            "# selftests: vm: migration",
            "# ok 1 # SKIP Not enough threads or NUMA nodes available",
            "# # Totals: pass:0 fail:0 xfail:0 xpass:0 skip:3 error:0",
            "ok 1 selftests: vm: migration"])
        self.assertTrue(out[-1].startswith("ok 1 selftests: vm: migration "
                                           "# SKIP every subtest skipped"))

    def test_passes_and_failures_stay(self):
        for totals, result in (("pass:1 fail:0 xfail:0 xpass:0 skip:2",
                                "ok 1 selftests: vm: x"),
                               ("pass:0 fail:1 xfail:0 xpass:0 skip:2",
                                "not ok 1 selftests: vm: x # exit=1"),
                               ("pass:0 fail:0 xfail:0 xpass:0 skip:0",
                                "ok 1 selftests: vm: x")):
            out = self.filtered([f"# # Totals: {totals} error:0", result])
            self.assertEqual(out[-1], result)

    def test_a_skip_says_why(self):
        # The runner's "# SKIP" (exit 4) carries no reason; the program's
        # last line does (6.1's gup_test without CONFIG_GUP_TEST).
        out = self.filtered([
            "# selftests: vm: gup_test",
            "# check if CONFIG_GUP_TEST is enabled in kernel config",
            "ok 1 selftests: vm: gup_test # SKIP",
            "# selftests: vm: b",
            "ok 2 selftests: vm: b # SKIP"])
        self.assertEqual(out[2], "ok 1 selftests: vm: gup_test # SKIP exit 4 "
                         "after: check if CONFIG_GUP_TEST is enabled in "
                         "kernel config")
        self.assertEqual(out[4], "ok 2 selftests: vm: b # SKIP exit 4, and "
                         "the program said nothing")

    def test_a_skip_says_why_in_its_own_ktap(self):
        # 6.1's memfd_secret: its own KTAP skip says why, its last line not.
        out = self.filtered([
            "# selftests: vm: memfd_secret",
            "# ok 2 # SKIP memfd_secret is not supported",
            "# # Planned tests != run tests (3 != 1)",
            "# # Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0",
            "ok 1 selftests: vm: memfd_secret # SKIP",
            "ok 2 selftests: vm: c # SKIP"])
        self.assertEqual(out[4], "ok 1 selftests: vm: memfd_secret # SKIP "
                         "exit 4 after: memfd_secret is not supported")
        self.assertTrue(out[5].endswith("the program said nothing"))

    def test_totals_do_not_outlive_their_test(self):
        out = self.filtered([
            "# # Totals: pass:0 fail:0 xfail:0 xpass:0 skip:3 error:0",
            "ok 1 selftests: vm: a # SKIP",
            "ok 2 selftests: vm: b"])
        self.assertEqual(out, ["# # Totals: pass:0 fail:0 xfail:0 xpass:0 "
                               "skip:3 error:0", "ok 1 selftests: vm: a # SKIP "
                               "exit 4, and the program said nothing",
                               "ok 2 selftests: vm: b"])

    def test_known_failure_is_expected_only_when_it_is_all(self):
        known = ({"migration.shared_anon"}, "a known flaw")
        head = ["# ok 1 migration.private_anon",
                "# not ok 2 migration.shared_anon"]
        k = st.KtapFilter(known)
        out = [k.line(x) for x in head + [
            "not ok 1 selftests: vm: migration # exit=1"]]
        self.assertEqual(out[-1], "not ok 1 selftests: vm: migration # TODO "
                         "known failure of migration.shared_anon (exit=1): "
                         "a known flaw")
        for more, result in (
                (["# not ok 3 migration.private_anon_thp"],
                 "not ok 1 selftests: vm: migration # exit=1"),
                ([], "not ok 1 selftests: vm: migration # TIMEOUT 45 seconds"),
                ([], "ok 1 selftests: vm: migration")):
            k = st.KtapFilter(known)
            out = [k.line(x) for x in head + more + [result]]
            self.assertEqual(out[-1], result)

    def test_known_failure_of_a_program_without_ktap(self):
        known = ({"Unexpected number of free huge pages line 212"}, "why")
        k = st.KtapFilter(known)
        out = [k.line(x) for x in [
            "# selftests: vm: hugetlb-madvise",
            "# Unexpected number of free huge pages line 212",
            "not ok 1 selftests: vm: hugetlb-madvise # exit=1"]]
        self.assertEqual(out[-1], "not ok 1 selftests: vm: hugetlb-madvise # "
                         "TODO known failure of Unexpected number of free huge "
                         "pages line 212 (exit=1): why")
        # Another line, another failure: not known.
        k = st.KtapFilter(known)
        out = [k.line(x) for x in [
            "# Unexpected number of free huge pages line 186",
            "not ok 1 selftests: vm: hugetlb-madvise # exit=1"]]
        self.assertEqual(out[-1], "not ok 1 selftests: vm: hugetlb-madvise "
                         "# exit=1")

    def test_failures_behind_exit_0_fail(self):
        lines = ["# not ok 14 mremap expand merge",
                 "# # Totals: pass:10 fail:1 xfail:3 xpass:0 skip:0 error:0",
                 "ok 1 selftests: vm: mremap_test"]
        k = st.KtapFilter()
        self.assertEqual([k.line(x) for x in lines][-1],
                         "not ok 1 selftests: vm: mremap_test # exit=0 with "
                         "fail:1 in its own totals")
        k = st.KtapFilter(({"mremap expand merge"}, "why"))
        self.assertEqual([k.line(x) for x in lines][-1],
                         "not ok 1 selftests: vm: mremap_test # TODO known "
                         "failure of mremap expand merge (exit=0 with fail:1 "
                         "in its own totals): why")

    def test_config_options(self):
        with tempfile.NamedTemporaryFile("w", suffix=".config") as f:
            f.write("CONFIG_SWAP=y\nCONFIG_KSM=m\n# CONFIG_USERFAULTFD is "
                    "not set\nCONFIG_USERFAULTFD_X=y\n")
            f.flush()
            self.assertEqual(st.options_off(["SWAP", "KSM", "USERFAULTFD"],
                                            f.name), ["USERFAULTFD"])
        (e,) = parse("a selftests vm config=USERFAULTFD+SWAP,swap a\n")
        self.assertEqual(e.needs, {"config": "USERFAULTFD+SWAP", "swap": True})
        with self.assertRaises(st.SelftestsError):
            parse("a selftests vm config=CONFIG_SWAP a\n")

    def test_known_file(self):
        entries = st.load_catalogue()
        known = st.load_known(entries)
        self.assertIn(("migration", "vm"), known)
        self.assertNotIn(("migration", "mm"), known)
        self.assertEqual(known[("mremap_test", "vm")][0],
                         {"mremap expand merge"})
        (names, why), = st.parse_known("migration vm a b | c -- why so\n",
                                       entries, "x.known").values()
        self.assertEqual((names, why), ({"a b", "c"}, "why so"))
        for text, msg in (("migration vm x\n", "x.known:1: expected"),
                          ("migration vm -- why\n", "x.known:1: expected"),
                          ("migration vm a -- \n", "x.known:1: expected"),
                          ("nosuch vm a -- b\n", "x.known:1: no test nosuch"),
                          ("cow vm a -- b\n", "x.known:1: no test cow for vm"),
                          ("migration vm a -- b\nmigration vm a -- b\n",
                           "x.known:2: migration for vm again")):
            with self.subTest(text=text), self.assertRaises(st.SelftestsError) as cm:
                st.parse_known(text, entries, "x.known")
            self.assertIn(msg, str(cm.exception))

    def test_list_gains_each_program_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kselftest-list.txt")
            with open(path, "w") as f:
                f.write("vm:madv_populate\nvm:run_vmtests.sh\n")
            self.assertEqual(st.add_to_list(path, "vm", ["madv_populate",
                                                         "migration"]),
                             ["migration"])
            self.assertEqual(st.add_to_list(path, "vm", ["migration"]), [])
            with open(path) as f:
                self.assertEqual(f.read().split(), [
                    "vm:madv_populate", "vm:run_vmtests.sh", "vm:migration"])


PATCH = """--- a/{0}
+++ b/{0}
@@ -1 +1 @@
-a
+b
"""


class HostSide(unittest.TestCase):
    def test_which_patches_matter(self):
        self.assertTrue(st.touches_inputs(PATCH.format(
            "tools/testing/selftests/mm/cow.c")))
        self.assertTrue(st.touches_inputs(PATCH.format(
            "include/uapi/linux/mman.h")))
        self.assertFalse(st.touches_inputs(PATCH.format("mm/mlock.c")))
        self.assertFalse(st.touches_inputs(PATCH.format("toolsx/a.c")))

    def plan(self, spec):
        (p,) = st.kernels.ks.kernels(spec, "perf")
        return st.plan(p, "gcc 12")

    def test_variants_share_one_build_unless_a_patch_matters(self):
        base, patched = self.plan("baseline"), self.plan("patched")
        self.assertEqual(base["dir"], patched["dir"])
        self.assertNotEqual(base["tree_id"], patched["tree_id"])
        with tempfile.TemporaryDirectory() as series:
            with open(os.path.join(series, "series"), "w") as f:
                f.write("0001-x.patch\n")
            with open(os.path.join(series, "0001-x.patch"), "w") as f:
                f.write(PATCH.format("tools/testing/selftests/vm/mlock2.h"))
            mine = self.plan(f"baseline+{series}")
        self.assertNotEqual(mine["dir"], base["dir"])
        self.assertNotEqual(st.plan(st.kernels.ks.kernels("baseline", "perf")[0],
                                    "gcc 13")["dir"], base["dir"])

    def test_guest_finds_its_trees_install(self):
        with tempfile.TemporaryDirectory() as cache, \
                tempfile.TemporaryDirectory() as store, \
                mock.patch.dict(os.environ, {
                    "NUMA_MATRIX_CACHE": cache,
                    "NUMA_MATRIX_KERNEL_IMAGE": os.path.join(store, "bzImage")}):
            info = {"source_id": "ae10c1b1e028", "series_hash": "21a65e9adbc0",
                    "spec": "linux-source-6.1@patched", "label": "patched",
                    "source_kind": "package"}
            with open(os.path.join(store, "info.json"), "w") as f:
                json.dump(info, f)
            install, why = st.installed_for_kernel()
            self.assertIsNone(install)
            self.assertIn("run kernel-series/build-selftests "
                          "linux-source-6.1@patched", why)
            sp = {"tree_id": "ae10c1b1e028-21a65e9adbc0",
                  "dir": os.path.join(cache, "selftests", "x")}
            os.makedirs(st.install_dir(sp))
            st.remember(sp)
            self.assertEqual(st.installed_for_kernel(),
                             (st.install_dir(sp), None))
            os.unlink(os.path.join(store, "info.json"))
            install, why = st.installed_for_kernel()
            self.assertIn("unknown source", why)


STAND_IN = """#!/bin/sh
# a stand-in for run_kselftest.sh: what it was asked, KTAP like the runner
echo "TAP version 13"
echo "1..1"
echo "# args $*"
echo "# env $KSELFTEST_GUP_TEST_ARGS"
echo "# cwd $(pwd)"
echo "ok 1 selftests: vm: gup_test"
"""


class GuestSide(unittest.TestCase):
    def run_one(self, name, install, env):
        out = io.StringIO()
        with mock.patch.dict(os.environ, env, clear=False), \
                redirect_stdout(out):
            rc = st.run_one(name, install)
        return rc, out.getvalue()

    def test_outside_a_guest_it_skips(self):
        env = dict(os.environ)
        env.pop("NUMA_MATRIX_TOPOLOGY_FILE", None)
        with mock.patch.dict(os.environ, env, clear=True):
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(st.run_one("mlock2-tests", "/nonexistent"), 0)
        self.assertTrue(out.getvalue().startswith("1..0 # SKIP not in a "
                                                  "numa-matrix guest"))

    def make_install(self, tmp):
        install = os.path.join(tmp, "install")
        os.makedirs(os.path.join(install, "vm"))
        runner = os.path.join(install, "run_kselftest.sh")
        with open(runner, "w") as f:
            f.write(STAND_IN)
        os.chmod(runner, 0o744)
        return install

    def test_runner_gets_the_one_test(self):
        with tempfile.TemporaryDirectory() as tmp:
            install = self.make_install(tmp)
            rc, out = self.run_one("gup_test-fast", install,
                                   {"NUMA_MATRIX_TOPOLOGY_FILE": "x.topo"})
        self.assertEqual(rc, 0)
        lines = out.splitlines()
        self.assertEqual(lines[:2], ["TAP version 13", "1..1"])
        self.assertIn("# args -t vm:gup_test", lines)
        self.assertIn("# env -u", lines)
        cwd = [x for x in lines if x.startswith("# cwd ")][0]
        self.assertNotEqual(cwd, f"# cwd {install}", "ran in the install, "
                            "not a writable copy")
        self.assertEqual(lines[-1], "ok 1 selftests: vm: gup_test")

    def test_missing_property_skips_before_running(self):
        with tempfile.TemporaryDirectory() as tmp:
            install = self.make_install(tmp)
            with mock.patch.object(st, "memory_nodes", return_value=1):
                rc, out = self.run_one("migration", install,
                                       {"NUMA_MATRIX_TOPOLOGY_FILE": "x.topo"})
        self.assertEqual(out.splitlines()[-1], "ok 1 selftests: vm: migration "
                         "# SKIP needs 2 nodes with memory, the guest has 1")
        self.assertNotIn("# args", out)

    def test_not_in_this_tree(self):
        with tempfile.TemporaryDirectory() as tmp:
            install = self.make_install(tmp)
            rc, out = self.run_one("cow", install,
                                   {"NUMA_MATRIX_TOPOLOGY_FILE": "x.topo"})
        self.assertIn("ok 1 selftests: vm: cow # SKIP not among this tree's "
                      "vm selftests", out)

    def test_leftover_processes_do_not_hold_the_runner(self):
        # A test that exits leaving a child holding the pipe, like 6.1's
        # migration when shared_anon fails: reading must end at once.
        out = io.StringIO()
        t0 = time.monotonic()
        with redirect_stdout(out), st.OrphanReaper() as reaper, \
                subprocess.Popen(["sh", "-c", "(sleep 60; echo late) & echo x"],
                                 stdout=subprocess.PIPE, text=True) as proc:
            reaper.spare = proc.pid
            lines = proc.stdout.read().split()
            proc.wait()
        self.assertEqual(lines, ["x"])
        self.assertLess(time.monotonic() - t0, 20)
        self.assertRegex(out.getvalue(), r"# run-selftests: killed process "
                         r"\d+ \((sh -c )?.*sleep 60.*\): the test left it")

    def test_copy_is_readable_by_nobody(self):
        with tempfile.TemporaryDirectory() as tmp:
            install = self.make_install(tmp)
            dest = os.path.join(tmp, "copy")
            st.copy_install(install, dest)
            mode = os.stat(os.path.join(dest, "run_kselftest.sh")).st_mode
            self.assertEqual(mode & 0o005, 0o005)
            self.assertEqual(stat.S_IMODE(os.stat(dest).st_mode), 0o755)


class BuildRetry(unittest.TestCase):
    """Only a missing kselftest.h include earns a second build."""

    def tree(self):
        d = self.empty()
        os.makedirs(os.path.join(d, "tools/testing/selftests"))
        open(os.path.join(d, "tools/testing/selftests/kselftest.h"), "w").close()
        return d

    def test_undeclared_ksft_code_is_named(self):
        out = ("gcc -Wall ... khugepaged.c\n"
               "khugepaged.c:1195:24: error: 'KSFT_SKIP' undeclared (first use "
               "in this function)\nmake[1]: *** [../lib.mk:222: khugepaged] Error 1\n")
        self.assertEqual(st.missing_kselftest_h(out, self.tree()),
                         "khugepaged.c uses KSFT_SKIP without including kselftest.h")

    def test_any_other_error_is_not_retried(self):
        out = ("cow.c:12:10: fatal error: liburing.h: No such file or directory\n"
               "khugepaged.c:9:5: error: 'foo' undeclared (first use in this function)\n")
        self.assertIsNone(st.missing_kselftest_h(out, self.tree()))

    def test_no_header_in_the_tree_no_retry(self):
        out = "x.c:1:2: error: 'KSFT_FAIL' undeclared (first use in this function)\n"
        self.assertIsNone(st.missing_kselftest_h(out, self.empty()))

    def empty(self):
        t = tempfile.TemporaryDirectory()
        self.addCleanup(t.cleanup)
        return t.name


if __name__ == "__main__":
    unittest.main(verbosity=2)
