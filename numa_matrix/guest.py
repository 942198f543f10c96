# SPDX-License-Identifier: GPL-2.0
"""Boot a kernel on an emulated NUMA machine, run one command in it.

  run-guest --topology 4node --kernel patched -- meson test -C build --suite numa

The host's root is shared read-only over 9p, the --writable directories
read-write, and the command runs as root in the host's current directory
(with --root initramfs the guest's root is instead an initramfs holding the
one program, and the guest reads nothing from the host: initramfs.py). Its
stdout and stderr arrive here untouched (virtio ports, not the console); the
kernel console goes to a log. Exit status: the command's, or
  123  the kernel panicked, oopsed or printed a splat (WARNING:, BUG:, lockdep)
  124  the guest did not finish within --timeout
  125  the guest could not be run (bad topology, no kernel, QEMU failed)
(types.EXIT_*). QEMU's command line is built here and nowhere else
(qemu_command()). The command line becomes a types.GuestRequest in main();
below it, run() and boot() take that request and return a
types.GuestResult, which --record writes out for the program that started
run-guest.
"""

import argparse
import ctypes
import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import (QEMU_TOPOLOGIES, TOP, build_dir, cache_root, cost_model_in,
               hostctl, initramfs, kernels, kernelspec, topology)
from .errors import NumaMatrixError
from .types import (EXIT_SETUP, EXIT_SPLAT, EXIT_TIMEOUT, ONE_VCPU_CLOCKS,
                    GuestRequest, GuestResult)
from .util import atomic_write, host_facts, qemu_binary

GUEST_INIT = os.path.join(QEMU_TOPOLOGIES, "guest-init")
QEMU = qemu_binary()

# The run's share as guest-init mounts it, and the plugin's records in it.
GUEST_SHARE = "/run/numa-matrix"
MODEL_LOG = "model.log"
# --model-profile: where the plugin writes the instruction profile of the
# marked regions (docs/profile.md), in the run directory.
MODEL_PROFILE = "profile.txt"

# Where the KVM device is (a stand-in in tests), and how long a probe boot
# may take: a guest that has not reached its command by then is slow, not
# proof that KVM cannot run it.
KVM_DEVICE = os.environ.get("NUMA_MATRIX_KVM", "/dev/kvm")
PROBE_TIMEOUT = 30

# Kernel log lines that fail a run even when the command succeeded.
SPLAT = re.compile(
    r"Kernel panic|kernel BUG at|BUG:|WARNING:|\[#\d+\]|Bad page state|"
    r"Bad page map|KASAN:|UBSAN:|possible circular locking|"
    r"possible recursive locking|inconsistent lock state|"
    r"suspicious RCU usage|list_(add|del) corruption|"
    r"INFO: task .* blocked for more than|soft lockup|hard LOCKUP|"
    r"rcu: INFO: .*detected stalls|Out of memory: Killed process|"
    r"page dumped because|Unable to handle kernel")


class SetupError(NumaMatrixError):
    """The guest cannot be run: run-guest exits 125 (EXIT_SETUP)."""


def log(msg):
    print(f"run-guest: {msg}", file=sys.stderr, flush=True)


# guest-init mounts fresh tmpfs on these; host directories below them that
# the command needs are kept visible (see keep_paths()).
GUEST_TMPFS = ("/tmp", "/var/tmp")
GUEST_PRIVATE = ("/run", "/dev", "/proc", "/sys")


def under(path, dirs):
    return [d for d in dirs if path == d or path.startswith(d.rstrip("/") + "/")]


def keep_paths(argv, writable):
    """Host directories below the guest's fresh /tmp and /var/tmp that must
    stay visible: this checkout, the current directory, the command's."""
    wanted = [TOP, os.getcwd()]
    if os.sep in argv[0]:
        wanted.append(os.path.dirname(os.path.abspath(argv[0])))
    keep: list[str] = []
    for path in wanted:
        if under(path, GUEST_PRIVATE):
            raise SetupError(f"{path} is under {under(path, GUEST_PRIVATE)[0]}, "
                             "which the guest mounts afresh: run from, and "
                             "build in, another directory")
        if under(path, GUEST_TMPFS) and not under(path, writable) and \
                not under(path, keep):
            keep = [k for k in keep if not under(k, [path])] + [path]
    return keep


def resolve_kernel(spec, flavour):
    """The bzImage of one kernel spec (docs/kernel-specs.md), built
    already: run-guest looks kernels up and never builds one."""
    p = kernelspec.one(spec, flavour)
    image = kernels.built_image(p)
    if not image:
        raise SetupError(f"kernel {p.label}/{flavour} is not built: run "
                         f"kernel-series/build-kernel {spec} --flavour {flavour}")
    return image


