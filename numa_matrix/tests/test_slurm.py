#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of results/slurm-submit, no cluster needed: resources per
topology, the jobs it submits and their dependencies (recorded by stand-in
sbatch/scancel/scontrol programs on PATH), resubmission of unfinished cells
only, cancelling on a refused sbatch, and the report job marking cells whose
task ended without a result. The real-cluster test is
results/tests/slurm_cluster.py."""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import QEMU_TOPOLOGIES, SLURM_SUBMIT  # noqa: E402
from numa_matrix import matrix as mx  # noqa: E402
from numa_matrix import slurm as ss  # noqa: E402
from numa_matrix import rundir as rd  # noqa: E402
from numa_matrix.util import atomic_write  # noqa: E402
from numa_matrix.types import RunRequest, SlurmRequest  # noqa: E402

PATH = SLURM_SUBMIT

# sbatch stand-in: logs its arguments, prints the next job id; refuses the
# call numbered $FAKE_SBATCH_REFUSE.
FAKE_SBATCH = """#!/usr/bin/python3
import json, os, sys
d = os.environ["FAKE_SLURM"]
n = len(open(os.path.join(d, "sbatch.log")).readlines()) + 1 \\
    if os.path.exists(os.path.join(d, "sbatch.log")) else 1
with open(os.path.join(d, "sbatch.log"), "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_SBATCH_REFUSE") == str(n):
    sys.exit("sbatch: error: Batch job submission failed: Invalid account")
