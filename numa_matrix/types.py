# SPDX-License-Identifier: GPL-2.0
"""The data passed between the modules of numa_matrix, as dataclasses.

Built once, at the edge (an entry point's command line, a file read from
disk), and passed whole: no module below the command line reads an
argparse Namespace or a dict whose keys depend on where it came from.
Standard library only: topology.py, which runs in guests too, imports it.
"""

import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import RESULTS
from .errors import UsageError


# ---------------------------------------------------------------- machines

@dataclass
class Hotplug:
    """A topology's `hotplug` line: DIMM slots and the memory they may
    reach, and vCPUs up to maxcpus (docs/topologies.md)."""
    lineno: int
    slots: int = 0
    maxmem_mib: Optional[int] = None
    maxcpus: Optional[int] = None


@dataclass
class Hmat:
    """A topology's `hmat` line: what an initiator node sees of a target
    node's memory (ACPI HMAT)."""
    lineno: int
    initiator: int
    target: int
    latency: int                # ns
    bandwidth: str              # bytes per second, as QEMU takes it: 5G


# ---------------------------------------------------------------- kernels

# What info.json and env.json's kernels say about a kernel, and how.
KERNEL_INFO_SCHEMA = 2


@dataclass
class Source:
    """What a kernel is built from. kind: package (a Debian
    linux-source-X.Y), tarball, git (one commit of a work tree), image (a
    ready bzImage). id names the content (a package's version, a
    tarball's or image's sha256, a commit) in the cache."""
    kind: str
    id: str
    version: str
    package: Optional[str] = None
    tarball: Optional[str] = None
    repo: Optional[str] = None          # git: the work tree's top
    gitdir: Optional[str] = None


@dataclass
class KernelPlan:
    """One kernel a spec names, everything about it known without building
    it (kernelspec.py makes it; kernels.py builds it; nothing else decides
    where its tree, build dir or store are)."""
    kind: str                           # package, tarball, git, image
    label: str                          # its column in reports
    spec_text: str                      # the spec as given
    spec: Optional[str]                 # a spec of exactly this kernel
    source: Source
    source_version: str
    compiler: str
    series_hash: str
    flavour: Optional[str] = None       # None: a ready bzImage
    config_hash: Optional[str] = None
    variant: Optional[str] = None       # baseline, series-K, patched
    patch_names: List[str] = field(default_factory=list)
    patch_paths: List[str] = field(default_factory=list)
    # (series.config path, whether the whole series is applied)
    series_configs: List[Tuple[str, bool]] = field(default_factory=list)
    fragments: List[str] = field(default_factory=list)
    root: Optional[str] = None          # the cache
    pristine: Optional[str] = None      # the unpacked source
    # The tree the kernel is built in: kernels of one tree build one at a
    # time (kernels.tree_lock(), slurm-submit's chained build jobs).
    tree: Optional[str] = None
    build: Optional[str] = None         # kbuild's O= dir
    store: Optional[str] = None         # where the bzImage is kept
    clone: Optional[str] = None         # git: the cache's clone
    localversion: Optional[str] = None
    build_version: Optional[str] = None
    commit: Optional[str] = None
    subject: Optional[str] = None
    kernel_version: Optional[str] = None    # make kernelversion, if known
    image: Optional[str] = None         # a ready bzImage
    config: Optional[str] = None        # ... and its .config, if found
    version_string: Optional[str] = None

    @property
    def patches(self) -> int:
        return len(self.patch_names)


# ---------------------------------------------------------------- guests

# run-guest's exit status when the command's own cannot be told: these,
# and only these, mean the guest failed rather than the command.
EXIT_SPLAT = 123        # the kernel panicked, oopsed or printed a splat
EXIT_TIMEOUT = 124      # the guest did not finish within its timeout
EXIT_SETUP = 125        # the guest could not be run (bad input, QEMU failed)
GUEST_EXITS = {EXIT_SPLAT: "splat", EXIT_TIMEOUT: "timeout",
               EXIT_SETUP: "setup"}


@dataclass
class GuestRequest:
    """One guest: a machine, a kernel, a command (qemu-topologies/run-guest
    and every program that boots one in-process)."""
    # A topology.Topology (not named here: topology.py imports this
    # module, and the import graph stays one way).
    topology: Any
    kernel: str                     # the bzImage to boot
    argv: List[str]                 # the command, run as root in the guest
    clock: str = "wall"             # wall, icount or model
    accel: str = "tcg"              # tcg or kvm (auto is decided before)
    root: str = "host"              # host (9p, read-only) or initramfs
    timeout: float = 900
    writable: List[str] = field(default_factory=list)
    keep_paths: List[str] = field(default_factory=list)
    env: List[str] = field(default_factory=list)    # --env NAME[=VALUE]
    thp: Optional[str] = None
    append: List[str] = field(default_factory=list)
    shell: bool = False
    qemu_opts: List[str] = field(default_factory=list)
    plugin: Optional[str] = None    # the cost model plugin (clock model)
    model_log: Optional[str] = None
    model_profile: Optional[str] = None
    keep: bool = False              # keep the run directory on success
    quiet: bool = False             # no streams, no progress (a probe)


@dataclass
class GuestResult:
    """How a guest ended. status is what run-guest exits with: the
    command's exit status, or one of GUEST_EXITS. reason is "ok" (the
    command exited 0), "command" (it exited non-zero) or a GUEST_EXITS
    value; summary says it in one line."""
    status: int
    reason: str
    summary: str
    accel: Optional[str] = None
    seconds: float = 0.0
    rundir: Optional[str] = None    # kept: where the console log is
    # The serial console stayed empty: neither firmware nor kernel ran.
    silent: bool = False

    @property
    def guest_failed(self) -> bool:
        return self.status in GUEST_EXITS

    @classmethod
    def of_command(cls, status: int, **kw) -> "GuestResult":
        return cls(status, "ok" if status == 0 else "command",
                   f"the command exited with status {status}", **kw)

    @classmethod
    def failed(cls, status: int, summary: str, **kw) -> "GuestResult":
        return cls(status, GUEST_EXITS[status], summary, **kw)


