# SPDX-License-Identifier: GPL-2.0
"""Run the benchmark matrix on a Slurm cluster (see docs/slurm.md).

  slurm-submit [selection] [slurm options]        plan a run and submit it
  slurm-submit --resume RUN_DIR [slurm options]   submit the cells not done yet
  slurm-submit --finish RUN_DIR N                 what the report job runs

The selection options are results/matrix plan's. The run directory is made by
`matrix plan`; each cell is run by `matrix cell`, so a run through Slurm and a
local `matrix run` write the same files, and `matrix report`/`compare` read
both. Submitted, in this order, with `sbatch --parsable`:

  - one build job per kernel the cache does not have yet
    (kernel-series/build-kernel), without the machine-wide build lock
    unless --build-lock names one; the builds of one tree are chained
    (afterany), the others run at once;
  - one job array per kernel (one per kernel and resource shape when its
    topologies need different CPUs or memory: a Slurm array has one resource
    request for all its tasks), task N = line N of a cell list file in the
    run directory, each task `matrix cell`, at most --max-running at once;
    afterok on the kernel's build if it has one, and cancelled by Slurm if
    that build fails (--kill-on-invalid-dep);
  - one report job, afterany on every array, which records a .failed file
    for every cell whose task ended without a result (cancelled, killed at
    its time limit, its kernel build failed) and writes report.md.

Slurm bookkeeping (job scripts, cell lists, job ids, Slurm's logs) goes to
RUN_DIR/slurm/<N>/ for the N-th submission of the run.
"""

import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

from . import (BENCH_IN_BUILD, BUILD_KERNEL, MATRIX, RESULTS, SLURM_SUBMIT,
               build_of_bench, cli, topology)
from . import matrix as mx
from .rundir import cell_path, load_env, load_run, plan_cells
from .types import ONE_VCPU_CLOCKS, RunRequest, SlurmRequest
from .util import atomic_write, run_child, terminate_as_interrupt
from .errors import NumaMatrixError, UsageError, report

# Memory a cell asks for beyond its guest's RAM. Measured here (QEMU 7.2,
# TCG, icount), the largest process of a cell, QEMU, peaked at 231 and 239 MiB
# resident for 1node and 2node (1 GiB guests, 8M, 2 iterations) and 326 MiB
# for 4node (2 GiB, the defaults 64M and 10 iterations): QEMU maps guest RAM
# lazily, so guest RAM + 512 MiB leaves room for what QEMU itself and the
# Python processes around it use.
DEFAULT_MEM_OVERHEAD = 512
# Slurm minutes beyond the guest's own --timeout: boot, a KVM probe, writing.
TIME_MARGIN_S = 300
BENCH_SUFFIX = os.path.join("numa-tests", "bench", "timedmunlock")


def log(msg):
    print(f"slurm-submit: {msg}", file=sys.stderr, flush=True)


class SlurmError(NumaMatrixError):
    """A submission that cannot be made: the message says why."""


# ---------------------------------------------------------------- planning

def plan_args(req: RunRequest, run_dir=None):
    """The `matrix plan` command line: the selection as given, or with
    --resume the run's own selection and parameters, each overridable.
    RUN_DIR: plan there instead (a dry run's temporary copy)."""
    cmd = [MATRIX, "plan"]
    sel, opts = req.selection, req.options
    given = {"kernels": sel.kernels, "topologies": sel.topologies,
             "scenarios": sel.scenarios, "iterations": opts.iterations,
             "size": opts.size, "clock": opts.clock, "accel": opts.accel,
             "flavour": opts.flavour, "timeout": opts.timeout,
             "build-dir": opts.build_dir}
    if req.resume:
        env = load_env(os.path.abspath(req.resume))
        bench = env["bench"]
        build = build_of_bench(bench)
        if build is None:
            raise UsageError(f"this run's benchmark {bench} is not <build>/"
                             f"{BENCH_IN_BUILD}: give --build-dir")
        # Each column as LABEL=SPEC, the spec of exactly that kernel, as
        # `matrix run --resume` does: a label alone would name the
        # default source's variant of that name, or nothing.
        own = {"kernels": ",".join(f"{k}={info['spec']}" if info.get("spec")
                                   else k for k, info in env["kernels"].items()),
               "topologies": ",".join(env["topologies"]),
               "scenarios": ",".join(env["scenarios"]),
               "iterations": env["iterations"], "size": env["size"],
               "clock": env["clock"], "accel": env["accel"],
               "flavour": env["flavour"], "timeout": env["timeout"],
               "build-dir": build}
        if sel.worst_case:
            own["scenarios"] = None
        cmd += ["--run-dir", run_dir or os.path.abspath(req.resume)]
    else:
        own = {}
        where = run_dir or req.run_dir
        if where:
            cmd += ["--run-dir", os.path.abspath(where)]
        cmd += ["--results", os.path.abspath(req.results)]
    for name, value in given.items():
        if value is None:
            value = own.get(name)
        if value is not None:
            cmd += [f"--{name}", str(value)]
    if sel.worst_case:
        cmd.append("--interleave-worst-case")
    return cmd