print(100 + n)
"""
FAKE_SCANCEL = """#!/bin/sh
echo "$*" >> "$FAKE_SLURM/scancel.log"
"""
FAKE_SCONTROL = """#!/bin/sh
echo "JobId=$4 JobName=x JobState=CANCELLED Reason=None Dependency=(null) ExitCode=0:15"
"""
CELL = """# timedmunlock policy=bind:0 size=8388608 thp=never op=munlock iterations=2
iteration,op,pages,seconds
1,munlock,2048,0.0013
2,munlock,2048,0.0013
# summary op=munlock iterations=2
"""


class Submit(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.fake = os.path.join(self.dir, "bin")
        os.makedirs(self.fake)
        for name, text in (("sbatch", FAKE_SBATCH), ("scancel", FAKE_SCANCEL),
                           ("scontrol", FAKE_SCONTROL)):
            with open(os.path.join(self.fake, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(self.fake, name), 0o755)
        # A cache of its own: whether a kernel is built must not depend on
        # what this machine's cache holds.
        self.env = dict(os.environ, FAKE_SLURM=self.fake,
                        NUMA_MATRIX_CACHE=os.path.join(self.dir, "cache"),
                        PATH=self.fake + os.pathsep + os.environ["PATH"])
        self.env.pop("FAKE_SBATCH_REFUSE", None)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def submit(self, *args, refuse=None):
        env = dict(self.env)
        if refuse:
            env["FAKE_SBATCH_REFUSE"] = str(refuse)
        out = subprocess.run([PATH] + list(args), capture_output=True,
                             text=True, env=env, check=False)
        calls = []
        log = os.path.join(self.fake, "sbatch.log")
        if os.path.exists(log):
            with open(log) as f:
                calls = [json.loads(line) for line in f]
            os.unlink(log)
        return out, calls

    def options(self, call):
        return {a.split("=", 1)[0]: a.split("=", 1)[1] if "=" in a else True
                for a in call if a.startswith("--")}

    def plan(self, *extra):
        return ["--kernels", "baseline", "--topologies", "1node,4node,8node",
                "--scenarios", "bind", "--iterations", "2", "--size", "8M",
                "--results", os.path.join(self.dir, "results"),
                "--build-dir", os.path.join(self.dir, "build"),
                "--partition", "lab", "--account", "mm",
                "--sbatch-arg=--qos=short"] + list(extra)

    def test_jobs_and_dependencies(self):
        out, calls = self.submit(*self.plan())
        self.assertEqual(out.returncode, 0, out.stderr)
        rundir = out.stdout.splitlines()[0]
        self.assertEqual(len(calls), 4)             # build, 2 arrays, report
        opts = [self.options(c) for c in calls]
        for o in opts:
            self.assertTrue(o["--parsable"])
            self.assertEqual((o["--partition"], o["--account"], o["--qos"]),
                             ("lab", "mm", "short"))
        build, small, big, report = opts
        self.assertEqual(build["--job-name"], "nm-build-baseline")
        self.assertEqual(build["--cpus-per-task"], "8")
        # icount: one vCPU each; 1node has 1 GiB, 4node and 8node 2 GiB.
        self.assertEqual((small["--array"], small["--cpus-per-task"],
                          small["--mem"]), ("1-1", "1", "1536M"))
        self.assertEqual((big["--array"], big["--cpus-per-task"], big["--mem"]),
                         ("1-2", "1", "2560M"))
        for o in (small, big):
            self.assertEqual(o["--dependency"], "afterok:101")
            self.assertEqual(o["--kill-on-invalid-dep"], "yes")
            self.assertEqual(o["--time"], "20")      # 900 s + 300 s margin
        self.assertEqual(report["--dependency"], "afterany:102:103")
        with open(os.path.join(rundir, "slurm", "1", "jobs.json")) as f:
            jobs = json.load(f)
        self.assertEqual(jobs["report"], "104")
        self.assertEqual([a["cells"] for a in jobs["arrays"]],
                         [[["baseline", "1node", "bind"]],
                          [["baseline", "4node", "bind"], ["baseline", "8node", "bind"]]])
        with open(jobs["arrays"][1]["list"]) as f:
            self.assertEqual(f.read(), "baseline 4node bind\nbaseline 8node bind\n")
        # Task N reads line N of the list and hands it to matrix cell.
        with open(calls[2][-1]) as f:
            script = f.read()
        pick = [line for line in script.splitlines() if line.startswith("cell=")]
        r = subprocess.run(["sh", "-c", pick[0] + '; echo "$cell"'],
                           env=dict(self.env, SLURM_ARRAY_TASK_ID="2"),
                           capture_output=True, text=True, check=True)
        self.assertEqual(r.stdout, "baseline 8node bind\n")
        self.assertIn(f"results/matrix cell {rundir} \"$1\" \"$2\" \"$3\"", script)
        r = subprocess.run([calls[2][-1]], env=dict(self.env, SLURM_ARRAY_TASK_ID="3"),
                           capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no line 3", r.stderr)
        self.assertIn("squeue -j 101,102,103,104", out.stdout)

    def test_resume_submits_only_unfinished_cells(self):
        out, _ = self.submit(*self.plan())
        rundir = out.stdout.splitlines()[0]
        atomic_write(rd.cell_path(rundir, "4node", "bind", "baseline"), CELL)
        out, calls = self.submit("--resume", rundir, "--partition", "lab")
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(os.path.join(rundir, "slurm", "2", "jobs.json")) as f:
            jobs = json.load(f)
        self.assertEqual([c for a in jobs["arrays"] for c in a["cells"]],
                         [["baseline", "1node", "bind"], ["baseline", "8node", "bind"]])
        self.assertIn("2 of 3 cells to run (1 already done)", out.stdout)
        # The run keeps its own parameters.
        env = rd.load_env(rundir)
        self.assertEqual((env["iterations"], env["size"]), (2, "8M"))
        for name in ("1node", "8node"):
            atomic_write(rd.cell_path(rundir, name, "bind", "baseline"), CELL)
        out, calls = self.submit("--resume", rundir)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(calls, [])
        self.assertIn("nothing submitted", out.stdout)

    def test_refused_sbatch_cancels_what_was_queued(self):
        out, calls = self.submit(*self.plan(), refuse=3)
        self.assertEqual(out.returncode, 1)
        self.assertIn("Invalid account", out.stderr)
        self.assertEqual(len(calls), 3)
        with open(os.path.join(self.fake, "scancel.log")) as f:
            self.assertEqual(f.read().split(), ["101", "102"])

    def test_report_job_marks_cells_without_result(self):
        out, _ = self.submit(*self.plan())
        rundir = out.stdout.splitlines()[0]
        atomic_write(rd.cell_path(rundir, "1node", "bind", "baseline"), CELL)
        atomic_write(rd.cell_path(rundir, "4node", "bind", "baseline")[:-4]
                        + ".failed", "exit status 123\n")
        r = subprocess.run([PATH, "--finish", rundir, "1"], capture_output=True,
                           text=True, env=self.env, check=False)
        self.assertEqual(r.returncode, 1, r.stderr)     # the run is incomplete
        with open(rd.cell_path(rundir, "8node", "bind", "baseline")[:-4]
                  + ".failed") as f:
            failed = f.read()
        self.assertIn("array task 103_2 (8node bind baseline): JobState=CANCELLED",
                      failed)
        # matrix cell's own .failed (newer than the submission) is kept.
        with open(rd.cell_path(rundir, "4node", "bind", "baseline")[:-4]
                  + ".failed") as f:
            self.assertEqual(f.read(), "exit status 123\n")
        with open(os.path.join(rundir, "report.md")) as f:
            report = f.read()
        self.assertIn("- 8node bind baseline: see `cells/8node/bind/baseline.failed`",
                      report)
        self.assertIn("- 4node bind baseline: see", report)
        self.assertIn("finished 20", report)

    def test_built_kernel_gets_no_build_job(self):
        out, _ = self.submit(*self.plan())
        rundir = out.stdout.splitlines()[0]
        image = rd.load_env(rundir)["kernels"]["baseline"]["image"]
        os.makedirs(os.path.dirname(image))
        open(image, "w").close()
        out, calls = self.submit("--resume", rundir)
        self.assertEqual(out.returncode, 0, out.stderr)
        names = [self.options(c)["--job-name"] for c in calls]
        self.assertEqual(names, ["nm-baseline", "nm-baseline.2", "nm-report"])
        for c in calls[:2]:
            self.assertNotIn("--dependency", self.options(c))
        self.assertIn(f"built   kernel baseline (perf): {image}", out.stdout)
        # The report job says so of a task that ended without a result.
        subprocess.run([PATH, "--finish", rundir, "2"], capture_output=True,
                       text=True, env=self.env, check=False)
        with open(rd.cell_path(rundir, "1node", "bind", "baseline")[:-4]
                  + ".failed") as f:
            self.assertIn("the kernel was built before submission", f.read())

    def test_resume_keeps_a_labelled_kernel(self):
        plan = self.plan()
        plan[plan.index("--kernels") + 1] = "mine=linux-source-6.1@baseline"
        out, _ = self.submit(*plan)
        self.assertEqual(out.returncode, 0, out.stderr)
        rundir = out.stdout.splitlines()[0]
        out, calls = self.submit("--resume", rundir)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(list(rd.load_env(rundir)["kernels"]), ["mine"])
        self.assertIn("nm-mine", [self.options(c)["--job-name"] for c in calls])

    def test_array_throttle(self):
        out, calls = self.submit(*self.plan("--max-running", "3"))
        self.assertEqual(out.returncode, 0, out.stderr)
        arrays = [self.options(c)["--array"] for c in calls
                  if "--array" in self.options(c)]
        self.assertEqual(arrays, ["1-1%3", "1-2%3"])
        out, calls = self.submit(*self.plan("--max-running", "0"))
        self.assertEqual(out.returncode, 2)
        self.assertEqual(calls, [])

    def test_dry_run_leaves_nothing(self):
        out, calls = self.submit(*self.plan("--dry-run"))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(calls, [])
        self.assertIn("sbatch --parsable", out.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "results")))
        rundir = out.stdout.splitlines()[0]
        self.assertFalse(os.path.exists(rundir))
        # A dry run of a resume does not touch the run either.
        out, _ = self.submit(*self.plan())
        rundir = out.stdout.splitlines()[0]
        before = sorted(os.listdir(os.path.join(rundir, "slurm")))
        with open(os.path.join(rundir, "env.json")) as f:
            env_before = f.read()
        out, calls = self.submit("--resume", rundir, "--dry-run")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(calls, [])
        self.assertEqual(sorted(os.listdir(os.path.join(rundir, "slurm"))),
                         before)
        with open(os.path.join(rundir, "env.json")) as f:
            self.assertEqual(f.read(), env_before)

    def test_state_from_accounting_when_slurmctld_forgot(self):
        gone = "#!/bin/sh\nexit 1\n"
        sacct = ("#!/bin/sh\necho '103_2|TIMEOUT|None|0:0'\n"
                 "echo '103_2.batch|CANCELLED|None|0:15'\n")
        for name, text in (("scontrol", gone), ("sacct", sacct)):
            with open(os.path.join(self.fake, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(self.fake, name), 0o755)
        with mock.patch.dict(os.environ, {"PATH": self.env["PATH"]}):
            self.assertEqual(ss.slurm_state("103_2"),
                             {"JobState": "TIMEOUT", "Reason": "None",
                              "ExitCode": "0:0", "from": "sacct"})
            self.assertIsNone(ss.slurm_state("999"))
            os.unlink(os.path.join(self.fake, "sacct"))
            self.assertIsNone(ss.slurm_state("103_2"))

    def test_builds_of_one_tree_are_chained(self):
        a = {"source_kind": "git", "source": "/src/linux", "source_id": "git-a"}
        b = dict(a, source_id="git-b")
        pkg = {"source_kind": "package", "source_id": "ae10",
               "series_hash": "e3b0"}
        self.assertEqual(ss.tree_of(a), ss.tree_of(b))
        self.assertNotEqual(ss.tree_of(pkg), ss.tree_of(dict(pkg, series_hash="21a6")))
        # Two commits of one repository: the second build waits for the first.
        run = os.path.join(self.dir, "run")
        os.makedirs(os.path.join(run, "topologies"))
        shutil.copy(os.path.join(QEMU_TOPOLOGIES, "1node.topo"),
                    os.path.join(run, "topologies"))
        kernels = {k: dict(a, source_id=f"git-{k}", image=f"/nowhere/{k}",
                           spec=f"/src/linux@{k}") for k in ("c1", "c2")}
        env = {"clock": "icount", "accel": "tcg", "iterations": 1, "size": "1M",
               "flavour": "perf", "timeout": 900, "bench": "/b",
               "kernels": kernels, "topologies": ["1node"],
               "scenarios": {"bind": mx.SCENARIOS["bind"]}}
        with open(os.path.join(run, "env.json"), "w") as f:
            json.dump(env, f)
        cells = [("c1", "1node", "bind"), ("c2", "1node", "bind")]
        req = SlurmRequest(RunRequest())
        with mock.patch.dict(os.environ, self.env), \
                mock.patch.object(ss, "run_plan", return_value=(run, cells)), \
                contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(ss.submit_into(req, None), 0)
        with open(os.path.join(self.fake, "sbatch.log")) as f:
            calls = [json.loads(line) for line in f]
        first, second = (self.options(c) for c in calls[:2])
        self.assertEqual(first["--job-name"], "nm-build-c1")
        self.assertNotIn("--dependency", first)
        self.assertEqual(second["--dependency"], "afterany:101")
        with open(calls[0][-1]) as f:
            self.assertIn("export NUMA_MATRIX_BUILD_LOCK=none", f.read())

    def test_resources(self):
        topo = os.path.join(self.dir, "run", "topologies")
        os.makedirs(topo)
        for t in ("2node", "hotplug"):
            shutil.copy(os.path.join(QEMU_TOPOLOGIES, t + ".topo"), topo)
        run = os.path.dirname(topo)
        self.assertEqual(ss.resources(run, {"clock": "icount"}, "2node", 512),
                         (1, 1536))
        self.assertEqual(ss.resources(run, {"clock": "model"}, "2node", 512),
                         (1, 1536))
        self.assertEqual(ss.resources(run, {"clock": "wall"}, "2node", 512),
                         (2, 1536))
        # Room for what a hotplug topology can grow to.
        self.assertEqual(ss.resources(run, {"clock": "wall"}, "hotplug", 0),
                         (4, 2048))


if __name__ == "__main__":
    unittest.main(verbosity=2)
