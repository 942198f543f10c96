#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Unit tests of run-mutants' verdicts, record and table (numa_matrix.mutants)."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__)))))
from numa_matrix import mutants  # noqa: E402

TAP_OK = "TAP version 13\n1..2\nok 1 - a\nok 2 - b\n"


class Verdicts(unittest.TestCase):
    def test_pass_and_todo(self):
        self.assertEqual(mutants.verdict(TAP_OK, 0, 0)[0], "pass")
        todo = "TAP version 13\n1..1\nnot ok 1 - a # TODO known deviation\n"
        self.assertEqual(mutants.verdict(todo, 0, 0)[0], "pass")

    def test_failures(self):
        self.assertEqual(mutants.verdict("1..1\nnot ok 1 - a\n", 1, 0),
                         ("fail", "1 not ok, exit 1"))
        self.assertEqual(mutants.verdict("1..2\nok 1 - a\nBail out! x\n", 2, 0)[1],
                         "0 not ok, bail out, exit 2")
        self.assertEqual(mutants.verdict(TAP_OK, 0, 123)[0], "fail")
        self.assertEqual(mutants.verdict(TAP_OK, 0, 124)[1], "the guest hung (timeout)")
        self.assertEqual(mutants.verdict("", 0, 125)[0], "error")

    def test_skip(self):
        self.assertEqual(mutants.verdict("1..0 # SKIP no THP\n", 0, 0)[0], "skip")


class Table(unittest.TestCase):
    def record(self):
        res = lambda v, d: {"verdict": v, "detail": d}  # noqa: E731
        return {"topology": "4node", "flavour": "perf", "kernels": {
            "baseline": {"description": "no patch", "results": {
                "a": res("pass", "1..2"), "b": res("fail", "1 not ok"),
                "c": res("skip", "1..0")}},
            "01-x": {"description": "breaks x", "results": {
                "a": res("fail", "2 not ok"), "b": res("fail", "1 not ok"),
                "c": res("pass", "1..0")}},
            "02-y": {"description": "breaks y", "results": {
                "a": res("pass", "1..2"), "b": res("fail", "1 not ok")}}}}

    def test_rows_ignore_tests_broken_on_the_baseline(self):
        rows, broken = mutants.rows(self.record())
        # Each broken test is named with the baseline it broke on (6.1's
        # or 6.12's: linux-source-6.12/ mutants have a baseline of their own).
        self.assertEqual(broken, {"b (baseline)"})
        self.assertEqual(rows[0][:3], ("01-x", "breaks x", ["a (2 not ok)"]))
        self.assertEqual(rows[1][2], [])

    def test_table_says_not_caught(self):
        text = mutants.table(self.record())
        self.assertIn("| 02-y | breaks y | - | **NO** (2 tests run) |", text)
        self.assertIn("b (baseline) failed there and count for nothing", text)

    def test_doc_markers(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "doc.md")
            with open(path, "w") as f:
                f.write(f"head\n{mutants.BEGIN}\nold\n{mutants.END}\ntail\n")
            mutants.update_doc(path, "new\n")
            with open(path) as f:
                self.assertEqual(f.read(),
                                 f"head\n{mutants.BEGIN}\nnew\n{mutants.END}\ntail\n")
            with open(path, "w") as f:
                f.write("no markers\n")
            with self.assertRaises(mutants.MutantsError):
                mutants.update_doc(path, "new\n")


class Resume(unittest.TestCase):
    def test_a_new_image_drops_its_results(self):
        with tempfile.TemporaryDirectory() as d:
            image = os.path.join(d, "bzImage")
            with open(image, "w") as f:
                f.write("one")
            path = os.path.join(d, "m.json")
            rec = mutants.Record(path, "4node", "perf")
            k = rec.kernel("baseline", image, "no patch")
            k["results"]["a"] = {"verdict": "pass", "image": k["image"]}
            rec.save()
            rec = mutants.Record(path, "4node", "perf")
            self.assertIn("a", rec.kernel("baseline", image, "no patch")["results"])
            with open(image, "w") as f:
                f.write("two")
            self.assertNotIn("a", rec.kernel("baseline", image, "no patch")["results"])
            other = mutants.Record(path, "2node", "perf")
            self.assertEqual(other.data["kernels"], {})
            with open(path) as f:
                self.assertEqual(json.load(f)["topology"], "4node")


if __name__ == "__main__":
    unittest.main(verbosity=2)