def kernel_cmdline(req):
    topo = req.topology
    parts = ["console=ttyS0", "panic=-1", "oops=panic", "nokaslr"]
    if req.root == "initramfs":
        parts.append("rdinit=/init")
    else:
        parts += ["root=root", "rootfstype=9p", "ro",
                  "rootflags=version=9p2000.L,trans=virtio,access=any,"
                  "msize=512000,cache=loose",
                  f"init={GUEST_INIT}"]
    if topo.hotplug and topo.hotplug.slots:
        parts.append("memhp_default_state=online")
    if req.thp:
        parts.append(f"transparent_hugepage={req.thp}")
    if req.clock in ONE_VCPU_CLOCKS:
        # The same addresses for the same program, boot to boot.
        parts.append("norandmaps")
    if req.clock == "model":
        # One CPU: the kernel would patch its LOCK prefixes away, and the
        # model would see none of the atomics a multi-CPU machine pays for.
        parts.append("noreplace-smp")
    parts.extend(req.append)
    return " ".join(parts)


def host_memory_nodes():
    """The host's NUMA nodes with memory, from sysfs ([] when unknown)."""
    try:
        with open("/sys/devices/system/node/has_memory") as f:
            return topology.parse_cpulist(f.read().strip())
    except (OSError, ValueError):
        return []


def host_binding(topo, host_nodes):
    """{guest node: host node} for a KVM guest on a NUMA host: guest node i
    on the (i mod n)-th host node with memory, so that a guest's remote node
    is remote on the hardware too. {} on a host with fewer than two."""
    if len(host_nodes) < 2:
        return {}
    return {n.id: host_nodes[n.id % len(host_nodes)] for n in topo.nodes}


def numa_args(topo, binding=None):
    out = []
    binding = binding or {}
    spare = topo.spare_cpus()
    for n in topo.nodes:
        spec = f"node,nodeid={n.id}"
        # A spare vCPU's node is fixed at boot: QEMU puts a hot-added CPU in
        # the node its slot was declared in.
        cpus = n.cpus + [c for c, nid in spare.items() if nid == n.id]
        if cpus:
            spec += "".join(f",cpus={r}"
                            for r in topology.format_cpulist(cpus).split(","))
        if n.mem_mib:
            bind = (f",host-nodes={binding[n.id]},policy=bind"
                    if n.id in binding else "")
            out += ["-object", f"memory-backend-ram,id=mem{n.id},"
                    f"size={n.mem_mib}M{bind}"]
            spec += f",memdev=mem{n.id}"
        if n.initiator is not None and not n.cpus:
            spec += f",initiator={n.initiator}"
        out += ["-numa", spec]
    if topo.distances is not None:
        for a in range(len(topo.nodes)):
            for b in range(len(topo.nodes)):
                if a != b and (topo.asymmetric or a < b):
                    out += ["-numa", f"dist,src={a},dst={b},"
                            f"val={topo.distances[a][b]}"]
    for h in topo.hmat:
        base = (f"hmat-lb,initiator={h.initiator},target={h.target},"
                "hierarchy=memory")
        out += ["-numa", f"{base},data-type=access-latency,latency={h.latency}",
                "-numa", f"{base},data-type=access-bandwidth,"
                f"bandwidth={h.bandwidth}"]
    return out


def cost_model_plugin():
    """The cost model plugin Meson built, or a SetupError saying how to get it."""
    path = os.environ.get("NUMA_MATRIX_COSTMODEL") or cost_model_in(build_dir())
    if not os.path.isfile(path):
        raise SetupError(f"the cost model plugin {path} is not built: run "
                         "'meson compile -C BUILD_DIR' (or set NUMA_MATRIX_BUILD "
                         "or NUMA_MATRIX_COSTMODEL)")
    return os.path.abspath(path)


def model_log(rundir, root):
    """Where the plugin writes its records: in the share the guest mounts
    (the benchmark reads them), or beside it when the guest mounts none."""
    if root == "initramfs":
        return os.path.join(rundir, MODEL_LOG)
    return os.path.join(rundir, "share", MODEL_LOG)


def model_plugin_arg(topo, plugin, out, profile=None):
    """-plugin's argument for --clock model: the topology's nodes in node
    order, its SLIT row by row, each vCPU's node, the records file OUT and
    the instruction profile's file PROFILE, if any (docs/cost-model.md,
    docs/profile.md). QEMU reads ",," as a comma."""
    n = len(topo.nodes)
    node_of = {c: node.id for node in topo.nodes for c in node.cpus}
    parts = [plugin.replace(",", ",,"),
             "nodes=" + ":".join(f"{node.mem_mib}M" for node in topo.nodes),
             "slit=" + ":".join(str(topo.distance(a, b))
                                for a in range(n) for b in range(n)),
             "vcpu_nodes=" + ":".join(str(node_of[c]) for c in sorted(node_of)),
             "out=" + out.replace(",", ",,")]
    if profile:
        parts.append("profile=" + profile.replace(",", ",,"))
    return ",".join(parts)


