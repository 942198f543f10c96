#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of the initramfs a guest boots from with run-guest --root
initramfs: what goes in, and that the same files give the same bytes."""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import initramfs  # noqa: E402

LDD = """\tlinux-vdso.so.1 (0x00007ffd3b5f2000)
\tlibnuma.so.1 => /lib/x86_64-linux-gnu/libnuma.so.1 (0x00007f0c1c000000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0c1be1f000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f0c1c01f000)
"""


def listing(cpio):
    with open(cpio, "rb") as f:
        out = subprocess.run(["cpio", "-t", "--quiet"], stdin=f,
                             capture_output=True, text=True, check=True)
    return out.stdout.split()


class Ldd(unittest.TestCase):
    def test_files_the_loader_maps(self):
        self.assertEqual(initramfs.parse_ldd("p", LDD), [
            "/lib/x86_64-linux-gnu/libnuma.so.1",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib64/ld-linux-x86-64.so.2"])

    def test_static_program_needs_nothing(self):
        self.assertEqual(initramfs.parse_ldd("p", "\tstatically linked\n"), [])

    def test_missing_library_is_named(self):
        with self.assertRaisesRegex(initramfs.InitramfsError,
                                    "p: shared library libnuma.so.1 not found"):
            initramfs.parse_ldd("p", "\tlibnuma.so.1 => not found\n" + LDD)

    def test_missing_program_is_named(self):
        with self.assertRaisesRegex(initramfs.InitramfsError,
                                    "no-such-program: no such program"):
            initramfs.find_program("no-such-program")


@unittest.skipUnless(shutil.which("busybox") and shutil.which("cpio"),
                     "needs busybox and cpio (./numa-matrix deps)")
class Build(unittest.TestCase):
    def build(self, share):
        work = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, work)
        return initramfs.build(work, "/bin/true", share, ["/some/cwd"])

    def test_what_goes_in(self):
        names = listing(self.build({"cmd": "exec /bin/true\n"}))
        for name in ("init", "bin/sh", "bin/mount", "bin/busybox", "bin/true",
                     "nmrun/cmd", "some/cwd", "proc", "sys", "dev", "tmp"):
            self.assertIn(name, names)
        libs = [n for n in names if "libc.so" in n]
        self.assertTrue(libs, names)

    def test_the_program_is_not_an_applet(self):
        stage = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, stage)
        initramfs.stage_tree(stage, "/bin/true", {})
        self.assertFalse(os.path.islink(os.path.join(stage, "bin", "true")))
        self.assertTrue(os.path.islink(os.path.join(stage, "bin", "false")))

    def test_same_files_same_bytes(self):
        share = {"cmd": "exec /bin/true\n"}
        a, b = self.build(share), self.build(share)
        with open(a, "rb") as fa, open(b, "rb") as fb:
            self.assertEqual(hashlib.sha256(fa.read()).hexdigest(),
                             hashlib.sha256(fb.read()).hexdigest())
        c = self.build({"cmd": "exec /bin/false\n"})
        with open(a, "rb") as fa, open(c, "rb") as fc:
            self.assertNotEqual(fa.read(), fc.read())


if __name__ == "__main__":
    unittest.main(verbosity=2)