# ---------------------------------------------------------------- the matrix

CLOCKS = ("icount", "model", "wall")
ACCELS = ("tcg", "kvm", "auto")
# Clocks that repeat: one vCPU under -icount (QEMU 7.2 hangs at SMP
# bring-up with it). "model" adds the cost model plugin.
ONE_VCPU_CLOCKS = ("icount", "model")
SIZE_RE = re.compile(r"(\d+)([KMG]?)", re.I)


def size_bytes(text: str) -> int:
    """timedmunlock's --size (K, M, G suffixes, as nt_parse_size() reads
    it) in bytes; UsageError unless it is a whole number of 4 KiB pages."""
    m = SIZE_RE.fullmatch(text or "")
    if not m:
        raise UsageError(f"--size {text}: give a size such as 64M, 512K or 1G")
    n = int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]
    if n <= 0 or n % 4096:
        raise UsageError(f"--size {text}: give a positive whole number of "
                         "4 KiB pages")
    return n


@dataclass
class RunParams:
    """What every cell of a matrix run does alike, kept in its env.json.
    Checked when made: a run never starts with a value that cannot work."""
    iterations: int = 10
    size: str = "64M"
    clock: str = "icount"
    accel: str = "auto"
    flavour: str = "perf"
    timeout: int = 900
    bench: str = ""             # timedmunlock in the Meson build dir

    def __post_init__(self):
        if self.iterations < 1:
            raise UsageError(f"--iterations {self.iterations}: give 1 or more")
        size_bytes(self.size)
        if self.clock not in CLOCKS:
            raise UsageError(f"--clock {self.clock}: use one of "
                             f"{', '.join(CLOCKS)}")
        if self.accel not in ACCELS:
            raise UsageError(f"--accel {self.accel}: use one of "
                             f"{', '.join(ACCELS)}")
        if self.timeout < 1:
            raise UsageError(f"--timeout {self.timeout}: give 1 second or more")

    @property
    def guest_accel(self) -> str:
        """What the guests run on: icount and model are TCG's alone."""
        return "tcg" if self.clock in ONE_VCPU_CLOCKS else self.accel


@dataclass
class RunOptions:
    """What a command line said of a run's parameters: None where it said
    nothing, so that a resumed run keeps its own value."""
    iterations: Optional[int] = None
    size: Optional[str] = None
    clock: Optional[str] = None
    accel: Optional[str] = None
    flavour: Optional[str] = None
    timeout: Optional[int] = None
    build_dir: Optional[str] = None     # where timedmunlock is built

    def params(self, old: Dict[str, Any], default_bench: str) -> RunParams:
        """The parameters of a run: what was said, else the run's own
        (OLD, its env.json when resumed), else the defaults."""
        defaults = RunParams.__dataclass_fields__
        values = {}
        for f in ("iterations", "size", "clock", "accel", "flavour",
                  "timeout"):
            given = getattr(self, f)
            values[f] = given if given is not None else \
                old.get(f, defaults[f].default)
        if self.build_dir:
            bench = os.path.join(os.path.abspath(self.build_dir),
                                 "numa-tests", "bench", "timedmunlock")
        else:
            bench = old.get("bench") or default_bench
        return RunParams(bench=bench, **values)


@dataclass
class Selection:
    """Which cells: comma lists as given (None: the default, or a resumed
    run's own), or the worst case alone."""
    kernels: Optional[str] = None
    topologies: Optional[str] = None
    scenarios: Optional[str] = None
    worst_case: bool = False
    atlas: bool = False


@dataclass
class RunRequest:
    """A matrix run or plan as asked: the selection, the parameters said,
    where (a run to resume, or a directory for a new one), how many cells
    at once (None: the clock's default)."""
    selection: Selection = field(default_factory=Selection)
    options: RunOptions = field(default_factory=RunOptions)
    resume: Optional[str] = None
    run_dir: Optional[str] = None
    results: str = RESULTS
    jobs: Optional[int] = None


@dataclass
class CellsRequest:
    """Commands that run one scenario on one machine for each of their
    kernels (bisect, profile): where their cells go."""
    scenario: str
    topology: str
    params: RunParams
    run_dir: Optional[str] = None
    results: str = RESULTS


@dataclass
class BisectRequest:
    good: str                   # GITDIR@COMMIT
    bad: str
    threshold: float            # percent
    cells: CellsRequest


@dataclass
class ProfileRequest:
    kernels: List[str]          # specs; the first is A, each later one B
    top: int                    # rows per table, 0 for all
    cells: CellsRequest


@dataclass
class SlurmRequest:
    """results/slurm-submit: a run (its selection and parameters, or one
    to resume) and how to ask Slurm for it."""
    run: RunRequest
    partition: Optional[str] = None
    account: Optional[str] = None
    sbatch_args: List[str] = field(default_factory=list)
    cache: Optional[str] = None         # NUMA_MATRIX_CACHE of the jobs
    build_cpus: int = 8
    build_mem: str = "4G"
    build_time: str = "120"
    mem_overhead: int = 512             # MiB per cell beyond the guest's
    build_lock: str = "none"
    max_running: Optional[int] = None
    dry_run: bool = False

    def __post_init__(self):
        if self.run.resume and self.run.run_dir:
            raise UsageError("--resume and --run-dir: give one")
        for name in ("build_cpus", "mem_overhead", "max_running"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"--{name.replace('_', '-')} {value}: give "
                                 "1 or more")
