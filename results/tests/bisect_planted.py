#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The bisect demonstration, with real kernels and guests (suite bisect, TAP).

Makes a throwaway git repository of Debian's pristine linux-source-6.12:
one commit of the tree as Debian ships it, then our 6.12 series
(kernel-series/linux-source-6.12/) and the three commits of
results/tests/bisect-planted/, each applied with git am. The second of
those is a regression planted on purpose: munlock_folio() drains its batch
after every folio. The others leave munlock's cost alone (the series
changes exit and munmap, one commit is a comment, one documentation).
Then `results/matrix bisect` over the whole range, interleave on 4node
under icount, must name the planted commit, with every commit before it
"same" and every one from it on "differs".

  bisect_planted.py [--build-dir MESON_BUILD_DIR] [--run-dir DIR] [--keep]

The repository lives in the cache ($NUMA_MATRIX_CACHE/bisect-planted),
never in this one. Its commits have fixed authors and dates, so they get
the same ids on every machine and a second run finds its kernels built
(the first builds one kernel from cold, three incrementally: some 15
minutes on 2 cores with an empty ccache). The bisect's cells go to a new
directory each run, removed when every check passed unless --keep or
--run-dir; docs/results.md shows a run.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
from numa_matrix import MATRIX, KERNEL_SERIES, cache_root, kernelspec  # noqa: E402
from numa_matrix import kernels as kbuild  # noqa: E402

PACKAGE = "linux-source-6.12"
SERIES_DIRS = [os.path.join(KERNEL_SERIES, PACKAGE),
               os.path.join(HERE, "bisect-planted")]
PLANTED = "PLANTED:"
# Fixed identities and dates: the same commit ids on every machine.
IDENTITY = {"GIT_AUTHOR_NAME": "numa-matrix bisect demonstration",
            "GIT_AUTHOR_EMAIL": "bisect@numa-matrix.invalid",
            "GIT_COMMITTER_NAME": "numa-matrix bisect demonstration",
            "GIT_COMMITTER_EMAIL": "bisect@numa-matrix.invalid",
            "GIT_AUTHOR_DATE": "2013-09-11 00:00:00 +0000",
            "GIT_COMMITTER_DATE": "2013-09-11 00:00:00 +0000"}

n_test = 0
n_failed = 0


def tap(ok, what, detail=""):
    global n_test, n_failed
    n_test += 1
    n_failed += not ok
    print(f"{'ok' if ok else 'not ok'} {n_test} {what}", flush=True)
    for line in detail.splitlines():
        print(f"# {line}", flush=True)
    return ok


def patches(series_dir):
    with open(os.path.join(series_dir, "series")) as f:
        names = [ln.split("#")[0].strip() for ln in f]
    return [os.path.join(series_dir, n) for n in names if n]


def git(repo, *args, env=None):
    out = subprocess.run(["git", "-C", repo, *args], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=dict(os.environ, **IDENTITY, **(env or {})),
                         check=False)
    if out.returncode:
        raise RuntimeError(f"git {' '.join(args[:2])} in {repo} failed "
                           f"(exit {out.returncode}):\n{out.stdout[-2000:]}")
    return out.stdout.strip()


def make_repo(root, plan):
    """The repository at root/linux: pristine tree + every patch as a
    commit. Reused when its commits are the ones these patches make."""
    repo = os.path.join(root, "linux")
    wanted = [p for d in SERIES_DIRS for p in patches(d)]
    stamp = os.path.join(root, "made-from")
    key = "\n".join([plan.source.id] +
                    [open(p).read() for p in wanted])
    if os.path.isdir(os.path.join(repo, ".git")) and \
            os.path.exists(stamp) and open(stamp).read() == key:
        return repo
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    kbuild.unpack_pristine(plan)
    print(f"# copying the pristine tree into {repo}", flush=True)
    subprocess.run(["cp", "-a", kbuild.pristine_tree(plan), repo], check=True)
    git(repo, "init", "-q")
    # -f: Debian's tree ignores its own top level (.gitignore: /*).
    git(repo, "add", "-f", "-A")
    git(repo, "commit", "-q", "-m",
        f"{PACKAGE} {plan.source.version}, as Debian ships it")
    for p in wanted:
        # The patch's own author and date; committer date the same.
        git(repo, "am", "-q", "--committer-date-is-author-date", p)
    with open(stamp, "w") as f:
        f.write(key)
    return repo


def first_named(output):
    m = re.search(r"^first commit whose cost per page differs .*?: "
                  r"([0-9a-f]{40}) ", output, re.M)
    return m.group(1) if m else None


def verdicts(output):
    """(subject, verdict) of each bisect step, in the order printed."""
    return re.findall(r"^  step \d+\s+\S+\s+[\d.]+\s+[-+][\d.]+%\s+"
                      r"(same|differs)\s+(.*)$", output, re.M)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", help="the Meson build dir with timedmunlock "
                    "(default: the matrix's)")
    ap.add_argument("--run-dir", help="where the bisect's cells go (kept)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the cells of a run that passed")
    args = ap.parse_args()

    try:
        plan = kernelspec.one(PACKAGE, "perf")
    except kernelspec.SpecError as e:
        print(f"1..0 # SKIP {e}")
        return 0
    print("1..4", flush=True)
    root = os.path.join(cache_root(), "bisect-planted")
    try:
        repo = make_repo(root, plan)
    except (RuntimeError, OSError, subprocess.CalledProcessError,
            kbuild.BuildError) as e:
        tap(False, "the throwaway repository is made", str(e))
        return 1
    log = git(repo, "log", "--reverse", "--format=%H %s").splitlines()
    commits = [line.split(" ", 1) for line in log]
    planted = [i for i, (_, s) in enumerate(commits) if s.startswith(PLANTED)]
    tap(len(planted) == 1 and 0 < planted[0] < len(commits) - 1,
        "the throwaway repository has the planted commit strictly inside "
        "its range",
        "\n".join(f"{c[:12]} {s}" for c, s in commits))
    if len(planted) != 1:
        return 1
    planted = planted[0]

    run_dir = args.run_dir or tempfile.mkdtemp(prefix="run-", dir=root)
    cmd = [MATRIX, "bisect", "--good", f"{repo}@{commits[0][0]}",
           "--bad", f"{repo}@{commits[-1][0]}", "--scenario", "interleave",
           "--topology", "4node", "--run-dir", run_dir]
    if args.build_dir:
        cmd += ["--build-dir", args.build_dir]
    print(f"# {' '.join(cmd)}", flush=True)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    for line in out.stdout.splitlines():
        print(f"# {line}", flush=True)
    tap(out.returncode == 0 and first_named(out.stdout) is not None,
        "bisect runs to the end and names a first commit",
        f"exit {out.returncode}; its cells: {run_dir}")
    named = first_named(out.stdout)
    tap(named == commits[planted][0],
             "the first commit it names is the planted one",
             f"planted {commits[planted][0]}, named {named}")
    subjects = [s for _, s in commits]
    wrong = []
    for verdict, subject in verdicts(out.stdout):
        i = subjects.index(subject.strip()) if subject.strip() in subjects \
            else -1
        want = "differs" if i >= planted else "same"
        if i < 0 or verdict != want:
            wrong.append(f"{subject.strip()}: {verdict}, want {want}")
    tap(not wrong and verdicts(out.stdout) != [],
              "every step before the planted commit is \"same\", every one "
              "from it on \"differs\"", "\n".join(wrong))
    if not n_failed and not (args.keep or args.run_dir):
        shutil.rmtree(run_dir, ignore_errors=True)
    return 1 if n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
