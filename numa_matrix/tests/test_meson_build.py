#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit test of meson.build's test setups, on the configured build
dir: what plain `meson test` and a guest setup select, and that Meson's
timeout stays outside run-guest's in every guest setup.

meson.build passes the build dir and its own values in the environment
(NUMA_MATRIX_MESON_BUILD, NUMA_MATRIX_MESON_GUEST="MIN_TIMEOUT MULTIPLIER
GUEST_TIMEOUT"); run by hand without them, the test skips, saying so.
"""

import json
import os
import subprocess
import unittest

# Suites that judge or change the running kernel, or start daemons.
GUEST_SUITES = {"numa", "topology", "selftests", "selftests-all"}
HOST_ONLY = {"unit", "slurm", "model", "kvm", "bisect"}
# run-guest's own hang report needs this long after its timeout fires.
MARGIN = 60

BUILD, MIN_TIMEOUT, MULTIPLIER, GUEST_TIMEOUT = None, 0, 0, 0


def listed(*args):
    """{(suite, test name)} that `meson test --list` would run."""
    out = subprocess.run(["meson", "test", "-C", BUILD, "--no-rebuild",
                          "--list", *args], capture_output=True, text=True,
                         check=True).stdout
    tests = set()
    for line in out.splitlines():
        # "numa-matrix:unit / test_topology"; one line per suite of a test
        # "numa-matrix:selftests-all+selftests / selftest-migration"
        project_suites, _, name = line.partition(" / ")
        for suite in project_suites.split(":")[-1].split("+"):
            if name:
                tests.add((suite, name))
    return tests


def introspected():
    with open(os.path.join(BUILD, "meson-info", "intro-tests.json")) as f:
        return json.load(f)


def suites(test):
    return {s.split(":")[-1] for s in test["suite"]}


class Setups(unittest.TestCase):
    def test_default_runs_host_suites_only(self):
        got = listed()
        self.assertTrue(got, "plain meson test lists nothing")
        self.assertTrue({s for s, _ in got} <= {"unit"},
                        f"plain meson test would run {sorted(got)}")
        units = {t["name"] for t in introspected() if "unit" in suites(t)}
        self.assertEqual({n for _, n in got}, units)

    def test_named_suite_still_runs(self):
        # How a guest runs the NUMA suite on its own kernel.
        got = listed("--suite", "numa")
        self.assertTrue(got)
        self.assertEqual({s for s, _ in got}, {"numa"})

    def test_guest_setup_leaves_host_suites_out(self):
        got = listed("--setup", "guest_1node")
        found = {s for s, _ in got}
        self.assertFalse(found & HOST_ONLY, f"a guest setup would run {found}")
        self.assertIn("numa", found)

    def test_meson_timeout_outside_guest_timeout(self):
        for t in introspected():
            if not suites(t) & GUEST_SUITES:
                continue
            with self.subTest(test=t["name"]):
                self.assertGreaterEqual(t["timeout"], MIN_TIMEOUT)
                self.assertGreater(t["timeout"] * MULTIPLIER,
                                   GUEST_TIMEOUT + MARGIN)


def setUpModule():
    global BUILD, MIN_TIMEOUT, MULTIPLIER, GUEST_TIMEOUT
    BUILD = os.environ.get("NUMA_MATRIX_MESON_BUILD")
    values = os.environ.get("NUMA_MATRIX_MESON_GUEST", "").split()
    if not BUILD or len(values) != 3:
        raise unittest.SkipTest("not run by meson test: no "
                                "NUMA_MATRIX_MESON_BUILD/_GUEST")
    MIN_TIMEOUT, MULTIPLIER, GUEST_TIMEOUT = map(int, values)


if __name__ == "__main__":
    unittest.main(verbosity=2)
