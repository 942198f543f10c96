# SPDX-License-Identifier: GPL-2.0
"""The kernel's own mm selftests, built and run the kernel's way.

On the host (kernel-series/build-selftests): the mm selftests of the same
Debian source the guest kernels come from, built by the tree's kselftest
build out of tree (`make headers`, then `make -C tools/testing/selftests
TARGETS=vm|mm install`), cached like the kernels. The install gets one line
in kselftest-list.txt per program that the tree's run_vmtests.sh runs, so
that the tree's runner can run each one alone.

In a guest (kernel-series/run-selftests NAME): one test of
kernel-series/mm-selftests.list, run by the installed run_kselftest.sh
(its per-test timeout, its KTAP), after the preparation run_vmtests.sh would
do. The result is the runner's KTAP, one test, so that Meson names the
selftest that failed. Two corrections, both printed as such: a program whose
subtests all skipped themselves exits 0 on 6.1 (kselftest_harness.h), which
the runner calls "ok": that is reported as a skip; and a test whose guest
lacks what it needs (two memory nodes, huge pages) is skipped before it runs,
with the reason.
"""

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from . import KERNEL_SERIES, cache_root
from . import kernels, tap
from .errors import NumaMatrixError, report
from .util import atomic_write, replace_dir

CATALOGUE = os.path.join(KERNEL_SERIES, "mm-selftests.list")
KNOWN = os.path.join(KERNEL_SERIES, "mm-selftests.known")
SUITES = ("selftests", "selftests-all")
# tools/testing/selftests/<dir> of the mm selftests: vm up to 6.2, mm after.
DIRS = ("vm", "mm")
NEEDS = ("nobody", "nodes", "cpus", "swap", "config", "hugepages", "hugetlbfs",
         "overcommit", "kconfig", "timeout")
# The runner's default per-test timeout where a tree has no settings file.
KSELFTEST_DEFAULT_TIMEOUT = 45
# Meson's timeout of a selftest: the runner's, plus the copy, the preparation
# and a guest's start-up when each test has its own guest.
MESON_MARGIN = 120
# Trees' settings files say at most this (6.12's mm: 180 s).
TREE_TIMEOUT_MAX = 180
# Changing how the selftests are built changes this, and so the cache key.
RECIPE = "headers+kselftest-install-1"
SKIP_EXIT = 4


class SelftestsError(NumaMatrixError):
    """The catalogue, a build or a run of the selftests went wrong: the
    message names the cause."""


def log(msg):
    print(f"build-selftests: {msg}", file=sys.stderr, flush=True)


class Entry:
    def __init__(self, name, suite, dirs, needs, argv, where):
        self.name, self.suite, self.dirs = name, suite, dirs
        self.needs, self.argv, self.where = needs, argv, where

    @property
    def program(self):
        return self.argv[0]

    def timeout(self, tree_timeout):
        return int(self.needs.get("timeout", tree_timeout))


def parse_needs(text, where):
    needs: dict = {}
    if text == "-":
        return needs
    for item in text.split(","):
        key, eq, value = item.partition("=")
        if key not in NEEDS:
            raise SelftestsError(f"{where}: unknown need '{key}' (known: "
                          f"{', '.join(NEEDS)})")
        if key in ("nobody", "kconfig", "swap"):
            if eq:
                raise SelftestsError(f"{where}: '{key}' takes no value")
            needs[key] = True
            continue
        if not value:
            raise SelftestsError(f"{where}: '{key}' needs a value ({key}=...)")
        if key == "config":
            if (not re.fullmatch(r"[A-Z0-9_]+(\+[A-Z0-9_]+)*", value)
                    or "CONFIG_" in value):
                raise SelftestsError(f"{where}: config={value}: give option names "
                              "without CONFIG_, joined by +")
        elif key != "hugetlbfs" and not value.isdigit():
            raise SelftestsError(f"{where}: {key}={value}: not a whole number")
        if key == "hugetlbfs" and (value.startswith("/") or ".." in value):
            raise SelftestsError(f"{where}: hugetlbfs={value}: give a directory "
                          "inside the test's directory")
        needs[key] = value
    return needs