def qemu_command(topo, kernel, cmdline, rundir, shares, accel, clock,
                 control=None, binding=None, plugin=None, shell=False,
                 extra=(), initrd=None, profile=False, qmp=None):
    """The one place where a QEMU command line is put together. SHELL: the
    serial console is this terminal (a copy still goes to console.log);
    EXTRA: the user's --qemu-opts, last; INITRD: the guest's root, in place
    of the host's over 9p (and then no 9p at all); PROFILE: the cost model
    also writes the instruction profile of its regions to MODEL_PROFILE."""
    machine = "q35" + (",hmat=on" if topo.hmat else "")
    mem = f"{topo.mem_mib}M"
    smp = f"{topo.ncpus}"
    hp = topo.hotplug
    if hp and hp.slots:
        mem += f",slots={hp.slots},maxmem={hp.maxmem_mib}M"
    if hp and hp.maxcpus:
        smp += f",maxcpus={hp.maxcpus}"
    slots = hp.maxcpus if hp and hp.maxcpus else topo.ncpus
    if slots > 1:
        # A socket per vCPU: by default QEMU puts them all in one socket with
        # one L3, and a kernel with CONFIG_BUG warns at boot that an LLC
        # sibling is on another node (topology_sane()), which fails the run.
        smp += f",sockets={slots},cores=1,threads=1"
    cmd = [QEMU, "-machine", machine, "-m", mem, "-smp", smp,
           "-nodefaults", "-display", "none", "-no-reboot"]
    if accel == "kvm":
        cmd += ["-accel", "kvm", "-cpu", "host"]
    elif clock in ONE_VCPU_CLOCKS:
        # Guest time counts executed instructions (1 ns each), and the
        # guest's randomness from the host is taken away: no RDRAND/RDSEED,
        # an RTC that starts at a fixed date and follows the virtual clock
        # (docs/cost-model.md, "Repeatability").
        cmd += ["-accel", "tcg", "-cpu", "max,-rdrand,-rdseed",
                "-icount", "shift=0,sleep=off",
                "-rtc", "base=2020-01-01T00:00:00,clock=vm"]
        if clock == "model":
            root = "initramfs" if initrd else "host"
            cmd += ["-plugin", model_plugin_arg(
                topo, plugin, model_log(rundir, root),
                os.path.join(rundir, MODEL_PROFILE) if profile else None)]
    else:
        cmd += ["-accel", "tcg,thread=multi" if topo.ncpus > 1 else "tcg",
                "-cpu", "max"]
    cmd += numa_args(topo, binding)
    console = (f"stdio,id=con,signal=off,logfile={rundir}/console.log"
               if shell else f"file,id=con,path={rundir}/console.log")
    cmd += ["-kernel", kernel, "-append", cmdline,
            "-chardev", console,
            "-serial", "chardev:con"]
    if initrd:
        cmd += ["-initrd", initrd]
    else:
        cmd += ["-fsdev", "local,id=root,path=/,security_model=none,"
                "readonly=on,multidevs=remap",
                "-device", "virtio-9p-pci,fsdev=root,mount_tag=root",
                "-fsdev", f"local,id=nmrun,path={rundir}/share,"
                "security_model=none",
                "-device", "virtio-9p-pci,fsdev=nmrun,mount_tag=nmrun"]
    for i, path in enumerate(shares):
        cmd += ["-fsdev", f"local,id=w{i},path={path},security_model=none,"
                "multidevs=remap",
                "-device", f"virtio-9p-pci,fsdev=w{i},mount_tag=w{i}"]
    # Under a repeatable clock the guest's writes to its ports are handled
    # when it makes them: with an ioeventfd QEMU's main loop takes them up
    # later, at the host's pace, and no two boots run alike.
    cmd += ["-device", "virtio-serial-pci" +
            (",ioeventfd=off" if clock in ONE_VCPU_CLOCKS else "")]
    for port in ("stdout", "stderr", "status"):
        cmd += ["-chardev", f"file,id={port},path={rundir}/{port}",
                "-device", f"virtserialport,chardev={port},name=nm.{port}"]
    if qmp:
        cmd += qmp.qemu_args()
    if control:
        cmd += control.qemu_args()
    return cmd + list(extra)


