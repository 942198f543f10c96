# SPDX-License-Identifier: GPL-2.0
"""An initramfs that holds one program: the root of a guest that waits for
nothing from the host between boot and power-off.

A guest whose root is the host's, over 9p, waits for QEMU's I/O threads at
every file it opens; while it waits, idle, `-icount sleep=off` moves the
virtual clock from timer to timer at the host's pace, so each boot reaches
the benchmark with its timers, per-CPU counters and caches in a slightly
different state and the counts differ in the last digits
(docs/cost-model.md, "Repeatability"). This root is read from guest memory
only: busybox for guest-init's shell and tools, the program and the shared
libraries the dynamic loader names for it, the run's share, and empty
directories where the program's path and working directory were.
"""

import os
import re
import shutil
import subprocess

from . import QEMU_TOPOLOGIES
from .errors import NumaMatrixError

GUEST_INIT = os.path.join(QEMU_TOPOLOGIES, "guest-init")
# Where guest-init finds the run's share in the initramfs (it binds it to
# /run/numa-matrix, as the 9p share would be).
SHARE = "nmrun"
# Debian's busybox-static; the dynamic busybox works too (its libraries go in).
BUSYBOX_PACKAGE = "busybox-static"


class InitramfsError(NumaMatrixError):
    pass


# ldd: "libnuma.so.1 => /lib/x86_64-linux-gnu/libnuma.so.1 (0x...)",
# "/lib64/ld-linux-x86-64.so.2 (0x...)", "linux-vdso.so.1 (0x...)".
LDD_LINE = re.compile(r"^\s*(?:(\S+) => )?(\S+)(?: \(0x[0-9a-f]+\))?$")


def parse_ldd(program, text):
    """The files the dynamic loader maps for PROGRAM, from ldd's output."""
    files = []
    for line in text.splitlines():
        if not line.strip() or "statically linked" in line:
            continue
        if "=> not found" in line:
            raise InitramfsError(f"{program}: shared library "
                                 f"{line.split()[0]} not found (ldd)")
        m = LDD_LINE.match(line)
        if not m:
            raise InitramfsError(f"{program}: cannot read ldd's line {line!r}")
        path = m.group(2)
        if path.startswith("/"):
            files.append(path)
        # else a virtual object of the kernel's (linux-vdso.so.1)
    return files


def shared_libraries(program):
    out = subprocess.run(["ldd", program], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        if "not a dynamic executable" in out.stdout + out.stderr:
            return []
        raise InitramfsError(f"ldd {program} failed: "
                             f"{(out.stderr or out.stdout).strip()}")
    return parse_ldd(program, out.stdout)


def find_program(name):
    """NAME as the guest's shell would find it, resolved on the host."""
    path = name if os.sep in name else shutil.which(name)
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise InitramfsError(f"{name}: no such program to put in the "
                             "initramfs")
    return os.path.abspath(path)


def copy_in(stage, path):
    """PATH's content at the same path under STAGE (a symlink on the way is
    followed: the guest sees a plain file)."""
    dest = os.path.join(stage, path.lstrip("/"))
    if os.path.exists(dest):
        return
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copyfile(path, dest)
    shutil.copymode(path, dest)


def add_busybox(stage):
    busybox = shutil.which("busybox")
    if not busybox:
        raise InitramfsError("busybox not found: apt-get install "
                             f"{BUSYBOX_PACKAGE} (or ./numa-matrix deps)")
    for path in shared_libraries(busybox):
        copy_in(stage, path)
    bindir = os.path.join(stage, "bin")
    os.makedirs(bindir, exist_ok=True)
    shutil.copyfile(busybox, os.path.join(bindir, "busybox"))
    os.chmod(os.path.join(bindir, "busybox"), 0o755)
    applets = subprocess.run([busybox, "--list"], capture_output=True,
                             text=True, check=True).stdout.split()
    for applet in applets:
        link = os.path.join(bindir, applet)
        if not os.path.lexists(link):
            os.symlink("busybox", link)


def stage_tree(stage, program, share, dirs=()):
    """Fill STAGE: /init, busybox in /bin, PROGRAM and its libraries at
    their paths, SHARE ({name: text}) in /nmrun, and the empty DIRS."""
    # The program first: busybox's applets must not take its place (a
    # program at /bin/true stays the host's true).
    for path in [program] + shared_libraries(program):
        copy_in(stage, path)
    add_busybox(stage)
    shutil.copyfile(GUEST_INIT, os.path.join(stage, "init"))
    os.chmod(os.path.join(stage, "init"), 0o755)
    for d in ("proc", "sys", "dev", "run", "tmp", "var/tmp", SHARE) + \
            tuple(d.lstrip("/") for d in dirs):
        os.makedirs(os.path.join(stage, d), exist_ok=True)
    for name, text in share.items():
        with open(os.path.join(stage, SHARE, name), "w") as f:
            f.write(text)


def pack(stage, out):
    """STAGE as a newc cpio archive (what the kernel unpacks), the same
    bytes for the same files: sorted, owned by root, no timestamps."""
    if not shutil.which("cpio"):
        raise InitramfsError("cpio not found: apt-get install cpio "
                             "(or ./numa-matrix deps)")
    names = []
    for root, dirs, files in os.walk(stage):
        for name in dirs + files:
            names.append(os.path.relpath(os.path.join(root, name), stage))
    for name in names:
        os.utime(os.path.join(stage, name), (0, 0), follow_symlinks=False)
    with open(out, "wb") as f:
        proc = subprocess.run(
            ["cpio", "--create", "--format=newc", "--null", "--quiet",
             "--owner=0:0", "--reproducible"],
            input=b"".join(n.encode() + b"\0" for n in sorted(names)),
            stdout=f, stderr=subprocess.PIPE, cwd=stage, check=False)
    if proc.returncode != 0:
        raise InitramfsError("cpio failed: " + proc.stderr.decode().strip())


def build(workdir, program, share, dirs=()):
    """The initramfs for PROGRAM in WORKDIR/initramfs.cpio; its path."""
    stage = os.path.join(workdir, "initramfs")
    os.makedirs(stage)
    stage_tree(stage, find_program(program), share, dirs)
    out = os.path.join(workdir, "initramfs.cpio")
    pack(stage, out)
    shutil.rmtree(stage)
    return out