def run_plan(req: RunRequest, environ, run_dir=None):
    out = run_child(plan_args(req, run_dir), capture_output=True,
                         text=True, env=environ, check=False)
    if out.returncode != 0:
        raise SlurmError("matrix plan failed:\n" + out.stderr.strip())
    lines = out.stdout.splitlines()
    rundir = lines[0]
    cells = [tuple(line.split()) for line in lines[1:] if line.strip()]
    return rundir, cells


def resources(rundir, env, topo_name, mem_overhead):
    """CPUs and MiB one cell's guest needs, from the run's copy of the
    topology: what run-guest will start (one vCPU under icount and model, all
    the topology's vCPUs otherwise, as many host threads under MTTCG or KVM)."""
    t = topology.load(os.path.join(rundir, "topologies",
                                   topo_name + topology.SUFFIX))
    mem, cpus = t.peak()
    if env["clock"] in ONE_VCPU_CLOCKS:
        cpus = 1
    return cpus, mem + mem_overhead


def group_cells(rundir, env, cells, mem_overhead):
    """[(kernel, cpus, mem_mib, [cells])] in plan order: one array per kernel,
    split only where its cells need different resources."""
    groups: dict = {}
    for cell in cells:
        cpus, mem = resources(rundir, env, cell[1], mem_overhead)
        groups.setdefault((cell[0], cpus, mem), []).append(cell)
    kernels = list(dict.fromkeys(c[0] for c in cells))
    return sorted(((k, c, m, cs) for (k, c, m), cs in groups.items()),
                  key=lambda g: kernels.index(g[0]))


def cell_done(rundir, cell):
    kernel, topo, scenario = cell
    return os.path.exists(cell_path(rundir, topo, scenario, kernel))


def new_submission(rundir):
    base = os.path.join(rundir, "slurm")
    os.makedirs(base, exist_ok=True)
    n = 1
    while True:
        try:
            os.mkdir(os.path.join(base, str(n)))
            return n, os.path.join(base, str(n))
        except FileExistsError:
            n += 1


# ---------------------------------------------------------------- job scripts

def q(s):
    return shlex.quote(str(s))


def script_head(what, cache):
    lines = ["#!/bin/sh", f"# {what}", "# Written by results/slurm-submit.",
             "set -eu"]
    if cache:
        lines.append(f"export NUMA_MATRIX_CACHE={q(cache)}")
    return lines


def build_script(kernel, env, cache, lock="none"):
    info = env["kernels"][kernel]
    # The spec of exactly this kernel (one commit of a range); runs planned
    # before kernel specs name variants.
    spec = info.get("spec") or kernel
    return "\n".join(script_head(f"build kernel {kernel} ({env['flavour']})", cache) + [
        "# The job has CPUs of its own: by default no machine-wide build lock",
        "# on a cache every node shares (build-kernel still builds one tree",
        "# at a time). --build-lock names one where nodes share CPUs.",
        f"export NUMA_MATRIX_BUILD_LOCK={q(lock)}",
        f"image=$({q(BUILD_KERNEL)} {q(spec)} --flavour {q(env['flavour'])} "
        "-j \"${SLURM_CPUS_PER_TASK:-1}\")",
        f"if [ \"$image\" != {q(info['image'])} ]; then",
        f"\techo \"kernel {kernel} built as $image, but the run planned "
        f"{info['image']}: its source, series, config or compiler changed\" >&2",
        "\texit 1", "fi", "echo \"$image\"", ""])


