# SPDX-License-Identifier: GPL-2.0
"""run-mutants: build a kernel per planted bug and show which NUMA tests catch it.

Each *.patch in this directory is one mutant: a small bug planted on purpose
in the pristine Debian linux-source-6.1 tree, never part of the series; each
*.patch in its linux-source-6.12/ folder one planted in linux-source-6.12.
For every mutant this script makes a one-patch series of its own (a
directory under $NUMA_MATRIX_CACHE/mutants/<name>/ holding `series` and the
patch, and no series.config: the mutant needs none of the series' options),
builds it on its source with kernel-series/build-kernel SOURCE+DIR (cached
like any variant), and
runs every test of the NUMA suite in a guest of its own on it: a test never
sees what an earlier test's run did to the kernel, so a failure is that
test's. The same runs on the baseline kernel of the mutant's source first: a
test that fails there cannot catch anything and is reported, not counted.

A mutant is caught by a test that passes on the baseline and, on the
mutant, reports a "not ok" that is not an expected failure (TODO), bails
out, exits non-zero, or whose guest shows a kernel splat (run-guest exit
123) or hangs (124). Every result goes to a JSON file as it comes (default
results/mutants/mutants.json, --json), which a later run resumes from: a
result is reused while the kernel image and the test binary are the same
files. --doc FILE rewrites the table between the markers
"<!-- mutants table -->" and "<!-- end of mutants table -->" in FILE from
the JSON file, without running anything when only --render is given.
Exits 1 when a mutant was not caught.

    kernel-series/mutants/run-mutants                    # every mutant
    kernel-series/mutants/run-mutants 01 08              # names starting so
    kernel-series/mutants/run-mutants --tests lock_methods,migrate_locked
    kernel-series/mutants/run-mutants --render --doc results/mutants/mutants.md

The test binaries come from the Meson build dir (./numa-matrix setup; meson
compile -C build), the tests from its 'numa' suite.
"""

import argparse
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

from numa_matrix import BUILD_KERNEL, RUN_GUEST, TOP, cache_root
from numa_matrix import tap
from numa_matrix.errors import NumaMatrixError, UsageError, report
from numa_matrix.kernelspec import FLAVOURS
from numa_matrix.types import EXIT_SETUP, EXIT_SPLAT, EXIT_TIMEOUT, GUEST_EXITS
from numa_matrix.util import atomic_write, run_child, terminate_as_interrupt

HERE = os.path.join(TOP, "kernel-series", "mutants")
# Mutants of another source than linux-source-6.1 live in a folder named after it.
SOURCES = {"": ("baseline", "baseline"), "linux-source-6.12": ("linux-source-6.12", "6.12-baseline")}

BEGIN = "<!-- mutants table -->"
END = "<!-- end of mutants table -->"
DEFAULT_JSON = os.path.join(TOP, "results", "mutants", "mutants.json")


def log(msg):
    print(f"run-mutants: {msg}", file=sys.stderr, flush=True)


class MutantsError(NumaMatrixError):
    """A campaign that cannot go on: the message says why."""


def mutants(prefixes):
    """Mutant names: NN-what, or SOURCE/NN-what for another source than 6.1."""
    names = []
    for sub in SOURCES:
        d = os.path.join(HERE, sub)
        names += sorted(os.path.join(sub, f[:-len(".patch")]) for f in os.listdir(d)
                        if f.endswith(".patch"))
    if prefixes:
        names = [n for n in names
                 if any(os.path.basename(n).startswith(p) or n.startswith(p) for p in prefixes)]
    return names


def source_of(name):
    """(build-kernel base spec, record name of its baseline) of a mutant."""
    return SOURCES[os.path.dirname(name)]


def describe(name):
    """The patch's explanation: the lines between its title and the diff."""
    lines = []
    with open(os.path.join(HERE, name + ".patch")) as f:
        for line in f.read().splitlines()[2:]:
            if line.startswith("--- "):
                break
            lines.append(line)
    return " ".join(" ".join(lines).split())


def series_dir(name):
    """A one-patch series for build-kernel --series-dir."""
    d = os.path.join(cache_root(), "mutants", name)
    os.makedirs(d, exist_ok=True)
    shutil.copy2(os.path.join(HERE, name + ".patch"), d)
    with open(os.path.join(d, "series"), "w") as f:
        f.write(f"# mutant {name}, made by kernel-series/mutants/run-mutants\n"
                f"{os.path.basename(name)}.patch\n")
    return d


