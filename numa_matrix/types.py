# SPDX-License-Identifier: GPL-2.0
"""The data passed between the modules of numa_matrix, as dataclasses.

Built once, at the edge (an entry point's command line, a file read from
disk), and passed whole: no module below the command line reads an
argparse Namespace or a dict whose keys depend on where it came from.
Standard library only: topology.py, which runs in guests too, imports it.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, List, Optional

if TYPE_CHECKING:
    from .topology import Topology


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
    topology: "Topology"
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