# What the command in the guest gets of run-guest's environment: what a
# shell, Python and Meson's test runner need, and numa-matrix's, its
# tests' (NUMA_TESTS_AREA_SIZE, NUMA_TESTS_WATCHDOG) and the kselftest
# runner's own variables. Anything else (tokens, keys, agent
# sockets: the script is kept on failure) stays on the host unless --env
# names it.
ENV_PASSED = re.compile(
    r"PATH|HOME|USER|LOGNAME|SHELL|TERM|TZ|LANG|LANGUAGE|LC_[A-Z]+|"
    r"PYTHON[A-Z_]*|NUMA_MATRIX_\w+|NUMA_TESTS_\w+|MESON_\w+|MALLOC_PERTURB_|"
    r"[AMU]SAN_OPTIONS|KSELFTEST_\w+")


def guest_environment(environ, extra=()):
    """The variables exported to the command: ENV_PASSED, and each --env
    NAME (its value here) or NAME=VALUE."""
    env = {k: v for k, v in environ.items() if ENV_PASSED.fullmatch(k)}
    for item in extra:
        name, eq, value = item.partition("=")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise SetupError(f"--env {item}: not a variable name")
        if eq:
            env[name] = value
        elif name in environ:
            env[name] = environ[name]
    return env


def share_files(argv, shares, keep, topo, clock, kernel, extra_env=(),
                shell=False, root="host"):
    """The run's share, {name: text}: the command as a shell script, with
    the part of the host's environment it needs plus what tests may want to
    know about the machine they run on and its kernel; what guest-init
    mounts and keeps."""
    environ = guest_environment(os.environ, extra_env)
    files = {}
    if root == "initramfs":
        # The host's files are out of sight: the topology comes along.
        with open(topo.path) as f:
            files["topology" + topology.SUFFIX] = f.read()
        environ["NUMA_MATRIX_TOPOLOGY_FILE"] = \
            f"{GUEST_SHARE}/topology{topology.SUFFIX}"
    else:
        environ["NUMA_MATRIX_TOPOLOGY_FILE"] = os.path.abspath(topo.path)
    environ["NUMA_MATRIX_CLOCK"] = clock
    if clock == "model" and root == "host":
        # With an initramfs root the records stay on the host: run-guest
        # --model-log hands them to whoever merges them (results/matrix).
        environ["NUMA_MATRIX_MODEL"] = f"{GUEST_SHARE}/{MODEL_LOG}"
    environ["NUMA_MATRIX_KERNEL_IMAGE"] = kernel
    env = [f"export {k}={shlex.quote(v)}" for k, v in sorted(environ.items())]
    script = ["# written by run-guest", *env,
              f"cd {shlex.quote(os.getcwd())} || exit 125",
              "exec " + " ".join(shlex.quote(a) for a in argv), ""]
    files["cmd"] = "\n".join(script)
    files["mounts"] = "".join(f"w{i} {path}\n" for i, path in enumerate(shares))
    files["keep"] = "".join(path + "\n" for path in keep)
    if shell:
        # guest-init gives the command the serial console as its terminal,
        # sized like this one.
        size = shutil.get_terminal_size()
        files["shell"] = f"{size.lines} {size.columns}\n"
    return files


def write_share(rundir, files):
    share = os.path.join(rundir, "share")
    os.makedirs(share)
    for name, text in files.items():
        with open(os.path.join(share, name), "w") as f:
            f.write(text)


def die_with_parent():
    """QEMU must never outlive run-guest, even if run-guest is SIGKILLed."""
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setpgrp()


