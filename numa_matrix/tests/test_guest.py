#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of run-guest: the QEMU command line a topology turns into,
and which kernel log lines fail a run."""

import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import guest as rg  # noqa: E402
from numa_matrix import RUN_GUEST, hostctl, topology  # noqa: E402
from numa_matrix.tests.helpers import (FAKE_QEMU, fake_bzimage,  # noqa: E402
                                       fake_qemu_boots, fake_qemu_env)
from numa_matrix.types import GUEST_EXITS, GuestRequest, GuestResult  # noqa: E402


def request(topo, **kw):
    """A GuestRequest for the machine TOPO (a catalogue name or a
    Topology), kernel /k/bzImage, command true unless KW says otherwise."""
    if isinstance(topo, str):
        topo = topology.find(topo)
    kw.setdefault("argv", ["true"])
    kw.setdefault("kernel", "/k/bzImage")
    return GuestRequest(topology=topo, **kw)

# Real formats of kernel messages that must fail a run.
BAD = [
    "[   12.1] WARNING: CPU: 1 PID: 77 at mm/mlock.c:212 mlock_pagevec+0x1c/0x20",
    "[   12.1] WARNING: possible circular locking dependency detected",
    "[    3.1] BUG: Bad page state in process a.out  pfn:1234a",
    "[    3.1] Bad page map in process a.out  pte:8000000012345067",
    "[    3.1] BUG: unable to handle page fault for address: ffff888000000000",
    "[    3.1] kernel BUG at mm/mlock.c:120!",
    "[    3.1] general protection fault, probably for non-canonical address "
    "0xdead000000000100: 0000 [#1] PREEMPT SMP NOPTI",
    "[    3.1] Kernel panic - not syncing: sysrq triggered crash",
    "[    3.1] list_add corruption. prev->next should be next (ffff888)",
    "[    3.1] BUG: sleeping function called from invalid context at mm/gup.c:1",
    "[    3.1] =============================\n[    3.1] WARNING: suspicious RCU usage",
    "[  200.0] INFO: task a.out:77 blocked for more than 120 seconds.",
    "[    3.1] Out of memory: Killed process 77 (a.out) total-vm:1kB",
]
GOOD = [
    "[    0.7] sit: IPv6, IPv4 and MPLS over IPv4 tunneling driver",
    "[    1.4] Run /work/main/qemu-topologies/guest-init as init process",
    "[    5.0] a.out[77]: segfault at 0 ip 0000000000401136 sp 00007ffd error 6",
    "[    5.0] traps: a.out[78] general protection fault ip:401136 sp:7ffd "
    "error:0 in a.out[401000+1000]",
    "[    5.0] sysrq: Power Off",
    "[    0.0] Memory: 2012345K/2096632K available",
]


class Splats(unittest.TestCase):
    def test_bad_lines_fail(self):
        for line in BAD:
            lines, found = rg.splats(line)
            self.assertTrue(found, line)

    def test_ordinary_lines_pass(self):
        lines, found = rg.splats("\n".join(GOOD))
        self.assertEqual(found, [], [lines[i] for i in found])

    OOM = ["[   20.1] a.out invoked oom-killer: gfp_mask=0x140dca, order=0",
           "[   20.2] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),"
           "task=a.out,pid=77",
           "[   20.2] Out of memory: Killed process 77 (a.out) total-vm:1kB"]

    def test_a_tests_own_lines_never_fail(self):
        lines, found = rg.splats("[    9.0] numa-matrix-test: WARNING: "
                                 "BUG: words a test printed")
        self.assertEqual(found, [])

    def test_declared_oom_is_allowed_and_only_it(self):
        allowed = []
        log = "\n".join(
            ["[   19.0] numa-matrix-test: allow oom: fills node 1 on purpose"]
            + self.OOM
            + ["[   20.3] WARNING: CPU: 1 PID: 77 at mm/mlock.c:212 x+0x1/0x2",
               "[   21.0] numa-matrix-test: end allow oom"]
            + self.OOM)
        lines, found = rg.splats(log, allowed)
        self.assertEqual([lines[i] for i in found],
                         [log.splitlines()[4]] + self.OOM[2:])
        self.assertEqual([(k, w) for _, k, w in allowed],
                         [("oom", "fills node 1 on purpose")])

    def test_undeclared_or_unknown_allowance_changes_nothing(self):
        for head in ("", "[    1.0] numa-matrix-test: allow everything: no\n",
                     "[    1.0] someone: allow oom: not a test line\n"):
            lines, found = rg.splats(head + "\n".join(self.OOM))
            self.assertTrue(found, head)


class QemuCommand(unittest.TestCase):
    def command(self, name, clock="wall", accel="tcg", shares=()):
        t = topology.find(name)
        if clock in rg.ONE_VCPU_CLOCKS:
            t = t.single_cpu()
        return rg.qemu_command(t, "/k/bzImage", "console=ttyS0", "/run/x",
                               list(shares), accel, clock, plugin="/b/cm.so")

    def test_4node(self):
        cmd = self.command("4node")
        text = " ".join(cmd)
        # A socket per vCPU, so that no L3 is shared across nodes.
        self.assertIn("-smp 4,sockets=4,cores=1,threads=1", text)
        self.assertIn("-m 2048M", text)
        for n in range(4):
            self.assertIn(f"node,nodeid={n},cpus={n},memdev=mem{n}", text)
            self.assertIn(f"memory-backend-ram,id=mem{n},size=512M", text)
        # Symmetric SLIT: one dist option per pair, QEMU mirrors it.
        self.assertEqual(sum(1 for a in cmd if a.startswith("dist,")), 6)
        self.assertIn("tcg,thread=multi", cmd)
        self.assertNotIn("-icount", cmd)

    def test_icount_is_single_cpu_tcg(self):
        cmd = self.command("4node", clock="icount")
        self.assertIn("-icount", cmd)
        self.assertIn("shift=0,sleep=off", cmd)
        self.assertIn("-smp", cmd)
        self.assertEqual(cmd[cmd.index("-smp") + 1], "1")
        self.assertIn("node,nodeid=1,memdev=mem1", cmd)

    def test_model_is_icount_with_the_plugin(self):
        cmd = self.command("8node", clock="model")
        self.assertIn("shift=0,sleep=off", cmd)
        self.assertEqual(cmd[cmd.index("-cpu") + 1], "max,-rdrand,-rdseed")
        self.assertEqual(cmd[cmd.index("-rtc") + 1], "base=2020-01-01T00:00:00,clock=vm")
        self.assertEqual(cmd[cmd.index("-smp") + 1], "1")
        plugin = cmd[cmd.index("-plugin") + 1].split(",")
        self.assertEqual(plugin[0], "/b/cm.so")
        args = dict(a.split("=", 1) for a in plugin[1:])
        self.assertEqual(args["nodes"], ":".join(["256M"] * 8))
        slit = [int(d) for d in args["slit"].split(":")]
        self.assertEqual(len(slit), 64)
        # Rows of 8node.topo: node 0 to 4 is 32, node 5 to 6 is 16.
        self.assertEqual((slit[0], slit[1], slit[4], slit[5 * 8 + 6]), (10, 16, 32, 16))
        self.assertEqual(args["vcpu_nodes"], "0")
        self.assertEqual(args["out"], "/run/x/share/model.log")
        self.assertNotIn("-plugin", self.command("8node", clock="icount"))

    def test_model_profile_is_a_plugin_argument_only_when_asked(self):
        t = topology.find("4node").single_cpu()
        cmd = rg.qemu_command(t, "/k/bzImage", "x", "/run/x", [], "tcg",
                              "model", plugin="/b/cm.so", profile=True)
        plugin = cmd[cmd.index("-plugin") + 1]
        self.assertTrue(plugin.endswith(",profile=/run/x/profile.txt"), plugin)
        plugin = self.command("4node", clock="model")[
            self.command("4node", clock="model").index("-plugin") + 1]
        self.assertNotIn("profile=", plugin)
        arg = rg.model_plugin_arg(t, "/cm.so", "/r/model.log", "/r,1/profile.txt")
        self.assertTrue(arg.endswith(",out=/r/model.log,profile=/r,,1/profile.txt"),
                        arg)

    def test_guest_kernels_boot_at_their_linked_address(self):
        # The profile maps guest addresses through System.map: no KASLR.
        for clock in ("model", "icount", "wall"):
            line = rg.kernel_cmdline(request("2node", clock=clock,
                                             root="initramfs"))
            self.assertIn("nokaslr", line.split())

    def test_model_commas_and_memoryless_nodes(self):
        t = topology.parse("description x\nnode 0 cpus=0\nnode 1 cpus=1 mem=64M\n"
                           "node 2 mem=64M\n")
        arg = rg.model_plugin_arg(t, "/a,b/cm.so", "/r,1/share/model.log")
        self.assertTrue(arg.startswith("/a,,b/cm.so,nodes=0M:64M:64M,"), arg)
        self.assertIn(",slit=10:20:20:20:10:20:20:20:10,vcpu_nodes=0:1,", arg)
        self.assertTrue(arg.endswith(",out=/r,,1/share/model.log"), arg)

    def test_model_kernel_keeps_lock_prefixes(self):
        req = request(topology.find("2node").single_cpu(), clock="model")
        line = rg.kernel_cmdline(req)
        self.assertIn("noreplace-smp", line.split())
        self.assertIn("norandmaps", line.split())
        line = rg.kernel_cmdline(request("2node", clock="icount"))
        self.assertNotIn("noreplace-smp", line.split())
        self.assertIn("norandmaps", line.split())
        self.assertNotIn("norandmaps",
                         rg.kernel_cmdline(request("2node", clock="wall")))

    def test_icount_takes_the_hosts_randomness_away(self):
        cmd = self.command("4node", clock="icount")
        self.assertEqual(cmd[cmd.index("-cpu") + 1], "max,-rdrand,-rdseed")
        self.assertEqual(cmd[cmd.index("-rtc") + 1], "base=2020-01-01T00:00:00,clock=vm")


    def test_missing_plugin_says_how_to_build_it(self):
        os.environ["NUMA_MATRIX_COSTMODEL"] = "/nonexistent/costmodel.so"
        try:
            with self.assertRaisesRegex(rg.SetupError, "not built: run 'meson compile"):
                rg.cost_model_plugin()
        finally:
            del os.environ["NUMA_MATRIX_COSTMODEL"]

    def test_kvm(self):
        cmd = self.command("2node", accel="kvm")
        self.assertEqual(cmd[cmd.index("-accel") + 1], "kvm")
        self.assertEqual(cmd[cmd.index("-cpu") + 1], "host")

    def test_writable_shares_and_ports(self):
        cmd = self.command("1node", shares=["/b"])
        text = " ".join(cmd)
        self.assertIn("local,id=w0,path=/b,security_model=none", text)
        self.assertIn("readonly=on", text)
        for port in ("stdout", "stderr", "status"):
            self.assertIn(f"virtserialport,chardev={port},name=nm.{port}", text)

    def test_asymmetric_distances_give_both_directions(self):
        t = topology.parse("description x\nnode 0 cpus=0 mem=64M\n"
                           "node 1 mem=64M\ndistance 0: 10 20\n"
                           "distance 1: 30 10\nasymmetric-distances\n")
        args = rg.numa_args(t)
        self.assertIn("dist,src=0,dst=1,val=20", args)
        self.assertIn("dist,src=1,dst=0,val=30", args)


class InitramfsRoot(unittest.TestCase):
    """--root initramfs: the guest's root is an initramfs, and nothing of
    the host reaches the guest after QEMU starts it."""

    def test_no_9p_and_no_control_channel(self):
        t = topology.find("4node").single_cpu()
        cmd = rg.qemu_command(t, "/k/bzImage", "x", "/run/x", [], "tcg",
                              "model", plugin="/b/cm.so", initrd="/run/x/i.cpio")
        self.assertEqual(cmd[cmd.index("-initrd") + 1], "/run/x/i.cpio")
        self.assertFalse([a for a in cmd if "9p" in a or "fsdev" in a], cmd)
        self.assertNotIn("-qmp", cmd)
        plugin = dict(a.split("=", 1) for a in
                      cmd[cmd.index("-plugin") + 1].split(",")[1:])
        # Not in a share: there is none.
        self.assertEqual(plugin["out"], "/run/x/model.log")

    def test_kernel_unpacks_it_and_mounts_nothing(self):
        line = rg.kernel_cmdline(request("2node", clock="icount",
                                         root="initramfs")).split()
        self.assertIn("rdinit=/init", line)
        self.assertFalse([a for a in line if a.startswith(("root", "init="))], line)

    def test_share_carries_the_topology_and_no_model_path(self):
        with mock.patch.dict(os.environ, {"PATH": "/usr/bin"}, clear=True):
            files = rg.share_files(["true"], [], [], topology.find("2node"),
                                   "model", "/k/bzImage", root="initramfs")
        self.assertIn("node 1", files["topology.topo"])
        self.assertIn("export NUMA_MATRIX_TOPOLOGY_FILE="
                      "/run/numa-matrix/topology.topo", files["cmd"])
        self.assertNotIn("NUMA_MATRIX_MODEL", files["cmd"])
        self.assertEqual((files["mounts"], files["keep"]), ("", ""))
        with mock.patch.dict(os.environ, {"PATH": "/usr/bin"}, clear=True):
            files = rg.share_files(["true"], [], [], topology.find("2node"),
                                   "model", "/k/bzImage")
        self.assertIn("export NUMA_MATRIX_MODEL=/run/numa-matrix/model.log",
                      files["cmd"])

    def test_kept_paths_exist_in_the_initramfs(self):
        # guest-init binds them aside around its fresh /tmp: a checkout in
        # /tmp run from elsewhere failed with "cannot keep".
        with tempfile.TemporaryDirectory() as runs:
            req = request("1node", argv=["/bin/true"],
                          keep_paths=["/tmp/checkout"], clock="icount",
                          quiet=True, timeout=30, root="initramfs")
            with mock.patch.dict(os.environ, {"NUMA_MATRIX_RUNS": runs}), \
                    mock.patch.object(rg.initramfs, "build",
                                      return_value="/x.cpio") as build, \
                    mock.patch.object(rg, "QEMU", "true"), \
                    redirect_stderr(io.StringIO()):
                rg.boot(req)
            self.assertIn("/tmp/checkout", build.call_args.args[3])
            self.assertIn(os.getcwd(), build.call_args.args[3])

    def test_model_log_copied_out_even_when_empty(self):
        with tempfile.TemporaryDirectory() as rundir:
            out = os.path.join(rundir, "out.log")
            req = request("1node", model_log=out, root="initramfs")
            rg.copy_model_files(req, rundir)
            with open(out) as f:
                self.assertEqual(f.read(), "")
            with open(os.path.join(rundir, "model.log"), "w") as f:
                f.write("region=1 vcpu=0 insns=5\n")
            rg.copy_model_files(req, rundir)
            with open(out) as f:
                self.assertEqual(f.read(), "region=1 vcpu=0 insns=5\n")

    def test_model_profile_copied_out(self):
        with tempfile.TemporaryDirectory() as rundir:
            out = os.path.join(rundir, "out.profile")
            req = request("1node", model_profile=out, root="initramfs")
            with open(os.path.join(rundir, rg.MODEL_PROFILE), "w") as f:
                f.write("# regions=1\nffffffff81000000 5\n")
            rg.copy_model_files(req, rundir)
            with open(out) as f:
                self.assertEqual(f.read(), "# regions=1\nffffffff81000000 5\n")


class HostBinding(unittest.TestCase):
    """KVM on a NUMA host: guest nodes bound to host nodes."""

    T = ("description x\nnode 0 cpus=0 mem=64M\nnode 1 cpus=1 mem=64M\n"
         "node 2 mem=64M\n")

    def test_round_robin_over_host_memory_nodes(self):
        t = topology.parse(self.T)
        self.assertEqual(rg.host_binding(t, [0, 1]), {0: 0, 1: 1, 2: 0})
        self.assertEqual(rg.host_binding(t, [0]), {})
        self.assertEqual(rg.host_binding(t, []), {})

    def test_memory_backends_bound(self):
        t = topology.parse(self.T)
        args = rg.numa_args(t, rg.host_binding(t, [0, 2]))
        self.assertIn("memory-backend-ram,id=mem1,size=64M,host-nodes=2,policy=bind", args)
        self.assertIn("memory-backend-ram,id=mem2,size=64M,host-nodes=0,policy=bind", args)
        self.assertNotIn("host-nodes", " ".join(rg.numa_args(t)))

    def test_monitor_even_without_a_control_channel(self):
        # An initramfs root has no control channel; the vCPUs of a KVM
        # guest are pinned through QEMU's monitor all the same.
        t = topology.parse(self.T)
        qmp = hostctl.Qmp("/run/x/qmp.sock")
        cmd = rg.qemu_command(t, "/k/bzImage", "x", "/run/x", [], "kvm",
                              "wall", binding={0: 0, 1: 1, 2: 0},
                              initrd="/run/x/i.cpio", qmp=qmp)
        self.assertEqual(cmd[cmd.index("-qmp") + 1],
                         "unix:/run/x/qmp.sock,server=on,wait=off")
        self.assertNotIn("name=nm.ctl", " ".join(cmd))


class KeepPaths(unittest.TestCase):
    """A checkout under /tmp must stay visible in the guest."""

    def setUp(self):
        self.cwd = os.getcwd()

    def tearDown(self):
        os.chdir(self.cwd)

    def test_checkout_outside_tmp_needs_nothing(self):
        if rg.under(rg.TOP, rg.GUEST_TMPFS):
            self.skipTest("this checkout itself is under /tmp")
        os.chdir(rg.TOP)
        self.assertEqual(rg.keep_paths(["true"], []), [])

    def test_cwd_and_command_under_tmp(self):
        os.chdir("/tmp")
        keep = rg.keep_paths(["/var/tmp/x/bin/prog"], [])
        self.assertIn("/tmp", keep)
        self.assertIn("/var/tmp/x/bin", keep)

    def test_writable_share_covers_it(self):
        os.chdir("/tmp")
        self.assertNotIn("/tmp", rg.keep_paths(["true"], ["/tmp"]))

    def test_nested_paths_keep_the_outer_one(self):
        os.chdir("/tmp")
        keep = rg.keep_paths(["/tmp/a/b/prog"], [])
        self.assertEqual([k for k in keep if k.startswith("/tmp")], ["/tmp"])

    def test_private_dirs_refused(self):
        with self.assertRaises(rg.SetupError):
            rg.keep_paths(["/run/user/0/prog"], [])


class DailyUse(unittest.TestCase):
    def command(self, **kw):
        return rg.qemu_command(topology.find("1node"), "/k/bzImage", "x",
                               "/run/x", [], "tcg", "wall", **kw)

    def test_shell_console_is_the_terminal_and_still_logged(self):
        cmd = self.command(shell=True)
        self.assertIn("stdio,id=con,signal=off,logfile=/run/x/console.log", cmd)
        self.assertNotIn("file,id=con,path=/run/x/console.log", cmd)
        self.assertIn("file,id=con,path=/run/x/console.log", self.command())

    def test_qemu_opts_come_last(self):
        cmd = self.command(extra=["-d", "guest_errors"])
        self.assertEqual(cmd[-2:], ["-d", "guest_errors"])

    def test_shell_share_carries_the_terminal_size(self):
        with tempfile.TemporaryDirectory() as rundir:
            rg.write_share(rundir, rg.share_files(
                ["/bin/sh"], [], [], topology.find("1node"), "wall",
                "/k/bzImage", shell=True))
            with open(os.path.join(rundir, "share", "shell")) as f:
                rows, cols = map(int, f.read().split())
            self.assertTrue(rows > 0 and cols > 0)
            rg.write_share(rundir + "/b", rg.share_files(
                ["true"], [], [], topology.find("1node"), "wall", "/k/bzImage"))
            self.assertFalse(os.path.exists(rundir + "/b/share/shell"))

    def test_root_mount_failure_names_the_options(self):
        err = io.StringIO()
        with redirect_stderr(err):
            rg.root_mount_hint("[ 1.2] VFS: Unable to mount root fs on "
                               "unknown-block(0,0)")
            rg.root_mount_hint("[ 1.2] Run /sbin/init as init process")
        self.assertEqual(err.getvalue().count("9P_FS"), 1)


class Record(unittest.TestCase):
    def test_record_says_how_and_where(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "where.json")
            result = GuestResult.of_command(3, accel="kvm")
            rg.record(path, result)
            with open(path) as f:
                got = json.load(f)
            rg.record(None, result)         # no --record: nothing written
            self.assertEqual(os.listdir(d), ["where.json"])
        self.assertEqual((got["accel"], got["exit"], got["reason"]),
                         ("kvm", 3, "command"))
        self.assertEqual(got["host"], os.uname().nodename)
        self.assertEqual(got["host_kernel"], os.uname().release)
        self.assertTrue(got["cpu_model"] and "qemu" in got)


class KvmProbe(unittest.TestCase):
    """One probe that says nothing about KVM must not disable it for good,
    and the cached answer is never half written."""

    @staticmethod
    def result(rc, silent=False):
        if rc not in GUEST_EXITS:
            return GuestResult.of_command(rc, silent=silent)
        return GuestResult.failed(rc, "x", silent=silent)

    def probe(self, rc, silent=False):
        result = self.result(rc, silent)
        with tempfile.TemporaryDirectory() as cache, \
                mock.patch.dict(os.environ, {"NUMA_MATRIX_CACHE": cache}), \
                mock.patch.object(rg.os, "access", return_value=True), \
                mock.patch.object(rg, "boot", return_value=result) as boot, \
                redirect_stderr(io.StringIO()):
            path = os.path.join(cache, "kvm-probe.json")
            works = rg.kvm_works(request("1node"))
            written = None
            if os.path.exists(path):
                with open(path) as f:
                    written = json.load(f)["works"]
            leftovers = [n for n in os.listdir(cache) if n != "kvm-probe.json"]
        return works, written, boot.called, leftovers

    def test_verdicts(self):
        self.assertIs(rg.probe_verdict(self.result(0)), True)
        self.assertIs(rg.probe_verdict(self.result(rg.EXIT_SETUP)), False)
        # Nothing on the console in the probe's time: KVM runs nothing
        # (this machine's /dev/kvm with -cpu host, 2026-12-07).
        self.assertIs(rg.probe_verdict(self.result(rg.EXIT_TIMEOUT, True)),
                      False)
        for rc in (rg.EXIT_SPLAT, rg.EXIT_TIMEOUT, 1):
            self.assertIsNone(rg.probe_verdict(self.result(rc)))

    def test_clear_answers_are_cached(self):
        self.assertEqual(self.probe(0), (True, True, True, []))
        self.assertEqual(self.probe(rg.EXIT_SETUP), (False, False, True, []))

    def test_a_slow_or_broken_guest_is_not_cached(self):
        for rc in (rg.EXIT_TIMEOUT, rg.EXIT_SPLAT):
            self.assertEqual(self.probe(rc), (False, None, True, []))

    def test_a_guest_that_printed_nothing_is_a_no(self):
        self.assertEqual(self.probe(rg.EXIT_TIMEOUT, silent=True),
                         (False, False, True, []))


class KvmEndToEnd(unittest.TestCase):
    """--accel auto through qemu-topologies/run-guest itself, with a
    stand-in QEMU (tests/data/fake-qemu) that plays a host whose KVM runs
    the guest, one whose KVM cannot (QEMU stops at once, as here), and one
    whose kernel warns on KVM. Every cell of a --clock wall matrix run
    takes this path, and its probe once died before booting anything."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.image = os.path.join(self.tmp.name, "bzImage")
        fake_bzimage(self.image, "6.1.192-nm14-perf (me@box) (gcc 12.2.0)")
        self.record = os.path.join(self.tmp.name, "record.json")

    def tearDown(self):
        self.tmp.cleanup()

    def run_guest(self, kvm="works", accel="auto", **env):
        out = subprocess.run(
            [RUN_GUEST, "--topology", "2node", "--kernel", self.image,
             "--accel", accel, "--record", self.record, "--", "echo", "hi"],
            capture_output=True, text=True, timeout=60, check=False,
            env=fake_qemu_env(self.tmp.name, kvm, FAKE_QEMU_STDOUT="hi\n",
                              **env))
        with open(self.record) as f:
            out.record = json.load(f)
        out.boots = fake_qemu_boots(self.tmp.name)
        os.unlink(os.path.join(self.tmp.name, "qemu.log"))
        return out

    def cached(self):
        path = os.path.join(self.tmp.name, "cache", "kvm-probe.json")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)["works"]

    def test_kvm_that_works_is_probed_once_and_used(self):
        out = self.run_guest("works")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, "hi\n")
        self.assertNotIn("Traceback", out.stderr)
        # The probe boots the same machine and kernel with /bin/true.
        self.assertEqual([(b["accel"], b["command"]) for b in out.boots],
                         [("kvm", "exec true"), ("kvm", "exec echo hi")])
        self.assertEqual(out.boots[1]["cpu"], "host")
        self.assertEqual((out.record["accel"], out.record["reason"]),
                         ("kvm", "ok"))
        self.assertIs(self.cached(), True)
        again = self.run_guest("works")
        self.assertEqual([b["command"] for b in again.boots], ["exec echo hi"])
        self.assertNotIn("probing", again.stderr)

    def test_kvm_that_cannot_run_the_guest_falls_back_to_tcg(self):
        out = self.run_guest("fails")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual([b["accel"] for b in out.boots], ["kvm", "tcg"])
        self.assertEqual(out.record["accel"], "tcg")
        self.assertIn("KVM does not work here (guest ended without reporting "
                      "an exit status (QEMU exit 1): qemu-system-x86_64: "
                      "error: failed to set MSR 0x10a", out.stderr)
        self.assertIs(self.cached(), False)
        # The answer holds for this QEMU and host kernel: no second probe.
        again = self.run_guest("fails")
        self.assertEqual([b["accel"] for b in again.boots], ["tcg"])
        # Another QEMU is asked again.
        other = self.run_guest("works", FAKE_QEMU_VERSION="QEMU 8.0 (fake)")
        self.assertEqual([b["accel"] for b in other.boots], ["kvm", "kvm"])
        self.assertIs(self.cached(), True)

    def test_a_splat_on_kvm_decides_nothing(self):
        out = self.run_guest("splat")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual([b["accel"] for b in out.boots], ["kvm", "tcg"])
        self.assertIn("KVM probe inconclusive (kernel problem in the guest",
                      out.stderr)
        self.assertIsNone(self.cached())

    def test_kvm_that_runs_nothing_is_a_no(self):
        # QEMU starts, the guest prints nothing, not even the firmware's
        # first bytes: what this machine's /dev/kvm does.
        env = fake_qemu_env(self.tmp.name, "hangs")
        with mock.patch.dict(os.environ, env), \
                mock.patch.object(rg, "QEMU", FAKE_QEMU), \
                mock.patch.object(rg, "KVM_DEVICE", env["NUMA_MATRIX_KVM"]), \
                mock.patch.object(rg, "PROBE_TIMEOUT", 1), \
                redirect_stderr(io.StringIO()) as err:
            works = rg.kvm_works(request("1node", kernel=self.image))
        self.assertIs(works, False, err.getvalue())
        self.assertIn("KVM does not work here (guest did not finish within "
                      "1 s (the console stayed empty", err.getvalue())
        self.assertIs(self.cached(), False)

    def test_no_kvm_device_no_probe(self):
        out = self.run_guest("works", NUMA_MATRIX_KVM="/nonexistent/kvm")
        self.assertEqual([b["accel"] for b in out.boots], ["tcg"])
        self.assertEqual(out.record["accel"], "tcg")
        self.assertIsNone(self.cached())

    def test_guest_failure_is_in_the_record(self):
        out = self.run_guest("splat", accel="kvm")
        self.assertEqual(out.returncode, rg.EXIT_SPLAT)
        self.assertEqual(out.record["reason"], "splat")
        self.assertIn("WARNING: CPU: 0 PID: 1", out.record["summary"])
        # The same in one line, whatever the kernel printed around it.
        self.assertNotIn("\n", out.record["summary"])

    def test_kvm_binds_each_guest_node_to_a_host_node(self):
        # In-process, on a two-node host: memory bound, per guest node.
        env = fake_qemu_env(self.tmp.name, "works")
        with mock.patch.dict(os.environ, env), \
                mock.patch.object(rg, "QEMU", FAKE_QEMU), \
                mock.patch.object(rg, "KVM_DEVICE", env["NUMA_MATRIX_KVM"]), \
                mock.patch.object(rg, "host_memory_nodes", return_value=[0, 1]), \
                mock.patch.object(rg.signal, "signal"), \
                redirect_stderr(io.TextIOWrapper(io.BytesIO())) as err, \
                mock.patch("sys.stdout", io.TextIOWrapper(io.BytesIO())):
            rc = rg.main(["--topology", "4node", "--kernel", self.image,
                          "--accel", "kvm", "--", "true"])
            err.seek(0)
            said = err.read()
        self.assertEqual(rc, 0, said)
        (boot,) = fake_qemu_boots(self.tmp.name)
        self.assertIn("memory-backend-ram,id=mem2,size=512M,host-nodes=0,"
                      "policy=bind", boot["numa"])
        self.assertIn("memory-backend-ram,id=mem3,size=512M,host-nodes=1,"
                      "policy=bind", boot["numa"])
        self.assertIn("guest node -> host node 0->0, 1->1, 2->0, 3->1", said)


