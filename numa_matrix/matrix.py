# SPDX-License-Identifier: GPL-2.0
"""The benchmark matrix: kernels x topologies x scenarios, and its reports.

  matrix run [selection]        run the cells not yet done, then report
  matrix plan [selection]       create a run directory and list its cells
  matrix cell RUN_DIR K T S     run one cell (kernel, topology, scenario)
  matrix report RUN_DIR         (re)write RUN_DIR/report.md and its plots
  matrix compare RUN_A RUN_B    compare two runs cell by cell
  matrix bisect --good G --bad B  the commit that changed the cost (icount)
  matrix profile --kernel K ...  instructions per kernel function (model)
  matrix list                   the kernels, topologies and scenarios

A cell is one benchmark invocation in its own guest: one kernel, one
topology, one scenario, N iterations. Its figures are written atomically to
RUN_DIR/cells/<topology>/<scenario>/<kernel>.csv, so an interrupted run
resumes (run --resume RUN_DIR) without redoing finished cells, and a failed
cell leaves a .failed file with the reason next to where its figures would be.
"""

import argparse
import concurrent.futures
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

from . import BUILD_KERNEL, RESULTS, RUN_GUEST, TOP, kernelspec, topology
from . import kernels as kbuild
from .errors import NumaMatrixError, UsageError, report
from .guest import ONE_VCPU_CLOCKS
from .types import GUEST_EXITS
from .util import atomic_write, host_facts

# icount and model repeat to the last digit (one vCPU, -icount); wall does not.
CLOCKS = ("icount", "model", "wall")

# What each scenario asks of timedmunlock. "all" = every memory node.
SCENARIOS = {
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
    "concurrent": {"policy": "interleave:all", "thp": "never", "op": "munlock",
                   "processes": "cpus", "clocks": ("wall",),
                   "what": "one process per vCPU munlocking its own "
                           "interleaved area at once (wall clock only: "
                           "icount and model have one vCPU)"},
}
DEFAULT_BUILD = os.environ.get("NUMA_MATRIX_BUILD", os.path.join(TOP, "build"))
DEFAULT_TOPOLOGIES = ["1node", "2node", "4node", "8node"]
DEFAULT_SCENARIOS = ["bind", "interleave", "thp-always", "exit"]
WORST_CASE = ["interleave"]


def log(msg):
    print(f"matrix: {msg}", file=sys.stderr, flush=True)


class MatrixError(NumaMatrixError):
    """A run, a cell or a report that cannot go on: the message says why."""


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)


# ---------------------------------------------------------------- selection

def all_kernels():
    """The default selection: every variant of the default source."""
    return [name for name, _ in kernelspec.variants()]


def select_kernels(text, flavour):
    """{label: plan} in column order from a comma list of kernel specs
    (docs/kernel-specs.md); a git range gives one column per commit."""
    specs = all_kernels() if not text or text == "all" else text.split(",")
    chosen = {}
    for spec in specs:
        for p in kernelspec.kernels(spec, flavour):
            if p["label"] in chosen:
                raise UsageError(f"two kernels of --kernels are called "
                              f"'{p['label']}': name them, LABEL=SPEC")
            chosen[p["label"]] = p
    return chosen


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def select_topologies(text, rundir=None):
    """{name: path} in order from a comma list of catalogue names and .topo
    paths. A cell is keyed by the machine's name, never its path; a file of
    one's own must not take a catalogue machine's name, and a resumed run
    finds it in its own copy (rundir/topologies/)."""
    chosen = {}
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


def parse_selection(args, rundir=None):
    kernels = select_kernels(args.kernels, args.flavour)
    topos = select_topologies(args.topologies, rundir)
    scenarios = WORST_CASE if args.interleave_worst_case else \
        (args.scenarios.split(",") if args.scenarios else DEFAULT_SCENARIOS)
    for s in scenarios:
        if s not in SCENARIOS:
            raise UsageError(f"unknown scenario '{s}' (known: {', '.join(SCENARIOS)})")
        clocks = SCENARIOS[s].get("clocks")
        if clocks and args.clock not in clocks:
            raise UsageError(f"scenario {s} needs --clock {' or '.join(clocks)}")
    return kernels, topos, scenarios


# ---------------------------------------------------------------- environment

def git_describe():
    out = sh(["git", "-C", TOP, "rev-parse", "HEAD"])
    rev = out.stdout.strip() if out.returncode == 0 else "unknown"
    dirty = sh(["git", "-C", TOP, "status", "--porcelain"]).stdout.strip()
    return rev + ("-dirty" if dirty else "")


def host_env():
    h = host_facts()
    return {"cpu_model": h.cpu_model, "cpus": h.cpus,
            "memory_mib": h.memory_mib, "host_kernel": h.host_kernel,
            "qemu": h.qemu}


def kernel_info(plan):
    """What env.json keeps of a kernel: its identity and image path."""
    info = kbuild.describe(plan)
    info["image"] = plan["image"] if plan["kind"] == "image" else \
        os.path.join(plan["store"], "bzImage")
    return info


