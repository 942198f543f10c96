# SPDX-License-Identifier: GPL-2.0
"""results/matrix bisect: the first commit of a git range whose munlock cost
per page differs from the good commit's by more than a threshold.

Under QEMU's instruction-counting clock (icount) a kernel and an input give
the same figures on every boot, to the last digit or nearly (FINDINGS.md:
the first iteration of a boot may differ by 2-3%), so each step needs a few
iterations and no statistics: the cost of a commit is the minimum over its
iterations of guest nanoseconds (= instructions) per page. Each step is one
cell of an ordinary matrix run directory (results/<version>/<id>-bisect/),
so every figure measured is kept, `matrix report` and `compare` read it,
and an interrupted bisect run again with --run-dir reuses what it measured.

The search assumes the cost moves once: every commit before the first
differing one stays within the threshold of good, and every one after it
stays beyond it (a history with merges is walked in git rev-list
--topo-order).
"""

import json
import os
import re
import subprocess
import time
from typing import Dict, List

from . import BUILD_KERNEL, kernelspec
from . import matrix as mx
from .errors import UsageError
from .rundir import cell_path, load_env, read_cell, write_env
from .types import BisectRequest
from .util import atomic_write, run_child


def threshold(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%?", text or "")
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"--threshold {text}: give a percentage above 0, "
                         "e.g. 5%")
    return float(m.group(1))


def commit_plans(good_spec, bad_spec, flavour):
    """The good commit, each commit after it up to bad: their plans."""
    good = kernelspec.one(good_spec, flavour)
    bad = kernelspec.one(bad_spec, flavour)
    for what, p in (("--good", good), ("--bad", bad)):
        if p.kind != "git":
            raise UsageError(f"{what} {p.spec_text}: bisect walks the "
                             "commits of a git tree: give GITDIR@COMMIT")
    if good.source.gitdir != bad.source.gitdir:
        raise UsageError("--good and --bad are in different git "
                         f"repositories ({good.source['repo']}, "
                         f"{bad.source['repo']}): give two commits of "
                         "one tree")
    # The range, with good's series (if any) on every commit.
    spec = kernelspec.parse(good_spec)
    spec.rev, spec.range = None, (good.commit, bad.commit)
    return kernelspec.kernels(spec, flavour)


def cost(rundir, topo, scenario, label):
    """Instructions (guest ns under icount) per page, the minimum over the
    cell's iterations."""
    c = read_cell(cell_path(rundir, topo, scenario, label))
    return min(c["seconds"]) / c["pages"] * 1e9