class GuestEnvironment(unittest.TestCase):
    HOST = {"PATH": "/usr/bin", "HOME": "/root", "LC_ALL": "C",
            "NUMA_MATRIX_CACHE": "/c", "MESON_TEST_ITERATION": "1",
            "MALLOC_PERTURB_": "7", "KSELFTEST_GUP_TEST_ARGS": "-u",
            "NUMA_TESTS_AREA_SIZE": "64M",
            "GITHUB_TOKEN": "secret", "AWS_SECRET_ACCESS_KEY": "secret",
            "SSH_AUTH_SOCK": "/run/agent", "MY_SETTING": "x"}

    def test_only_what_the_command_needs(self):
        env = rg.guest_environment(self.HOST)
        self.assertEqual(set(env), {"PATH", "HOME", "LC_ALL",
                                    "NUMA_MATRIX_CACHE", "MESON_TEST_ITERATION",
                                    "MALLOC_PERTURB_",
                                    "KSELFTEST_GUP_TEST_ARGS",
                                    "NUMA_TESTS_AREA_SIZE"})

    def test_env_option(self):
        env = rg.guest_environment(self.HOST, ["MY_SETTING", "NEW=1",
                                               "UNSET_HERE"])
        self.assertEqual((env["MY_SETTING"], env["NEW"]), ("x", "1"))
        self.assertNotIn("UNSET_HERE", env)
        with self.assertRaises(rg.SetupError):
            rg.guest_environment(self.HOST, ["1BAD"])

    def test_script_keeps_secrets_out(self):
        with tempfile.TemporaryDirectory() as rundir, \
                mock.patch.dict(os.environ, self.HOST, clear=True):
            rg.write_share(rundir, rg.share_files(
                ["true"], [], [], topology.find("1node"), "wall", "/k/bzImage"))
            with open(os.path.join(rundir, "share", "cmd")) as f:
                script = f.read()
        self.assertNotIn("secret", script)
        self.assertNotIn("SSH_AUTH_SOCK", script)
        self.assertIn("export NUMA_MATRIX_KERNEL_IMAGE=/k/bzImage", script)
        self.assertIn("export PATH=/usr/bin", script)