def cells_script(rundir, kernel, listfile, cache):
    return "\n".join(script_head(f"cells of kernel {kernel}: array task N runs "
                                 f"line N of {os.path.basename(listfile)}", cache) + [
        f"cell=$(sed -n \"${{SLURM_ARRAY_TASK_ID}}p\" {q(listfile)})",
        "if [ -z \"$cell\" ]; then",
        f"\techo \"no line $SLURM_ARRAY_TASK_ID in {listfile}\" >&2",
        "\texit 1", "fi",
        "set -- $cell",
        f"exec {q(MATRIX)} cell {q(rundir)} \"$1\" \"$2\" \"$3\"",
        ""])


def report_script(rundir, n, cache):
    return "\n".join(script_head("the report, once every cell's task ended", cache) + [
        f"exec {q(SLURM_SUBMIT)} --finish "
        f"{q(rundir)} {n}", ""])


def write_script(path, text):
    atomic_write(path, text)
    os.chmod(path, 0o755)


# ---------------------------------------------------------------- submitting

class Submitter:
    def __init__(self, req: SlurmRequest):
        self.common = ["--parsable"]
        if req.partition:
            self.common.append(f"--partition={req.partition}")
        if req.account:
            self.common.append(f"--account={req.account}")
        self.common += req.sbatch_args
        self.dry_run = req.dry_run
        self.submitted: List[str] = []
        self.fake = 0

    def __call__(self, options, script):
        cmd = ["sbatch"] + self.common + options + [script]
        if self.dry_run:
            self.fake += 1
            print("  " + shlex.join(cmd))
            return f"<job{self.fake}>"
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise SlurmError("sbatch not found: run this on a Slurm submit host "
                          "(Debian: apt-get install slurm-client)") from None
        if out.returncode != 0:
            raise SlurmError(f"{shlex.join(cmd)} failed: {out.stderr.strip()}")
        job = out.stdout.strip().split(";")[0]     # "id" or "id;cluster"
        if not job.isdigit():
            raise SlurmError(f"sbatch printed {out.stdout.strip()!r}, not a job id")
        self.submitted.append(job)
        return job

    def cancel_all(self):
        if self.submitted:
            subprocess.run(["scancel"] + self.submitted, check=False)
            log(f"cancelled what this submission had queued: "
                f"{' '.join(self.submitted)}")


def minutes(seconds):
    return max(1, math.ceil(seconds / 60))


def tree_of(info):
    """Kernels built in one tree build one after the other: their build
    jobs are chained rather than left holding CPUs while they wait. The
    tree is the plan's (kernelspec decides it; env.json keeps it as
    build_tree); a run planned before env.json kept it: one git
    repository's clone, or one source with one series."""
    if info.get("build_tree"):
        return info["build_tree"]
    if info.get("source_kind") == "git":
        return ("git", info.get("source"))
    return (info.get("source_id"), info.get("series_hash"))


def builds_needed(env, kernels):
    """The kernels of this submission whose image is not there yet (a
    lookup on the submit host, which sees the jobs' cache)."""
    return [k for k in kernels if not os.path.isfile(env["kernels"][k]["image"])]


