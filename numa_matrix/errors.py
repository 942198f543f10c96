# SPDX-License-Identifier: GPL-2.0
"""The one base of every error the tooling raises on purpose.

Each module raises its own subclass (kernelspec.SpecError, kernels.BuildError,
topology.TopologyError, ...) with a message that names the cause and what
to do; nothing is caught only to be raised again as another class. An entry
point catches NumaMatrixError alone, prints its message on one line after
the program's name and exits with its exit_status: 2 for bad input found
before any work (UsageError: a malformed topology, a spec that names
nothing, an option out of range), 1 for a failure of the work itself (a
build that failed, a guest that panicked). Anything else is a bug and keeps
its traceback.
"""

import sys


class NumaMatrixError(Exception):
    """An error the user can act on: the message says what and why."""

    exit_status = 1


class UsageError(NumaMatrixError):
    """Bad input, refused before any work was done."""

    exit_status = 2


def report(prog: str, e: NumaMatrixError) -> int:
    """Print E as PROG's one error line; its exit status."""
    text = str(e).strip()
    print(f"{prog}: error: {text}", file=sys.stderr, flush=True)
    return e.exit_status