def parse_catalogue(text, path=CATALOGUE):
    """[Entry] in file order; raises SelftestsError naming file:line."""
    entries = []
    seen: dict = {}
    suites: dict = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{lineno}"
        fields = line.split()
        if len(fields) < 5:
            raise SelftestsError(f"{where}: expected NAME SUITE DIRS NEEDS PROGRAM "
                          f"[ARGS], got {len(fields)} field(s)")
        name, suite, dirs, needs = fields[:4]
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
            raise SelftestsError(f"{where}: '{name}' is not a test name (letters, "
                          "digits, _ . -)")
        if suite not in SUITES:
            raise SelftestsError(f"{where}: suite '{suite}': use {' or '.join(SUITES)}")
        if suites.setdefault(name, suite) != suite:
            raise SelftestsError(f"{where}: {name} is in suite {suites[name]} on "
                          "another line: one suite per test")
        dirs = dirs.split(",")
        for d in dirs:
            if d not in DIRS:
                raise SelftestsError(f"{where}: directory '{d}': use "
                              f"{' or '.join(DIRS)}")
            if (name, d) in seen:
                raise SelftestsError(f"{where}: {name} for {d} again (first at "
                              f"line {seen[name, d]})")
            seen[name, d] = lineno
        entries.append(Entry(name, suite, dirs, parse_needs(needs, where),
                             fields[4:], where))
    return entries


def load_catalogue(path=CATALOGUE):
    with open(path) as f:
        return parse_catalogue(f.read(), path)


def parse_known(text, entries, path=KNOWN):
    """{(name, dir): (set of subtests, reason)}; raises SelftestsError naming
    file:line for a test or tree the catalogue does not have."""
    known = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{lineno}"
        head, sep, reason = line.partition(" -- ")
        fields = head.split(None, 2)
        if not sep or len(fields) < 3 or not reason.strip():
            raise SelftestsError(f"{where}: expected NAME DIR SUBTEST [| SUBTEST...]"
                          " -- REASON")
        name, d, subtests = fields
        if name not in for_dir(entries, d):
            raise SelftestsError(f"{where}: no test {name} for {d} in the catalogue")
        if (name, d) in known:
            raise SelftestsError(f"{where}: {name} for {d} again")
        known[name, d] = ({t.strip() for t in subtests.split("|")},
                          reason.strip())
    return known


def load_known(entries, path=KNOWN):
    with open(path) as f:
        return parse_known(f.read(), entries, path)


def for_dir(entries, d):
    """{name: Entry} of the tests a tree with selftests in DIR runs."""
    return {e.name: e for e in entries if d in e.dirs}


def meson_tests(entries):
    """(name, suites, Meson timeout) per test, in catalogue order."""
    out: dict = {}
    for e in entries:
        suites = ["selftests-all"] + (["selftests"] if e.suite == "selftests"
                                      else [])
        runner = max(e.timeout(TREE_TIMEOUT_MAX), TREE_TIMEOUT_MAX)
        old = out.get(e.name, (None, None, 0))
        out[e.name] = (e.name, suites, max(old[2], runner + MESON_MARGIN))
    return list(out.values())


# -- on the host: build and install ---------------------------------------

# Paths whose content the selftests' build reads: the selftests and tools
# themselves, and the uapi headers `make headers` installs.
INPUT_PATHS = ("tools", "include/uapi", "arch/x86/include/uapi", "scripts",
               "Makefile")


def touches_inputs(patch_text):
    """Does a patch change anything the selftests' build reads?"""
    for m in re.finditer(r"^\+\+\+ b/(\S+)", patch_text, re.M):
        path = m.group(1)
        if any(path == d or path.startswith(d + "/") for d in INPUT_PATHS):
            return True
    return False


def tree_id(source_id, series_hash):
    """The tree a kernel was built from, as its info.json names it."""
    return f"{source_id}-{series_hash}"


def git_inputs(p):
    """The git tree ids of INPUT_PATHS at the commit (read-only git)."""
    out = []
    for path in INPUT_PATHS:
        r = subprocess.run(["git", "-c", "safe.directory=*", "-C",
                            p.source.repo, "rev-parse", "--verify",
                            "--quiet", f"{p.commit}:{path}"],
                           capture_output=True, text=True, check=False)
        out.append(f"{path}={r.stdout.strip()}")
    return out