def submit(req: SlurmRequest):
    if not req.dry_run:
        return submit_into(req, None)
    # A dry run plans, writes and prints in a temporary copy of the run,
    # removed afterwards: nothing of it is left in results/.
    tmp = tempfile.mkdtemp(prefix="slurm-submit-dry-run-")
    try:
        copy = os.path.join(tmp, "run")
        if req.run.resume:
            shutil.copytree(os.path.abspath(req.run.resume), copy,
                            ignore=shutil.ignore_patterns("slurm"))
        return submit_into(req, copy)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def submit_into(req: SlurmRequest, dry_run_dir):
    environ = dict(os.environ)
    cache = os.path.abspath(req.cache) if req.cache else None
    if cache:
        environ["NUMA_MATRIX_CACHE"] = cache
    rundir, cells = run_plan(req.run, environ, dry_run_dir)
    env = load_env(rundir)
    todo = [c for c in cells if not cell_done(rundir, c)]
    print(rundir)
    if not todo:
        print(f"all {len(cells)} cells of this selection are done; nothing "
              f"submitted. Report: results/matrix report {rundir}")
        return 0
    if not os.access(env["bench"], os.X_OK):
        log(f"warning: {env['bench']} is not an executable here; the "
            "compute nodes must see it at this path")
    n, subdir = new_submission(rundir)
    groups = group_cells(rundir, env, todo, req.mem_overhead)
    sbatch = Submitter(req)
    jobs = {"submission": n, "submitted": time.time(), "builds": {},
            "arrays": [], "report": None}
    lines = []
    kernels = list(dict.fromkeys(k for k, _, _, _ in groups))
    to_build = builds_needed(env, kernels)
    for kernel in kernels:
        if kernel not in to_build:
            lines.append(f"built   kernel {kernel} ({env['flavour']}): "
                         f"{env['kernels'][kernel]['image']}")
    last_in_tree: Dict[Any, str] = {}
    try:
        for kernel in to_build:
            script = os.path.join(subdir, f"build-{kernel}.sh")
            write_script(script, build_script(kernel, env, cache,
                                              req.build_lock))
            tree = tree_of(env["kernels"][kernel])
            after = [f"--dependency=afterany:{last_in_tree[tree]}"] \
                if tree in last_in_tree else []
            job = sbatch([f"--job-name=nm-build-{kernel}",
                          f"--cpus-per-task={req.build_cpus}",
                          f"--mem={req.build_mem}",
                          f"--time={req.build_time}", *after,
                          f"--chdir={rundir}",
                          f"--output={subdir}/build-{kernel}-%j.out"], script)
            last_in_tree[tree] = job
            jobs["builds"][kernel] = job
            lines.append(f"build   {job}  kernel {kernel} ({env['flavour']}), "
                         f"{req.build_cpus} CPUs"
                         + (f", after {after[0].split(':')[1]} (same tree)"
                            if after else ""))
        counts: Dict[str, int] = {}
        for kernel, cpus, mem, group in groups:
            counts[kernel] = counts.get(kernel, 0) + 1
            name = kernel if counts[kernel] == 1 else f"{kernel}.{counts[kernel]}"
            listfile = os.path.join(subdir, f"cells-{name}.list")
            atomic_write(listfile, "".join(" ".join(c) + "\n" for c in group))
            script = os.path.join(subdir, f"cells-{name}.sh")
            write_script(script, cells_script(rundir, kernel, listfile, cache))
            limit = minutes(env["timeout"] + TIME_MARGIN_S)
            throttle = f"%{req.max_running}" if req.max_running else ""
            after = [f"--dependency=afterok:{jobs['builds'][kernel]}",
                     "--kill-on-invalid-dep=yes"] \
                if kernel in jobs["builds"] else []
            job = sbatch([f"--job-name=nm-{name}",
                          f"--array=1-{len(group)}{throttle}",
                          f"--cpus-per-task={cpus}", f"--mem={mem}M",
                          f"--time={limit}", *after,
                          f"--chdir={rundir}",
                          f"--output={subdir}/cells-{name}-%A_%a.out"], script)
            jobs["arrays"].append({"job": job, "name": name, "kernel": kernel,
                                   "cpus": cpus,
                                   "mem_mib": mem, "list": listfile,
                                   "cells": [list(c) for c in group]})
            lines.append(f"cells   {job}_[1-{len(group)}]  kernel {kernel}: "
                         f"{len(group)} cell(s), {cpus} CPU(s) and {mem} MiB "
                         f"each, {limit} min limit; list {listfile}")
        # The report job reads this; it is written before the job exists.
        atomic_write(os.path.join(subdir, "jobs.json"),
                        json.dumps(jobs, indent=2) + "\n")
        script = os.path.join(subdir, "report.sh")
        write_script(script, report_script(rundir, n, cache))
        arrays = ":".join(a["job"] for a in jobs["arrays"])
        job = sbatch(["--job-name=nm-report", "--cpus-per-task=1", "--mem=1G",
                      "--time=30", f"--dependency=afterany:{arrays}",
                      f"--chdir={rundir}",
                      f"--output={subdir}/report-%j.out"], script)
        jobs["report"] = job
        lines.append(f"report  {job}  after every cell task ended: "
                     f"{os.path.join(rundir, 'report.md')}")
        atomic_write(os.path.join(subdir, "jobs.json"),
                        json.dumps(jobs, indent=2) + "\n")
    except (SlurmError, KeyboardInterrupt):
        sbatch.cancel_all()
        raise
    ids = ",".join(list(jobs["builds"].values()) +
                   [a["job"] for a in jobs["arrays"]] + [jobs["report"]])
    print(f"submission {n}: {len(todo)} of {len(cells)} cells to run "
          f"({len(cells) - len(todo)} already done)")
    for line in lines:
        print("  " + line)
    if req.dry_run:
        print("dry run: nothing submitted, nothing kept (planned in a "
              "temporary directory, now removed)")
        return 0
    again = [f"--partition {q(req.partition)}"] if req.partition else []
    again += [f"--account {q(req.account)}"] if req.account else []
    again += [f"--cache {q(cache)}"] if cache else []
    print(f"watch:    squeue -j {ids}\n"
          f"logs:     {subdir}/*.out\n"
          f"report:   {os.path.join(rundir, 'report.md')} (job {jobs['report']})\n"
          f"rerun what did not finish, with the same Slurm options:\n"
          f"          {q(SLURM_SUBMIT)} --resume "
          f"{q(rundir)}{' ' if again else ''}{' '.join(again)}")
    return 0