def build(args_list, what):
    # A kernel already built is found without waiting for the build lock.
    r = subprocess.run([BUILD_KERNEL] + args_list + ["--path-only"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    if r.returncode == 0 and r.stdout.strip():
        return r.stdout.strip().splitlines()[-1]
    log(f"building {what} (cached when unchanged)")
    r = run_child([BUILD_KERNEL] + args_list, stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise MutantsError(f"building {what} failed (build-kernel exit "
                         f"{r.returncode})")
    return r.stdout.strip().splitlines()[-1]


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def suite_tests(build_dir, only):
    r = subprocess.run(["meson", "introspect", build_dir, "--tests"],
                       stdout=subprocess.PIPE, text=True, check=True)
    tests = []
    for t in json.loads(r.stdout):
        if not any(s.endswith(":numa") or s == "numa" for s in t["suite"]):
            continue
        if only and t["name"] not in only:
            continue
        tests.append((t["name"], t["cmd"][0]))
    missing = [n for n in (only or []) if n not in [t[0] for t in tests]]
    if missing:
        raise UsageError(f"not in the numa suite of {build_dir}: "
                         f"{', '.join(missing)}")
    absent = [p for _, p in tests if not os.access(p, os.X_OK)]
    if absent:
        raise MutantsError(f"no test binary {absent[0]}: build it (meson "
                         f"compile -C {build_dir}) or name the right --build-dir")
    return tests


def verdict(output, status, guest_rc):
    """(verdict, detail) of one test's run from its TAP, exit status and run-guest's."""
    report = tap.parse(output)
    notok = len(report.failures)
    bail = report.bailed is not None
    plan = "" if report.plan is None else \
        f"1..{report.plan}" + (f" # SKIP {report.skip_all}"
                               if report.skip_all else "")
    if guest_rc == EXIT_SPLAT:
        return "fail", "kernel splat in the guest's log"
    if guest_rc == EXIT_TIMEOUT:
        return "fail", "the guest hung (timeout)"
    if guest_rc == EXIT_SETUP:
        return "error", "the guest did not start"
    if notok or bail or status != 0:
        detail = f"{notok} not ok" + (", bail out" if bail else "") + \
            (f", exit {status}" if status else "")
        return "fail", detail
    if report.plan == 0:
        return "skip", plan
    return "pass", plan


def run_test(image, name, path, topology, timeout):
    """One test in a guest of its own: (verdict, detail, seconds)."""
    t0 = time.time()
    r = run_child([RUN_GUEST, "--topology", topology, "--kernel", image,
                        "--timeout", str(timeout), "--", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status = r.returncode if r.returncode not in GUEST_EXITS else 0
    v, detail = verdict(r.stdout, status, r.returncode)
    if r.returncode in GUEST_EXITS:
        log(f"{name}: run-guest exit {r.returncode}:\n{r.stderr[-1500:]}")
    return v, detail, round(time.time() - t0, 1)


class Record:
    """The JSON file: every result with what produced it; written after each one."""

    def __init__(self, path, topology, flavour):
        self.path = path
        self.data = {"topology": topology, "flavour": flavour, "kernels": {}}
        if os.path.exists(path):
            with open(path) as f:
                old = json.load(f)
            if old.get("topology") == topology and old.get("flavour") == flavour:
                self.data = old

    def kernel(self, name, image, description):
        k = self.data["kernels"].setdefault(name, {"results": {}})
        k.update({"image": digest(image), "description": description})
        for test, res in list(k["results"].items()):
            if res.get("image") != k["image"]:
                del k["results"][test]
        return k

    def save(self):
        atomic_write(self.path, json.dumps(self.data, indent=1,
                                           sort_keys=True) + "\n")


def run_kernel(rec, name, image, description, tests, topology, timeout):
    k = rec.kernel(name, image, description)
    for test, path in tests:
        res = k["results"].get(test)
        if res and res.get("binary") == digest(path):
            continue
        v, detail, secs = run_test(image, test, path, topology, timeout)
        k["results"][test] = {"verdict": v, "detail": detail, "seconds": secs,
                              "image": k["image"], "binary": digest(path),
                              "at": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")}
        log(f"{name}: {test}: {v} ({detail}, {secs} s)")
        rec.save()
    return k


def rows(data):
    """(mutant, description, catching tests) from the record, and the tests
    failing on a baseline (as "test (baseline)")."""
    baselines = {b for _, b in SOURCES.values()}
    out, broken = [], set()
    for b in baselines:
        base = data["kernels"].get(b, {}).get("results", {})
        broken |= {f"{t} ({b})" for t, r in base.items()
                   if r["verdict"] not in ("pass", "skip")}
    for name in sorted(data["kernels"]):
        if name in baselines:
            continue
        b = source_of(name)[1] if os.path.dirname(name) in SOURCES else "baseline"
        base = data["kernels"].get(b, {}).get("results", {})
        k = data["kernels"][name]
        catching = [f"{t} ({r['detail']})" for t, r in sorted(k["results"].items())
                    if r["verdict"] == "fail" and t in base
                    and base[t]["verdict"] in ("pass", "skip")]
        out.append((name, k["description"], catching, len(k["results"])))
    return out, broken


def table(data):
    out, broken = rows(data)
    base = data["kernels"].get("baseline", {}).get("results", {})
    lines = [f"One guest per test, {data['topology']}, {data['flavour']} flavour; "
             f"{len(base)} tests run on the baseline kernel of each source"
             + (f", of which {', '.join(sorted(broken))} failed there and count for "
                "nothing" if broken else ", all passing or skipping there") + ".", "",
             "| mutant | planted bug | failing tests | caught |", "|---|---|---|---|"]
    for name, why, catching, n in out:
        lines.append(f"| {name} | {why} | {'; '.join(catching) or '-'} | "
                     f"{'yes' if catching else '**NO**'} ({n} tests run) |")
    return "\n".join(lines) + "\n"


def update_doc(path, text):
    with open(path) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        raise MutantsError(f"{path} has no '{BEGIN}' ... '{END}' markers")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + text + END + tail)


def main():
    terminate_as_interrupt()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mutants", nargs="*", help="mutant name prefixes (default: all)")
    ap.add_argument("--tests", help="comma-separated tests of the numa suite (default: all)")
    ap.add_argument("--topology", default="4node")
    ap.add_argument("--flavour", default="perf", choices=FLAVOURS)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--timeout", type=int, default=600, help="per guest, seconds")
    ap.add_argument("--json", default=DEFAULT_JSON,
                    help="the record of every result (read to resume, written as results come)")
    ap.add_argument("--render", action="store_true",
                    help="run nothing: make the table from the JSON record")
    ap.add_argument("--doc", metavar="FILE", help="rewrite the table in FILE between the markers")
    ap.add_argument("--markdown", action="store_true", help="print the table")
    args = ap.parse_args()

    try:
        rec = Record(args.json, args.topology, args.flavour)
        if not args.render:
            names = mutants(args.mutants)
            if not names:
                raise UsageError("no mutant matches")
            tests = suite_tests(args.build_dir, args.tests.split(",") if args.tests else None)
            for spec, base in sorted({source_of(n) for n in names}):
                base_img = build([spec, "--flavour", args.flavour], base)
                run_kernel(rec, base, base_img, "no patch", tests,
                           args.topology, args.timeout)
            for name in names:
                spec = f"{source_of(name)[0]}+{series_dir(name)}"
                img = build([spec, "--flavour", args.flavour], name)
                run_kernel(rec, name, img, describe(name), tests,
                           args.topology, args.timeout)
        out, broken = rows(rec.data)
        for t in sorted(broken):
            log(f"{t} fails on the baseline: it cannot catch anything")
        text = table(rec.data)
        if args.doc:
            update_doc(args.doc, text)
        if args.markdown:
            print(text, end="")
        elif not args.render:
            for name, _, catching, _ in out:
                print(f"{name}: {'CAUGHT' if catching else 'NOT CAUGHT'}")
                for c in catching:
                    print(f"    {c}")
        return 0 if all(c for _, _, c, _ in out) else 1
    except NumaMatrixError as e:
        return report("run-mutants", e)
    except KeyboardInterrupt:
        log(f"interrupted: every result so far is in {args.json}; run the "
            "same command again to go on")
        return 130