def plan(p, compiler):
    """Where the selftests of kernel plan P's tree are, keyed by what their
    build reads: the kernels of one source whose patches leave tools/ and
    the uapi headers alone (baseline .. patched) share one build."""
    if p.kind == "image":
        raise SelftestsError(f"{p.spec or p.label} is a ready bzImage: there "
                      "is no source tree to build its selftests from")
    patches = [kernels.read(path) for path in p.patch_paths]
    relevant = [t for t in patches if touches_inputs(t)]
    base = git_inputs(p) if p.kind == "git" else [p.source.id]
    key = kernels.ks.sha(*base, *relevant, compiler, RECIPE)[:12]
    name = (p.source.package or p.source.id) + f"-{key}"
    return {"kernel": p, "compiler": compiler,
            "tree_id": tree_id(p.source.id, p.series_hash),
            "dir": os.path.join(cache_root(), "selftests", name)}


def index_path(tid):
    return os.path.join(cache_root(), "selftests", "trees", tid)


def install_dir(sp):
    return os.path.join(sp["dir"], "install")


def built(sp):
    return os.path.isfile(os.path.join(sp["dir"], "info.json"))


def remember(sp):
    """Let a guest find the selftests of its kernel's tree."""
    atomic_write(index_path(sp["tree_id"]), install_dir(sp) + "\n")


def selftests_dir(tree):
    for d in DIRS:
        if os.path.isfile(os.path.join(tree, "tools/testing/selftests", d,
                                       "run_vmtests.sh")):
            return d
    raise SelftestsError(f"{tree}: no tools/testing/selftests/vm or mm with a "
                  "run_vmtests.sh")


def add_to_list(listfile, d, programs):
    """One "d:program" line per program the runner does not list yet."""
    with open(listfile) as f:
        listed = set(f.read().split())
    added = [p for p in programs if f"{d}:{p}" not in listed]
    with open(listfile, "a") as f:
        for p in added:
            f.write(f"{d}:{p}\n")
    return added


KSELFTEST_H = "{tree}/tools/testing/selftests/kselftest.h"
UNDECLARED_KSFT = re.compile(r"^(\S+\.c):\d+:\d+: error: '(KSFT_[A-Z]+)' undeclared",
                             re.M)


def missing_kselftest_h(output, tree):
    """The first program of a failed kselftest build that uses kselftest.h's
    exit codes without including it, as 'FILE uses KSFT_X without
    including kselftest.h', or None when the build failed for anything
    else. Debian's 6.12.118 has one (mm/khugepaged.c returns KSFT_SKIP
    but includes only vm_util.h and thp_settings.h); the missing include
    is all that is wrong, so the build is worth a second try with the
    header forced in, and saying so."""
    m = UNDECLARED_KSFT.search(output)
    if not m or not os.path.isfile(KSELFTEST_H.format(tree=tree)):
        return None
    return f"{os.path.basename(m.group(1))} uses {m.group(2)} without including kselftest.h"


def build(sp, jobs):
    if built(sp):
        remember(sp)
        return install_dir(sp)
    p = sp["kernel"]
    # A light build (make headers and some 40 small programs: about 50 s
    # of CPU here, against some 30 min for a kernel), so not the machine's
    # heavy-build lock; but one build at a time in the tree it reads.
    with kernels.tree_lock(p, log):
        if built(sp):
            remember(sp)
            return install_dir(sp)
        if p.kind == "git":
            kernels.prepare_git(p)
        else:
            kernels.prepare_tree(p)
        tree = p.tree
        d = selftests_dir(tree)
        tmp = sp["dir"] + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        obj = os.path.join(tmp, "obj")
        logfile = os.path.join(tmp, "build.log")
        env = dict(os.environ, LC_ALL="C")
        t0 = time.time()
        log(f"building tools/testing/selftests/{d} of {p.label} "
            f"({p.source_version}); log: {logfile}")
        # The selftests include the uapi headers of their own tree, installed
        # out of tree (O=): the source tree stays untouched.
        kernels.run(["make", "-C", tree, f"O={obj}", "headers"], env=env,
                    logfile=logfile, what="make headers")
        make = ["make", "-C", os.path.join(tree, "tools/testing/selftests"),
                f"O={obj}", f"TARGETS={d}", f"-j{jobs}",
                f"KSFT_INSTALL_PATH={os.path.join(tmp, 'install')}", "install"]
        workaround = None
        try:
            kernels.run(make, env=env, logfile=logfile,
                        what=f"the kselftest build of {d}")
        except kernels.BuildError:
            with open(logfile) as f:
                workaround = missing_kselftest_h(f.read(), tree)
            if not workaround:
                raise
            log(f"the tree's selftests do not build as shipped: {workaround}; "
                f"building again with -include kselftest.h")
            kernels.run(make + [f"EXTRA_CFLAGS=-include {KSELFTEST_H.format(tree=tree)}"],
                        env=env, logfile=logfile,
                        what=f"the kselftest build of {d} with kselftest.h")
        entries = for_dir(load_catalogue(), d)
        inst = os.path.join(tmp, "install", d)
        missing = sorted({e.program for e in entries.values()
                          if not os.path.exists(os.path.join(inst, e.program))})
        ci_missing = [e.name for e in entries.values()
                      if e.suite == "selftests" and e.program in missing]
        if ci_missing:
            raise SelftestsError(f"the kselftest build did not produce "
                          f"{', '.join(ci_missing)} (see {logfile})")
        added = add_to_list(os.path.join(tmp, "install", "kselftest-list.txt"),
                            d, sorted({e.program for e in entries.values()}
                                      - set(missing)))
        shutil.rmtree(obj)
        info = {"kernel": p.spec or p.label, "tree_id": sp["tree_id"],
                "source_version": p.source_version,
                "compiler": sp["compiler"], "dir": d, "recipe": RECIPE,
                "listed_for_the_runner": added, "not_built": missing,
                "built_with_kselftest_h_included": workaround,
                "build_seconds": round(time.time() - t0, 1)}
        with open(os.path.join(tmp, "info.json"), "w") as f:
            json.dump(info, f, indent=2)
            f.write("\n")
        replace_dir(tmp, sp["dir"])
        log(f"built in {info['build_seconds']:.0f} s"
            + (f"; not built: {', '.join(missing)}" if missing else ""))
    remember(sp)
    return install_dir(sp)


