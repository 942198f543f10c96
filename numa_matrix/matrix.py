# SPDX-License-Identifier: GPL-2.0
"""The benchmark matrix: kernels x topologies x scenarios, one guest per
cell.

A cell is one benchmark invocation in its own guest: one kernel, one
topology, one scenario, N iterations. Its figures are written atomically to
RUN_DIR/cells/<topology>/<scenario>/<kernel>.csv (rundir.py), so an
interrupted run resumes (run --resume RUN_DIR) without redoing finished
cells, and a failed cell leaves a .failed file with the reason next to
where its figures would be. The command line is cli.py's (results/matrix);
the reports are report.py's.
"""

import concurrent.futures
import json
import os
import re
import subprocess
import time
from typing import Any, Dict

from . import (BUILD_KERNEL, RUN_GUEST, atlas, bench_in, build_dir, kernelspec,
               sibling_bench, topology)
from . import kernels as kbuild
from .errors import NumaMatrixError, UsageError
from .report import headline, write_report
from .rundir import (applies, cell_path, file_sha256, load_env, plan_cells,
                     topo_copy, write_env)
from .types import (GUEST_EXITS, ONE_VCPU_CLOCKS, RunParams, RunRequest,
                    Selection, size_bytes)
from .util import atomic_write, refuse_children, run_child, stop_children
from .util import log as say

# What each scenario asks of timedmunlock (or of the benchmark named by
# "bench"). "all" = every memory node.
SCENARIOS: Dict[str, Dict[str, Any]] = {
    "bind": {"policy": "bind:0", "thp": "never", "op": "munlock",
             "what": "munlock, bound to node 0, THP never"},
    "interleave": {"policy": "interleave:all", "thp": "never", "op": "munlock",
                   "what": "munlock, interleaved over all nodes, THP never "
                           "(the worst case: one page per node per batch)"},
    "thp-always": {"policy": "bind:0", "thp": "always", "op": "munlock",
                   "what": "munlock, bound to node 0, THP always"},
    "thp-interleave": {"policy": "interleave:all", "thp": "always",
                       "op": "munlock",
                       "what": "munlock, interleaved over all nodes, THP "
                               "always (one huge page per node in turn)"},
    "exit": {"policy": "interleave:all", "thp": "never", "op": "exit",
             "what": "exit of a process holding a locked area interleaved "
                     "over all nodes, THP never"},
    "exit-bind": {"policy": "bind:0", "thp": "never", "op": "exit",
                  "what": "exit of a process holding a locked area bound to "
                          "node 0, THP never"},
    "exit-thp": {"policy": "interleave:all", "thp": "always", "op": "exit",
                 "what": "exit of a process holding a locked area interleaved "
                         "over all nodes, THP always"},
    "exit-bind-thp": {"policy": "bind:0", "thp": "always", "op": "exit",
                      "what": "exit of a process holding a locked area bound "
                              "to node 0, THP always"},
    "munmap": {"policy": "interleave:all", "thp": "never", "op": "munmap",
               "what": "munmap of a locked area interleaved over all nodes, "
                       "THP never"},
    "munmap-bind": {"policy": "bind:0", "thp": "never", "op": "munmap",
                    "what": "munmap of a locked area bound to node 0, THP "
                            "never"},
    # The floors of exit and munmap of a locked area: the same area never
    # locked (timedmunlock --unlocked), on the same kernel.
    "exit-unlocked": {"policy": "interleave:all", "thp": "never", "op": "exit",
                      "unlocked": True,
                      "what": "exit of a process holding an area interleaved "
                              "over all nodes, never locked, THP never"},
    "exit-bind-unlocked": {"policy": "bind:0", "thp": "never", "op": "exit",
                           "unlocked": True,
                           "what": "exit of a process holding an area bound "
                                   "to node 0, never locked, THP never"},
    "munmap-unlocked": {"policy": "interleave:all", "thp": "never",
                        "op": "munmap", "unlocked": True,
                        "what": "munmap of an area interleaved over all "
                                "nodes, never locked, THP never"},
    "munmap-bind-unlocked": {"policy": "bind:0", "thp": "never",
                             "op": "munmap", "unlocked": True,
                             "what": "munmap of an area bound to node 0, "
                                     "never locked, THP never"},
    # Multi-size THP (6.8 on): 16, 32 and 64 kB enabled, so 64 kB folios.
    "mthp": {"policy": "bind:0", "thp": "never", "mthp": "16K,32K,64K",
             "op": "munlock",
             "what": "munlock, bound to node 0, anonymous 16/32/64 kB THP "
                     "always (64 kB folios), PMD THP never"},
    "mthp-interleave": {"policy": "interleave:all", "thp": "never",
                        "mthp": "16K,32K,64K", "op": "munlock",
                        "what": "munlock, interleaved over all nodes, "
                                "anonymous 16/32/64 kB THP always (64 kB "
                                "folios), PMD THP never"},
    # mlock() of a populated area: what the references it queues cost.
    "mlock": {"policy": "interleave:all", "thp": "never", "op": "mlock",
              "what": "mlock of a populated area interleaved over all "
                      "nodes, THP never"},
    "mlock-bind": {"policy": "bind:0", "thp": "never", "op": "mlock",
                   "what": "mlock of a populated area bound to node 0, THP "
                           "never"},
    "concurrent": {"policy": "interleave:all", "thp": "never", "op": "munlock",
                   "processes": "cpus", "clocks": ("wall",),
                   "what": "one process per vCPU munlocking its own "
                           "interleaved area at once (wall clock only: "
                           "icount and model have one vCPU)"},
    **atlas.SCENARIOS,
}


