#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of kernel specs (numa_matrix.kernelspec) and of what
build-kernel does with a git tree before make: the grammar, the one-line
errors, ranges, labels, identity (source version, compiler), the config
checks, and that a user's repository is never written to. A throwaway git
repository with a stand-in kernel Makefile plays the user's tree; nothing
here builds a kernel."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import kernels, kernelspec as ks  # noqa: E402
from numa_matrix.tests.helpers import fake_bzimage  # noqa: E402
from numa_matrix.tests.helpers import kernel_plan  # noqa: E402
from numa_matrix.types import Source  # noqa: E402

MAKEFILE = """# SPDX-License-Identifier: GPL-2.0
VERSION = 6
PATCHLEVEL = 12
SUBLEVEL = {sub}
EXTRAVERSION =
NAME = Baby Opossum Posse
"""
PATCH = """--- a/mm/mlock.c
+++ b/mm/mlock.c
@@ -1,2 +1,3 @@
 /* mlock */
+/* mine */
 int x;
"""
BAD_PATCH = """--- a/mm/mlock.c
+++ b/mm/mlock.c
@@ -1,2 +1,2 @@
 /* mlock */
-int nosuch;
+int y;
"""


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x",
               GIT_AUTHOR_DATE="2026-01-01T00:00:00",
               GIT_COMMITTER_DATE="2026-01-01T00:00:00")
    return subprocess.run(["git", "-C", repo, *args], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def snapshot(repo):
    """Every file of a repository with its size and mtime, .git included."""
    out = {}
    for d, _, files in os.walk(repo):
        for f in files:
            path = os.path.join(d, f)
            st = os.lstat(path)
            out[os.path.relpath(path, repo)] = (st.st_size, st.st_mtime_ns)
    return out


REPO: dict = {}


def setUpModule():
    """One throwaway repository for every test: only read by them (its
    commits are what a user's tree would hold)."""
    d = tempfile.mkdtemp()
    repo = os.path.join(d, "linux")
    os.makedirs(os.path.join(repo, "mm"))
    git(repo, "init", "-q", "-b", "main")
    commits = []
    for sub in range(3):
        with open(os.path.join(repo, "Makefile"), "w") as f:
            f.write(MAKEFILE.format(sub=sub))
        with open(os.path.join(repo, "mm", "mlock.c"), "w") as f:
            f.write(f"/* mlock */\nint x;\n/* {sub} */\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"commit {sub}")
        commits.append(git(repo, "rev-parse", "HEAD"))
    REPO.update(dir=d, repo=repo, commits=commits)


def tearDownModule():
    shutil.rmtree(REPO["dir"])


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.cache = os.path.join(self.dir, "cache")
        self.env = mock.patch.dict(os.environ, {"NUMA_MATRIX_CACHE": self.cache})
        self.env.start()
        self.repo, self.commits = REPO["repo"], REPO["commits"]
        self.series = os.path.join(self.dir, "mine")
        os.makedirs(self.series)
        with open(os.path.join(self.series, "0001-mine.patch"), "w") as f:
            f.write(PATCH)
        with open(os.path.join(self.series, "series"), "w") as f:
            f.write("0001-mine.patch\n")

    def tearDown(self):
        self.env.stop()
        shutil.rmtree(self.dir)

    def refused(self, spec, *words):
        with self.assertRaises(ks.SpecError) as cm:
            ks.kernels(spec)
        msg = str(cm.exception)
        self.assertNotIn("\n", msg)
        for w in words:
            self.assertIn(w, msg)
        return msg


class Grammar(Base):
    def test_variants_name_the_default_debian_source(self):
        for text in ("baseline", "patched", "series-3"):
            s = ks.parse(text)
            self.assertEqual((s.kind, s.package, s.variant),
                             ("package", "linux-source-6.1", text))

    def test_packages(self):
        s = ks.parse("linux-source-6.12")
        self.assertEqual((s.package, s.variant), ("linux-source-6.12", "baseline"))
        s = ks.parse("linux-source-6.12@series-2")
        self.assertEqual((s.package, s.variant), ("linux-source-6.12", "series-2"))

    def test_git_commit_range_series_and_label(self):
        s = ks.parse(f"mine={self.repo}@HEAD~1..HEAD+{self.series}@1")
        self.assertEqual((s.label, s.kind, s.path, s.range),
                         ("mine", "git", self.repo, ("HEAD~1", "HEAD")))
        self.assertEqual((s.series_dir, s.series_k), (self.series, 1))
        s = ks.parse(f"{self.repo}@main")
        self.assertEqual((s.rev, s.range), ("main", None))

    def test_tarball_and_image(self):
        tar = os.path.join(self.dir, "linux-6.12.5+x.tar.xz")
        open(tar, "w").close()
        self.assertEqual(ks.parse(tar).kind, "tarball")
        # A '+' in a file name is not a series.
        self.assertIsNone(ks.parse(tar).series_dir)
        img = os.path.join(self.dir, "bzImage")
        fake_bzimage(img, "6.12.0 (me@box) (gcc (Debian 12.2.0-14) 12.2.0)")
        self.assertEqual(ks.parse(img).kind, "image")

    def test_malformed_specs_are_one_line_errors(self):
        for text, word in (("", "empty"), ("foo", "names no kernel"),
                           ("patched+", "names no kernel"),
                           ("linux-source-x", "not a Debian source package"),
                           ("linux-source-6.12@newest", "unknown variant"),
                           ("/no/such.tar.xz", "does not exist"),
                           (self.repo, "give a commit"),
                           (self.dir, "is a directory"),
                           (f"{self.repo}@", "no commit after"),
                           (f"{self.repo}@A...B", "'...' is not supported"),
                           (f"{self.repo}@..B", "both ends"),
                           ("/no/dir@HEAD", "not a directory"),
                           (f"baseline+{self.dir}", "no 'series' file"),
                           ("baseline+/no/series", "does not exist"),
                           ("b@d=patched", "label")):
            with self.assertRaises(ks.SpecError, msg=text) as cm:
                ks.parse(text)
            self.assertIn(word, str(cm.exception), text)
            self.assertNotIn("\n", str(cm.exception))


class GitTrees(Base):
    def test_range_is_first_commit_then_each_one(self):
        plans = ks.kernels(f"{self.repo}@{self.commits[0]}..main")
        self.assertEqual([p.commit for p in plans], self.commits)
        self.assertEqual([p.label for p in plans],
                         [c[:12] for c in self.commits])
        self.assertEqual([p.source_version for p in plans],
                         ["6.12", "6.12.1", "6.12.2"])
        # results/<version>/: what make kernelversion prints.
        self.assertEqual([ks.kernel_version(p) for p in plans],
                         ["6.12.0", "6.12.1", "6.12.2"])
        self.assertEqual(plans[2].subject, "commit 2")
        # One spec per commit, each naming exactly that kernel.
        self.assertEqual(plans[1].spec, f"{self.repo}@{self.commits[1]}")
        # Commits of one tree share the work tree and build dir ...
        self.assertEqual({p.build for p in plans}, {plans[0].build})
        # ... and each has its own place in the kernel store.
        self.assertEqual(len({p.store for p in plans}), 3)

    def test_labelled_range_is_numbered(self):
        plans = ks.kernels(f"x={self.repo}@HEAD~2..HEAD")
        self.assertEqual([p.label for p in plans], ["x-0", "x-1", "x-2"])

    def test_one_refuses_a_range(self):
        with self.assertRaises(ks.SpecError) as cm:
            ks.one(f"{self.repo}@HEAD~1..HEAD")
        self.assertIn("names 2 kernels", str(cm.exception))
        self.assertEqual(ks.one(f"{self.repo}@HEAD").commit, self.commits[2])

    def test_bad_git_input(self):
        self.refused(f"{self.repo}@nosuch", "no commit 'nosuch'")
        self.refused(f"{self.repo}@HEAD..HEAD~1", "not an ancestor")
        self.refused(f"{self.repo}@HEAD..HEAD", "range is empty")
        plain = os.path.join(self.dir, "plain")
        os.makedirs(plain)
        self.refused(f"{plain}@HEAD", "not a git work tree")

    def test_series_on_top_changes_identity(self):
        bare = ks.one(f"{self.repo}@HEAD")
        mine = ks.one(f"{self.repo}@HEAD+{self.series}")
        self.assertEqual(mine.patch_names, ["0001-mine.patch"])
        self.assertEqual(mine.label, self.commits[2][:12] + "+mine")
        self.assertNotEqual(bare.store, mine.store)
        self.assertNotEqual(bare.localversion, mine.localversion)
        self.refused(f"{self.repo}@HEAD+{self.series}@2", "has 1 patches")

    def test_compiler_is_part_of_the_identity(self):
        a = ks.one(f"{self.repo}@HEAD")
        with mock.patch.object(ks, "compiler", lambda: "gcc (Other) 99.0"):
            b = ks.one(f"{self.repo}@HEAD")
        self.assertEqual(b.compiler, "gcc (Other) 99.0")
        self.assertNotEqual(a.config_hash, b.config_hash)
        self.assertNotEqual(a.store, b.store)

    def test_prepare_never_writes_into_the_users_repository(self):
        before = snapshot(self.repo)
        plans = ks.kernels(f"{self.repo}@HEAD~2..HEAD+{self.series}")
        for p in plans:
            kernels.prepare_git(p)
            with open(os.path.join(p.tree, "Makefile")) as f:
                self.assertIn(f"SUBLEVEL = {plans.index(p)}", f.read())
            with open(os.path.join(p.tree, "mm", "mlock.c")) as f:
                self.assertIn("/* mine */", f.read())
        self.assertEqual(snapshot(self.repo), before)
        self.assertEqual(git(self.repo, "status", "--porcelain"), "")

    def test_patch_that_does_not_apply_names_patch_and_commit(self):
        with open(os.path.join(self.series, "0001-mine.patch"), "w") as f:
            f.write(BAD_PATCH)
        p = ks.one(f"{self.repo}@HEAD+{self.series}")
        with self.assertRaises(kernels.BuildError) as cm:
            kernels.prepare_git(p)
        first = str(cm.exception).splitlines()[0]
        self.assertIn("patch 0001-mine.patch does not apply", first)
        self.assertIn(f"commit {self.commits[2][:12]}", first)
        self.assertIn("refresh it", first)


class KernelVersion(unittest.TestCase):
    """The kernel version a run's results are filed under:
    results/<make kernelversion of its first kernel>/<run id>/, whatever
    the kind of its spec."""

    def test_what_make_kernelversion_prints(self):
        for sub, extra, want in (("192", "", "6.1.192"), ("0", "", "6.1.0"),
                                 ("0", "-rc3", "6.1.0-rc3")):
            text = (f"VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = {sub}\n"
                    f"EXTRAVERSION = {extra}\nNAME = Curry Ramen\n")
            self.assertEqual(ks.kernelversion(text), want)
        self.assertIsNone(ks.kernelversion("all:\n\ttrue\n"))
        # A git commit's source version stays what runs recorded.
        self.assertEqual(ks.makefile_version(MAKEFILE.format(sub=0)), "6.12")

    def tarball(self, d, top, makefile):
        src = os.path.join(d, top)
        os.makedirs(os.path.join(src, "arch"))
        # A Makefile deeper in the tree first: only the top one counts.
        with open(os.path.join(src, "arch", "Makefile"), "w") as f:
            f.write("VERSION = 9\n")
        with open(os.path.join(src, "Makefile"), "w") as f:
            f.write(makefile)
        path = os.path.join(d, top + ".tar.xz")
        subprocess.run(["tar", "-cJf", path, "-C", d, f"{top}/arch/Makefile",
                        f"{top}/Makefile"], check=True)
        return path

    def test_a_tarball_and_a_debian_package(self):
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.dict(os.environ, {"NUMA_MATRIX_CACHE": d}):
            path = self.tarball(d, "linux-6.12", MAKEFILE.format(sub=118))
            self.assertEqual(ks.tarball_kernelversion(path), "6.12.118")
            # Debian's 6.12.118-1~deb12u1: its Makefile's version.
            plan = kernel_plan(source=Source(kind="package", tarball=path,
                                             version="6.12.118-1~deb12u1",
                                             id="x"))
            self.assertEqual(ks.kernel_version(plan), "6.12.118")
            # Remembered: the tarball is read once.
            with mock.patch.object(ks, "tarball_makefile") as read:
                ks.tarball_kernelversion(path)
            read.assert_not_called()
            # A package whose tarball is gone: its version, less the revision.
            plan.source.tarball = os.path.join(d, "gone.tar.xz")
            self.assertEqual(ks.kernel_version(plan), "6.12.118")
            bad = self.tarball(os.path.join(d, "b"), "x", "all:\n")
            with self.assertRaisesRegex(ks.SpecError, "no top-level Makefile"):
                ks.tarball_kernelversion(bad)


class Images(Base):
    def setUp(self):
        super().setUp()
        self.img = os.path.join(self.dir, "boot", "bzImage")
        os.makedirs(os.path.dirname(self.img))
        fake_bzimage(self.img, "6.12.9-mine (me@box) (gcc (Debian 12.2.0-14) "
                     "12.2.0, GNU ld 2.40) #1 SMP")

    def test_version_and_compiler_from_the_header(self):
        p = ks.one(self.img)
        self.assertEqual(p.source_version, "6.12.9-mine")
        self.assertEqual(ks.kernel_version(p), "6.12.9")
        self.assertEqual(p.compiler, "gcc (Debian 12.2.0-14) 12.2.0")
        self.assertTrue(p.label.startswith("image-"))
        self.assertIsNone(p.config)

    def test_not_a_bzimage(self):
        path = os.path.join(self.dir, "vmlinux")
        with open(path, "wb") as f:
            f.write(b"\x7fELF" + b"\0" * 4096)
        self.refused(path, "not a bzImage")

    def test_missing_options_are_named(self):
        config = os.path.join(os.path.dirname(self.img), ".config")
        base = kernels.parse_config(ks.read(os.path.join(ks.CONFIG_DIR,
                                                         "base.config")))
        lines = [f"{o}={v}" for o, v in base.items() if v != "n"]
        lines = [line for line in lines if not line.startswith(
            ("CONFIG_9P_FS=", "CONFIG_NET_9P_VIRTIO="))]
        lines += ["CONFIG_9P_FS=m", "CONFIG_NUMA_BALANCING=y"]
        with open(config, "w") as f:
            f.write("\n".join(lines) + "\n")
        p = ks.one(self.img)
        self.assertEqual(p.config, config)
        self.assertEqual(sorted(kernels.check_image_config(p)),
                         ["CONFIG_9P_FS=y (m)", "CONFIG_NET_9P_VIRTIO=y (not set)",
                          "CONFIG_NUMA_BALANCING=n (y)"])
        with self.assertRaises(kernels.BuildError) as cm:
            kernels.image_path(p)
        self.assertIn("CONFIG_9P_FS=y (m)", str(cm.exception))
        self.assertIn("./numa-matrix config", str(cm.exception))
        # With them, the image is used as it is.
        with open(config, "a") as f:
            f.write("CONFIG_9P_FS=y\nCONFIG_NET_9P_VIRTIO=y\n"
                    "# CONFIG_NUMA_BALANCING is not set\n")
        self.assertEqual(kernels.image_path(ks.one(self.img)), self.img)

    def test_guest_fragment_holds_every_base_option(self):
        text = kernels.guest_fragment("debug")
        for opt in kernels.parse_config(ks.read(os.path.join(
                ks.CONFIG_DIR, "base.config"))):
            self.assertIn(opt, text)
        self.assertIn("CONFIG_DEBUG_VM=y", text)


class Fragments(Base):
    def test_renamed_option_alternatives(self):
        frag = os.path.join(self.dir, "x.config")
        with open(frag, "w") as f:
            f.write("# c\nCONFIG_OLD=y\n# or CONFIG_NEW=y\nCONFIG_B=y\n")
        self.assertEqual(kernels.requested(frag),
                         [(2, "CONFIG_OLD", "y", [("CONFIG_NEW", "y")]),
                          (4, "CONFIG_B", "y", [])])

    def test_a_later_fragment_overrides_an_earlier_one(self):
        # noswap.config unsets what base.config sets: the check wants the
        # last value, as merge_config.sh merges them.
        base = os.path.join(self.dir, "base.config")
        flavour = os.path.join(self.dir, "noswap.config")
        with open(base, "w") as f:
            f.write("CONFIG_SWAP=y\nCONFIG_A=y\n")
        with open(flavour, "w") as f:
            f.write("# CONFIG_SWAP is not set\n")
        build = os.path.join(self.dir, "build")
        os.makedirs(build)
        p = kernel_plan(build=build, fragments=[base, flavour])
        with open(os.path.join(build, ".config"), "w") as f:
            f.write("# CONFIG_SWAP is not set\nCONFIG_A=y\n")
        kernels.verify_config(p, self.dir)
        with open(os.path.join(build, ".config"), "w") as f:
            f.write("CONFIG_SWAP=y\nCONFIG_A=y\n")
        with self.assertRaises(kernels.BuildError) as cm:
            kernels.verify_config(p, self.dir)
        self.assertIn("noswap.config:1: CONFIG_SWAP=n requested", str(cm.exception))


class Packages(Base):
    def fake_package(self, package):
        return Source(kind="package", tarball=f"/usr/src/{package}.tar.xz",
                      package=package, version="9.9-1", id="0123456789ab")

    def test_series_per_source(self):
        with mock.patch.object(ks, "package_info", self.fake_package), \
                mock.patch.object(ks, "KERNEL_SERIES", self.dir):
            os.makedirs(os.path.join(self.dir, "linux-source-6.12"))
            p = ks.one("linux-source-6.12")
            self.assertEqual((p.label, p.patches), ("6.12-baseline", 0))
            self.refused("linux-source-6.12@patched", "has no series", "only baseline")
            shutil.copytree(self.series, os.path.join(self.dir, "linux-source-6.7"))
            p = ks.one("linux-source-6.7@patched")
            self.assertEqual((p.label, p.patch_names),
                             ("6.7-patched", ["0001-mine.patch"]))
            p = ks.one(f"linux-source-6.7+{self.series}")
            self.assertEqual(p.label, "6.7-baseline+mine")
            self.assertEqual(p.spec, f"linux-source-6.7@baseline+{self.series}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
