#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The matrix through a real, one-host Slurm cluster (TAP).

Brings up munged, slurmctld and slurmd from Debian's packages (slurm-wlm,
munge) on localhost, as root and without systemd, with every file in a
temporary directory; submits a small matrix with results/slurm-submit (the
patched kernel, 1node and 2node, interleave, 2 iterations of 8M); checks
the report and that a local `matrix run` of the same selection gives the
same files and report format; then cancels one cell's array task while its
guest runs, checks that the report marks it failed, resubmits the run and
checks that it completes; then makes a kernel build job fail (cancelled
before it starts) and checks that the cells needing it are reported failed.
The daemons are stopped at the end, also when a check fails or the test is
interrupted.

  slurm_cluster.py [--bench BUILD/numa-tests/bench/timedmunlock] [--keep]

Skips (saying why) only when it cannot run: not root, or the Slurm packages
are missing and apt-get cannot install them. See docs/slurm.md.
"""

import argparse
import ctypes
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
SUBMIT = os.path.join(TOP, "results", "slurm-submit")
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
from numa_matrix import cache_root  # noqa: E402
CACHE = cache_root()
MATRIX = os.path.join(TOP, "results", "matrix")
BENCH_SUFFIX = os.path.join("numa-tests", "bench", "timedmunlock")
NODE = "nmtest"
PARTITION = "nmtest"
# A cell takes 10-20 s here; --timeout bounds a guest that outlives the
# test (killed with SIGKILL, its daemons gone before they could cancel it).
# The kernel CI builds anyway (./numa-matrix test): a cold build here would
# cost CI some 15 minutes.
KERNEL = "patched"
SELECTION = ["--kernels", KERNEL, "--topologies", "1node,2node",
             "--scenarios", "interleave", "--iterations", "2", "--size", "8M",
             "--timeout", "120"]
TOOLS = {"munged": "munge", "mungekey": "munge", "slurmctld": "slurmctld",
         "slurmd": "slurmd", "sbatch": "slurm-client", "squeue": "slurm-client",
         "scontrol": "slurm-client", "scancel": "slurm-client",
         "sinfo": "slurm-client"}
# Seconds a submission may take to end. Its cells take 10-20 s each on an
# idle 2-core host; with other guests and a kernel build sharing the two
# cores (load average 18), one submission took 80 s.
BOUND = 600
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY",
         "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE"}


class Stop(Exception):
    """A step failed; the checks after it cannot run."""


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, what, detail=""):
        self.n += 1
        print(f"{'ok' if cond else 'not ok'} {self.n} - {what}", flush=True)
        if not cond:
            self.failed += 1
            for line in str(detail).rstrip().splitlines():
                print(f"#   {line}")
        return cond

    def must(self, cond, what, detail=""):
        if not self.ok(cond, what, detail):
            raise Stop(what)

    @staticmethod
    def note(text):
        for line in str(text).rstrip("\n").splitlines() or [""]:
            print(f"# {line}", flush=True)


def skip(reason):
    print(f"1..0 # SKIP {reason}")
    sys.exit(0)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)


# ---------------------------------------------------------------- packages

def missing_tools():
    return sorted({pkg for tool, pkg in TOOLS.items() if not shutil.which(tool)})


def ensure_packages():
    if not missing_tools():
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends",
           "slurm-wlm", "munge"]
    Tap.note("installing slurm-wlm and munge")
    if run(cmd, env=env).returncode != 0:
        run(["apt-get", "update", "-q"], env=env)
        out = run(cmd, env=env)
        if out.returncode != 0:
            skip("Slurm packages missing and apt-get could not install them: "
                 + (out.stderr.strip().splitlines() or ["?"])[-1])
    if missing_tools():
        skip(f"still missing after apt-get: {', '.join(missing_tools())}")


# ---------------------------------------------------------------- the cluster

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_test():
    """A daemon gets SIGTERM when the test dies, even by SIGKILL (Meson's
    timeout sends SIGKILL half a second after SIGTERM); its own session keeps
    a Ctrl-C for the test from reaching it before the jobs are cancelled."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    os.setsid()