DEFAULT_TOPOLOGIES = ["1node", "2node", "4node", "8node"]
DEFAULT_SCENARIOS = ["bind", "interleave", "thp-always", "exit"]
WORST_CASE = ["interleave"]


def log(msg):
    say("matrix", msg)


class MatrixError(NumaMatrixError):
    """A run or a cell that cannot go on: the message says why."""


# ---------------------------------------------------------------- selection

def all_kernels():
    """The default selection: every variant of the default source."""
    return [name for name, _ in kernelspec.variants()]


def select_kernels(text, flavour):
    """{label: plan} in column order from a comma list of kernel specs
    (docs/kernel-specs.md); a git range gives one column per commit."""
    specs = all_kernels() if not text or text == "all" else text.split(",")
    chosen: dict = {}
    for spec in specs:
        for p in kernelspec.kernels(spec, flavour):
            if p.label in chosen:
                raise UsageError(f"two kernels of --kernels are called "
                              f"'{p.label}': name them, LABEL=SPEC")
            chosen[p.label] = p
    return chosen


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def select_topologies(text, rundir=None):
    """{name: path} in order from a comma list of catalogue names and .topo
    paths. A cell is keyed by the machine's name, never its path; a file of
    one's own must not take a catalogue machine's name, and a resumed run
    finds it in its own copy (rundir/topologies/)."""
    chosen: dict = {}
    for t in text.split(",") if text else DEFAULT_TOPOLOGIES:
        copy = os.path.join(rundir, "topologies", t + topology.SUFFIX) \
            if rundir and os.sep not in t else None
        if copy and os.path.isfile(copy):
            topo = topology.load(copy)
        else:
            topo = topology.find(t)
        if os.sep in t or t.endswith(topology.SUFFIX):
            try:
                known = topology.find(topo.name)
            except topology.TopologyError:
                known = None
            if known and read_bytes(known.path) != read_bytes(topo.path):
                raise UsageError(f"--topologies {t}: the catalogue has another "
                              f"machine called {topo.name}: rename your file")
        if topo.name in chosen and \
                read_bytes(chosen[topo.name]) != read_bytes(topo.path):
            raise UsageError(f"--topologies: two different machines are called "
                          f"{topo.name}: rename one of the files")
        chosen[topo.name] = topo.path
    return chosen