def die_with_parent_in_foreground():
    """The same for --shell, where QEMU reads the terminal: it stays in the
    terminal's foreground process group (a background one would be stopped
    by SIGTTIN)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)


class Streams:
    """Copy what the guest writes to its ports to our stdout and stderr."""

    def __init__(self, rundir):
        self.files = []
        for name, dest in (("stdout", sys.stdout.buffer),
                           ("stderr", sys.stderr.buffer)):
            path = os.path.join(rundir, name)
            open(path, "wb").close()
            self.files.append((open(path, "rb"), dest))

    def pump(self):
        for src, dest in self.files:
            data = src.read()
            if data:
                dest.write(data)
                dest.flush()


def read_status(rundir):
    try:
        with open(os.path.join(rundir, "status")) as f:
            text = f.read()
    except OSError:
        return None, False
    m = re.search(r"exit=(\d+)", text)
    return (int(m.group(1)) if m else None), "started" in text


# A test's own kernel-log lines, written through /dev/kmsg: never a splat,
# whatever they say. With them a test declares what it provokes on purpose:
#   numa-matrix-test: allow KIND: WHY      (before)
#   numa-matrix-test: end allow KIND       (after; else the end of the log)
# Between the two, the kernel's report of KIND does not fail the run; any
# other splat still does. docs/writing-a-test.md lists the kinds.
TEST_LINE = re.compile(r"^(?:\[\s*\d+\.\d+\] )?numa-matrix-test: (.*)$")
ALLOWANCE = re.compile(r"(end )?allow ([a-z-]+)(?::\s*(.*))?$")
ALLOWABLE = {
    # The global OOM killer's report (a memcg's limit is not a splat).
    "oom": re.compile(r"Out of memory: Killed process|invoked oom-killer|"
                      r"oom-kill:constraint="),
}


def splats(console, allowed=None):
    """(lines, indexes of splat lines). Lines a test's allowance covers are
    appended to ALLOWED as (index, kind, why) instead."""
    lines = console.splitlines()
    found: list[int] = []
    open_kinds: dict[str, str] = {}
    for i, line in enumerate(lines):
        m = TEST_LINE.match(line)
        if m:
            a = ALLOWANCE.match(m.group(1))
            if a and a.group(2) in ALLOWABLE:
                if a.group(1):
                    open_kinds.pop(a.group(2), None)
                else:
                    open_kinds[a.group(2)] = a.group(3) or ""
            continue
        if not SPLAT.search(line):
            continue
        kind = next((k for k in open_kinds if ALLOWABLE[k].search(line)), None)
        if kind is None:
            found.append(i)
        elif allowed is not None:
            allowed.append((i, kind, open_kinds[kind]))
    return lines, found


def console_excerpt(lines, marks):
    """The lines around each marked line (two before, eleven after), in
    order, each once."""
    shown = []
    for i in marks:
        for j in range(max(0, i - 2), min(len(lines), i + 12)):
            if j not in shown:
                shown.append(j)
    return [lines[j] for j in shown]


def tail(lines, n=8):
    return list(range(max(0, len(lines) - n), len(lines)))


def report_console(lines, marks, path):
    for line in console_excerpt(lines, marks):
        print(f"  | {line}", file=sys.stderr)
    log(f"kernel log: {path}")


def probe_verdict(result):
    """What a KVM probe boot's end says: True (KVM runs the guest), False
    (QEMU could not run it on KVM: it stopped without the command's status,
    or the guest printed nothing at all, not even the firmware's first
    bytes, before the probe's timeout), None (no verdict on KVM: the kernel
    failed, or it was running but too slow under load; such a result must
    not disable KVM for later runs)."""
    if result.status == 0:
        return True
    if result.status == EXIT_SETUP:
        return False
    if result.status == EXIT_TIMEOUT and result.silent:
        return False
    return None


def probe_cache():
    return os.path.join(cache_root(), "kvm-probe.json")


def kvm_works(req):
    """Probe once per host kernel and QEMU: can this machine run REQ's
    kernel on KVM? The probe boots it on REQ's machine with /bin/true as
    the command. A clear answer is cached; an inconclusive probe is not."""
    if not os.access(KVM_DEVICE, os.R_OK | os.W_OK):
        log(f"no access to {KVM_DEVICE}: TCG")
        return False
    h = host_facts(QEMU)
    key = f"{h.qemu}|{h.host_kernel}"
    path = probe_cache()
    try:
        with open(path) as f:
            cached = json.load(f)
        if cached.get("key") == key:
            return bool(cached["works"])
    except (OSError, ValueError, KeyError):
        pass
    log(f"probing KVM with a short boot (result cached in {path})")
    probe = GuestRequest(topology=req.topology, kernel=req.kernel,
                         argv=["true"], accel="kvm", timeout=PROBE_TIMEOUT,
                         quiet=True)
    result = boot(probe)
    works = probe_verdict(result)
    if works is None:
        log(f"KVM probe inconclusive ({result.summary}: the kernel failed "
            "or the guest was slow): TCG for this run, nothing cached")
        return False
    atomic_write(path, json.dumps({"key": key, "works": works}) + "\n")
    log("KVM works here" if works else
        f"KVM does not work here ({result.summary}): TCG")
    return works


def run(req):
    """Boot REQ's guest on the accelerator it asks for, "auto" decided
    here: KVM if a probe boot works (wall clock only; icount and model are
    TCG's), else TCG."""
    accel = req.accel
    if req.clock in ONE_VCPU_CLOCKS:
        if accel == "kvm":
            raise SetupError(f"--clock {req.clock} needs TCG, not KVM")
        accel = "tcg"
    elif accel == "auto":
        accel = "kvm" if kvm_works(req) else "tcg"
    return boot(dataclasses.replace(req, accel=accel))


def boot(req):
    """One guest, on REQ's accelerator (tcg or kvm): its GuestResult."""
    if req.accel not in ("tcg", "kvm"):
        raise SetupError(f"accelerator {req.accel!r}: boot() takes tcg or "
                         "kvm (run() decides auto)")
    base = os.environ.get("NUMA_MATRIX_RUNS") or os.path.join(cache_root(), "runs")
    os.makedirs(base, exist_ok=True)
    rundir = tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=base)
    shares = [os.path.abspath(p) for p in req.writable]
    files = share_files(req.argv, shares, req.keep_paths, req.topology,
                        req.clock, req.kernel, req.env, req.shell, req.root)
    initrd = None
    if req.root == "initramfs":
        try:
            # guest-init binds the kept paths aside and back around its
            # fresh /tmp, as over 9p: they must exist in the initramfs.
            initrd = initramfs.build(rundir, req.argv[0], files,
                                     [os.getcwd()] + req.keep_paths)
        except initramfs.InitramfsError:
            shutil.rmtree(rundir, ignore_errors=True)
            raise
    else:
        write_share(rundir, files)
    # Unix socket paths are limited to 108 bytes: a long run directory gets
    # a short socket directory of its own, removed with the guest.
    sockdir = rundir if len(rundir) < 80 else tempfile.mkdtemp(prefix="nm-")
    try:
        return run_qemu(req, rundir, shares, sockdir, initrd)
    finally:
        if sockdir != rundir:
            shutil.rmtree(sockdir, ignore_errors=True)