def main():
    ap = argparse.ArgumentParser(
        prog="build-selftests",
        description="Build the mm selftests of a kernel's source tree with "
        "the tree's kselftest build, print the install directory (one per "
        "kernel a spec names).")
    ap.add_argument("spec", nargs="?", default=kernels.DEFAULT_SPEC,
                    help="a kernel spec, docs/kernel-specs.md (default "
                    f"{kernels.DEFAULT_SPEC})")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--path-only", action="store_true",
                    help="print the directory if built, fail if not")
    ap.add_argument("--list", action="store_true",
                    help="list the tests of mm-selftests.list, build nothing")
    args = ap.parse_args()
    try:
        if args.list:
            for e in load_catalogue():
                print(f"{e.name:<32} {e.suite:<14} {','.join(e.dirs):<6} "
                      f"{' '.join(e.argv)}")
            return 0
        load_known(load_catalogue())
        compiler = kernels.ks.compiler()
        for p in kernels.ks.kernels(args.spec, "perf"):
            sp = plan(p, compiler)
            if args.path_only:
                if not built(sp):
                    raise SelftestsError(f"the selftests of {p.label} are not "
                                  f"built: run kernel-series/build-selftests "
                                  f"{args.spec}")
                print(install_dir(sp))
            else:
                print(build(sp, args.jobs))
        return 0
    except NumaMatrixError as e:
        return report("build-selftests", e)
    except KeyboardInterrupt:
        print("build-selftests: interrupted", file=sys.stderr)
        return 130


# -- in a guest: run one test ---------------------------------------------

def sanitized(program):
    """The runner's KSELFTEST_<NAME>_ARGS variable for a program."""
    return "KSELFTEST_" + re.sub(r"[^A-Za-z0-9_]", "_",
                                 os.path.basename(program)).upper() + "_ARGS"