def select_scenarios(sel: Selection, params: RunParams):
    """The scenarios of a selection, each one that can run with PARAMS."""
    if sel.scenarios:
        scenarios = sel.scenarios.split(",")
    elif sel.worst_case:
        scenarios = WORST_CASE
    else:
        scenarios = atlas.scenarios() if sel.atlas else DEFAULT_SCENARIOS
    for s in scenarios:
        if s not in SCENARIOS:
            raise UsageError(f"unknown scenario '{s}' (known: "
                             f"{', '.join(SCENARIOS)})")
        check_scenario(s, params)
    return scenarios


def check_scenario(scenario, params: RunParams):
    """UsageError unless SCENARIO can run under PARAMS's clock and size."""
    spec = SCENARIOS[scenario]
    clocks = spec.get("clocks")
    if clocks and params.clock not in clocks:
        raise UsageError(f"scenario {scenario} needs --clock "
                         f"{' or '.join(clocks)}")
    if (spec.get("thp") == "always" or spec.get("size_multiple")) and \
            size_bytes(params.size) % (2 << 20):
        raise UsageError(f"scenario {scenario} maps huge pages: --size "
                         f"{params.size} is not a multiple of 2M")


def parse_selection(sel: Selection, params: RunParams, rundir=None):
    """({label: plan}, {topology: path}, [scenario]) of a selection, each
    part checked: what a run of it would build and boot."""
    kernels = select_kernels(sel.kernels or (atlas.KERNELS if sel.atlas else None),
                             params.flavour)
    topos = select_topologies(sel.topologies or (",".join(atlas.TOPOLOGIES)
                                                 if sel.atlas else None), rundir)
    scenarios = select_scenarios(sel, params)
    machines = {t: topology.load(path) for t, path in topos.items()}
    if not any(applies(SCENARIOS[s], m) for s in scenarios
               for m in machines.values()):
        raise UsageError(f"no cell to run: {', '.join(scenarios)} need two "
                         f"memory nodes, and {', '.join(topos)} have one")
    return kernels, topos, scenarios


# ---------------------------------------------------------------- running

def bench_command(env, scenario, topo, rundir):
    spec = SCENARIOS[scenario]
    if spec.get("bench") == "timedbatch":
        cmd = [sibling_bench(env["bench"], "timedbatch"), "--op", spec["op"],
               "--policy", spec["policy"], "--size", env["size"],
               "--iterations", str(env["iterations"])]
        for prefix in spec.get("vmstat", ()):
            cmd += ["--vmstat", prefix]
        return cmd
    cmd = [env["bench"], "--policy", spec["policy"], "--thp", spec["thp"],
           "--op", spec["op"], "--size", env["size"],
           "--iterations", str(env["iterations"])]
    if spec.get("unlocked"):
        cmd.append("--unlocked")
    if spec.get("mthp"):
        cmd += ["--mthp", spec["mthp"]]
    if spec.get("processes") == "cpus":
        cmd += ["--processes",
                str(topology.load(topo_copy(rundir, topo)).ncpus)]
    return cmd


ITERATION_LINE = re.compile(r"(\d+),")


def merge_model_records(stdout, records):
    """timedmunlock's output with the cost model's record of each iteration
    after the iteration's line, as timedmunlock prints it when the guest
    can read the records (docs/cost-model.md): one region per iteration, in
    order, numbered without a gap."""
    recs = [line for line in records.splitlines() if line.startswith("region=")]
    merged, used, last = [], 0, None
    for line in stdout.splitlines(keepends=True):
        merged.append(line)
        m = ITERATION_LINE.match(line)
        if not m:
            continue
        if used == len(recs):
            raise MatrixError(f"no cost model record for iteration {m.group(1)}")
        rec = recs[used]
        region = int(rec.split()[0].split("=")[1])
        if last is not None and region != last + 1 or " insns=" not in rec:
            raise MatrixError(f"cost model record {used + 1} is not the next "
                          f"region after {last}: {rec[:60]!r}")
        merged.append(f"# model iteration={m.group(1)}"
                      f"{rec[rec.index(' insns='):]}\n")
        used, last = used + 1, region
    if used != len(recs):
        raise MatrixError(f"{len(recs)} cost model records for {used} iterations")
    return "".join(merged)