def run_qemu(req, rundir, shares, sockdir, initrd=None):
    topo = req.topology
    binding = host_binding(topo, host_memory_nodes()) \
        if req.accel == "kvm" else {}
    if binding and not req.quiet:
        log("KVM on a NUMA host: guest node -> host node " +
            ", ".join(f"{g}->{h}" for g, h in sorted(binding.items())) +
            " (memory bound, vCPUs pinned)")
    # QEMU's monitor serves the control channel and pins vCPUs. No control
    # channel with an initramfs root: connecting to its port tells the
    # guest so at a moment of the host's choosing.
    note = hostctl.transcript(os.path.join(rundir, "hostctl.log"))
    qmp = hostctl.Qmp(os.path.join(sockdir, "qmp.sock"), note) \
        if binding or not initrd else None
    control = None if initrd else hostctl.HostControl(sockdir, topo, qmp, note)
    pinning = hostctl.Binding(qmp, binding, note) if binding else None
    cmd = qemu_command(topo, req.kernel, kernel_cmdline(req), rundir, shares,
                       req.accel, req.clock, control, binding, req.plugin,
                       req.shell, req.qemu_opts, initrd,
                       bool(req.model_profile), qmp)
    with open(os.path.join(rundir, "qemu.cmd"), "w") as f:
        f.write(shlex.join(cmd) + "\n")
    streams = Streams(rundir) if not req.quiet else None
    qlog = open(os.path.join(rundir, "qemu.log"), "wb")
    t0 = time.time()
    proc = subprocess.Popen(
        cmd, stdin=None if req.shell else subprocess.DEVNULL,
        stdout=None if req.shell else qlog, stderr=qlog,
        preexec_fn=die_with_parent_in_foreground if req.shell
        else die_with_parent)
    timed_out = False
    try:
        while proc.poll() is None:
            if streams:
                streams.pump()
            if pinning:
                pinning.poll()
            if control:
                control.poll()
            if time.time() - t0 > req.timeout:
                timed_out = True
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        log(f"interrupted; guest stopped, run directory kept: {rundir}")
        raise
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        qlog.close()
        if control:
            control.close()
        if qmp:
            qmp.close()
    if streams:
        streams.pump()
    result = finish(req, rundir, proc.returncode, timed_out, time.time() - t0)
    result.accel = req.accel
    return result


# The kernel could not mount the host's root: its 9p or virtio drivers are
# modules (the guests boot without an initramfs) or missing.
ROOT_MOUNT_FAILED = re.compile(
    r"VFS: Unable to mount root|Cannot open root device|"
    r"No filesystem could mount root|9pnet_virtio: no channels")


def root_mount_hint(console):
    if ROOT_MOUNT_FAILED.search(console):
        log("the kernel could not mount the host's root over 9p: build "
            "CONFIG_NET_9P, NET_9P_VIRTIO, 9P_FS, VIRTIO_PCI and PCI in (=y: "
            "the guests have no initramfs for modules); ./numa-matrix config "
            "prints every option the guests need")


def copy_model_files(req, rundir):
    """--model-log FILE and --model-profile FILE: the cost model's records
    and profile of this guest, whatever became of it (an empty file when the
    plugin wrote nothing)."""
    for dest, src in ((req.model_log, model_log(rundir, req.root)),
                      (req.model_profile, os.path.join(rundir, MODEL_PROFILE))):
        if not dest:
            continue
        try:
            with open(src) as f:
                text = f.read()
        except OSError:
            text = ""
        atomic_write(os.path.abspath(dest), text)


