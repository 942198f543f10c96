#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of numa_matrix.tap, the one TAP/KTAP reader, on fixture
logs (tests/data/tap/): a NUMA test's TAP, the kselftest runner's KTAP,
a Meson JSON test log; and of its three readers' use of it: the summary
of ./numa-matrix test, run-mutants' verdict, run-selftests' corrections."""

import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import mutants, selftests, tap  # noqa: E402
from numa_matrix.tests.helpers import DATA  # noqa: E402


def fixture(name):
    with open(os.path.join(DATA, "tap", name)) as f:
        return f.read()


class Lines(unittest.TestCase):
    def test_results(self):
        r = tap.result("not ok 6 - every node's Mlocked back at its baseline")
        self.assertEqual((r.ok, r.number, r.description, r.directive),
                         (False, 6, "every node's Mlocked back at its baseline",
                          ""))
        self.assertTrue(r.failed)
        r = tap.result("not ok 1 selftests: vm: b # TODO known failure of b.x")
        self.assertEqual((r.description, r.directive, r.reason, r.failed),
                         ("selftests: vm: b", "TODO", "known failure of b.x",
                          False))
        r = tap.result("ok 2 # SKIP memfd_secret is not supported")
        self.assertEqual((r.description, r.directive, r.reason),
                         ("", "SKIP", "memfd_secret is not supported"))
        r = tap.result("not ok 1 selftests: vm: migration # exit=1")
        self.assertEqual((r.directive, r.comment), ("", "exit=1"))
        self.assertIsNone(tap.result("okay then"))
        self.assertIsNone(tap.result("# not ok 1 nested"))
        self.assertEqual(tap.totals("# Totals: pass:2 fail:1 xfail:0 xpass:0 "
                                    "skip:0 error:0"), [2, 1, 0, 0, 0, 0])


class Fixtures(unittest.TestCase):
    def test_a_numa_tests_tap(self):
        report = tap.parse(fixture("concurrent_mlock-8node-debug.tap"))
        self.assertEqual((report.plan, len(report.results)), (8, 8))
        self.assertEqual([r.number for r in report.failures], [6, 7, 8])
        self.assertEqual(report.failures[0].diagnostics,
                         ["# node 7: Mlocked +4 kB, expected +0 kB"])
        self.assertEqual(report.failures[2].diagnostics, [
            "# nr_mlock +1", "# after the stress: events mlocked +10690 "
            "munlocked +9496 culled +10659 rescued +10658 stranded +1193 "
            "cleared +0; nr_mlock +1"])
        self.assertIsNone(report.bailed)

    def test_the_runners_ktap_and_a_programs_nested_in_it(self):
        text = fixture("kselftest-migration-6.1.ktap")
        runner = tap.parse(text)
        self.assertEqual([r.line for r in runner.results],
                         ["not ok 1 selftests: vm: migration # exit=1"])
        program = tap.parse(text, prefix="# ")
        self.assertEqual(program.plan, 3)
        self.assertEqual([r.description for r in program.failures],
                         ["migration.shared_anon"])

    def test_run_selftests_corrects_a_known_failure(self):
        known = ({"migration.shared_anon"}, "6.1's migration.c fails on one "
                 "page left behind")
        k = selftests.KtapFilter(known)
        out = [k.line(line) for line in
               fixture("kselftest-migration-6.1.ktap").splitlines()]
        self.assertEqual(out[-1], "not ok 1 selftests: vm: migration # TODO "
                         "known failure of migration.shared_anon (exit=1): "
                         "6.1's migration.c fails on one page left behind")
        # Without the entry the failure stays one.
        k = selftests.KtapFilter()
        out = [k.line(line) for line in
               fixture("kselftest-migration-6.1.ktap").splitlines()]
        self.assertEqual(out[-1], "not ok 1 selftests: vm: migration # exit=1")

    def test_mutants_verdict(self):
        self.assertEqual(mutants.verdict(
            fixture("concurrent_mlock-8node-debug.tap"), 0, 0),
            ("fail", "3 not ok"))
        self.assertEqual(mutants.verdict("TAP version 13\n1..0 # SKIP no THP\n",
                                         0, 0), ("skip", "1..0 # SKIP no THP"))

    def test_the_summary_of_a_meson_log(self):
        failures, said = io.StringIO(), []
        counts = tap.tally(fixture("meson-testlog.json").splitlines(),
                           failures, "log.json", said.append)
        # lock_methods passed; migration is a known failure; concurrent_mlock
        # and hugetlb_locked failed, mlock_munlock_race timed out; one skip.
        self.assertEqual(counts, (1, 3, 1, 1))
        self.assertEqual(len(said), 1)
        self.assertTrue(said[0].startswith(
            "numa-matrix: expected failure: numa-matrix:selftests / "
            "selftest-migration: known failure of migration.shared_anon "
            "(exit=1): 6.1's migration.c"))
        text = failures.getvalue()
        self.assertIn("numa-matrix: FAILED: numa-matrix:numa / concurrent_mlock "
                      "(FAIL, log.json)\n  # node 7: Mlocked +4 kB, expected "
                      "+0 kB\n  not ok 6 - every node's Mlocked", text)
        self.assertIn("FAILED: numa-matrix:numa / mlock_munlock_race (TIMEOUT, "
                      "log.json)\n", text)
        self.assertIn("FAILED: numa-matrix:numa / hugetlb_locked (FAIL, "
                      "log.json)\n  Bail out! cannot map the huge pages\n", text)
        self.assertNotIn("selftest-migration", text)
        self.assertNotIn("lock_methods", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