class KtapFilter:
    """Pass the runner's KTAP through, with two corrections: its "ok" for a
    program whose subtests all skipped themselves becomes a skip that says
    so, and its "not ok" for a program whose failed subtests are all known
    (mm-selftests.known) becomes an expected failure with the reason. The
    lines are read by numa_matrix.tap; a program's own, nested, carry the
    runner's "# " in front."""

    def __init__(self, known=None):
        self.known = known
        self.totals = None
        self.failed = set()
        self.said = set()
        self.last_words = None
        self.skip_words = None
        self.results = 0

    def line(self, text):
        text = text.rstrip("\n")
        counts = tap.totals(text)
        if counts:
            self.totals = counts
        if text.startswith("# "):
            nested = text[2:]
            sub = tap.result(nested)
            if sub and not sub.ok:
                self.failed.add(sub.description)
            self.said.add(nested.strip())
            if not counts and not text.startswith("# selftests: "):
                self.last_words = nested.strip()
            # A KTAP skip of the program's own ("# ok 2 # SKIP why",
            # "# 1..0 # SKIP why") says why better than its last line.
            plan = tap.PLAN.match(nested)
            if sub and sub.directive == "SKIP" and sub.reason:
                self.skip_words = sub.reason
            elif plan and plan.group(2):
                self.skip_words = plan.group(2).strip()
        r = tap.result(text)
        if r and r.number is not None and r.description.startswith("selftests: "):
            self.results += 1
            text = self.verdict(text, r)
            self.totals = None
            self.failed = set()
            self.said = set()
            self.last_words = None
            self.skip_words = None
        return text

    def is_known(self):
        """The failure is known: every failed subtest is named in the known
        entry, and something of it was seen (a failed subtest, or, for a
        program that prints no KTAP, a line of its output)."""
        names = self.known[0] if self.known else set()
        return bool(names) and self.failed <= names and \
            bool(self.failed or names & self.said)

    def verdict(self, text, r):
        t = self.totals
        result = "ok" if r.ok else "not ok"
        number, label, directive = r.number, r.description, r.comment
        if result == "ok" and directive.strip() == "SKIP":
            # The runner's skip (exit 4) gives no reason: the program's own
            # KTAP skip, else its last line, is where kselftests say why.
            why = self.skip_words or self.last_words
            return (f"{text} exit 4 after: {why}" if why else
                    f"{text} exit 4, and the program said nothing")
        if result == "ok" and not directive and t:
            if t[0] == 0 and t[1] == 0 and t[2] == 0 and t[4] > 0:
                return (f"{text} # SKIP every subtest skipped itself "
                        f"(pass:0 skip:{t[4]}); the program exits 0 then")
            if t[1] > 0:
                # The program counted failures but exited 0 (6.1's
                # mremap_test does, for its merge test).
                result, directive = "not ok", (f"exit=0 with fail:{t[1]} "
                                               "in its own totals")
                text = f"not ok {number} {label} # {directive}"
        if result == "not ok" and directive.startswith("exit=") and \
                self.is_known():
            what = sorted(self.failed) or sorted(self.known[0] & self.said)
            return (f"not ok {number} {label} # TODO known failure of "
                    f"{', '.join(what)} ({directive}): {self.known[1]}")
        return text


def memory_nodes():
    with open("/sys/devices/system/node/has_memory") as f:
        text = f.read().strip()
    count = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        count += int(hi or lo) - int(lo) + 1
    return count


def online_cpus():
    return len(os.sched_getaffinity(0))


def swap_devices():
    with open("/proc/swaps") as f:
        return f.read().splitlines()[1:]


def options_off(options, config=None):
    """The options a kernel's config does not set to y or m ([] when its
    config is unknown: then the test runs and says for itself)."""
    config = config or kernel_config()
    if not config:
        return []
    with open(config) as f:
        text = f.read()
    return [o for o in options
            if not re.search(rf"^CONFIG_{o}=[ym]$", text, re.M)]


def meminfo(field):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise SelftestsError(f"/proc/meminfo has no {field}")


def write(path, value):
    with open(path, "w") as f:
        f.write(f"{value}\n")


def read_int(path):
    with open(path) as f:
        return int(f.read().split()[0])