class Finish(unittest.TestCase):
    def finish(self, console, timed_out, status="started\n"):
        with tempfile.TemporaryDirectory() as rundir:
            with open(os.path.join(rundir, "console.log"), "w") as f:
                f.write(console)
            with open(os.path.join(rundir, "status"), "w") as f:
                f.write(status)
            err = io.StringIO()
            with redirect_stderr(err):
                result = rg.finish(request("1node"), rundir, 0, timed_out, 1.0)
        return result.status, err.getvalue()

    def test_timeout_shows_an_earlier_splat(self):
        console = "\n".join(["[    1.0] boot"]
                            + ["[    2.0] WARNING: CPU: 1 PID: 7 at mm/mlock.c:1"]
                            + [f"[   {i}.0] filler {i}" for i in range(10, 60)])
        rc, err = self.finish(console, True)
        self.assertEqual(rc, rg.EXIT_TIMEOUT)
        self.assertIn("WARNING: CPU: 1 PID: 7 at mm/mlock.c:1", err)
        self.assertIn("filler 59", err)
        self.assertIn("kernel problems, then the last kernel messages", err)

    def test_a_splat_fails_a_command_that_succeeded(self):
        console = "\n".join(["[    1.0] boot",
                             "[    2.0] BUG: Bad page state in process a.out"]
                            + [f"[    {i}.0] after {i}" for i in range(3, 20)])
        with tempfile.TemporaryDirectory() as rundir:
            with open(os.path.join(rundir, "console.log"), "w") as f:
                f.write(console)
            with open(os.path.join(rundir, "status"), "w") as f:
                f.write("started\nexit=0\n")
            err = io.StringIO()
            with redirect_stderr(err):
                result = rg.finish(request("1node"), rundir, 0, False, 1.0)
            kept = os.path.isdir(rundir)
        self.assertEqual((result.status, result.reason),
                         (rg.EXIT_SPLAT, "splat"))
        self.assertEqual(result.summary, "kernel problem in the guest (the "
                         "command exited with status 0): [    2.0] BUG: Bad "
                         "page state in process a.out")
        self.assertIn("  | [    2.0] BUG: Bad page state", err.getvalue())
        self.assertIn("after 13", err.getvalue())       # eleven lines after
        self.assertNotIn("after 14", err.getvalue())
        self.assertEqual(result.rundir, rundir)
        self.assertTrue(kept)

    def test_a_clean_end_removes_the_run_directory(self):
        with tempfile.TemporaryDirectory() as d:
            rundir = os.path.join(d, "run")
            os.makedirs(rundir)
            with open(os.path.join(rundir, "status"), "w") as f:
                f.write("started\nexit=3\n")
            with redirect_stderr(io.StringIO()):
                result = rg.finish(request("1node"), rundir, 0, False, 1.0)
            self.assertEqual((result.status, result.reason), (3, "command"))
            self.assertTrue(os.path.isdir(rundir))      # kept: it failed
            with open(os.path.join(rundir, "status"), "w") as f:
                f.write("started\nexit=0\n")
            with redirect_stderr(io.StringIO()):
                result = rg.finish(request("1node"), rundir, 0, False, 1.0)
            self.assertEqual((result.status, result.reason, result.rundir),
                             (0, "ok", None))
            self.assertFalse(os.path.exists(rundir))

    def test_timeout_without_splat_shows_the_tail(self):
        console = "\n".join(f"[   {i}.0] filler {i}" for i in range(10, 60))
        rc, err = self.finish(console, True)
        self.assertEqual(rc, rg.EXIT_TIMEOUT)
        self.assertNotIn("filler 20", err)
        self.assertIn("filler 59", err)


class SocketDir(unittest.TestCase):
    def test_short_socket_dir_removed(self):
        # A run directory too long for a unix socket path gets a socket
        # directory of its own in the temporary directory: it must go away
        # with the guest (here a "QEMU" that exits at once).
        with tempfile.TemporaryDirectory() as tmp:
            runs = os.path.join(tmp, "r" * 90)
            socktmp = os.path.join(tmp, "sock")
            os.makedirs(socktmp)
            req = request("1node", quiet=True, timeout=30)
            with mock.patch.dict(os.environ, {"NUMA_MATRIX_RUNS": runs}), \
                    mock.patch.object(rg, "QEMU", "true"), \
                    mock.patch.object(tempfile, "tempdir", socktmp), \
                    redirect_stderr(io.StringIO()):
                result = rg.boot(req)
            self.assertEqual(result.status, rg.EXIT_SETUP)
            self.assertEqual(os.listdir(socktmp), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
