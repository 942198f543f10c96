#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of build-kernel's process handling: an interrupted or
terminated build leaves no compiler running (a stand-in `make` that starts
a child of its own plays the build)."""

import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import kernels  # noqa: E402
from numa_matrix.tests.helpers import kernel_plan  # noqa: E402

# A "make" whose "compiler" outlives it unless its group is stopped.
FAKE_MAKE = """#!/bin/sh
sleep 300 &
echo $! > "$PIDFILE"
[ -n "$QUICK" ] && exit 0
wait
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is not running; it only waits for its parent to reap it.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def interrupt(signum, frame):
    raise KeyboardInterrupt


class MakeGroup(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        with open(os.path.join(d, "make"), "w") as f:
            f.write(FAKE_MAKE)
        os.chmod(os.path.join(d, "make"), 0o755)
        self.pidfile = os.path.join(d, "pid")
        self.env = dict(os.environ, PATH=d + ":" + os.environ["PATH"],
                        PIDFILE=self.pidfile)
        self.p = kernel_plan(build=d, localversion="-x", label="t")
        self.logfile = os.path.join(d, "build.log")

    def tearDown(self):
        self.tmp.cleanup()

    def child(self):
        for _ in range(100):
            if os.path.exists(self.pidfile):
                with open(self.pidfile) as f:
                    text = f.read().strip()
                if text:
                    return int(text)
            time.sleep(0.05)
        self.fail("the stand-in make did not start its child")

    def test_interrupt_stops_the_compilers(self):
        old = signal.signal(signal.SIGALRM, interrupt)
        signal.alarm(2)
        try:
            with self.assertRaises(KeyboardInterrupt):
                kernels.compile_kernel(self.p, self.tmp.name, self.env,
                                       self.logfile, 2)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        self.assertGone(self.child())

    def assertGone(self, pid):
        # Killed, it may take init a moment to reap it.
        deadline = time.time() + 10
        while alive(pid) and time.time() < deadline:
            time.sleep(0.1)
        self.assertFalse(alive(pid), "make's child outlived the build")

    def test_leftovers_of_a_finished_make_are_stopped(self):
        self.env["QUICK"] = "1"
        kernels.compile_kernel(self.p, self.tmp.name, self.env, self.logfile, 2)
        self.assertGone(self.child())

    def test_sigterm_is_an_interrupt(self):
        # build-kernel under SIGTERM: the same clean-up as for ^C.
        # The signal is sent once the handler is in place, not after a
        # fixed delay: on a busy host the import alone can take seconds.
        code = ("import signal, sys, time; sys.path.insert(0, sys.argv[1]);"
                "from numa_matrix import kernels;"
                "signal.signal(signal.SIGTERM, kernels.on_signal)\n"
                "try:\n print('ready', flush=True)\n time.sleep(30)\n"
                "except KeyboardInterrupt:\n sys.exit(130)\n")
        top = os.path.dirname(os.path.dirname(kernels.__file__))
        proc = subprocess.Popen([sys.executable, "-c", code, top],
                                stdout=subprocess.PIPE, text=True)
        self.assertEqual(proc.stdout.readline(), "ready\n")
        proc.terminate()
        proc.stdout.close()
        self.assertEqual(proc.wait(timeout=10), 130)


class CleanUp(unittest.TestCase):
    """A build that stops while it unpacks or patches a source leaves no
    half tree in the cache: the next build starts that step again instead
    of finding a damaged tree."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.env = mock.patch.dict(os.environ, {
            "NUMA_MATRIX_CACHE": os.path.join(self.tmp.name, "cache"),
            "NUMA_MATRIX_BUILD_LOCK": "none"})
        self.env.start()

    def tearDown(self):
        self.env.stop()
        self.tmp.cleanup()

    def tarball(self, name, files):
        src = os.path.join(self.tmp.name, "src")
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(src, path)), exist_ok=True)
            with open(os.path.join(src, path), "w") as f:
                f.write(text)
        out = os.path.join(self.tmp.name, name)
        subprocess.run(["tar", "-cJf", out, "-C", src, *files], check=True)
        return out

    def left(self):
        """What the cache's src/ holds besides its memos."""
        d = os.path.join(self.tmp.name, "cache", "src")
        return sorted(f for f in os.listdir(d) if not f.endswith(".json")) \
            if os.path.isdir(d) else []

    def build(self, tarball):
        p = kernels.ks.one(tarball)
        with mock.patch.object(kernels, "log"):
            kernels.build(p, 1)

    def test_a_damaged_tarball(self):
        path = os.path.join(self.tmp.name, "linux-6.1.tar.xz")
        with open(path, "wb") as f:
            f.write(b"\xfd7zXZ\0 not really xz")
        with self.assertRaisesRegex(kernels.BuildError, "unpacking .*linux-6.1"):
            self.build(path)
        self.assertEqual(self.left(), [])

    def test_a_tarball_that_is_no_kernel_source(self):
        path = self.tarball("notes.tar.xz", {"notes/README": "x"})
        with self.assertRaisesRegex(kernels.BuildError, "not a kernel source"):
            self.build(path)
        self.assertEqual(self.left(), [])

    def test_an_interrupted_unpack(self):
        path = self.tarball("linux-6.1.tar.xz", {"linux-6.1/Makefile": "x"})
        real = kernels.run

        def interrupted(cmd, **kw):
            real(cmd, **kw)
            raise KeyboardInterrupt

        with mock.patch.object(kernels, "run", interrupted), \
                self.assertRaises(KeyboardInterrupt):
            self.build(path)
        self.assertEqual(self.left(), [])

    def test_a_patch_that_does_not_apply(self):
        path = self.tarball("linux-6.1.tar.xz", {
            "linux-6.1/Makefile": "VERSION = 6\n", "linux-6.1/mm/mlock.c": "x\n"})
        series = os.path.join(self.tmp.name, "series")
        os.makedirs(series)
        with open(os.path.join(series, "series"), "w") as f:
            f.write("0001-x.patch\n")
        with open(os.path.join(series, "0001-x.patch"), "w") as f:
            f.write("--- a/mm/mlock.c\n+++ b/mm/mlock.c\n@@ -1 +1 @@\n-y\n+z\n")
        with self.assertRaisesRegex(kernels.BuildError, "does not apply"):
            self.build(f"{path}+{series}")
        # The pristine tree is whole and kept; no patched half-tree.
        self.assertEqual([f.split("-")[0] for f in self.left()], ["pristine"])


class Locks(unittest.TestCase):
    """One heavy build per machine unless told otherwise (a Slurm job), and
    never two builds in one tree."""

    def held(self, path):
        f = open(path, "w")
        fcntl.flock(f, fcntl.LOCK_EX)
        self.addCleanup(f.close)

    def waits(self, lock):
        """Does entering the lock wait (for the holder, here for ever)?"""
        entered = threading.Event()

        def enter():
            with lock:
                entered.set()

        threading.Thread(target=enter, daemon=True).start()
        return not entered.wait(1)

    def test_machine_lock(self):
        with tempfile.TemporaryDirectory() as root:
            self.held(os.path.join(root, "build.lock"))
            quiet = lambda msg: None    # noqa: E731
            with mock.patch.dict(os.environ, {}, clear=False):
                os.environ.pop("NUMA_MATRIX_BUILD_LOCK", None)
                self.assertTrue(self.waits(kernels.build_lock(root, quiet)))
            with mock.patch.dict(os.environ, {"NUMA_MATRIX_BUILD_LOCK": "none"}):
                self.assertFalse(self.waits(kernels.build_lock(root, quiet)))

    def test_tree_lock_holds_even_without_the_machine_lock(self):
        with tempfile.TemporaryDirectory() as root:
            p = kernel_plan(root=root, tree=os.path.join(root, "src", "t1"))
            other = kernel_plan(root=root, tree=os.path.join(root, "src", "t2"))
            quiet = lambda msg: None    # noqa: E731
            with mock.patch.dict(os.environ, {"NUMA_MATRIX_BUILD_LOCK": "none"}):
                with kernels.building(p, quiet):
                    self.assertTrue(self.waits(kernels.building(p, quiet)))
                    self.assertFalse(self.waits(kernels.building(other, quiet)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
