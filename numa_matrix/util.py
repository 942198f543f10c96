# SPDX-License-Identifier: GPL-2.0
"""What every module needs once: writing a file atomically, saying
something on stderr, the facts of the host a guest runs on (asked once per
process), and the QEMU binary.

Standard library only, like the rest of the package.
"""

import functools
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Set, Union


def log(prog: str, msg: str) -> None:
    """One line on stderr, after the program's name."""
    print(f"{prog}: {msg}", file=sys.stderr, flush=True)


def atomic_write(path: str, data: Union[str, bytes]) -> None:
    """Replace PATH with DATA so that a reader sees the old file or the new
    one, whole, never a part, even if this process dies half-way: write a
    temporary file beside it (same file system), flush it to disk, then
    rename it over PATH. The temporary name is this process's and thread's
    own (cells of one run are written by several threads), and the
    temporary file is removed if anything fails; the old PATH stays until
    the rename replaces it."""
    path = os.path.abspath(path)
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".{os.path.basename(path)}.tmp-{os.getpid()}-"
                       f"{threading.get_ident()}")
    mode = "xb" if isinstance(data, bytes) else "x"
    try:
        with open(tmp, mode) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def qemu_binary() -> str:
    """The QEMU every guest runs on: NUMA_MATRIX_QEMU (a stand-in in tests),
    else Debian's qemu-system-x86_64 on PATH."""
    return os.environ.get("NUMA_MATRIX_QEMU", "qemu-system-x86_64")


@functools.lru_cache(maxsize=None)
def qemu_version(qemu: str) -> str:
    """QEMU's first line of --version ("unknown" when it does not run)."""
    try:
        out = subprocess.run([qemu, "--version"], capture_output=True,
                             text=True, check=False)
    except OSError:
        return "unknown"
    lines = out.stdout.splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else "unknown"


@dataclass(frozen=True)
class HostFacts:
    """What a figure measured in a guest may depend on, of the host."""
    host: str
    cpu_model: str
    cpus: int
    memory_mib: int
    host_kernel: str
    qemu: str


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def memory_mib() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


@functools.lru_cache(maxsize=None)
def host_facts(qemu: str = "") -> HostFacts:
    """This host, asked once per process (and QEMU's version once per
    binary)."""
    return HostFacts(host=socket.gethostname(), cpu_model=cpu_model(),
                     cpus=os.cpu_count() or 1, memory_mib=memory_mib(),
                     host_kernel=platform.release(),
                     qemu=qemu_version(qemu or qemu_binary()))


def replace_dir(tmp: str, dest: str) -> None:
    """Put the finished directory TMP at DEST. An old DEST is moved aside
    first and removed only once TMP is in its place: a crash half-way
    leaves one of the two whole, never neither."""
    old = None
    if os.path.lexists(dest):
        old = f"{dest}.old-{os.getpid()}-{threading.get_ident()}"
        os.rename(dest, old)
    os.rename(tmp, dest)
    if old:
        shutil.rmtree(old, ignore_errors=True)


# ---------------------------------------------------------------- children

# The programs this process runs and waits for (run-guest, build-kernel,
# sbatch ...): stopped with it. SIGTERM to this process alone would leave
# them running, each with its QEMU or make.
_children: Set[subprocess.Popen] = set()
_children_lock = threading.Lock()
_refusing = False


def run_child(cmd, input=None, **kw) -> subprocess.CompletedProcess:
    """subprocess.run(CMD, **KW), with the child stopped when this process
    is interrupted or terminated (stop_children(), on KeyboardInterrupt)
    rather than left to run on. Threads may call it at once."""
    if kw.pop("capture_output", False):
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    if input is not None:
        kw["stdin"] = subprocess.PIPE
    check = kw.pop("check", False)
    # Started and recorded under the lock: a stop_children() from another
    # thread in between would miss a child that is already running.
    with _children_lock:
        if _refusing:
            raise KeyboardInterrupt
        proc = subprocess.Popen(cmd, **kw)
        _children.add(proc)
    try:
        out, err = proc.communicate(input)
    except BaseException:
        stop(proc)
        raise
    finally:
        with _children_lock:
            _children.discard(proc)
    if check and proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd, out, err)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def stop(proc, grace=10):
    """SIGTERM, then SIGKILL if it has not ended GRACE seconds later."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def refuse_children():
    """From now on run_child() starts nothing and raises KeyboardInterrupt:
    the process is stopping, and a thread between two children must not
    start the next one after stop_children() has looked."""
    global _refusing
    with _children_lock:
        _refusing = True


def stop_children(grace=10):
    """Stop every child run_child() is waiting for: SIGTERM to each at once
    (run-guest stops its QEMU, build-kernel its make), SIGKILL to those
    still there after GRACE seconds."""
    with _children_lock:
        procs = list(_children)
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        stop(proc, grace)


def _interrupted(signum, frame):
    raise KeyboardInterrupt


def terminate_as_interrupt():
    """SIGTERM (a Slurm job's time limit, kill, a CI timeout) ends the
    program as Ctrl-C does: its KeyboardInterrupt path stops its children
    and keeps what is finished."""
    signal.signal(signal.SIGTERM, _interrupted)
