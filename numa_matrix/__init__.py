# SPDX-License-Identifier: GPL-2.0
"""numa-matrix's host tooling, one importable package.

One module per part of the project: kernels (build-kernel), topology (the
.topo files), hostctl (a guest's control channel), guest (run-guest), matrix
(results/matrix), slurm (results/slurm-submit). The programs in the parts'
folders are thin entry points into these modules, and the unit tests import
the modules, so no script loads another one by path. What more than one
module needs is here. Standard library only: topology is also imported
inside guests (qemu-topologies/tests/guest_*.py).
"""

import os

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL_SERIES = os.path.join(TOP, "kernel-series")
QEMU_TOPOLOGIES = os.path.join(TOP, "qemu-topologies")
RESULTS = os.path.join(TOP, "results")

# The entry points, for what runs them as programs: a guest, a Slurm job,
# a message telling the user what to type.
BUILD_KERNEL = os.path.join(KERNEL_SERIES, "build-kernel")
RUN_GUEST = os.path.join(QEMU_TOPOLOGIES, "run-guest")
MATRIX = os.path.join(RESULTS, "matrix")
SLURM_SUBMIT = os.path.join(RESULTS, "slurm-submit")


def cache_root():
    """Kernels, ccache, selftests and guest run directories:
    $NUMA_MATRIX_CACHE, else $XDG_CACHE_HOME/numa-matrix, else
    ~/.cache/numa-matrix. Always absolute, so that a path handed to a
    guest, a Slurm job or a later run means the same directory."""
    root = os.environ.get("NUMA_MATRIX_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        root = os.path.join(base, "numa-matrix")
    return os.path.abspath(root)


# The Meson build dir's layout, as meson.build makes it: where the benchmark
# and the cost model plugin are. Only these lines know it.
BENCH_IN_BUILD = os.path.join("numa-tests", "bench", "timedmunlock")
COST_MODEL_IN_BUILD = os.path.join("qemu-topologies", "cost-model",
                                   "costmodel.so")


def build_dir():
    """The Meson build dir: $NUMA_MATRIX_BUILD, else build/ in the checkout
    (what ./numa-matrix setup makes)."""
    return os.path.abspath(os.environ.get("NUMA_MATRIX_BUILD") or
                           os.path.join(TOP, "build"))


def bench_in(build):
    return os.path.join(os.path.abspath(build), BENCH_IN_BUILD)


def cost_model_in(build):
    return os.path.join(os.path.abspath(build), COST_MODEL_IN_BUILD)


def sibling_bench(bench, name):
    """Another benchmark of the build dir BENCH (timedmunlock) is in."""
    return os.path.join(os.path.dirname(os.path.abspath(bench)), name)


def build_of_bench(bench):
    """The build dir a timedmunlock path is in, or None if it is not at
    its place in one."""
    bench = os.path.abspath(bench)
    suffix = os.sep + BENCH_IN_BUILD
    return bench[:-len(suffix)] if bench.endswith(suffix) else None