class Prepared:
    """What the guest must provide for one test, undone afterwards."""

    def __init__(self, entry, testdir):
        self.entry, self.testdir = entry, testdir
        self.undo = []

    def skip_reason(self):
        n = self.entry.needs
        if "nodes" in n and memory_nodes() < int(n["nodes"]):
            return (f"needs {n['nodes']} nodes with memory, the guest has "
                    f"{memory_nodes()}")
        if "cpus" in n and online_cpus() < int(n["cpus"]):
            return f"needs {n['cpus']} CPUs, the guest has {online_cpus()}"
        if "swap" in n and not swap_devices():
            return "needs swap space, and the guest has none"
        if "config" in n:
            off = options_off(n["config"].split("+"))
            if off:
                return ("needs " + ", ".join(f"CONFIG_{o}" for o in off)
                        + ", which the guest kernel's config does not set")
        return None

    def __enter__(self):
        n = self.entry.needs
        if "hugepages" in n:
            old = read_int("/proc/sys/vm/nr_hugepages")
            self.undo.append(lambda: write("/proc/sys/vm/nr_hugepages", old))
            write("/proc/sys/vm/drop_caches", 3)
            write("/proc/sys/vm/nr_hugepages", n["hugepages"])
            free = meminfo("HugePages_Free")
            if free < int(n["hugepages"]):
                return (f"needs {n['hugepages']} huge pages, the guest "
                        f"could reserve {free}")
        if "hugetlbfs" in n:
            mnt = os.path.join(self.testdir, n["hugetlbfs"])
            os.makedirs(mnt, exist_ok=True)
            subprocess.run(["mount", "-t", "hugetlbfs", "none", mnt],
                           check=True)
            self.undo.append(lambda: subprocess.run(["umount", mnt],
                                                    check=False))
        if "kconfig" in n:
            # Where scripts look for the running kernel's config.
            config = kernel_config()
            if config is None:
                return ("needs the kernel's config, and there is none beside "
                        "its bzImage")
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "none",
                            "/boot"], check=True)
            self.undo.append(lambda: subprocess.run(["umount", "/boot"],
                                                    check=False))
            shutil.copy(config, f"/boot/config-{os.uname().release}")
        if "overcommit" in n:
            path = "/proc/sys/vm/overcommit_memory"
            old = read_int(path)
            self.undo.append(lambda: write(path, old))
            write(path, n["overcommit"])
        return None

    def __exit__(self, *exc):
        for fn in reversed(self.undo):
            fn()
        return False


def copy_install(install, dest):
    """The install, copied where the test may write (its directory is its
    working directory) and readable by the unprivileged user."""
    shutil.copytree(install, dest, symlinks=True)
    for root, dirs, files in os.walk(dest):
        for name in dirs + files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o555)
    os.chmod(dest, 0o755)


def tap_skip(label, reason):
    print(f"TAP version 13\n1..1\nok 1 {label} # SKIP {reason}", flush=True)
    return 0


def beside_kernel(name):
    """A file build-kernel stored beside the image run-guest booted."""
    image = os.environ.get("NUMA_MATRIX_KERNEL_IMAGE")
    path = image and os.path.join(os.path.dirname(image), name)
    return path if path and os.path.isfile(path) else None


def kernel_info():
    """The guest kernel's info.json, as build-kernel stored it (None for a
    bzImage of the user's own)."""
    try:
        with open(beside_kernel("info.json")) as f:
            return json.load(f)
    except (TypeError, OSError, ValueError):
        return None


def installed_for_kernel():
    """(install directory, None) or (None, why not), for the guest's kernel."""
    info = kernel_info()
    if info and not info.get("source_id") and info.get("source_package"):
        # Built before kernels recorded their source's id: the Debian
        # package's, if the installed one is still that version.
        try:
            src = kernels.ks.package_info(info["source_package"])
            if src["version"] == info.get("source_version"):
                info["source_id"] = src["id"]
        except kernels.ks.SpecError:
            pass
    if not info or not info.get("source_id"):
        return None, ("the kernel is a bzImage of unknown source: its tree's "
                      "selftests are unknown")
    if info.get("source_kind") == "image":
        return None, "the kernel is a ready bzImage: no source tree"
    try:
        with open(index_path(tree_id(info["source_id"],
                                     info["series_hash"]))) as f:
            install = f.read().strip()
    except OSError:
        install = None
    if not install or not os.path.isdir(install):
        return None, (f"the selftests of {info.get('spec') or info['label']} "
                      "are not built: run kernel-series/build-selftests "
                      f"{info.get('spec') or ''}".rstrip())
    return install, None


def kernel_config():
    return beside_kernel("config")


