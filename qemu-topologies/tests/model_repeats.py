#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The repeatable clocks repeat (TAP): the same kernel, benchmark and
machine booted twice under the cost model, each from an initramfs root,
must print the same timedmunlock lines (guest nanoseconds: instructions
under icount) and the same cost model record for every iteration, to the
last digit. docs/cost-model.md, "Repeatability", says what makes them so;
anything that lets the host's timing into the guest again fails this.

  model_repeats.py --bench BUILD/numa-tests/bench/timedmunlock
                   [--kernel SPEC] [--flavour F] [--topology T]

Needs the cost model plugin (NUMA_MATRIX_COSTMODEL, as Meson sets it).
"""

import argparse
import difflib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_GUEST = os.path.join(os.path.dirname(HERE), "run-guest")
# Small enough for two boots to take about half a minute on a quiet host.
BENCH_ARGS = ["--policy", "interleave:all", "--size", "8M", "--iterations", "3"]


def boot(args, tmp, n):
    records = os.path.join(tmp, f"model{n}.log")
    cmd = [RUN_GUEST, "--clock", "model", "--root", "initramfs",
           "--topology", args.topology, "--kernel", args.kernel,
           "--flavour", args.flavour, "--timeout", str(args.timeout),
           "--model-log", records, "--", args.bench] + BENCH_ARGS
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        print(f"Bail out! boot {n}: run-guest exited {out.returncode}: "
              + " | ".join(out.stderr.strip().splitlines()[-3:]))
        sys.exit(1)
    with open(records) as f:
        recs = [line.rstrip("\n") for line in f if line.startswith("region=")]
    lines = [line for line in out.stdout.splitlines()
             if line[:1].isdigit()]
    return lines, recs


def same(n, what, a, b):
    diff = list(difflib.unified_diff(a, b, "boot 1", "boot 2", lineterm="",
                                     n=0))
    print(("ok" if a and not diff else "not ok") + f" {n} - {what}")
    for line in diff[:12]:
        print(f"# {line}")
    if not a:
        print("# nothing to compare")
    return a and not diff


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", required=True)
    ap.add_argument("--kernel", default="patched")
    ap.add_argument("--flavour", default="perf")
    ap.add_argument("--topology", default="4node")
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args()
    print("1..3")
    with tempfile.TemporaryDirectory() as tmp:
        lines1, recs1 = boot(args, tmp, 1)
        lines2, recs2 = boot(args, tmp, 2)
    ok = same(1, "two boots print the same timedmunlock iteration lines "
              "(guest ns)", lines1, lines2)
    ok &= same(2, "two boots give the same cost model record for every "
               "iteration", recs1, recs2)
    counted = len(recs1) == len(lines1) == 3 and \
        all(int(r.split(" insns=")[1].split()[0]) > 0 for r in recs1)
    print(("ok" if counted else "not ok") +
          " 3 - one record per iteration, each counting instructions")
    if not counted:
        print(f"# {len(lines1)} iteration lines, {len(recs1)} records")
    return 0 if ok and counted else 1


if __name__ == "__main__":
    sys.exit(main())