class Bisect:
    def __init__(self, req: BisectRequest, plans):
        self.req, self.plans, self.limit = req, plans, req.threshold
        c = req.cells
        self.params, self.scenario = c.params, c.scenario
        self.scenarios = {c.scenario: mx.SCENARIOS[c.scenario]}
        self.costs: Dict[int, float] = {}
        self.lines: List[str] = []
        good = plans[0]
        if c.run_dir:
            self.rundir = os.path.abspath(c.run_dir)
        else:
            self.rundir = os.path.join(
                os.path.abspath(c.results), kernelspec.kernel_version(good),
                time.strftime("%Y%m%d-%H%M%S") + "-bisect")
        os.makedirs(self.rundir, exist_ok=True)
        # {name: path}: the machine by catalogue name or by a file's path.
        self.topos = mx.select_topologies(c.topology, self.rundir)
        self.topo = next(iter(self.topos))
        self.env = write_env(self.rundir, self.params, {}, self.topos,
                             self.scenarios)

    def say(self, line):
        print(line, flush=True)
        self.lines.append(line)

    def measure(self, i):
        """Build commit i if needed, run its cell if not done: its cost."""
        if i in self.costs:
            return self.costs[i]
        p = self.plans[i]
        label, scenario = p.label, self.scenario
        mx.log(f"commit {label} ({p.subject}): building")
        out = run_child([BUILD_KERNEL, p.spec, "--flavour",
                              self.params.flavour],
                             stdout=subprocess.PIPE, text=True, check=False)
        if out.returncode != 0:
            raise mx.MatrixError(f"building commit {label} failed (see above); "
                             f"what was measured is kept in {self.rundir}")
        self.env = write_env(self.rundir, self.params, {label: p}, self.topos,
                             self.scenarios)
        path = cell_path(self.rundir, self.topo, scenario, label)
        if not os.path.exists(path):
            mx.log(f"commit {label}: {scenario} on {self.topo}")
            ok, reason = mx.run_cell(self.env, self.rundir, label, self.topo,
                                     scenario)
            if not ok:
                raise mx.MatrixError(f"commit {label}: the benchmark failed: "
                                 f"{reason} (see {path[:-4]}.failed); what "
                                 f"was measured is kept in {self.rundir}")
        self.costs[i] = cost(self.rundir, self.topo, scenario, label)
        return self.costs[i]

    def change(self, i):
        base = self.costs[0]
        return (self.costs[i] - base) / base * 100

    def step(self, what, i):
        c = self.measure(i)
        ch = self.change(i) if i else 0.0
        differs = abs(ch) > self.limit
        p = self.plans[i]
        verdict = "" if what in ("good", "bad") else \
            ("differs" if differs else "same")
        self.say(f"  {what:<7} {p.label:<12}  {c:8.1f}  {ch:+8.2f}%  "
                 f"{verdict:<7}  {p.subject}")
        return differs

    def run(self):
        a, plans = self.params, self.plans
        self.say(f"bisect: {len(plans)} commits, {plans[0].label} (good) .. "
                 f"{plans[-1].label} (bad); {self.scenario} on {self.topo}, "
                 f"icount, {a.iterations} x {a.size}, {a.flavour}; threshold "
                 f"{self.limit:g}%")
        self.say(f"  {'step':<7} {'commit':<12}  {'ns/page':>8}  {'vs good':>9}"
                 "  verdict  subject")
        self.step("good", 0)
        if not self.step("bad", len(plans) - 1):
            self.say(f"bad differs from good by {self.change(len(plans) - 1):+.2f}%,"
                     f" within the threshold of {self.limit:g}%: nothing to "
                     "bisect")
            return None
        lo, hi, n = 0, len(plans) - 1, 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            n += 1
            if self.step(f"step {n}", mid):
                hi = mid
            else:
                lo = mid
        first = plans[hi]
        self.say(f"first commit whose cost per page differs from good by more "
                 f"than {self.limit:g}%: {first.commit} "
                 f"\"{first.subject}\" ({self.change(hi):+.2f}%; ns/page "
                 "is the minimum over the iterations: instructions under "
                 "icount)")
        return first

    def finish(self):
        """Columns in commit order, the report, the log of the steps."""
        env = load_env(self.rundir)
        order = [p.label for p in self.plans if p.label in env["kernels"]]
        env["kernels"] = {k: env["kernels"][k] for k in order}
        env["bisect"] = {"good": self.req.good, "bad": self.req.bad,
                         "threshold_percent": self.limit,
                         "topology": self.topo,
                         "scenario": self.scenario}
        atomic_write(os.path.join(self.rundir, "env.json"),
                     json.dumps(env, indent=2) + "\n")
        atomic_write(os.path.join(self.rundir, "bisect.txt"),
                     "\n".join(self.lines) + "\n")
        report = mx.finish_run(self.rundir)
        mx.log(f"steps: {os.path.join(self.rundir, 'bisect.txt')}; report: "
               f"{report}")


def bisect(req: BisectRequest):
    """results/matrix bisect: 0 when a commit was named, 1 when bad is
    within the threshold of good."""
    b = Bisect(req, commit_plans(req.good, req.bad, req.cells.params.flavour))
    try:
        first = b.run()
    except KeyboardInterrupt:
        mx.log(f"interrupted: what was measured is kept in {b.rundir}; run "
               f"the same bisect with --run-dir {b.rundir} to go on")
        return 130
    b.finish()
    return 0 if first else 1