# ---------------------------------------------------------------- the report job

def run_quiet(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return None


def slurm_state(job):
    """Slurm's word on a job or array task: slurmctld's while it remembers
    the job (MinJobAge, 300 s by default), else the accounting database's
    where one is configured."""
    out = run_quiet(["scontrol", "-o", "show", "job", job])
    if out and out.returncode == 0 and out.stdout.strip():
        fields = dict(w.split("=", 1) for w in out.stdout.split() if "=" in w)
        return {k: fields.get(k, "?") for k in ("JobState", "Reason", "ExitCode")}
    out = run_quiet(["sacct", "--noheader", "--parsable2", "--jobs", job,
                     "--format=JobID,State,Reason,ExitCode"])
    if not out or out.returncode != 0:
        return None
    for line in out.stdout.splitlines():
        fields = line.split("|")
        # The job's own line, not its steps (JOB.batch, JOB.0).
        if len(fields) == 4 and fields[0] == job:
            return {"JobState": fields[1].split()[0], "Reason": fields[2],
                    "ExitCode": fields[3], "from": "sacct"}
    return None


def describe(state):
    return " ".join(f"{k}={v}" for k, v in state.items()) if state else \
        "no longer known to slurmctld"


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return f"({path}: none: the task never started)\n"


def finish(rundir, n):
    """The report job: every cell this submission ran has a .csv or a
    .failed afterwards, then report.md is written as `matrix run` does."""
    rundir = os.path.abspath(rundir)
    subdir = os.path.join(rundir, "slurm", str(n))
    with open(os.path.join(subdir, "jobs.json")) as f:
        jobs = json.load(f)
    recorded = 0
    for array in jobs["arrays"]:
        for i, (kernel, topo, scenario) in enumerate(array["cells"], 1):
            csv = cell_path(rundir, topo, scenario, kernel)
            failed = csv[:-4] + ".failed"
            if os.path.exists(csv):
                continue
            # A .failed older than this submission says why an earlier
            # attempt failed, not this one.
            if os.path.exists(failed) and \
                    os.path.getmtime(failed) >= jobs["submitted"]:
                continue
            task = f"{array['job']}_{i}"
            build = jobs["builds"].get(kernel)
            state = slurm_state(task)
            out = os.path.join(subdir, f"cells-{array['name']}-{task}.out")
            atomic_write(failed, (
                "exit status none: the Slurm task ended without a result\n"
                "--- stderr\n"
                f"slurm-submit: array task {task} ({topo} {scenario} {kernel}): "
                f"{describe(state)}\n"
                + (f"slurm-submit: kernel build job {build}: "
                   f"{describe(slurm_state(build))}\n" if build else
                   "slurm-submit: the kernel was built before submission\n") +
                f"slurm-submit: the task's output, {out}:\n{tail(out)}"
                "--- stdout\n"))
            recorded += 1
            log(f"{topo} {scenario} {kernel}: task {task} ended without a "
                f"result ({describe(state)}): marked failed")
    report_path = mx.finish_run(rundir)
    env, cells, failed = load_run(rundir)
    total = len(plan_cells(env))
    print(report_path)
    log(f"{len(cells)} of {total} cells done, {len(failed)} failed "
        f"({recorded} of them recorded here)")
    if len(cells) < total:
        log(f"rerun what did not finish: {SLURM_SUBMIT} --resume {rundir}")
        return 1
    return 0


# ---------------------------------------------------------------- main

def main(argv=None):
    terminate_as_interrupt()
    # "resolve": --results, hidden in matrix plan's help, is redefined
    # below with its help shown.
    ap = cli.Parser(
        prog="slurm-submit", conflict_handler="resolve",
        description=__doc__.split("\n\n")[0],
        epilog="Extra sbatch options go with --sbatch-arg=--qos=debug "
               "(repeatable, given to every job). See docs/slurm.md.")
    cli.add_selection(ap)
    ap.add_argument("--build-dir", metavar="DIR",
                    help="build dir with numa-tests/bench/timedmunlock, on a "
                    "path every node sees (default: the checkout's build/)")
    ap.add_argument("--run-dir", help="where (default: RESULTS/<version>/<id>)")
    ap.add_argument("--resume", metavar="RUN_DIR",
                    help="submit the cells of RUN_DIR not done yet, with the "
                         "run's own selection and parameters")
    ap.add_argument("--finish", nargs=2, metavar=("RUN_DIR", "N"),
                    help="(the report job) mark cells whose task ended without "
                         "a result failed, then write report.md")
    s = ap.add_argument_group("Slurm")
    s.add_argument("--partition")
    s.add_argument("--account")
    s.add_argument("--results", default=RESULTS, metavar="DIR",
                   help="results root on a path every node sees (default: "
                        "this checkout's results/)")
    s.add_argument("--cache", help="NUMA_MATRIX_CACHE for the jobs: kernels, "
                   "ccache, guest logs (default: the jobs' ~/.cache/numa-matrix)")
    s.add_argument("--build-cpus", type=int, default=8,
                   help="CPUs of a kernel build job (default 8)")
    s.add_argument("--build-mem", default="4G", help="default 4G")
    s.add_argument("--build-time", default="120", help="minutes, default 120")
    s.add_argument("--mem-overhead", type=int, default=DEFAULT_MEM_OVERHEAD,
                   metavar="MIB", help="memory per cell beyond the guest's "
                   f"(default {DEFAULT_MEM_OVERHEAD})")
    s.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                   help="extra sbatch option for every job (repeatable)")
    s.add_argument("--build-lock", default="none", metavar="FILE",
                   help="the lock a build job holds while it builds (default "
                        "none: builds of different kernels run at once; give "
                        "the cache's build.lock where the 'cluster' is one "
                        "shared machine)")
    s.add_argument("--max-running", type=int, metavar="M",
                   help="at most M cells of a kernel's array at once "
                        "(sbatch --array=1-N%%M)")
    s.add_argument("--dry-run", action="store_true",
                   help="print the sbatch commands and what they would run; "
                        "submit nothing, leave nothing behind")
    try:
        a = ap.parse_args(argv)
        if a.finish:
            if not a.finish[1].isdigit():
                raise UsageError(f"--finish {a.finish[0]} {a.finish[1]}: N is "
                                 "a submission number")
            return finish(a.finish[0], int(a.finish[1]))
        return submit(SlurmRequest(
            RunRequest(cli.selection(a), cli.options(a), resume=a.resume,
                       run_dir=a.run_dir, results=a.results),
            partition=a.partition, account=a.account,
            sbatch_args=a.sbatch_arg, cache=a.cache,
            build_cpus=a.build_cpus, build_mem=a.build_mem,
            build_time=a.build_time, mem_overhead=a.mem_overhead,
            build_lock=a.build_lock, max_running=a.max_running,
            dry_run=a.dry_run))
    except NumaMatrixError as e:
        return report("slurm-submit", e)
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    except OSError as e:
        log(f"error: {e}")
        return 1
