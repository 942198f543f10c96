# SPDX-License-Identifier: GPL-2.0
"""A matrix run directory: what it keeps and how to read it back.

  RUN_DIR/env.json                         what every figure depends on
  RUN_DIR/topologies/<name>.topo           the machines its cells boot
  RUN_DIR/cells/<topology>/<scenario>/<kernel>.csv    one cell's figures
  RUN_DIR/cells/<topology>/<scenario>/<kernel>.failed why a cell failed

Written atomically, so an interrupted run resumes without redoing finished
cells. Nothing here runs a guest (matrix.py) or writes a report
(report.py); both read through this module. docs/results.md describes
every file.
"""

import hashlib
import json
import os
import shutil
import subprocess
import time

from . import TOP, build_of_bench, cost_model_in, kernelspec, topology
from . import kernels as kbuild
from .errors import NumaMatrixError, UsageError
from .types import ONE_VCPU_CLOCKS, RunParams
from .util import atomic_write, host_facts


class RunDirError(NumaMatrixError):
    """A run directory, or a file in it, that cannot be read as one."""


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)


def cell_path(rundir, topo, scenario, kernel):
    return os.path.join(rundir, "cells", topo, scenario, kernel + ".csv")


def topo_copy(rundir, name):
    """The run's own copy of a machine: what its cells boot."""
    return os.path.join(rundir, "topologies", name + topology.SUFFIX)


def load_env(rundir):
    path = os.path.join(rundir, "env.json")
    if not os.path.isfile(path):
        what = "no such directory" if not os.path.isdir(rundir) else \
            "no env.json in it"
        raise UsageError(f"{rundir} is not a matrix run directory ({what})")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise RunDirError(f"{path}: cannot read it: {e}") from None


def applies(spec, topo):
    """Whether a scenario can run on a machine: one that moves pages
    between nodes needs two with memory."""
    return len(topo.memory_nodes()) >= spec.get("min_memory_nodes", 1)


def plan_cells(env, kernels=None, topos=None, scenarios=None):
    """The cells of a run, those that cannot run on their machine left out
    (env["memory_nodes"]: the machines' memory nodes, kept since the atlas
    has scenarios that need two)."""
    nodes = env.get("memory_nodes", {})
    return [(k, t, s) for t in (topos or env["topologies"])
            for s in (scenarios or env["scenarios"])
            if nodes.get(t, 2) >= env["scenarios"][s].get("min_memory_nodes", 1)
            for k in (kernels or env["kernels"])]


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
    """What env.json keeps of a kernel: its identity, `make kernelversion`
    and image path."""
    info = kbuild.describe(plan)
    info["kernel_version"] = kernelspec.kernel_version(plan)
    info["image"] = plan.image if plan.kind == "image" else \
        os.path.join(plan.store, "bzImage")
    return info


# What makes a kernel the same kernel: a resumed run refuses to mix cells of
# kernels differing in any of these.


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


def write_env(rundir, params: RunParams, kernels, topos, scenarios):
    """env.json: what the figures depend on, and everything a cell needs to
    run from the run directory alone (matrix cell). KERNELS: {label: plan};
    TOPOS: {name: .topo path}; SCENARIOS: {name: what it asks of
    timedmunlock}. Cells name the kernel image, not the variant: editing
    the series while the matrix runs must not change the kernel under it,
    and a resumed run must keep its kernels."""
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
    model = cost_model(params.bench) if params.clock == "model" else None
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
            params.clock not in ONE_VCPU_CLOCKS else "initramfs"
    env.setdefault("started", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    if model:
        env["cost_model"] = model
    env.update({
        "clock": params.clock, "accel": params.guest_accel,
        "iterations": params.iterations, "size": params.size,
        "flavour": params.flavour, "timeout": params.timeout,
        "bench": params.bench,
        "numa_matrix": git_describe(), "host": host_env(),
        "kernels": env.get("kernels", {}) | kinfo,
        "topologies": env.get("topologies", []) +
        [t for t in topos if t not in env.get("topologies", [])],  # names
        "scenarios": env.get("scenarios", {}) | dict(scenarios),
        "memory_nodes": env.get("memory_nodes", {}) | {
            name: len(topology.load(source).memory_nodes())
            for name, source in topos.items()},
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
    build = build_of_bench(bench)
    if build is None:
        raise UsageError(f"{bench} is not a Meson build dir's timedmunlock: "
                         "give --build-dir")
    plugin = cost_model_in(build)
    sha = file_sha256(plugin)
    if not sha:
        raise RunDirError(f"the cost model plugin {plugin} is not built: run "
                      "./numa-matrix setup (or meson compile -C build)")
    return {"plugin": plugin, "sha256": sha}


def read_cell(path):
    """Per-iteration seconds and pages of one cell file, and under the model
    clock each iteration's record ({"insns": N, ..., "cycles": N})."""
    seconds, pages, meta, model, where = [], None, {}, [], None
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if line.startswith(("# timedmunlock ", "# timedbatch ")):
                meta = dict(w.split("=", 1) for w in line.split()[2:] if "=" in w)
            if line.startswith("# cell "):
                try:
                    where = json.loads(line[len("# cell "):])
                except ValueError:
                    raise RunDirError(f"{path}:{lineno}: a '# cell' line that is "
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
                raise RunDirError(f"{path}:{lineno}: not a result line "
                              f"(iteration,op,pages,seconds): {line[:60]!r}") \
                    from None
            seconds.append(sec)
            pages = npages
    if not seconds:
        raise RunDirError(f"{path}: no iterations")
    if model and len(model) != len(seconds):
        raise RunDirError(f"{path}: {len(seconds)} iterations but {len(model)} "
                      "cost model records")
    return {"seconds": seconds, "pages": pages, "meta": meta, "model": model,
            "where": where}


def figures(cell, clock):
    """What a cell measured, per iteration: modelled cycles under the model
    clock, else seconds (under icount, instructions in nanoseconds)."""
    if clock != "model":
        return cell["seconds"]
    if not cell["model"]:
        raise RunDirError("a cell of a --clock model run has no '# model' lines: "
                      "its benchmark predates the cost model's markers")
    return [r["cycles"] for r in cell["model"]]


def load_run(rundir):
    """(env, {(topology, scenario, kernel): cell}, {key: why it failed})."""
    env = load_env(rundir)
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
                    except RunDirError as e:
                        failed[key] = "damaged: " + str(e).replace(
                            path, os.path.relpath(path, rundir))
                elif os.path.exists(path[:-4] + ".failed"):
                    failed[key] = "see `" + os.path.relpath(
                        path[:-4] + ".failed", rundir) + "`"
    return env, cells, failed


