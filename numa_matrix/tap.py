# SPDX-License-Identifier: GPL-2.0
"""Reading TAP and KTAP: the one reader of what the tests print.

The NUMA tests print TAP 13 (numa-tests/lib/tap.c); the kernel's kselftest
runner prints KTAP, each program's own lines prefixed with "# " (a nested
test); Meson keeps each test's stdout in its JSON log. Three readers use
this module: ./numa-matrix test's summary (tally(), through
`python3 -m numa_matrix.tap tally LOG.json FAILURES`), run-mutants'
verdict of one test in a guest, and run-selftests' corrections of the
runner's KTAP.

  1..N [# SKIP reason]                 the plan (1..0: nothing to run)
  ok|not ok [N] [- ]description [# SKIP|TODO reason]
  # diagnostic                          (KTAP: a nested test's line too)
  Bail out! reason
"""

import json
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

RESULT = re.compile(r"^(not ok|ok)\b(?:\s+(\d+))?(?:\s+-)?\s*(.*?)"
                    r"(?:\s*#\s*(.*?))?\s*$")
# After " # ": a directive (SKIP, TODO) and its reason, or a comment of the
# kselftest runner's ("not ok 1 selftests: vm: x # exit=1").
DIRECTIVE = re.compile(r"(SKIP|TODO)\b\s*(.*)", re.I)
PLAN = re.compile(r"^(?:\d+\.\.(\d+))(?:\s*#\s*SKIP\b\s*(.*))?\s*$", re.I)
BAIL = re.compile(r"^Bail out!\s*(.*)$")
# The kselftest harness's count of a program's subtests.
TOTALS = re.compile(r"Totals: pass:(\d+) fail:(\d+) xfail:(\d+) xpass:(\d+) "
                    r"skip:(\d+) error:(\d+)")


@dataclass
class Result:
    ok: bool
    number: Optional[int]
    description: str
    comment: str            # all after " # "
    directive: str          # "", "SKIP" or "TODO"
    reason: str             # the comment after the directive
    line: str
    # The diagnostics printed just before it (at most six): what a
    # failure's reader needs first.
    diagnostics: List[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """A failure that counts: not ok, and not a known one (TODO)."""
        return not self.ok and self.directive != "TODO"


@dataclass
class Report:
    plan: Optional[int] = None
    skip_all: Optional[str] = None      # 1..0 # SKIP reason
    results: List[Result] = field(default_factory=list)
    bailed: Optional[str] = None        # Bail out! reason
    bailed_after: int = 0               # results before it

    @property
    def failures(self) -> List[Result]:
        return [r for r in self.results if r.failed]

    @property
    def known(self) -> List[Result]:
        """Expected failures: not ok ... # TODO reason."""
        return [r for r in self.results if not r.ok and r.directive == "TODO"]


def result(line: str) -> Optional[Result]:
    """A result line (ok / not ok), else None."""
    m = RESULT.match(line)
    if not m:
        return None
    comment = (m.group(4) or "").strip()
    d = DIRECTIVE.fullmatch(comment)
    return Result(ok=m.group(1) == "ok",
                  number=int(m.group(2)) if m.group(2) else None,
                  description=m.group(3).strip(), comment=comment,
                  directive=d.group(1).upper() if d else "",
                  reason=d.group(2).strip() if d else comment, line=line)


def parse(text: str, prefix: str = "") -> Report:
    """The TAP of TEXT at one level: its own lines, or with PREFIX ("# ")
    the lines a KTAP runner printed for its nested tests."""
    report = Report()
    diag: List[str] = []
    for raw in text.splitlines():
        if prefix:
            if not raw.startswith(prefix):
                continue
            raw = raw[len(prefix):]
        line = raw.rstrip()
        if line.startswith("#"):
            diag = (diag + [line])[-6:]
            continue
        r = result(line)
        if r:
            r.diagnostics = diag
            report.results.append(r)
        elif PLAN.match(line) and report.plan is None:
            m = PLAN.match(line)
            assert m is not None
            report.plan = int(m.group(1))
            if report.plan == 0:
                report.skip_all = (m.group(2) or "").strip()
        elif BAIL.match(line):
            m = BAIL.match(line)
            assert m is not None
            report.bailed = m.group(1).strip()
            report.bailed_after = len(report.results)
        diag = []
    return report


def totals(line: str) -> Optional[List[int]]:
    """pass, fail, xfail, xpass, skip, error of a '# Totals:' line."""
    m = TOTALS.search(line)
    return [int(x) for x in m.groups()] if m and line.startswith("#") else None


# ---------------------------------------------------------------- the summary

def problems(report: Report) -> List[str]:
    """The lines that say what failed, in order: each failure with the
    diagnostics just before it, and a bail-out."""
    lines: List[str] = []
    for i in range(len(report.results) + 1):
        if report.bailed is not None and i == report.bailed_after:
            lines.append(f"Bail out! {report.bailed}")
        if i < len(report.results) and report.results[i].failed:
            lines += report.results[i].diagnostics + [report.results[i].line]
    return lines


def tally(log_lines, out_failures, log_name="",
          say=print) -> Tuple[int, int, int, int]:
    """Meson's JSON test log (one test a line) as (passed, failed, skipped,
    expected failures), counting tests, not subtests. Meson calls a TAP test
    OK when its only failures are "not ok ... # TODO reason": that is an
    expected failure here, said with its reason, never a pass. For each
    failure, OUT_FAILURES gets its name and its failing subtests with the
    diagnostics just before each (at most 40 lines a test)."""
    n: Dict[str, int] = {"OK": 0, "FAIL": 0, "SKIP": 0, "EXPECTEDFAIL": 0}
    for raw in log_lines:
        if not raw.strip():
            continue
        t = json.loads(raw)
        verdict = t["result"]
        report = parse(t.get("stdout") or "")
        if verdict == "OK" and report.known:
            verdict = "EXPECTEDFAIL"
            for r in report.known:
                say(f"numa-matrix: expected failure: {t['name']}: {r.reason}")
        if verdict not in n or verdict == "FAIL":
            # CI keeps only the tail of the output: the summary repeats this.
            lines = problems(report)
            out_failures.write(f"numa-matrix: FAILED: {t['name']} "
                               f"({verdict}, {log_name})\n")
            for line in lines[:40]:
                out_failures.write("  " + line[:300] + "\n")
            if len(lines) > 40:
                out_failures.write(f"  ... {len(lines) - 40} more lines\n")
        n[verdict if verdict in n else "FAIL"] += 1
    return n["OK"], n["FAIL"], n["SKIP"], n["EXPECTEDFAIL"]


def main(argv):
    """tally LOG.json FAILURES: print "PASSED FAILED SKIPPED XFAILED" (what
    ./numa-matrix adds up), the expected failures on stderr, each failure
    appended to FAILURES."""
    if len(argv) != 3 or argv[0] != "tally":
        print("usage: python3 -m numa_matrix.tap tally LOG.json FAILURES",
              file=sys.stderr)
        return 2
    with open(argv[1]) as log, open(argv[2], "a") as failures:
        counts = tally(log, failures, argv[1],
                       lambda text: print(text, file=sys.stderr))
    print(*counts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
