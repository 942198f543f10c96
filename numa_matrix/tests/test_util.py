#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of numa_matrix.util and numa_matrix.errors: the one
atomic write, the directory swap, the host facts asked once, and the one
error base every module's errors derive from."""

import io
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from contextlib import redirect_stderr
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import errors, util  # noqa: E402
from numa_matrix import (guest, initramfs, kernels, kernelspec,  # noqa: E402
                         matrix, mutants, profile, selftests, slurm, topology)


class AtomicWrite(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "sub", "f.json")

    def tearDown(self):
        self.tmp.cleanup()

    def files(self):
        return sorted(os.listdir(os.path.dirname(self.path)))

    def test_replaces_whole_and_leaves_nothing_beside(self):
        util.atomic_write(self.path, "old\n")
        util.atomic_write(self.path, b"new\n")
        with open(self.path) as f:
            self.assertEqual(f.read(), "new\n")
        self.assertEqual(self.files(), ["f.json"])

    def test_failed_write_keeps_the_old_file(self):
        util.atomic_write(self.path, "old\n")

        def broken_fsync(fd):
            raise OSError(28, "No space left on device")

        with mock.patch.object(util.os, "fsync", broken_fsync), \
                self.assertRaises(OSError):
            util.atomic_write(self.path, "new\n")
        with open(self.path) as f:
            self.assertEqual(f.read(), "old\n")
        self.assertEqual(self.files(), ["f.json"])

    def test_threads_do_not_share_a_temporary_file(self):
        # Four writers at once (all four wait for each other before
        # opening): four temporary files.
        names = set()
        real_open = open
        together = threading.Barrier(4, timeout=10)

        def spy(path, mode="r", *a, **kw):
            if "x" in mode:
                names.add(path)
                together.wait()
            return real_open(path, mode, *a, **kw)

        with mock.patch("builtins.open", spy):
            threads = [threading.Thread(target=util.atomic_write,
                                        args=(self.path, str(i)))
                       for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.assertEqual(len(names), 4)
        self.assertEqual(self.files(), ["f.json"])

    def test_mode_follows_the_umask(self):
        old = os.umask(0o022)
        try:
            util.atomic_write(self.path, "x")
        finally:
            os.umask(old)
        self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o644)


class ReplaceDir(unittest.TestCase):
    def test_old_removed_only_after_the_new_is_in_place(self):
        with tempfile.TemporaryDirectory() as d:
            dest, new = os.path.join(d, "store"), os.path.join(d, "store.tmp")
            for path, text in ((dest, "old"), (new, "new")):
                os.makedirs(path)
                with open(os.path.join(path, "bzImage"), "w") as f:
                    f.write(text)
            real_rename = os.rename
            seen = []

            def rename(a, b):
                # When the new one moves in, the old one still exists
                # somewhere.
                if a == new:
                    seen.append(sorted(os.listdir(d)))
                real_rename(a, b)

            with mock.patch.object(util.os, "rename", rename):
                util.replace_dir(new, dest)
            self.assertEqual(len(seen[0]), 2)
            with open(os.path.join(dest, "bzImage")) as f:
                self.assertEqual(f.read(), "new")
            self.assertEqual(os.listdir(d), ["store"])


class HostFacts(unittest.TestCase):
    def test_qemu_asked_once(self):
        util.qemu_version.cache_clear()
        util.host_facts.cache_clear()
        with tempfile.TemporaryDirectory() as d:
            qemu = os.path.join(d, "qemu")
            count = os.path.join(d, "count")
            with open(qemu, "w") as f:
                f.write(f"#!/bin/sh\necho x >>{count}\n"
                        "echo 'QEMU emulator version 7.2.22'\n")
            os.chmod(qemu, 0o755)
            for _ in range(3):
                facts = util.host_facts(qemu)
            util.qemu_version(qemu)
            with open(count) as f:
                self.assertEqual(len(f.readlines()), 1)
        self.assertEqual(facts.qemu, "QEMU emulator version 7.2.22")
        self.assertEqual(facts.host_kernel, os.uname().release)
        self.assertGreater(facts.memory_mib, 0)
        self.assertEqual(util.qemu_version("/nonexistent/qemu"), "unknown")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class Children(unittest.TestCase):
    """What run_child() runs is stopped with this process, from any
    thread, rather than left to run on."""

    def test_stopped_from_another_thread(self):
        with tempfile.TemporaryDirectory() as d:
            pidfile = os.path.join(d, "pid")
            done = []

            def cell():
                out = util.run_child(["sh", "-c", f"echo $$ >{pidfile}; "
                                      "exec sleep 60"], capture_output=True)
                done.append(out.returncode)

            t = threading.Thread(target=cell)
            t.start()
            while not os.path.exists(pidfile) or not open(pidfile).read():
                time.sleep(0.05)
            pid = int(open(pidfile).read())
            util.stop_children(grace=5)
            t.join(10)
        self.assertFalse(t.is_alive())
        self.assertEqual(done, [-15])       # SIGTERM
        self.assertFalse(alive(pid))
        self.assertEqual(util._children, set())

    def test_run_like_subprocess_run(self):
        out = util.run_child(["sh", "-c", "cat; echo err >&2; exit 3"],
                             input="in\n", capture_output=True, text=True)
        self.assertEqual((out.returncode, out.stdout, out.stderr),
                         (3, "in\n", "err\n"))
        with self.assertRaises(subprocess.CalledProcessError):
            util.run_child(["false"], check=True)


class Errors(unittest.TestCase):
    def test_every_module_error_has_the_one_base(self):
        for cls in (guest.SetupError, initramfs.InitramfsError,
                    kernels.BuildError, kernelspec.SpecError,
                    matrix.MatrixError, mutants.MutantsError,
                    profile.ProfileError, selftests.SelftestsError,
                    slurm.SlurmError, topology.TopologyError):
            with self.subTest(cls=cls.__name__):
                self.assertTrue(issubclass(cls, errors.NumaMatrixError))

    def test_bad_input_exits_2_a_failure_1(self):
        for e, status in ((kernelspec.SpecError("no such kernel"), 2),
                          (topology.TopologyError("x.topo", 3, "bad"), 2),
                          (kernels.BuildError("make failed"), 1)):
            err = io.StringIO()
            with redirect_stderr(err):
                self.assertEqual(errors.report("prog", e), status)
            self.assertEqual(err.getvalue().count("\n"), 1)
            self.assertTrue(err.getvalue().startswith("prog: error: "))


if __name__ == "__main__":
    unittest.main(verbosity=2)
