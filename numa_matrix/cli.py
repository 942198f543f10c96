# SPDX-License-Identifier: GPL-2.0
"""results/matrix: the benchmark matrix and its reports, on the command line.

  matrix run [selection]        run the cells not yet done, then report
  matrix plan [selection]       create a run directory and list its cells
  matrix cell RUN_DIR K T S     run one cell (kernel, topology, scenario)
  matrix report RUN_DIR         (re)write RUN_DIR/report.md and its plots
  matrix compare A B [C [D]]    two to four runs or kernels, cell by cell
  matrix bisect --good G --bad B  the commit that changed the cost (icount)
  matrix profile --kernel K ...  instructions per kernel function (model)
  matrix list                   the kernels, topologies and scenarios

This module is the only one that sees argparse: each subcommand's options
become the typed requests of numa_matrix.types and go to one function of
matrix, report, bisect or profile. Bad input ends in one line and exit 2;
a failure of the work in one line and exit 1.
"""

import argparse
import os
import sys

from . import RESULTS, atlas, bisect, kernelspec, matrix, profile, report
from .errors import NumaMatrixError, UsageError
from .errors import report as report_error
from .util import terminate_as_interrupt
from .types import (ACCELS, CLOCKS, BisectRequest, CellsRequest,
                    ProfileRequest, RunOptions, RunRequest, Selection)

PROG = "matrix"


class Parser(argparse.ArgumentParser):
    """argparse's, with its usage errors as UsageError: one line, exit 2,
    from the one place that prints errors."""

    def error(self, message):
        sub = self.prog.split(" ", 1)[1:]      # "matrix run" -> "run"
        raise UsageError(f"{sub[0] + ': ' if sub else ''}{message} (--help "
                         "lists the options)")


def add_selection(p, results_help=argparse.SUPPRESS):
    p.add_argument("--kernels", metavar="SPEC,...",
                   help="comma list of kernel specs, one column each (a git "
                   "range A..B: one per commit); LABEL=SPEC names a column "
                   "(default: every variant of linux-source-6.1's series; "
                   "docs/kernel-specs.md)")
    p.add_argument("--topologies",
                   help="comma list of machines (default: "
                   f"{','.join(matrix.DEFAULT_TOPOLOGIES)})")
    p.add_argument("--scenarios",
                   help=f"comma list (default: {','.join(matrix.DEFAULT_SCENARIOS)})")
    p.add_argument("--interleave-worst-case", action="store_true",
                   help="only the interleave scenario (THP never)")
    p.add_argument("--atlas", action="store_true",
                   help="every batched LRU path, bound and interleaved "
                   f"(docs/atlas.md); by default on {','.join(atlas.TOPOLOGIES)}"
                   f", kernels {atlas.KERNELS}, {atlas.ITERATIONS} iterations")
    # Defaults come from RunParams: a resumed run keeps its own.
    p.add_argument("--iterations", type=int, help="default 10")
    p.add_argument("--size", help="area per iteration, K/M/G (default 64M)")
    p.add_argument("--clock", choices=CLOCKS,
                   help="default icount; model: icount plus the cost model "
                   "(docs/cost-model.md); wall: see docs/results.md, KVM")
    p.add_argument("--accel", choices=ACCELS,
                   help="for --clock wall (icount and model are always TCG); "
                   "default auto: KVM if a probe boot works")
    p.add_argument("--flavour", choices=kernelspec.FLAVOURS, help="default perf")
    p.add_argument("--timeout", type=int, help="seconds per cell, default 900")
    p.add_argument("--results", default=RESULTS, help=results_help)
    p.add_argument("--build-dir", metavar="DIR",
                   help="the Meson build dir with the benchmark (default: "
                   "$NUMA_MATRIX_BUILD, else build/)")


def selection(a):
    if a.atlas and a.interleave_worst_case:
        raise UsageError("--atlas and --interleave-worst-case choose different "
                         "scenarios: give one")
    return Selection(a.kernels, a.topologies, a.scenarios,
                     a.interleave_worst_case, a.atlas)


def options(a):
    # The atlas's many cells, under clocks that repeat: fewer iterations
    # unless asked (a resumed run keeps its own).
    iterations = a.iterations
    if iterations is None and a.atlas and not getattr(a, "resume", None):
        iterations = atlas.ITERATIONS
    return RunOptions(iterations, a.size, a.clock, a.accel, a.flavour,
                      a.timeout, a.build_dir)


def run_request(a):
    return RunRequest(selection(a), options(a),
                      resume=getattr(a, "resume", None),
                      run_dir=getattr(a, "run_dir", None),
                      results=a.results, jobs=getattr(a, "jobs", None))


def add_cells(p, iterations_help):
    """The options of a command that runs one scenario on one machine per
    kernel (bisect, profile)."""
    p.add_argument("--scenario", default="interleave",
                   help="matrix scenario (default interleave)")
    p.add_argument("--topology", default="4node",
                   help="machine (default 4node)")
    p.add_argument("--iterations", type=int, default=3, help=iterations_help)
    p.add_argument("--size", default="64M", help="default 64M")
    p.add_argument("--flavour", choices=kernelspec.FLAVOURS, default="perf")
    p.add_argument("--timeout", type=int, default=900,
                   help="seconds per guest, default 900")
    p.add_argument("--results", default=RESULTS, help=argparse.SUPPRESS)
    p.add_argument("--build-dir", metavar="DIR",
                   help="the Meson build dir with the benchmark")