def finish(req, rundir, qemu_rc, timed_out, seconds):
    """How the guest ended, from its status port and console log; what a
    user needs to see of it is said on stderr (a quiet guest, a KVM probe,
    says only the summary, through its caller)."""
    copy_model_files(req, rundir)
    def say(msg):
        if not req.quiet:
            log(msg)

    def show(lines, marks, path):
        if not req.quiet:
            report_console(lines, marks, path)

    console_path = os.path.join(rundir, "console.log")
    try:
        with open(console_path, errors="replace") as f:
            console = f.read()
    except OSError:
        console = ""
    allowed: list = []
    lines, found = splats(console, allowed)
    for i, kind, why in allowed[:3]:
        say(f"allowed by the test ({kind}: {why or 'no reason given'}): "
            f"{lines[i].strip()}")
    rc, started = read_status(rundir)
    done = dict(seconds=seconds, rundir=rundir, silent=not console)
    if timed_out:
        # A splat long before the hang is often its cause: show it too.
        state = "command was running" if started else \
            "it never started the command" if console else \
            "the console stayed empty: no firmware, no kernel ran"
        summary = f"guest did not finish within {req.timeout:g} s ({state})"
        say(summary + ";" + (" kernel problems, then" if found else "")
            + " the last kernel messages:")
        show(lines, found[:5] + tail(lines), console_path)
        return GuestResult.failed(EXIT_TIMEOUT, summary, **done)
    if found:
        what = "the command exited with status " + str(rc) if rc is not None \
            else "the command did not finish"
        say(f"kernel problem in the guest ({what}):")
        show(lines, found[:5], console_path)
        if not req.quiet:
            root_mount_hint(console)
        return GuestResult.failed(
            EXIT_SPLAT, f"kernel problem in the guest ({what}): "
            f"{lines[found[0]].strip()}", **done)
    if rc is None:
        with open(os.path.join(rundir, "qemu.log"), errors="replace") as f:
            qemu_out = f.read().strip()
        summary = (f"guest ended without reporting an exit status (QEMU exit "
                   f"{qemu_rc}){': ' + qemu_out.splitlines()[-1] if qemu_out else ''}")
        say(f"guest ended without reporting an exit status (QEMU exit "
            f"{qemu_rc}){': ' + qemu_out if qemu_out else ''}")
        show(lines, tail(lines), console_path)
        if not req.quiet:
            root_mount_hint(console)
            log(f"QEMU command: {os.path.join(rundir, 'qemu.cmd')}")
        return GuestResult.failed(EXIT_SETUP, summary, **done)
    say(f"guest finished in {seconds:.1f} s, command exit status {rc}")
    if req.keep or rc != 0:
        say(f"run directory kept: {rundir}")
    else:
        shutil.rmtree(rundir, ignore_errors=True)
        done["rundir"] = None
    return GuestResult.of_command(rc, **done)


def list_catalogue():
    for path in topology.catalogue():
        try:
            t = topology.load(path, in_catalogue=True)
            print(f"{t.name:<12} {t.summary()}: {t.description}")
        except topology.TopologyError as e:
            print(f"{os.path.basename(path):<12} INVALID: {e}")


