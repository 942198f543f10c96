#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of where numa_matrix/kernels.py finds the System.map of a
built kernel (system_map()) and of build-kernel keeping it beside the
bzImage (store()): the symbols results/matrix profile names functions with
must be those of the very image the guest booted."""

import dataclasses
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import kernels as kbuild  # noqa: E402
from numa_matrix.tests.helpers import kernel_plan  # noqa: E402
from numa_matrix.types import Source  # noqa: E402
from numa_matrix.util import atomic_write  # noqa: E402

SYSTEM_MAP = "ffffffff81000000 T _text\nffffffff81000000 T startup_64\n"


class SystemMap(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.plan = kernel_plan(
            label="baseline", spec="linux-source-6.1@baseline",
            store=os.path.join(self.root, "kernels", "k-perf-c"),
            build=os.path.join(self.root, "src", "k", "build-perf"))
        atomic_write(os.path.join(self.plan.store, "bzImage"), "image 1")
        self.built = os.path.join(self.plan.build, "System.map")
        atomic_write(os.path.join(self.plan.build, "arch/x86/boot/bzImage"),
              "image 1")
        atomic_write(self.built, SYSTEM_MAP)
        # As a build leaves them: System.map, then the bzImage.
        os.utime(self.built, (1000, 1000))

    def tearDown(self):
        shutil.rmtree(self.root)

    def test_a_copy_beside_the_image_comes_first(self):
        stored = os.path.join(self.plan.store, "System.map")
        atomic_write(stored, SYSTEM_MAP)
        self.assertEqual(kbuild.system_map(self.plan), stored)

    def test_the_build_dir_serves_while_its_last_image_is_this_one(self):
        self.assertEqual(kbuild.system_map(self.plan), self.built)

    def test_a_build_dir_that_built_another_image_is_refused(self):
        atomic_write(os.path.join(self.plan.build, "arch/x86/boot/bzImage"),
              "image 2")
        with self.assertRaisesRegex(kbuild.BuildError, "not this kernel's.*remove"):
            kbuild.system_map(self.plan)

    def test_a_system_map_newer_than_the_image_is_refused(self):
        os.utime(self.built, None)
        os.utime(os.path.join(self.plan.build, "arch/x86/boot/bzImage"),
                 (1000, 1000))
        with self.assertRaises(kbuild.BuildError):
            kbuild.system_map(self.plan)

    def test_a_git_kernel_needs_its_own_copy(self):
        self.plan.kind = "git"
        with self.assertRaisesRegex(kbuild.BuildError,
                                    "shared by all its commits.*build-kernel"):
            kbuild.system_map(self.plan)

    def test_a_kernel_not_built(self):
        os.unlink(os.path.join(self.plan.store, "bzImage"))
        with self.assertRaisesRegex(kbuild.BuildError, "not built"):
            kbuild.system_map(self.plan)

    def test_store_keeps_the_system_map(self):
        p = dataclasses.replace(self.plan, source=Source(
            kind="package", package="p", tarball="/t", id="k", version="1"))
        atomic_write(os.path.join(p.build, ".config"), "CONFIG_X=y\n")
        atomic_write(os.path.join(p.build, "include/config/kernel.release"), "6.1\n")
        shutil.rmtree(p.store)
        kbuild.store(p, 1.0)
        with open(os.path.join(p.store, "System.map")) as f:
            self.assertEqual(f.read(), SYSTEM_MAP)


if __name__ == "__main__":
    unittest.main(verbosity=2)