def cells_request(a, clock):
    params = matrix.one_cell_params(
        a.scenario, a.topology,
        RunOptions(a.iterations, a.size, None, None, a.flavour, a.timeout,
                   a.build_dir), clock)
    return CellsRequest(a.scenario, a.topology, params, a.run_dir, a.results)


def parser(prog=PROG):
    ap = Parser(prog=prog, description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser,
                            metavar="COMMAND")
    run = sub.add_parser("run", help="run the matrix (or resume one)")
    plan = sub.add_parser("plan", help="create a run directory, list its cells")
    for p in (run, plan):
        add_selection(p)
    run.add_argument("--resume", metavar="RUN_DIR",
                     help="finish the cells of RUN_DIR not done yet, with "
                     "its own selection and parameters unless given")
    run.add_argument("--dry-run", action="store_true",
                     help="say what the run would build and boot, and how "
                     "many cells; build, boot and write nothing")
    # ./numa-matrix run: options checked before its setup does any work.
    run.add_argument("--check-args", action="store_true", help=argparse.SUPPRESS)
    run.add_argument("--jobs", type=int, metavar="N",
                     help="cells at once (default: the host's CPUs under icount "
                     "and model, 1 under wall, which allows no other)")
    plan.add_argument("--run-dir", help="where (default: results/<version>/<id>)")
    c = sub.add_parser("cell", help="run one cell of a planned run")
    c.add_argument("run_dir", metavar="RUN_DIR")
    c.add_argument("kernel", metavar="KERNEL")
    c.add_argument("topology", metavar="TOPOLOGY")
    c.add_argument("scenario", metavar="SCENARIO")
    c.add_argument("--force", action="store_true", help="run it again")
    rep = sub.add_parser("report", help="write RUN_DIR/report.md and plots")
    rep.add_argument("run_dir", metavar="RUN_DIR")
    cmp_ = sub.add_parser("compare", help="compare two to four runs, or "
                          "kernels of any runs (RUN_DIR:KERNEL), cell by cell, "
                          "72 columns at most")
    cmp_.add_argument("runs", nargs="+", metavar="RUN[:KERNEL]",
                      help="two to four; the first is A, the others against it")
    b = sub.add_parser("bisect", help="the first commit of a git range whose "
                       "cost per page differs from good (icount)",
                       description=bisect.__doc__.split("\n\n")[0])
    b.add_argument("--good", required=True, metavar="GITDIR@COMMIT",
                   help="the commit to compare against (older)")
    b.add_argument("--bad", required=True, metavar="GITDIR@COMMIT",
                   help="a later commit of the same tree whose cost differs")
    b.add_argument("--threshold", default="5%",
                   help="how far from good counts as changed (default 5%%)")
    add_cells(b, "per commit (default 3: icount repeats)")
    b.add_argument("--run-dir", help="where the cells go (default: "
                   "results/<version>/<id>-bisect); an existing one is "
                   "reused, its measured commits not run again")
    pr = sub.add_parser("profile", help="instructions per kernel function of "
                        "the timed region (cost model), one kernel or two",
                        description=profile.__doc__.split("\n\n")[0])
    pr.add_argument("--kernel", action="append", default=[], metavar="SPEC",
                    help="kernel spec (LABEL=SPEC names it); twice or more: "
                    "each later one against the first")
    add_cells(pr, "per kernel (default 3; the profile sums them)")
    pr.add_argument("--top", type=int, default=25,
                    help="rows per table, the rest in one (default 25; 0: all)")
    pr.add_argument("--run-dir", help="where the cells go (default: "
                    "results/profiles/<id>-<topology>-<scenario>); an "
                    "existing one is reused, its profiled kernels not run again")
    lst = sub.add_parser("list", help="kernels, topologies, scenarios")
    lst.add_argument("--flavour", choices=kernelspec.FLAVOURS, default="perf")
    return ap


def dispatch(a):
    if a.cmd == "run" and a.check_args:
        # The kernels, machines, scenarios and parameters too: bad input is
        # an error before ./numa-matrix sets up a build dir.
        planned = matrix.plan_run(run_request(a))
        matrix.jobs_for(planned[1].clock, a.jobs)
        return 0
    if a.cmd == "run" and a.dry_run:
        return matrix.dry_run(run_request(a))
    if a.cmd == "run":
        return matrix.run(run_request(a))
    if a.cmd == "plan":
        return matrix.plan(run_request(a))
    if a.cmd == "cell":
        return matrix.cell(a.run_dir, a.kernel, a.topology, a.scenario,
                           a.force)
    if a.cmd == "report":
        print(report.write_report(os.path.abspath(a.run_dir)))
        return 0
    if a.cmd == "compare":
        print(report.compare(*a.runs), end="")
        return 0
    if a.cmd == "bisect":
        limit = bisect.threshold(a.threshold)
        return bisect.bisect(BisectRequest(a.good, a.bad, limit,
                                           cells_request(a, "icount")))
    if a.cmd == "profile":
        if a.top < 0:
            raise UsageError(f"--top {a.top}: give 0 (all) or more")
        return profile.profile(ProfileRequest(a.kernel, a.top,
                                              cells_request(a, "model")))
    return matrix.list_all(a.flavour)


def main(argv=None, prog=None):
    prog = prog or os.environ.get("NUMA_MATRIX_PROG") or PROG
    terminate_as_interrupt()
    try:
        return dispatch(parser(prog).parse_args(argv))
    except NumaMatrixError as e:
        return report_error(prog.split()[0], e)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # A reader that stopped early (| head) wants no more, nor a trace.
        sys.stderr.close()
        return 141