def run_one(name, install=None):
    if not os.environ.get("NUMA_MATRIX_TOPOLOGY_FILE"):
        # On the host it would test the host's kernel, not the one under test.
        print("1..0 # SKIP not in a numa-matrix guest: run it through "
              "qemu-topologies/run-guest or meson test --setup guest_2node")
        return 0
    label = f"selftests: {name}"
    if install is None:
        install, why = installed_for_kernel()
        if why and "not built" in why:
            print(f"TAP version 13\n1..1\nnot ok 1 {label} # {why}")
            return 0
        if why:
            return tap_skip(label, why)
    found = [x for x in DIRS if os.path.isdir(os.path.join(install, x))]
    if not found:
        raise SelftestsError(f"{install}: no vm or mm directory")
    d = found[0]
    entries = for_dir(load_catalogue(), d)
    label = f"selftests: {d}: {name}"
    if name not in entries:
        known = {e.name for e in load_catalogue()}
        if name not in known:
            raise SelftestsError(f"no test {name} in {CATALOGUE}")
        return tap_skip(label, f"not among this tree's {d} selftests")
    e = entries[name]
    work = tempfile.mkdtemp(prefix="kselftest-")
    os.chmod(work, 0o755)
    try:
        copy_install(install, os.path.join(work, "k"))
        base = os.path.join(work, "k")
        testdir = os.path.join(base, d)
        if "timeout" in e.needs:
            write(os.path.join(testdir, "settings"),
                  f"timeout={e.needs['timeout']}")
        prep = Prepared(e, testdir)
        reason = prep.skip_reason()
        if reason:
            return tap_skip(label, reason)
        with prep as reason:
            if reason:
                return tap_skip(label, reason)
            return run_runner(e, d, base, label,
                              load_known(load_catalogue()).get((name, d)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


class OrphanReaper:
    """Kill what a test leaves running after the process that started it
    has exited. Such a process keeps the runner's pipe open, so the runner
    waits for it for ever, past its own timeout: 6.1's migration does this
    when shared_anon fails (its children spin in access_mem(); later trees
    give them PR_SET_PDEATHSIG). As a child subreaper this process inherits
    the orphans; it kills them at once, as PDEATHSIG would, and says so."""

    PR_SET_CHILD_SUBREAPER = 36

    def __init__(self):
        self.spare = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)

    def __enter__(self):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(self.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise SelftestsError("prctl(PR_SET_CHILD_SUBREAPER) failed: "
                          f"{os.strerror(ctypes.get_errno())}")
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        return False

    def orphans(self):
        me = str(os.getpid())
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = f.read().rsplit(")", 1)[1].split()[1]
                if ppid != me or int(pid) == self.spare or self.spare is None:
                    continue
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(
                        errors="replace").strip()
            except (OSError, IndexError):
                continue
            found.append((int(pid), cmd))
        return found

    def watch(self):
        while not self.stop.wait(0.5):
            for pid, cmd in self.orphans():
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
                print(f"# run-selftests: killed process {pid} ({cmd}): the "
                      "test left it running after its parent exited",
                      flush=True)


def run_runner(e, d, base, label, known):
    env = dict(os.environ)
    env[sanitized(e.program)] = " ".join(e.argv[1:])
    cmd = ["./run_kselftest.sh", "-t", f"{d}:{e.program}"]
    if e.needs.get("nobody"):
        # The runner reopens /dev/stdout: the pipe it reopens must be the
        # unprivileged user's own.
        cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup",
               "--clear-groups", "sh", "-c", 'exec "$@" | cat', "sh"] + cmd
    # stdout is a pipe: the runner reopens /dev/stdout, which a virtio port
    # would refuse.
    ktap = KtapFilter(known)
    with OrphanReaper() as reaper, \
            subprocess.Popen(cmd, cwd=base, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT) as proc:
        reaper.spare = proc.pid
        assert proc.stdout is not None
        # Lines end at \n only: a progress line's \r (khugepaged) would
        # otherwise start a line without the runner's "# ".
        for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n").replace("\r", " ")
            print(ktap.line(line), flush=True)
        rc = proc.wait()
    if ktap.results != 1:
        print(f"not ok 1 {label} # the runner printed {ktap.results} "
              f"results, exit {rc}", flush=True)
    return 0


def guest_main(argv=None):
    ap = argparse.ArgumentParser(
        prog="run-selftests",
        description="In a guest: run one of the kernel's mm selftests "
        "(kernel-series/mm-selftests.list) with the tree's kselftest runner; "
        "KTAP on stdout.")
    ap.add_argument("name")
    ap.add_argument("--install", help="the kselftest install directory "
                    "(default: what build-selftests built)")
    args = ap.parse_args(argv)
    try:
        return run_one(args.name, args.install)
    except NumaMatrixError as e:
        return report("run-selftests", e)


if __name__ == "__main__":
    if sys.argv[1:2] == ["meson"]:
        # meson.build: "name suite,suite timeout" per test.
        for name, suites, timeout in meson_tests(load_catalogue()):
            print(name, ",".join(suites), timeout)
        sys.exit(0)
    sys.exit(main())