# What makes a kernel the same kernel: a resumed run refuses to mix cells of
# kernels differing in any of these.
IDENTITY = ("source_id", "source_version", "compiler", "commit", "series_hash",
            "config_hash")


def identity_change(old, new):
    """'what: old -> new' for each identity field that differs."""
    if "compiler" not in old:
        return ["it was recorded before kernels carried their source and "
                "compiler, so it cannot be told apart from another"]
    return [f"{k} {old.get(k)} -> {new.get(k)}" for k in IDENTITY
            if old.get(k) != new.get(k)]


def write_env(rundir, args, kernels, topos, scenarios):
    """env.json: what the figures depend on, and everything a cell needs to
    run from the run directory alone (matrix cell). Cells name the kernel
    image, not the variant: editing the series while the matrix runs must not
    change the kernel under it, and a resumed run must keep its kernels."""
    path = os.path.join(rundir, "env.json")
    env = {}
    if os.path.exists(path):
        with open(path) as f:
            env = json.load(f)
    kinfo = {k: kernel_info(p) for k, p in kernels.items()}
    for k, old in env.get("kernels", {}).items():
        changed = identity_change(old, kinfo[k]) if k in kinfo else []
        if changed:
            raise UsageError(f"kernel {k} is not the one this run started with "
                          f"({'; '.join(changed)}): its cells would mix two "
                          "kernels; start a new run instead of resuming")
    model = cost_model(args.bench) if args.clock == "model" else None
    if model and env.get("cost_model") and \
            env["cost_model"]["sha256"] != model["sha256"]:
        raise UsageError(f"the cost model plugin is not the one this run started "
                      f"with (sha256 {env['cost_model']['sha256'][:12]} -> "
                      f"{model['sha256'][:12]}): its cells would mix two models; "
                      "start a new run instead of resuming")
    if "root" not in env:
        # A run started before guests could boot from an initramfs keeps
        # the host's root for all its cells.
        env["root"] = "host" if env.get("kernels") or \
            args.clock not in ONE_VCPU_CLOCKS else "initramfs"
    env.setdefault("started", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    if model:
        env["cost_model"] = model
    env.update({
        "clock": args.clock,
        "accel": "tcg" if args.clock in ONE_VCPU_CLOCKS else args.accel,
        "iterations": args.iterations, "size": args.size, "flavour": args.flavour,
        "timeout": args.timeout,
        "bench": args.bench,
        "numa_matrix": git_describe(), "host": host_env(),
        "kernels": env.get("kernels", {}) | kinfo,
        "topologies": env.get("topologies", []) +
        [t for t in topos if t not in env.get("topologies", [])],  # names
        "scenarios": env.get("scenarios", {}) | {s: SCENARIOS[s] for s in scenarios},
    })
    os.makedirs(os.path.join(rundir, "topologies"), exist_ok=True)
    for name, source in topos.items():
        copy = topo_copy(rundir, name)
        if os.path.abspath(source) != copy:
            shutil.copy2(source, copy)
    atomic_write(path, json.dumps(env, indent=2) + "\n")
    return env


def file_sha256(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def cost_model(bench):
    """{plugin, sha256} of the cost model that Meson built beside the
    benchmark (docs/cost-model.md): a run's cells must all load this one."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(bench)))
    plugin = os.path.join(build, "qemu-topologies", "cost-model", "costmodel.so")
    sha = file_sha256(plugin)
    if not sha:
        raise MatrixError(f"the cost model plugin {plugin} is not built: run "
                      "./numa-matrix setup (or meson compile -C build)")
    return {"plugin": plugin, "sha256": sha}


# ---------------------------------------------------------------- running

def topo_copy(rundir, name):
    """The run's own copy of a machine: what its cells boot."""
    return os.path.join(rundir, "topologies", name + topology.SUFFIX)


def cell_path(rundir, topo, scenario, kernel):
    return os.path.join(rundir, "cells", topo, scenario, kernel + ".csv")


def bench_command(env, scenario, topo, rundir):
    spec = SCENARIOS[scenario]
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


def run_cell(env, rundir, kernel, topo, scenario, profile=None):
    """One guest, one benchmark. Figures on success, .failed otherwise.
    PROFILE (model clock): where the cost model writes the instructions of
    each address in the timed regions (docs/profile.md)."""
    path = cell_path(rundir, topo, scenario, kernel)
    guest = [RUN_GUEST, "--topology", topo_copy(rundir, topo),
             "--kernel", env["kernels"][kernel]["image"],
             "--flavour", env["flavour"], "--clock", env["clock"],
             "--timeout", str(env["timeout"])]
    if env["clock"] not in ONE_VCPU_CLOCKS:
        guest += ["--accel", env["accel"]]
    if env.get("root") == "initramfs":
        # A guest that reads nothing from the host repeats exactly.
        guest += ["--root", "initramfs"]
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
    out = subprocess.run(guest + ["--record", record, "--"]
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


def load_env(rundir):
    path = os.path.join(rundir, "env.json")
    if not os.path.isfile(path):
        raise UsageError(f"{rundir} is not a matrix run directory (no env.json)")
    with open(path) as f:
        return json.load(f)


def plan_cells(env, kernels=None, topos=None, scenarios=None):
    return [(k, t, s) for t in (topos or env["topologies"])
            for s in (scenarios or env["scenarios"])
            for k in (kernels or env["kernels"])]


def fmt_duration(s):
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else \
        f"{s // 60}m{s % 60:02d}s"


PARAMS = {"iterations": 10, "size": "64M", "clock": "icount", "accel": "auto",
          "flavour": "perf", "timeout": 900}


def plan_run(args):
    """Create (or reopen with --resume) a run directory and its env.json.
    A resumed run keeps its own selection and parameters unless told."""
    old = load_env(os.path.abspath(args.resume)) if args.resume else {}
    for name, default in PARAMS.items():
        if getattr(args, name) is None:
            setattr(args, name, old.get(name, default))
    args.bench = os.path.abspath(os.path.join(args.build, "numa-tests", "bench",
                                              "timedmunlock")) \
        if args.build else old.get("bench", os.path.join(DEFAULT_BUILD, "numa-tests",
                                                         "bench", "timedmunlock"))
    if old:
        args.kernels = args.kernels or ",".join(
            f"{k}={info['spec']}" if info.get("spec") else k
            for k, info in old["kernels"].items())
        args.topologies = args.topologies or ",".join(old["topologies"])
        if not args.interleave_worst_case:
            args.scenarios = args.scenarios or ",".join(old["scenarios"])
    existing = os.path.abspath(args.resume or args.run_dir or "") \
        if (args.resume or args.run_dir) else None
    kernels, topos, scenarios = parse_selection(args, existing)
    if existing:
        rundir = existing
    else:
        # A run that mixes sources lives with the source of its first
        # column, the one the others are compared against.
        version = next(iter(kernels.values()))["source_version"]
        run_id = time.strftime("%Y%m%d-%H%M%S") + f"-{args.clock}"
        rundir = os.path.join(args.results, version, run_id)
    os.makedirs(rundir, exist_ok=True)
    env = write_env(rundir, args, kernels, topos, scenarios)
    return rundir, env, plan_cells(env, list(kernels), list(topos), scenarios)


def cmd_plan(args):
    rundir, env, cells = plan_run(args)
    print(rundir)
    for k, t, s in cells:
        print(f"{k} {t} {s}")
    return 0


def cmd_cell(args):
    """Run one cell of a planned run: what a Slurm array task does."""
    rundir = os.path.abspath(args.run_dir)
    env = load_env(rundir)
    for what, value, known in (("kernel", args.kernel, env["kernels"]),
                               ("topology", args.topology, env["topologies"]),
                               ("scenario", args.scenario, env["scenarios"])):
        if value not in known:
            raise UsageError(f"{what} {value} is not in this run ({', '.join(known)})")
    if os.path.exists(cell_path(rundir, args.topology, args.scenario, args.kernel)) \
            and not args.force:
        log(f"{args.topology} {args.scenario} {args.kernel}: already done")
        return 0
    ok, reason = run_cell(env, rundir, args.kernel, args.topology, args.scenario)
    log(f"{args.topology} {args.scenario} {args.kernel}: "
        + ("done" if ok else f"FAILED: {reason}"))
    return 0 if ok else 1


def build_kernels(env, rundir):
    for i, (k, info) in enumerate(env["kernels"].items(), 1):
        log(f"kernel {i}/{len(env['kernels'])}: {k} ({env['flavour']})")
        # The spec of exactly this kernel (a commit, not the range it came
        # from); runs from before kernel specs name variants only.
        out = subprocess.run([BUILD_KERNEL, info.get("spec") or k,
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


def cmd_run(args):
    rundir, env, cells = plan_run(args)
    jobs = jobs_for(env["clock"], args.jobs)
    if not os.access(env["bench"], os.X_OK):
        raise MatrixError(f"{env['bench']} is not built: run ./numa-matrix setup "
                      "(or meson compile -C build)")
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
        for n, future in enumerate(concurrent.futures.as_completed(running), 1):
            k, t, s = cell = running[future]
            ok, reason, took[cell] = future.result()
            left = time_left(took, [c for c in todo if c not in took]) / jobs
            state = f"done in {took[cell]:.0f} s" if ok else f"FAILED: {reason}"
            failed += not ok
            log(f"[{n}/{len(todo)}] {t} {s} {k}: {state}; "
                f"{len(todo) - n} left, ~{fmt_duration(left)}")
    except KeyboardInterrupt:
        pool.shutdown(wait=True, cancel_futures=True)
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


# ---------------------------------------------------------------- reading

def read_cell(path):
    """Per-iteration seconds and pages of one cell file, and under the model
    clock each iteration's record ({"insns": N, ..., "cycles": N})."""
    seconds, pages, meta, model, where = [], None, {}, [], None
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if line.startswith("# timedmunlock "):
                meta = dict(w.split("=", 1) for w in line.split()[2:] if "=" in w)
            if line.startswith("# cell "):
                try:
                    where = json.loads(line[len("# cell "):])
                except ValueError:
                    raise MatrixError(f"{path}:{lineno}: a '# cell' line that is "
                                  "not JSON") from None
            if line.startswith("# model "):
                record = dict(w.split("=", 1) for w in line.split()[2:] if "=" in w)
                model.append({k: int(v) if v.isdigit() else v
                              for k, v in record.items()})
            if not line or line.startswith("#") or line.startswith("iteration,"):
                continue
            fields = line.split(",")
            try:
                if len(fields) != 4:
                    raise ValueError
                sec, npages = float(fields[3]), int(fields[2])
            except ValueError:
                raise MatrixError(f"{path}:{lineno}: not a result line "
                              f"(iteration,op,pages,seconds): {line[:60]!r}") \
                    from None
            seconds.append(sec)
            pages = npages
    if not seconds:
        raise MatrixError(f"{path}: no iterations")
    if model and len(model) != len(seconds):
        raise MatrixError(f"{path}: {len(seconds)} iterations but {len(model)} "
                      "cost model records")
    return {"seconds": seconds, "pages": pages, "meta": meta, "model": model,
            "where": where}


def figures(cell, clock):
    """What a cell measured, per iteration: modelled cycles under the model
    clock, else seconds (under icount, instructions in nanoseconds)."""
    if clock != "model":
        return cell["seconds"]
    if not cell["model"]:
        raise MatrixError("a cell of a --clock model run has no '# model' lines: "
                      "its benchmark predates the cost model's markers")
    return [r["cycles"] for r in cell["model"]]


def load_run(rundir):
    with open(os.path.join(rundir, "env.json")) as f:
        env = json.load(f)
    cells, failed = {}, {}
    for topo in env["topologies"]:
        for scenario in env["scenarios"]:
            for kernel in env["kernels"]:
                path = cell_path(rundir, topo, scenario, kernel)
                key = (topo, scenario, kernel)
                if os.path.exists(path):
                    # One damaged file costs its cell, not the report.
                    try:
                        cells[key] = read_cell(path)
                    except MatrixError as e:
                        failed[key] = "damaged: " + str(e).replace(
                            path, os.path.relpath(path, rundir))
                elif os.path.exists(path[:-4] + ".failed"):
                    failed[key] = "see `" + os.path.relpath(
                        path[:-4] + ".failed", rundir) + "`"
    return env, cells, failed


def stats(values):
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return {"min": min(values), "mean": mean, "stddev": math.sqrt(var),
            "max": max(values), "range": max(values) - min(values)}


def pct(base, new):
    """mmtests' percentage for lower-is-better figures: positive = better."""
    if base == 0:
        return 0.0 if new == 0 else -100.0
    return (base - new) / base * 100


# ---------------------------------------------------------------- report

ROWS = ("min", "mean", "stddev", "max", "range")


def seed_table(kernels, cells, env, topo, scenario):
    """One table in the format of the 2013 cover letter (mmtests compare):
    Elapsed time, or modelled Cycles under the model clock."""
    present = [k for k in kernels if (topo, scenario, k) in cells]
    if not present:
        return None
    clock = env["clock"]
    st = {k: stats(figures(cells[(topo, scenario, k)], clock)) for k in present}
    base = st[present[0]]
    note = [] if present[0] == kernels[0] else [
        f"(no figures of {kernels[0]} on {topo}: percentages are against "
        f"{present[0]})"]
    width = 22
    if clock == "model":
        label, unit, scale, page = "Cycles", "M", 1e-6, ("cycles/page mean", 1.0)
    else:
        label, unit, scale, page = "Elapsed", "s", 1.0, ("ns/page mean", 1e9)
        if max(s["max"] for s in st.values()) < 1:
            unit, scale = "ms", 1000.0
    head1 = f"{'':<18}" + "".join(f"{env['kernels'][k]['source_version']:>{width}}"
                                   for k in present)
    head2 = f"{'':<18}" + "".join(f"{k:>{width}}" for k in present)
    lines = note + [head1, head2]
    for row in ROWS:
        cols = []
        for k in present:
            v = st[k][row]
            cols.append(f"{v * scale:.3f} ({pct(base[row], v):7.2f}%)".rjust(width))
        lines.append(f"{label} {row:<7} {unit:<3}".ljust(18) + "".join(cols))
    per_page = []
    for k in present:
        c = cells[(topo, scenario, k)]
        v = st[k]["mean"] / c["pages"] * page[1]
        b = base["mean"] / cells[(topo, scenario, present[0])]["pages"] * page[1]
        per_page.append(f"{v:.1f} ({pct(b, v):7.2f}%)".rjust(width))
    lines.append(f"{page[0]:<18}" + "".join(per_page))
    return "\n".join(lines)


# The cost model's counts per page, in the order the report prints them.
MODEL_ROWS = (("instructions", "insns"), ("atomics", "atomics"),
              ("L1D misses", "l1_miss"), ("L2 misses", "l2_miss"),
              ("LLC misses", "llc_miss"), ("remote misses", "remote"),
              ("modelled cycles", "cycles"))


def model_table(kernels, cells, topo, scenario):
    """Under the model clock: what each page cost, mean of the iterations."""
    present = [k for k in kernels if (topo, scenario, k) in cells]
    if not present:
        return None
    width = 14
    lines = [f"{'per page':<18}" + "".join(f"{k:>{width}}" for k in present)]
    for label, key in MODEL_ROWS:
        cols = []
        for k in present:
            c = cells[(topo, scenario, k)]
            mean = sum(r[key] for r in c["model"]) / len(c["model"])
            cols.append(f"{mean / c['pages']:.2f}".rjust(width))
        lines.append(f"{label:<18}" + "".join(cols))
    return "\n".join(lines)


def per_page(cells, topo, scenario, kernel, clock):
    """Mean cost per page: ns (instructions under icount), or modelled cycles."""
    c = cells.get((topo, scenario, kernel))
    if not c:
        return None
    scale = 1.0 if clock == "model" else 1e9
    return stats(figures(c, clock))["mean"] / c["pages"] * scale


def gnuplot(script, out):
    if not shutil.which("gnuplot"):
        log("gnuplot not found (apt-get install gnuplot-nox): no plots")
        return False
    r = subprocess.run(["gnuplot"], input=script, text=True,
                       capture_output=True, check=False)
    if r.returncode != 0:
        log(f"gnuplot failed for {out}: {r.stderr.strip()}")
        return False
    return True


def nodes_of(rundir, topo):
    return len(topology.load(topo_copy(rundir, topo)).nodes)


def plot_lines(rundir, name, title, ylabel, series, xs):
    """series: {label: [(x, y) ...]} -> plots/<name>.svg (gnuplot)."""
    os.makedirs(os.path.join(rundir, "plots"), exist_ok=True)
    data = os.path.join(rundir, "plots", name + ".dat")
    with open(data, "w") as f:
        for label, points in series.items():
            f.write(f'"{label}"\n')
            for x, y in points:
                f.write(f"{x} {y}\n")
            f.write("\n\n")
    out = os.path.join(rundir, "plots", name + ".svg")
    plots = ", ".join(f"'{data}' index {i} using 1:2 with linespoints "
                      f"title columnheader(1)" for i in range(len(series)))
    script = (f"set terminal svg size 800,480 dynamic font 'sans,12'\n"
              f"set output '{out}'\nset title '{title}'\n"
              f"set xlabel 'NUMA nodes'\nset ylabel '{ylabel}'\n"
              f"set xtics ({', '.join(str(x) for x in xs)})\nset logscale x 2\n"
              # A margin on both sides: a tic on the border (the largest
              # machine's) lost its label.
              f"set xrange [{xs[0] / 1.3:g}:{xs[-1] * 1.3:g}]\n"
              f"set key outside right\nset grid\nplot {plots}\n")
    return gnuplot(script, out) and os.path.relpath(out, rundir)


def plots(rundir, env, cells):
    kernels = list(env["kernels"])
    topos = sorted(env["topologies"], key=lambda t: nodes_of(rundir, t))
    xs = sorted({nodes_of(rundir, t) for t in topos})
    made = []
    clock = env["clock"]
    unit = {"icount": "instructions per page (icount)",
            "model": "modelled cycles per page (cost model)"}.get(clock, "ns per page")
    for scenario in env["scenarios"]:
        if scenario not in ("bind", "interleave"):
            continue
        series = {}
        for k in kernels:
            pts = [(nodes_of(rundir, t), per_page(cells, t, scenario, k, clock))
                   for t in topos]
            pts = [(x, y) for x, y in pts if y is not None]
            if pts:
                series[k] = pts
        if series and len(xs) > 1:
            p = plot_lines(rundir, f"per-page-{scenario}",
                           f"munlock cost per page, {scenario}", unit, series, xs)
            if p:
                made.append(p)
    if "bind" in env["scenarios"] and "interleave" in env["scenarios"] and len(xs) > 1:
        series = {}
        for k in kernels:
            pts = []
            for t in topos:
                b = per_page(cells, t, "bind", k, clock)
                i = per_page(cells, t, "interleave", k, clock)
                if b and i:
                    pts.append((nodes_of(rundir, t), i / b))
            if pts:
                series[k] = pts
        if series:
            p = plot_lines(rundir, "interleave-bind-ratio",
                           "munlock cost, interleaved / bound", "ratio", series, xs)
            if p:
                made.append(p)
    return made


def ratio_table(env, cells, topos):
    kernels = list(env["kernels"])
    lines = ["| topology | " + " | ".join(kernels) + " |",
             "|---|" + "---|" * len(kernels)]
    for t in topos:
        row = []
        for k in kernels:
            b = per_page(cells, t, "bind", k, env["clock"])
            i = per_page(cells, t, "interleave", k, env["clock"])
            row.append(f"{i / b:.4f}" if b and i else "-")
        lines.append(f"| {t} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def headline(rundir):
    """The table to paste into a cover letter: the worst case (interleave,
    else the first scenario) on the machine with the most nodes."""
    env, cells, _ = load_run(rundir)
    topos = sorted(env["topologies"], key=lambda t: nodes_of(rundir, t))
    scenario = "interleave" if "interleave" in env["scenarios"] \
        else next(iter(env["scenarios"]))
    for t in reversed(topos):
        table = seed_table(list(env["kernels"]), cells, env, t, scenario)
        if table:
            return (f"timedmunlock, {scenario} on {t} ({env['clock']}, "
                    f"{env['iterations']} x {env['size']}):\n{table}")
    return "no cell finished"


def source_of(info):
    """Which source a column was built from, for the report."""
    kind = info.get("source_kind", "package")
    if kind == "git":
        return (f"commit {info['commit'][:12]} \"{info['subject']}\" of "
                f"{os.path.basename(info['source'])}")
    if kind in ("tarball", "image"):
        return f"{kind} {os.path.basename(info['source'])}"
    return info.get("source_package") or "linux-source-6.1"


ROOT_TEXT = {
    "host": "the host's, over 9p (the guest waits for host I/O before the "
            "benchmark, so counts differ between boots in the last digits)",
    "initramfs": "an initramfs with timedmunlock alone (the guest reads "
                 "nothing from the host: the same kernel gives the same "
                 "counts, boot after boot)",
}
CLOCK_TEXT = {
    "icount": " (QEMU `-icount shift=0,sleep=off`, one vCPU: guest time counts "
              "executed instructions, 1 ns each. Host load does not change it; "
              "the spread left is the guest's own iteration-to-iteration "
              "variation)",
    "model": " (icount plus the cost model, docs/cost-model.md: modelled cycles "
             "of the timed call = instructions + cache misses x latency by level "
             "and SLIT distance + atomics x their cost, with the plugin's "
             "defaults, one core of an AMD EPYC 7742. Deterministic like icount; "
             "no contention, prefetcher or TLB)",
}


def where_cells_ran(cells):
    """Report lines: the accelerator and host of each cell, grouped."""
    groups = {}
    for (t, s, k), c in sorted(cells.items()):
        w = c.get("where")
        key = (w["accel"], w["host"], w["cpu_model"], w["host_kernel"],
               w["qemu"]) if w else None
        groups.setdefault(key, []).append(f"{t} {s} {k}")
    if not groups:
        return []
    md = ["## where the cells ran", ""]
    for key, names in groups.items():
        if key is None:
            what = "not recorded (a cell from before cells kept it)"
        else:
            accel, host, cpu, hk, qemu = key
            what = f"{accel} on {host} ({cpu}; kernel {hk}; {qemu})"
        which = "every cell" if len(groups) == 1 else \
            f"{len(names)} cell(s): {', '.join(names)}"
        md.append(f"- {which}: {what}")
    return md + [""]


def write_report(rundir):
    env, cells, failed = load_run(rundir)
    kernels = list(env["kernels"])
    clock = env["clock"]
    h = env["host"]
    md = [f"# timedmunlock matrix: {os.path.basename(rundir)}", "",
          f"- clock: **{clock}**" + CLOCK_TEXT.get(
              clock, f" under {env['accel']} (noisy: compare runs with "
              "`matrix compare`)"),
          f"- {env['iterations']} iterations of a {env['size']} area per cell, "
          f"flavour {env['flavour']}",
          "- guest root: " + ROOT_TEXT[env.get("root", "host")],
          f"- planned on: {h['cpu_model']}, {h['cpus']} CPUs, {h['memory_mib']} MiB, "
          f"kernel {h['host_kernel']}; {h['qemu']}",
          f"- numa-matrix {env['numa_matrix']}; started {env.get('started')}, "
          f"finished {env.get('finished', 'not yet')}", "",
          "| kernel | source | version | patches | series hash | config hash "
          "| compiler |", "|---|---|---|---|---|---|---|"]
    for k, info in env["kernels"].items():
        md.append(f"| {k} | {source_of(info)} | {info['source_version']} | "
                  f"{info['patches']} | {info['series_hash']} | "
                  f"{info['config_hash']} | {info.get('compiler', 'not recorded')} |")
    md += ["", "Percentages are mmtests': (base - new) / base x 100 against the "
           "first column, so positive is better.", ""]
    topos = sorted(env["topologies"], key=lambda t: nodes_of(rundir, t))
    for scenario in env["scenarios"]:
        md += [f"## {scenario}: {env['scenarios'][scenario]['what']}", ""]
        for t in topos:
            table = seed_table(kernels, cells, env, t, scenario)
            if table:
                md += [f"{t}:", "", "```", "timedmunlock", table, "```", ""]
    if clock == "model":
        md += [f"- cost model plugin sha256 {env['cost_model']['sha256']}", ""]
        for scenario in env["scenarios"]:
            md += [f"## {scenario}, what each page cost under the model", ""]
            for t in topos:
                table = model_table(kernels, cells, t, scenario)
                if table:
                    md += [f"{t}:", "", "```", table, "```", ""]
    if "bind" in env["scenarios"] and "interleave" in env["scenarios"]:
        what = "modelled cycles" if clock == "model" else "mean cost"
        md += [f"## interleaved / bound, {what} per page", "",
               ratio_table(env, cells, topos), ""]
    md += where_cells_ran(cells)
    made = plots(rundir, env, cells)
    if made:
        md += ["## plots", ""] + [f"![{p}]({p})" for p in made] + [""]
    if failed:
        # Damaged cells too ("damaged: ..."); the heading is what readers
        # and the Slurm test look for.
        md += ["## failed cells", ""] + [
            f"- {t} {s} {k}: {why}" for (t, s, k), why in sorted(failed.items())]
        md.append("")
    missing = [(t, s, k) for t in env["topologies"] for s in env["scenarios"]
               for k in kernels if (t, s, k) not in cells and (t, s, k) not in failed]
    if missing:
        md += [f"{len(missing)} cell(s) not run yet.", ""]
    path = os.path.join(rundir, "report.md")
    atomic_write(path, "\n".join(md))
    return path


# ---------------------------------------------------------------- compare

def compare_side(arg):
    """RUN_DIR, or RUN_DIR:KERNEL for one column of it: (run, kernel,
    env, cells), the cells of one column keyed with kernel None."""
    run, kernel = arg, None
    if not os.path.isdir(arg) and ":" in arg:
        run, kernel = arg.rsplit(":", 1)
    env, cells, _ = load_run(run)
    if kernel is None:
        return run, None, env, cells
    if kernel not in env["kernels"]:
        raise UsageError(f"{run} has no kernel '{kernel}' (it has "
                      f"{', '.join(env['kernels'])})")
    return run, kernel, env, {(t, s, None): c for (t, s, k), c in cells.items()
                              if k == kernel}


def kernel_line(env, kernel):
    info = env["kernels"][kernel]
    return (f"{kernel}: {source_of(info)}, {info['source_version']}, "
            f"{info.get('compiler', 'compiler not recorded')}")


def cmd_compare(args):
    run_a, ka, env_a, cells_a = compare_side(args.run_a)
    run_b, kb, env_b, cells_b = compare_side(args.run_b)
    if (ka is None) != (kb is None):
        raise UsageError("name a kernel on both sides (RUN_DIR:KERNEL) or on "
                      "neither")
    common = sorted(set(cells_a) & set(cells_b), key=lambda c: (c[0], c[1], c[2] or ""))
    if not common:
        raise MatrixError("the two runs have no cell in common")
    clock = env_a["clock"]
    repeatable = clock == env_b["clock"] and clock in ONE_VCPU_CLOCKS
    print(f"A: {run_a} ({env_a['clock']})\nB: {run_b} ({env_b['clock']})")
    if ka is not None:
        print(f"A {kernel_line(env_a, ka)}\nB {kernel_line(env_b, kb)}")
    else:
        for k in sorted({c[2] for c in common}):
            changed = identity_change(env_a["kernels"][k], env_b["kernels"][k])
            if changed:
                print(f"note: {k} is not the same kernel in A and B: "
                      f"{'; '.join(changed)}")
    if env_a["clock"] != env_b["clock"]:
        print("warning: the runs use different clocks; their figures are not "
              "comparable")
    if repeatable:
        what = "count instructions (icount)" if clock == "icount" else \
            "count modelled cycles (the cost model)"
        print(f"Both runs {what}: the host's load adds no "
              "noise; what spread there is comes from the guest itself\n"
              "(its page allocator starts each iteration in another state), and "
              "a difference beyond it is the kernels'.")
    print(f"{'topology':<12} {'scenario':<11} {'kernel':<10} {'A mean':>12} "
          f"{'B mean':>12} {'change':>9}  verdict")
    fmt = "12.0f" if clock == "model" else "12.6f"
    for key in common:
        a = stats(figures(cells_a[key], env_a["clock"]))
        b = stats(figures(cells_b[key], env_b["clock"]))
        change = pct(a["mean"], b["mean"])
        # Differences under twice the larger spread are not told apart.
        noise = 2 * max(a["stddev"], b["stddev"])
        if a["mean"] == b["mean"]:
            verdict = "identical"
        elif abs(a["mean"] - b["mean"]) <= noise:
            verdict = "within noise"
        else:
            verdict = "better" if change > 0 else "worse"
        t, s, k = key
        k = k or f"{ka}:{kb}"
        print(f"{t:<12} {s:<11} {k:<10} {a['mean']:{fmt}} {b['mean']:{fmt}} "
              f"{change:8.2f}%  {verdict}")
    return 0


def cmd_list(args):
    print("kernels:    " + " ".join(all_kernels()) + " (and any kernel spec: "
          "docs/kernel-specs.md; kernel-series/build-kernel --list)")
    print("topologies: " + " ".join(os.path.basename(p)[:-5]
                                    for p in topology.catalogue()))
    for name, spec in SCENARIOS.items():
        print(f"scenario   {name:<11} {spec['what']}")
    return 0


def add_selection(p):
    p.add_argument("--kernels", metavar="SPEC,...",
                   help="comma list of kernel specs, one column each (a git "
                   "range A..B: one per commit); LABEL=SPEC names a column "
                   "(default: every variant of linux-source-6.1's series; "
                   "docs/kernel-specs.md)")
    p.add_argument("--topologies",
                   help=f"comma list (default: {','.join(DEFAULT_TOPOLOGIES)})")
    p.add_argument("--scenarios",
                   help=f"comma list (default: {','.join(DEFAULT_SCENARIOS)})")
    p.add_argument("--interleave-worst-case", action="store_true",
                   help="only the interleave scenario (THP never)")
    # Defaults are filled in by plan_run(): a resumed run keeps its own.
    p.add_argument("--iterations", type=int, help="default 10")
    p.add_argument("--size", help="default 64M")
    p.add_argument("--clock", choices=CLOCKS,
                   help="default icount; model: icount plus the cost model "
                   "(docs/cost-model.md)")
    p.add_argument("--accel", choices=("tcg", "kvm", "auto"),
                   help="for --clock wall (icount and model are always TCG); "
                   "default auto")
    p.add_argument("--flavour", choices=kernelspec.FLAVOURS, help="default perf")
    p.add_argument("--timeout", type=int, help="seconds per cell, default 900")
    p.add_argument("--results", default=RESULTS, help=argparse.SUPPRESS)
    p.add_argument("--build", help=argparse.SUPPRESS)


def add_one_cell(p, iterations_help):
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
    p.add_argument("--build", help=argparse.SUPPRESS)


def one_cell_args(args, clock):
    """Checks and completes the options of add_one_cell() for CLOCK: a
    known scenario that runs under it, a known machine, the benchmark
    built."""
    if args.scenario not in SCENARIOS:
        raise UsageError(f"unknown scenario '{args.scenario}' (known: "
                      f"{', '.join(SCENARIOS)})")
    if SCENARIOS[args.scenario].get("clocks") and \
            clock not in SCENARIOS[args.scenario]["clocks"]:
        raise UsageError(f"scenario {args.scenario} cannot run under {clock}")
    topology.find(args.topology)
    args.clock, args.accel = clock, "tcg"
    args.bench = os.path.abspath(os.path.join(
        args.build or DEFAULT_BUILD, "numa-tests", "bench", "timedmunlock"))
    if not os.access(args.bench, os.X_OK):
        raise MatrixError(f"{args.bench} is not built: run ./numa-matrix setup "
                      "(or meson compile -C build)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run the matrix (or resume one)")
    plan = sub.add_parser("plan", help="create a run directory, list its cells")
    for p in (run, plan):
        add_selection(p)
    run.add_argument("--resume", metavar="RUN_DIR")
    # ./numa-matrix run: options checked before its setup does any work.
    run.add_argument("--check-args", action="store_true", help=argparse.SUPPRESS)
    run.add_argument("--jobs", type=int, metavar="N",
                     help="cells at once (default: the host's CPUs under icount "
                     "and model, 1 under wall, which allows no other)")
    plan.add_argument("--run-dir", help="where (default: results/<version>/<id>)")
    cell = sub.add_parser("cell", help="run one cell of a planned run")
    cell.add_argument("run_dir")
    cell.add_argument("kernel")
    cell.add_argument("topology")
    cell.add_argument("scenario")
    cell.add_argument("--force", action="store_true", help="run it again")
    rep = sub.add_parser("report", help="write RUN_DIR/report.md and plots")
    rep.add_argument("run_dir")
    cmp_ = sub.add_parser("compare", help="compare two runs, or two kernels "
                          "of any runs (RUN_DIR:KERNEL)")
    cmp_.add_argument("run_a", metavar="RUN_A[:KERNEL]")
    cmp_.add_argument("run_b", metavar="RUN_B[:KERNEL]")
    from . import bisect, profile
    bisect.add_parser(sub)
    profile.add_parser(sub)
    lst = sub.add_parser("list", help="kernels, topologies, scenarios")
    lst.add_argument("--flavour", default="perf")
    run.set_defaults(run_dir=None)
    plan.set_defaults(resume=None)
    args = ap.parse_args()
    try:
        if args.cmd == "run" and args.check_args:
            # The kernels, machines and scenarios too: a spec naming
            # nothing is an error before ./numa-matrix sets up a build dir.
            if not args.resume:
                # What plan_run() would fill in: the defaults of the options not given.
                for name, default in PARAMS.items():
                    if getattr(args, name, None) is None:
                        setattr(args, name, default)
                parse_selection(args)
            return 0
        if args.cmd == "run":
            return cmd_run(args)
        if args.cmd == "plan":
            return cmd_plan(args)
        if args.cmd == "cell":
            return cmd_cell(args)
        if args.cmd == "report":
            print(write_report(os.path.abspath(args.run_dir)))
            return 0
        if args.cmd == "compare":
            return cmd_compare(args)
        if args.cmd == "bisect":
            return bisect.cmd_bisect(args)
        if args.cmd == "profile":
            return profile.cmd_profile(args)
        return cmd_list(args)
    except NumaMatrixError as e:
        return report("matrix", e)