def main(argv=None):
    signal.signal(signal.SIGTERM, on_sigterm)
    ap = argparse.ArgumentParser(
        usage="%(prog)s [options] -- COMMAND [ARG...]",
        description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", default="4node",
                    help="a name from --list, or a .topo path (default 4node)")
    ap.add_argument("--kernel", default="patched", metavar="SPEC",
                    help="the kernel: baseline, patched, series-K, "
                    "linux-source-6.12, GITDIR@COMMIT, a bzImage ... "
                    "(docs/kernel-specs.md), built already")
    ap.add_argument("--flavour", default="perf", choices=kernelspec.FLAVOURS)
    ap.add_argument("--clock", default="wall", choices=("wall", "icount", "model"),
                    help="icount: one vCPU, guest time = executed instructions; "
                    "model: icount plus the cost model (docs/cost-model.md)")
    ap.add_argument("--accel", default="tcg", choices=("tcg", "kvm", "auto"),
                    help="auto: KVM if a probe boot works, else TCG")
    ap.add_argument("--root", default="host", choices=("host", "initramfs"),
                    help="host: the host's root over 9p, read-only; "
                    "initramfs: an initramfs holding only COMMAND (one "
                    "program) and the libraries it links, so that the guest "
                    "waits for no host I/O (repeatable under icount/model)")
    ap.add_argument("--model-log", metavar="FILE",
                    help="--clock model: copy the cost model's records to FILE")
    ap.add_argument("--model-profile", metavar="FILE",
                    help="--clock model: count the instructions of each "
                    "address inside the marked regions and write them to FILE "
                    "(docs/profile.md)")
    ap.add_argument("--writable", action="append", default=[], metavar="DIR",
                    help="host directory the guest may write (repeatable)")
    ap.add_argument("--thp", choices=("always", "madvise", "never"),
                    help="transparent_hugepage= at boot")
    ap.add_argument("--append", action="append", default=[], metavar="ARG",
                    help="extra kernel command-line argument")
    ap.add_argument("--env", action="append", default=[],
                    metavar="NAME[=VALUE]",
                    help="pass this variable to the command too (only PATH, "
                    "locale, Python, Meson, NUMA_MATRIX_*, NUMA_TESTS_* and "
                    "KSELFTEST_* pass by default)")
    ap.add_argument("--shell", action="store_true",
                    help="an interactive shell in the guest (or COMMAND with "
                    "this terminal as its own): the serial console is the "
                    "terminal, kernel messages included; no timeout unless "
                    "--timeout")
    ap.add_argument("--qemu-opts", default="", metavar="OPTIONS",
                    help="options added at the end of QEMU's command line, "
                    "split as a shell would (e.g. \"-d guest_errors\")")
    ap.add_argument("--timeout", type=float,
                    help="seconds before the guest is stopped (default 900; "
                    "none with --shell)")
    ap.add_argument("--record", metavar="FILE",
                    help="write how and where the guest ran (accelerator "
                    "used, host, CPU model, host kernel, QEMU) to FILE as JSON")
    ap.add_argument("--keep", action="store_true",
                    help="keep the run directory (console log etc.) on success")
    ap.add_argument("--list", action="store_true", help="list the topologies")
    ap.add_argument("argv", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.list:
        list_catalogue()
        return 0
    if args.shell and not args.argv:
        args.argv = [interactive_shell()]
    if not args.argv:
        ap.error("no command: give it after -- (or --shell)")
    try:
        qemu_opts = shlex.split(args.qemu_opts)
    except ValueError as e:
        ap.error(f"--qemu-opts: {e}")
    if args.root == "initramfs" and (args.writable or args.shell):
        ap.error("--root initramfs: the guest sees nothing of the host, so no "
                 "--writable and no --shell")
    for opt, value in (("--model-log", args.model_log),
                       ("--model-profile", args.model_profile)):
        if value and args.clock != "model":
            ap.error(f"{opt} needs --clock model")
    try:
        result = run(request(args, qemu_opts))
    except NumaMatrixError as e:
        log(f"error: {e}")
        result = GuestResult.failed(EXIT_SETUP, str(e).splitlines()[0])
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    record(args.record, result)
    return result.status


def request(args, qemu_opts):
    """The command line as a GuestRequest: the machine read and checked,
    the kernel looked up (never built), the cost model found."""
    topo = topology.find(args.topology)
    topology.check_fits(topo, topology.host_limits())
    if args.clock in ONE_VCPU_CLOCKS:
        topo = topo.single_cpu()
    for d in args.writable:
        if not os.path.isdir(d):
            raise SetupError(f"--writable {d}: no such directory")
    kernel = resolve_kernel(args.kernel, args.flavour)
    if shutil.which(QEMU) is None:
        raise SetupError(f"{QEMU} not found: apt-get install qemu-system-x86")
    timeout = args.timeout if args.timeout is not None else \
        float("inf") if args.shell else 900
    return GuestRequest(
        topology=topo, kernel=kernel, argv=args.argv, clock=args.clock,
        accel=args.accel, root=args.root, timeout=timeout,
        writable=args.writable,
        keep_paths=keep_paths(args.argv,
                              [os.path.abspath(d) for d in args.writable]),
        env=args.env, thp=args.thp, append=args.append, shell=args.shell,
        qemu_opts=qemu_opts,
        plugin=cost_model_plugin() if args.clock == "model" else None,
        model_log=args.model_log, model_profile=args.model_profile,
        keep=args.keep)


def where():
    """The host a guest ran on: what a figure may depend on."""
    h = host_facts(QEMU)
    return {"host": h.host, "cpu_model": h.cpu_model,
            "host_kernel": h.host_kernel, "qemu": h.qemu}


def record(path, result):
    """--record FILE: how and where this guest ran and how it ended, as
    JSON, for the program that started run-guest (results/matrix keeps it
    per cell): the accelerator used, the exit status, its reason ("ok",
    "command", or run-guest's own: "splat", "timeout", "setup") and a
    one-line summary, and the host's facts."""
    if path:
        atomic_write(os.path.abspath(path), json.dumps(
            {"accel": result.accel, "exit": result.status,
             "reason": result.reason, "summary": result.summary,
             **where()}) + "\n")


def interactive_shell():
    for sh in (os.environ.get("SHELL"), "/bin/bash", "/bin/sh"):
        if sh and os.access(sh, os.X_OK):
            return sh
    return "/bin/sh"


def on_sigterm(signum, frame):
    raise KeyboardInterrupt