def guest_command(clock, accel, flavour, timeout, root, topo, image):
    """run-guest's command line for a cell, up to its --record."""
    guest = [RUN_GUEST, "--topology", topo, "--kernel", image,
             "--flavour", flavour, "--clock", clock, "--timeout", str(timeout)]
    if clock not in ONE_VCPU_CLOCKS:
        guest += ["--accel", accel]
    if root == "initramfs":
        # A guest that reads nothing from the host repeats exactly.
        guest += ["--root", "initramfs"]
    return guest


def run_cell(env, rundir, kernel, topo, scenario, profile=None):
    """One guest, one benchmark. Figures on success, .failed otherwise.
    PROFILE (model clock): where the cost model writes the instructions of
    each address in the timed regions (docs/profile.md)."""
    path = cell_path(rundir, topo, scenario, kernel)
    guest = guest_command(env["clock"], env.get("accel", "tcg"), env["flavour"],
                          env["timeout"], env.get("root", "host"),
                          topo_copy(rundir, topo),
                          env["kernels"][kernel]["image"])
    records = None
    if env["clock"] == "model" and env.get("root") == "initramfs":
        # The guest cannot read the model's records: merged here instead.
        records = f"{path[:-4]}.model{os.getpid()}"
        guest += ["--model-log", records]
    if profile:
        guest += ["--model-profile", profile]
    environ = dict(os.environ)
    if env["clock"] == "model":
        if file_sha256(env["cost_model"]["plugin"]) != env["cost_model"]["sha256"]:
            return False, (f"the cost model plugin {env['cost_model']['plugin']} "
                           "is missing or changed since the run was planned: "
                           "start a new run")
        environ["NUMA_MATRIX_COSTMODEL"] = env["cost_model"]["plugin"]
    # How and where the guest ran (--accel auto decides per cell; a Slurm
    # cell runs on a node of its own), kept with the cell.
    record = f"{path[:-4]}.where{os.getpid()}"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    out = run_child(guest + ["--record", record, "--"]
                         + bench_command(env, scenario, topo, rundir),
                         capture_output=True, text=True, check=False, env=environ)
    try:
        with open(record) as f:
            ran = json.load(f)
        os.unlink(record)
    except (OSError, ValueError):
        ran = None
    # How and where the guest ran; how it ended is the .failed file's.
    where = "# cell " + json.dumps(
        {k: v for k, v in ran.items() if k not in ("reason", "summary")},
        sort_keys=True) + "\n" if ran else ""
    stdout, why = out.stdout, None
    if records:
        try:
            with open(records) as f:
                log_text = f.read()
            os.unlink(records)
        except OSError:
            log_text = ""
        try:
            stdout = merge_model_records(stdout, log_text)
        except MatrixError as e:
            why = str(e)
    if out.returncode == 130:
        # Ctrl-C: the cell did not run, it did not fail.
        return False, "interrupted"
    if out.returncode == 0 and "iteration,op,pages,seconds" in stdout and \
            not why:
        atomic_write(path, where + stdout)
        if os.path.exists(path[:-4] + ".failed"):
            os.unlink(path[:-4] + ".failed")
        return True, ""
    if why and out.returncode == 0:
        atomic_write(path[:-4] + ".failed",
                     f"{why}\n{where}--- stdout\n{out.stdout}")
        return False, why
    atomic_write(path[:-4] + ".failed",
                 f"exit status {out.returncode}\n{where}--- stderr\n"
                 f"{out.stderr}--- stdout\n{out.stdout}")
    return False, cell_failure(out, ran)


def cell_failure(out, ran):
    """Why a cell failed, in one line: run-guest's summary when the guest
    failed (its --record), else what the benchmark last said on stderr."""
    if ran and ran.get("reason") in GUEST_EXITS.values():
        return ran["summary"]
    said = [line for line in out.stderr.splitlines()
            if line.strip() and not line.startswith("run-guest: ")]
    if said:
        return said[-1]
    if ran and ran.get("summary"):
        return ran["summary"]
    return f"exit status {out.returncode}"


