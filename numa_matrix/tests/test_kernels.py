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
        self.p = {"build": d, "localversion": "-x", "label": "t",
                  "flavour": "perf"}
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
            p = {"root": root, "tree": os.path.join(root, "src", "t1")}
            other = dict(p, tree=os.path.join(root, "src", "t2"))
            quiet = lambda msg: None    # noqa: E731
            with mock.patch.dict(os.environ, {"NUMA_MATRIX_BUILD_LOCK": "none"}):
                with kernels.building(p, quiet):
                    self.assertTrue(self.waits(kernels.building(p, quiet)))
                    self.assertFalse(self.waits(kernels.building(other, quiet)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
