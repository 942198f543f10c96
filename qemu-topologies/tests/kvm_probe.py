#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""run-guest --accel auto on this host, with a real kernel and QEMU (TAP):
the KVM probe reaches a verdict, caches it, the guest runs on the
accelerator the verdict names, and a second guest uses the cached answer
without probing again. On a machine whose /dev/kvm cannot run the guest
kernel (QEMU 7.2 stops with "failed to set MSR 0x10a", the machines this
project is built on) the verdict is "does not work" and the guests run
under TCG; on one whose KVM runs it, both guests run on KVM. Skips, saying
why, where /dev/kvm is missing or not usable by this user.

  kvm_probe.py [--kernel SPEC] [--flavour F] [--topology T]

The probe's cache is a fresh one of its own, so the probe runs here whatever
the user's cache holds.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
RUN_GUEST = os.path.join(TOP, "qemu-topologies", "run-guest")
BUILD_KERNEL = os.path.join(TOP, "kernel-series", "build-kernel")
KVM = os.environ.get("NUMA_MATRIX_KVM", "/dev/kvm")


def kernel_image(spec, flavour):
    """The bzImage, from the user's cache (the probe's is empty)."""
    out = subprocess.run([BUILD_KERNEL, spec, "--flavour", flavour,
                          "--path-only"], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        print(f"Bail out! {out.stderr.strip()}")
        sys.exit(1)
    return out.stdout.split()[-1]


def boot(args, image, cache, n):
    record = os.path.join(cache, f"record{n}.json")
    env = dict(os.environ, NUMA_MATRIX_CACHE=cache)
    out = subprocess.run([RUN_GUEST, "--topology", args.topology, "--kernel",
                          image, "--accel", "auto", "--record", record,
                          "--timeout", "300", "--", "true"],
                         capture_output=True, text=True, env=env, check=False)
    for line in out.stderr.splitlines():
        print(f"# boot {n}: {line}")
    try:
        with open(record) as f:
            out.record = json.load(f)
    except (OSError, ValueError):
        out.record = {}
    return out


def check(n, ok, what):
    print(("ok" if ok else "not ok") + f" {n} - {what}", flush=True)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="patched")
    ap.add_argument("--flavour", default="perf")
    ap.add_argument("--topology", default="1node")
    args = ap.parse_args()
    print("TAP version 13", flush=True)
    if not os.access(KVM, os.R_OK | os.W_OK):
        print(f"1..0 # SKIP no usable {KVM} for this user: run-guest does "
              "not probe without one")
        return 0
    print("1..5", flush=True)
    image = kernel_image(args.kernel, args.flavour)
    with tempfile.TemporaryDirectory(prefix="kvm-probe-") as cache:
        first = boot(args, image, cache, 1)
        good = check(1, first.returncode == 0,
                     f"a guest with --accel auto ran (exit {first.returncode})")
        try:
            with open(os.path.join(cache, "kvm-probe.json")) as f:
                works = json.load(f)["works"]
        except (OSError, ValueError, KeyError):
            works = None
        good &= check(2, works in (True, False),
                      "the probe's verdict is cached: KVM "
                      + {True: "works", False: "does not work",
                         None: "(no verdict)"}[works])
        accel = {True: "kvm", False: "tcg"}.get(works)
        good &= check(3, first.record.get("accel") == accel,
                      f"the guest ran on {first.record.get('accel')}, as the "
                      "verdict says")
        second = boot(args, image, cache, 2)
        good &= check(4, second.returncode == 0 and
                      second.record.get("accel") == accel,
                      f"a second guest ran on {second.record.get('accel')}")
        good &= check(5, "probing KVM" in first.stderr and
                      "probing KVM" not in second.stderr,
                      "the first guest probed, the second used the cache")
    return 0                # the TAP lines say what failed


if __name__ == "__main__":
    sys.exit(main())