def fmt_duration(s):
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else \
        f"{s // 60}m{s % 60:02d}s"


def resumed_selection(sel: Selection, old):
    """A resumed run's selection: what was said, else the run's own. Each
    column is named LABEL=SPEC by the spec of exactly that kernel (a label
    alone would name the default source's variant of that name, or
    nothing)."""
    if not old:
        return sel
    kernels = sel.kernels or ",".join(
        f"{k}={info['spec']}" if info.get("spec") else k
        for k, info in old["kernels"].items())
    scenarios = sel.scenarios or (None if sel.worst_case else
                                  ",".join(old["scenarios"]))
    return Selection(kernels, sel.topologies or ",".join(old["topologies"]),
                     scenarios, sel.worst_case)


def plan_run(req: RunRequest):
    """What a run would do, checked, without writing anything: (run
    directory, params, kernels, topologies, scenarios). A resumed run keeps
    its own selection and parameters unless told."""
    where = req.resume or req.run_dir
    existing = os.path.abspath(where) if where else None
    old = load_env(existing) if req.resume else {}
    params = req.options.params(old, bench_in(build_dir()))
    kernels, topos, scenarios = parse_selection(
        resumed_selection(req.selection, old), params, existing)
    if existing:
        rundir = existing
    else:
        # A run that mixes sources lives with the kernel version of its
        # first column, the one the others are compared against.
        version = kernelspec.kernel_version(next(iter(kernels.values())))
        run_id = time.strftime("%Y%m%d-%H%M%S") + f"-{params.clock}"
        rundir = os.path.join(os.path.abspath(req.results), version, run_id)
    return rundir, params, kernels, topos, scenarios


def create_run(planned):
    """Create (or reopen with --resume) the run directory of a plan_run()
    and its env.json: (run directory, env, [cells])."""
    rundir, params, kernels, topos, scenarios = planned
    os.makedirs(rundir, exist_ok=True)
    env = write_env(rundir, params, kernels, topos,
                    {s: SCENARIOS[s] for s in scenarios})
    return rundir, env, plan_cells(env, list(kernels), list(topos), scenarios)


def plan(req: RunRequest):
    """matrix plan: the run directory, then one cell per line."""
    rundir, env, cells = create_run(plan_run(req))
    print(rundir)
    for k, t, s in cells:
        print(f"{k} {t} {s}")
    return 0


def cell(rundir, kernel, topo, scenario, force=False):
    """Run one cell of a planned run: what a Slurm array task does."""
    rundir = os.path.abspath(rundir)
    env = load_env(rundir)
    for what, value, known in (("kernel", kernel, env["kernels"]),
                               ("topology", topo, env["topologies"]),
                               ("scenario", scenario, env["scenarios"])):
        if value not in known:
            raise UsageError(f"{what} {value} is not in this run "
                             f"({', '.join(known)})")
    if os.path.exists(cell_path(rundir, topo, scenario, kernel)) and not force:
        log(f"{topo} {scenario} {kernel}: already done")
        return 0
    ok, reason = run_cell(env, rundir, kernel, topo, scenario)
    log(f"{topo} {scenario} {kernel}: " + ("done" if ok else f"FAILED: {reason}"))
    return 0 if ok else 1


def build_kernels(env, rundir):
    for i, (k, info) in enumerate(env["kernels"].items(), 1):
        log(f"kernel {i}/{len(env['kernels'])}: {k} ({env['flavour']})")
        # The spec of exactly this kernel (a commit, not the range it came
        # from); runs from before kernel specs name variants only.
        out = run_child([BUILD_KERNEL, info.get("spec") or k,
                              "--flavour", env["flavour"]],
                             stdout=subprocess.PIPE, text=True, check=False)
        if out.returncode != 0:
            raise MatrixError(f"building kernel {k} failed (see above); finished "
                          f"cells are kept in {rundir}")
        if out.stdout.strip() != info["image"]:
            raise MatrixError(f"kernel {k} built as {out.stdout.strip()}, but this "
                          f"run planned {info['image']}: its source, series, "
                          "config or compiler changed")