class Cluster:
    """munged + slurmctld + slurmd on localhost, all files under `root`."""

    def __init__(self, root):
        self.root = root
        self.procs = {}
        self.conf = os.path.join(root, "etc", "slurm.conf")
        self.cgroups = []

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def write_config(self):
        for d in ("etc", "munge", "state", "spool", "log"):
            os.makedirs(self.path(d), exist_ok=True)
        # munged wants every directory above its socket searchable by all.
        os.chmod(self.root, 0o755)
        hw = run(["slurmd", "-C"]).stdout.splitlines()[0].split()
        node = [w for w in hw if w.split("=")[0] in
                ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket",
                 "ThreadsPerCore", "RealMemory")]
        self.cpus = int(dict(w.split("=") for w in node)["CPUs"])
        ctld, slurmd = free_port(), free_port()
        conf = f"""# Written by results/tests/slurm_cluster.py: a one-host test cluster.
ClusterName=numamatrixtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.path('munge', 'munge.socket')}
CredType=cred/munge
StateSaveLocation={self.path('state')}
SlurmdSpoolDir={self.path('spool')}
SlurmctldPidFile={self.path('slurmctld.pid')}
SlurmdPidFile={self.path('slurmd.pid')}
SlurmctldLogFile={self.path('log', 'slurmctld.log')}
SlurmdLogFile={self.path('log', 'slurmd.log')}
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
KillWait=10
SlurmdParameters=config_overrides
NodeName={NODE} NodeAddr=127.0.0.1 {' '.join(node)} State=UNKNOWN
PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
"""
        with open(self.conf, "w") as f:
            f.write(conf)
        # Jobs get the memory and CPUs they asked for, no more: a cell whose
        # --mem is too small is killed, and the test fails.
        with open(self.path("etc", "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=autodetect\nIgnoreSystemdOnFailure=yes\n"
                    "ConstrainRAMSpace=yes\nConstrainCores=yes\n")
        os.environ["SLURM_CONF"] = self.conf
        # Where slurmd's cgroup/v1 plugin puts jobs: removed at the end if
        # this test made it.
        self.cgroups = [d for d in glob.glob("/sys/fs/cgroup/*/")
                        if not os.path.exists(os.path.join(d, f"slurm_{NODE}"))]

    def start(self, name, cmd):
        log = open(self.path("log", name + ".out"), "w")
        self.procs[name] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT,
                                            preexec_fn=die_with_test)

    def wait_for(self, what, cond, timeout):
        t0 = time.time()
        while time.time() - t0 < timeout:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise Stop(f"{name} exited with status {p.returncode} "
                               f"(log {self.path('log', name + '.out')})")
            if cond():
                return time.time() - t0
            time.sleep(0.2)
        raise Stop(f"{what} not within {timeout} s")

    def up(self):
        key = self.path("munge", "munge.key")
        out = run(["mungekey", "--create", f"--keyfile={key}"])
        if out.returncode != 0:
            raise Stop(f"mungekey: {out.stderr.strip()}")
        sock = self.path("munge", "munge.socket")
        self.start("munged", ["munged", "--foreground", f"--socket={sock}",
                              f"--key-file={key}",
                              f"--pid-file={self.path('munge', 'munged.pid')}",
                              f"--seed-file={self.path('munge', 'munged.seed')}",
                              f"--log-file={self.path('log', 'munged.log')}"])
        self.wait_for("munged's socket", lambda: os.path.exists(sock), 20)
        self.start("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        self.start("slurmd", ["slurmd", "-D", "-f", self.conf, "-N", NODE])
        return self.wait_for(
            f"node {NODE} idle",
            lambda: run(["sinfo", "-h", "-n", NODE, "-o", "%T"]).stdout.strip()
            == "idle", 60)

    def down(self):
        """Cancel every job of this cluster, wait for them, stop the daemons."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            run(["scancel", f"--partition={PARTITION}"])
            t0 = time.time()
            while time.time() - t0 < 60 and run(["squeue", "-h"]).stdout.strip():
                time.sleep(0.5)
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for d in self.cgroups:
            path = os.path.join(d, f"slurm_{NODE}")
            for sub, _, _ in sorted(os.walk(path), key=lambda w: -len(w[0])):
                try:
                    os.rmdir(sub)
                except OSError:
                    pass

    def logs(self):
        for name in ("slurmctld.log", "slurmd.log"):
            path = self.path("log", name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    lines = f.readlines()[-15:]
                Tap.note(f"--- last lines of {path}")
                Tap.note("".join(lines))


# ---------------------------------------------------------------- jobs

def job_fields(job):
    out = run(["scontrol", "-o", "show", "job", str(job)])
    if out.returncode != 0 or not out.stdout.strip():
        return {}
    return dict(w.split("=", 1) for w in out.stdout.splitlines()[0].split()
                if "=" in w)


def mib(text):
    """Slurm's memory figures (1536M, 1.50G) in MiB."""
    m = re.fullmatch(r"([0-9.]+)([KMGT]?)", text or "")
    if not m:
        return None
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[m[2]]
    return round(float(m[1]) * scale)


def wait_job(job, timeout):
    """The state a job ended in, or None at the timeout."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        state = job_fields(job).get("JobState")
        if state in ENDED:
            return state
        time.sleep(1)
    return None


def submit(extra):
    out = run([SUBMIT] + extra)
    Tap.note(out.stdout)
    if out.returncode != 0:
        raise Stop(f"slurm-submit failed ({out.returncode}): {out.stderr.strip()}")
    rundir = out.stdout.splitlines()[0]
    subs = sorted(glob.glob(os.path.join(rundir, "slurm", "*", "jobs.json")),
                  key=os.path.getmtime)
    with open(subs[-1]) as f:
        return rundir, json.load(f)


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def files_of(rundir):
    found = set()
    for d, dirs, files in os.walk(rundir):
        rel = os.path.relpath(d, rundir)
        if rel == "slurm" or rel.startswith("slurm" + os.sep):
            continue
        found |= {os.path.normpath(os.path.join(rel, f)) for f in files}
    return found


def report_shape(text):
    """A report with its figures, dates and run id taken out."""
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return [re.sub(r" +", " ", line).rstrip() for line in text.splitlines()]


def job_pids(job):
    """The processes of a running job on this node, as Slurm tracks them."""
    out = run(["scontrol", "listpids", str(job), NODE])
    return [int(w[0]) for w in (line.split() for line in out.stdout.splitlines())
            if w and w[0].isdigit()]


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def guests_of(marker):
    """Processes (QEMU, run-guest) whose command line names `marker`."""
    pids = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        pids.append(int(pid))
            except OSError:
                pass
    return pids


# ---------------------------------------------------------------- the test

def unbuilt_kernel(tmp):
    """A kernel spec the cache has no image of: KERNEL with a series of
    one harmless patch (its build job is cancelled before it starts)."""
    series = os.path.join(tmp, "series-unbuilt")
    os.makedirs(series)
    with open(os.path.join(series, "series"), "w") as f:
        f.write("0001-note.patch\n")
    with open(os.path.join(series, "0001-note.patch"), "w") as f:
        f.write(f"--- a/NOTE\n+++ b/NOTE\n@@ -0,0 +1 @@\n+{time.time()}\n")
    return f"unbuilt={KERNEL}+{series}"


def the_test(t, cluster, tmp, bench, first_bound, built):
    build = bench[:-len(BENCH_SUFFIX) - 1]
    results = os.path.join(tmp, "results")
    # Guest run directories of this test only, so that a QEMU left behind
    # by a cancelled cell can be found (sbatch passes the environment on).
    guest_runs = os.path.join(tmp, "guest-runs")
    os.makedirs(guest_runs)
    os.environ["NUMA_MATRIX_RUNS"] = guest_runs
    # The "cluster" is this one shared machine: its build jobs keep to the
    # machine's one heavy build at a time.
    lock = ["--build-lock", os.path.join(CACHE, "build.lock")]
    options = ["--partition", PARTITION, "--build-cpus", str(cluster.cpus),
               "--results", results, "--build-dir", build] + lock

    took = cluster.up()
    t.ok(True, f"munged, slurmctld and slurmd up, node {NODE} idle "
               f"({took:.1f} s)")

    # 1. The small matrix through Slurm.
    t0 = time.time()
    rundir, jobs = submit(SELECTION + options)
    arrays = jobs["arrays"]
    t.must(list(jobs["builds"]) == ([] if built else [KERNEL]) and
           len(arrays) == 1 and
           arrays[0]["cells"] == [[KERNEL, "1node", "interleave"],
                                  [KERNEL, "2node", "interleave"]],
           ("no build job (the kernel is built)" if built else
            "one build job") + ", one array of the two cells, one report job",
           json.dumps(jobs, indent=2))
    with open(arrays[0]["list"]) as f:
        t.ok(f.read() == f"{KERNEL} 1node interleave\n"
             f"{KERNEL} 2node interleave\n",
             "the cell list in the run directory maps task N to line N")
    state = wait_job(jobs["report"], first_bound)
    t.note(f"first submission: report job {state} after {time.time() - t0:.1f} s")
    t.must(state == "COMPLETED", "the report job completed", f"state {state}")
    task = job_fields(f"{arrays[0]['job']}_2")
    t.ok(task.get("NumCPUs") == "1" and mib(task.get("MinMemoryNode")) == 1536,
         "a cell task ran with the resources derived from its topology "
         "(icount: 1 CPU; 1 GiB guest + 512 MiB: 1536M)",
         f"NumCPUs={task.get('NumCPUs')} MinMemoryNode={task.get('MinMemoryNode')}")
    report = read(os.path.join(rundir, "report.md"))
    t.ok("1node:" in report and "2node:" in report and
         report.count("Elapsed mean    ms") == 2 and
         "failed cells" not in report and "not run yet" not in report,
         "report.md has both cells' tables and no failed or missing cell", report)
    env = json.load(open(os.path.join(rundir, "env.json")))
    t.ok("finished" in env, "env.json says when the run finished, as after "
         "matrix run")
    for topo in ("1node", "2node"):
        csv = read(os.path.join(rundir, "cells", topo, "interleave",
                                KERNEL + ".csv"))
        rows = [line for line in csv.splitlines() if line.startswith(("1,", "2,"))]
        t.ok(len(rows) == 2, f"{topo}: two iterations recorded", csv)
    t.note("report.md of the run through Slurm:")
    t.note(report)

    # 2. The same selection run locally: same files, same report format.
    t0 = time.time()
    local_results = os.path.join(tmp, "local")
    out = run([MATRIX, "run"] + SELECTION +
              ["--results", local_results, "--build-dir", build])
    t.note(f"local matrix run: exit {out.returncode} after {time.time() - t0:.1f} s")
    t.must(out.returncode == 0, "a local matrix run of the same selection",
           out.stderr)
    local = glob.glob(os.path.join(local_results, "*", "*"))[0]
    t.ok(files_of(local) == files_of(rundir),
         "the run through Slurm has the local run's files (besides slurm/)",
         f"local only: {sorted(files_of(local) - files_of(rundir))}\n"
         f"Slurm only: {sorted(files_of(rundir) - files_of(local))}")
    a, b = report_shape(read(os.path.join(local, "report.md"))), report_shape(report)
    t.ok(a == b, "the two reports have the same format (figures aside)",
         "\n".join(f"local: {x}\nslurm: {y}" for x, y in zip(a, b) if x != y))
    out = run([MATRIX, "compare", local, rundir])
    t.ok(out.returncode == 0 and
         len(re.findall(rf"^{KERNEL} on (1node|2node)\n  interleave +[0-9.]+ +"
                        r"[0-9.]+ +[-+][0-9.]+%", out.stdout, re.M)) == 2,
         "matrix compare works across a local run and a Slurm run",
         out.stdout + out.stderr)
    t.note(out.stdout)

    # 3. Cancel one cell while its guest runs: reported failed, not lost.
    t0 = time.time()
    rundir, jobs = submit(SELECTION + options)
    victim = f"{jobs['arrays'][0]['job']}_2"
    deadline = time.time() + BOUND
    while time.time() < deadline and job_fields(victim).get("JobState") != "RUNNING":
        time.sleep(0.2)
    t.must(job_fields(victim).get("JobState") == "RUNNING",
           f"array task {victim} (2node) started")
    qemu = []
    deadline = time.time() + 60
    while time.time() < deadline and not qemu:
        qemu = [p for p in job_pids(job_fields(victim).get("JobId"))
                if comm(p).startswith("qemu-system")]
        time.sleep(0.2)
    t.must(qemu, f"task {victim}'s guest is running (QEMU pid {qemu})")
    time.sleep(1)
    out = run(["scancel", victim])
    t.must(out.returncode == 0, f"scancel {victim}", out.stderr)
    state = wait_job(jobs["report"], BOUND)
    t.note(f"cancelled submission: report job {state} after {time.time() - t0:.1f} s")
    t.must(state in ENDED, "the report job ran after the cancelled task",
           f"state {state}")
    t.ok(job_fields(victim).get("JobState") == "CANCELLED",
         f"Slurm says task {victim} was cancelled", str(job_fields(victim)))
    left = [p for p in qemu if comm(p).startswith("qemu-system")] + \
        guests_of(guest_runs)
    t.ok(not left, "no guest outlived the cancelled task",
         f"still running: {left}")
    cell = os.path.join(rundir, "cells", "2node", "interleave", KERNEL)
    t.must(not os.path.exists(cell + ".csv"),
           "the cancelled cell has no figures (it was cancelled in time)")
    failed = read(cell + ".failed") if os.path.exists(cell + ".failed") else ""
    t.ok("CANCELLED" in failed, "its .failed file says Slurm cancelled it",
         failed)
    report = read(os.path.join(rundir, "report.md"))
    t.ok("## failed cells" in report and
         f"- 2node interleave {KERNEL}: see "
         f"`cells/2node/interleave/{KERNEL}.failed`"
         in report and "1node:" in report and "2node:" not in report,
         "the report marks the cancelled cell failed and keeps the other",
         report)
    t.ok(state == "FAILED", "the report job's exit status says the run is "
         "incomplete", f"state {state}")
    t.note(f".failed of the cancelled cell:\n{failed}")

    # 4. Resubmit: only the failed cell runs, and the run completes.
    t0 = time.time()
    kept = os.path.join(rundir, "cells", "1node", "interleave", KERNEL + ".csv")
    before = (read(kept), os.stat(kept).st_mtime_ns)
    _, jobs = submit(["--resume", rundir, "--partition", PARTITION,
                      "--build-cpus", str(cluster.cpus)] + lock)
    t.ok([c for a in jobs["arrays"] for c in a["cells"]] ==
         [[KERNEL, "2node", "interleave"]],
         "the resubmission runs only the cell that did not finish",
         json.dumps(jobs["arrays"], indent=2))
    state = wait_job(jobs["report"], BOUND)
    t.note(f"resubmission: report job {state} after {time.time() - t0:.1f} s")
    t.ok(state == "COMPLETED", "the resubmitted run completed", f"state {state}")
    report = read(os.path.join(rundir, "report.md"))
    t.ok("1node:" in report and "2node:" in report and
         "failed cells" not in report and not os.path.exists(cell + ".failed"),
         "the report has both cells again and no failed cell", report)
    t.ok((read(kept), os.stat(kept).st_mtime_ns) == before,
         "the finished cell was not run again")

    # 5. A kernel build that fails: Slurm cancels the cells that needed it
    # and the report still comes. A kernel not in the cache (a built one
    # gets no build job), submitted held, so that the build job can be
    # cancelled before it starts; then the rest is released.
    t0 = time.time()
    selection = list(SELECTION)
    selection[selection.index("--kernels") + 1] = unbuilt_kernel(tmp)
    rundir, jobs = submit(selection + options + ["--sbatch-arg=--hold"])
    t.must(list(jobs["builds"]) == ["unbuilt"], "a build job for the kernel "
           "the cache does not have", json.dumps(jobs, indent=2))
    build_job = jobs["builds"]["unbuilt"]
    out = run(["scancel", build_job])
    t.must(out.returncode == 0, f"scancel the build job {build_job}", out.stderr)
    out = run(["scontrol", "release",
               ",".join([a["job"] for a in jobs["arrays"]] + [jobs["report"]])])
    t.must(out.returncode == 0, "release the cells and the report job", out.stderr)
    state = wait_job(jobs["report"], BOUND)
    t.note(f"failed build: report job {state} after {time.time() - t0:.1f} s")
    t.must(state in ENDED, "the report job ran although the build failed",
           f"state {state}")
    failed = [read(os.path.join(rundir, "cells", topo, "interleave",
                                "unbuilt.failed"))
              if os.path.exists(os.path.join(rundir, "cells", topo, "interleave",
                                             "unbuilt.failed")) else ""
              for topo in ("1node", "2node")]
    t.ok(all("DependencyNeverSatisfied" in f and
             f"kernel build job {build_job}: JobState=CANCELLED" in f
             for f in failed),
         "both cells are marked failed, naming the build job", "\n".join(failed))
    report = read(os.path.join(rundir, "report.md"))
    t.ok(report.count("unbuilt: see `cells/") == 2,
         "the report lists both cells as failed", report)


def on_sigterm(signum, frame):
    # Meson's timeout: stop the daemons on the way out (the finally below).
    raise Stop("SIGTERM")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", help="the timedmunlock binary (default: "
                    "$NUMA_MATRIX_BUILD or build/, + numa-tests/bench/timedmunlock)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary directory (logs, run dirs)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        skip("not root: slurmd must run as root to start jobs, and the test "
             "may have to apt-get install slurm-wlm munge")
    ensure_packages()
    t = Tap()
    bench = os.path.abspath(args.bench or os.path.join(
        os.environ.get("NUMA_MATRIX_BUILD", os.path.join(TOP, "build")),
        BENCH_SUFFIX))
    if not (bench.endswith(os.sep + BENCH_SUFFIX) and os.access(bench, os.X_OK)):
        t.ok(False, f"the benchmark {bench} is built",
             "build it (./numa-matrix setup) or give --bench "
             f"<build>/{BENCH_SUFFIX}")
        print(f"1..{t.n}")
        return 1
    info = json.loads(run([os.path.join(TOP, "kernel-series", "build-kernel"),
                           KERNEL, "--info"]).stdout)
    # A cold kernel build (about 7 minutes on 2 cores) runs in the first
    # submission's build job.
    first_bound = BOUND if info["built"] else BOUND + 1800
    if not info["built"]:
        t.note(f"the {KERNEL} kernel is not built: the first submission's build "
               "job builds it")
    tmp = tempfile.mkdtemp(prefix="nm-slurm-test.")
    cluster = Cluster(tmp)
    t.note(f"cluster and runs in {tmp}")
    signal.signal(signal.SIGTERM, on_sigterm)
    t0 = time.time()
    try:
        cluster.write_config()
        the_test(t, cluster, tmp, bench, first_bound, info["built"])
    except Stop as e:
        t.ok(False, f"stopped: {e}")
    except Exception as e:  # an error in the test itself still stops the daemons
        t.ok(False, f"error: {e!r}")
    finally:
        if t.failed:
            cluster.logs()
        cluster.down()
        t.note(f"wall time {time.time() - t0:.1f} s, daemons stopped")
    if t.failed or args.keep:
        t.note(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"1..{t.n}")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