def finish_run(rundir):
    env = load_env(rundir)
    env["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    atomic_write(os.path.join(rundir, "env.json"), json.dumps(env, indent=2) + "\n")
    return write_report(rundir)


def time_left(took, remaining):
    """Seconds the remaining cells should take, from what finished cells
    took: per cell the mean of finished cells of the same topology and
    scenario, else of the same topology, else of all. Cells of one machine
    cost alike; machines differ by minutes under wall-clock contention."""
    if not took:
        return 0.0

    def mean(xs):
        return sum(xs) / len(xs)

    overall = mean(list(took.values()))
    left = 0.0
    for k, t, s in remaining:
        same = [v for (_, t2, s2), v in took.items() if (t2, s2) == (t, s)]
        same = same or [v for (_, t2, _), v in took.items() if t2 == t]
        left += mean(same) if same else overall
    return left


def jobs_for(clock, asked):
    """Cells at once: icount and model figures do not depend on host load, so
    by default as many as the host has CPUs; wall-clock cells never run
    beside others."""
    if asked is None:
        return (os.cpu_count() or 1) if clock in ONE_VCPU_CLOCKS else 1
    if asked < 1:
        raise UsageError(f"--jobs {asked}: give 1 or more")
    if asked > 1 and clock not in ONE_VCPU_CLOCKS:
        raise UsageError(f"--jobs {asked} with --clock {clock}: wall-clock cells "
                      "measure the host too and never run beside other cells; "
                      "drop --jobs")
    return asked


def timed_cell(env, rundir, cell):
    started = time.time()
    ok, reason = run_cell(env, rundir, *cell)
    return ok, reason, time.time() - started


def check_bench(bench, scenarios=()):
    """UsageError unless timedmunlock, and timedbatch if a scenario uses
    it, are built."""
    need = [bench]
    if any(SCENARIOS[s].get("bench") == "timedbatch" for s in scenarios):
        need.append(sibling_bench(bench, "timedbatch"))
    for b in need:
        if not os.access(b, os.X_OK):
            raise UsageError(f"{b} is not built: run ./numa-matrix setup (or "
                             "meson compile -C BUILD_DIR)")


def run(req: RunRequest):
    """matrix run: plan (or resume) a run, build its kernels, run the cells
    not done yet, write the report, print the worst case's table."""
    planned = plan_run(req)
    params = planned[1]
    jobs = jobs_for(params.clock, req.jobs)
    check_bench(params.bench, planned[4])
    rundir, env, cells = create_run(planned)
    log(f"run directory {rundir}")
    build_kernels(env, rundir)
    todo = [c for c in cells if not os.path.exists(cell_path(rundir, c[1], c[2], c[0]))]
    log(f"{len(cells)} cells, {len(cells) - len(todo)} already done, "
        f"{len(todo)} to run ({env['iterations']} iterations each, clock "
        f"{env['clock']}, {jobs} at a time)")
    took = {}
    failed = 0
    started = time.time()
    # Threads only wait for their guests; the work is in the QEMU processes.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
    try:
        running = {pool.submit(timed_cell, env, rundir, c): c for c in todo}
        pending, n = set(running), 0
        while pending:
            # A short wait: a SIGTERM that reached a worker thread is seen
            # by this one only when it runs again.
            done, pending = concurrent.futures.wait(
                pending, timeout=0.5,
                return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                n += 1
                k, t, s = key = running[future]
                ok, reason, took[key] = future.result()
                left = time_left(took, [c for c in todo if c not in took]) / jobs
                state = f"done in {took[key]:.0f} s" if ok else f"FAILED: {reason}"
                failed += not ok
                log(f"[{n}/{len(todo)}] {t} {s} {k}: {state}; "
                    f"{len(todo) - n} left, ~{fmt_duration(left)}")
    except KeyboardInterrupt:
        # No other guest starts, and the running ones stop (run-guest
        # stops its QEMU on SIGTERM).
        refuse_children()
        pool.shutdown(wait=False, cancel_futures=True)
        stop_children()
        pool.shutdown(wait=True)
        log(f"interrupted: finished cells are kept; resume with "
            f"results/matrix run --resume {rundir}")
        return 130
    pool.shutdown()
    log(f"{len(todo)} cells in {fmt_duration(time.time() - started)} "
        f"with {jobs} at a time")
    log(f"report: {finish_run(rundir)}")
    print(headline(rundir))
    if failed:
        log(f"{failed} cell(s) failed: their .failed files say why")
    return 1 if failed else 0


def dry_run(req: RunRequest):
    """matrix run --dry-run: what the run would build and boot, checked as
    a run would check it; nothing is built, booted or written."""
    rundir, params, kernels, topos, scenarios = plan_run(req)
    jobs = jobs_for(params.clock, req.jobs)
    resumed = bool(req.resume)
    cells = [(k, t, s) for t in topos for s in scenarios for k in kernels
             if applies(SCENARIOS[s], topology.load(topos[t]))]
    done = [c for c in cells if os.path.exists(cell_path(rundir, c[1], c[2],
                                                         c[0]))]
    out = [f"run directory: {rundir} ({'resumed' if resumed else 'new'})",
           f"clock {params.clock}, accelerator {params.guest_accel}"
           + f", {params.iterations} iterations of {params.size}, flavour "
           f"{params.flavour}, at most {params.timeout} s a cell, {jobs} "
           "cell(s) at a time",
           f"benchmark: {params.bench}"
           + ("" if os.access(params.bench, os.X_OK) else
              " (not built yet: ./numa-matrix setup builds it)"),
           f"kernels ({len(kernels)}):"]
    for label, p in kernels.items():
        image = kbuild.built_image(p)
        out.append(f"  {label:<14} " + (f"built: {image}" if image else
                                        f"to build: kernel-series/build-kernel "
                                        f"{p.spec or p.spec_text} "
                                        f"--flavour {params.flavour}"))
    out += [f"topologies: {', '.join(topos)}",
            f"scenarios: {', '.join(scenarios)}",
            f"cells: {len(cells)}, {len(done)} done already, "
            f"{len(cells) - len(done)} to run, each in a guest of its own:",
            "  " + " ".join(guest_command(
                params.clock, params.guest_accel, params.flavour, params.timeout,
                old_root(rundir, params), "TOPOLOGY.topo", "BZIMAGE") +
                ["--", params.bench, "..."])]
    print("\n".join(out))
    return 0


def old_root(rundir, params):
    """The guests' root of a run: its own when resumed (rundir.write_env
    decides it when the run starts), else initramfs under the repeatable
    clocks."""
    try:
        return load_env(rundir).get("root", "host")
    except NumaMatrixError:
        return "initramfs" if params.clock in ONE_VCPU_CLOCKS else "host"


def list_all(flavour="perf"):
    """matrix list: the kernels, topologies and scenarios to choose from."""
    print("kernels:    " + " ".join(all_kernels()) + " (and any kernel spec: "
          "docs/kernel-specs.md; kernel-series/build-kernel --list)")
    print("topologies: " + " ".join(os.path.basename(p)[:-5]
                                    for p in topology.catalogue()))
    for name, spec in SCENARIOS.items():
        print(f"scenario   {name:<11} {spec['what']}")
    return 0


def one_cell_params(scenario, topo, options, clock):
    """The parameters of a command that runs one scenario on one machine
    per kernel (bisect, profile) under CLOCK, checked: a known scenario
    that runs under it, a known machine, the benchmark built."""
    if scenario not in SCENARIOS:
        raise UsageError(f"unknown scenario '{scenario}' (known: "
                         f"{', '.join(SCENARIOS)})")
    options.clock, options.accel = clock, "tcg"
    params = options.params({}, bench_in(build_dir()))
    check_scenario(scenario, params)
    topology.find(topo)
    check_bench(params.bench)
    return params
