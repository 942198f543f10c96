# SPDX-License-Identifier: GPL-2.0
"""results/matrix profile: where the instructions of a benchmark's timed
region go, per kernel function ("perf report" for the icount clock).

  matrix profile --kernel baseline --kernel patched --topology 4node \\
      --scenario interleave

Runs the cell of each kernel under the cost model with its profile= argument
(docs/profile.md): inside the regions timedmunlock marks around its timed
call, the plugin counts the instructions executed at each guest virtual
address, summed over the cell's iterations. Each address is then named by
the nearest text symbol at or below it in the kernel's System.map; user
space is one line. One table per kernel (instructions per page and per
iteration, share of the total), and each further kernel against the first
(A, B, B-A per page, sorted by the size of the change). The guests boot
with nokaslr and their kernels are built without CONFIG_RELOCATABLE, so the
addresses are the linked ones.

The cells are those of an ordinary matrix run directory
(results/profiles/<id>-<topology>-<scenario>/ unless --run-dir says
otherwise), each with its profile beside it as <kernel>.profile and the
tables in profile.txt; running the same command with --run-dir again reuses
what was measured.
"""

from bisect import bisect_right
import os
import re
import time

from . import kernels as kbuild
from . import matrix as mx
from .errors import UsageError
from .rundir import RunDirError, cell_path, read_cell, write_env
from .types import ProfileRequest
from .util import atomic_write

USER = "[user]"
UNKNOWN = "[kernel, no symbol]"
# Instructions the plugin counted without an address (out of memory).
NOWHERE = 0xFFFFFFFFFFFFFFFF
UNPROFILED = "[no address]"
KERNEL_HALF = 1 << 63
TEXT_TYPES = set("tTwW")
# Symbols that mark where a section starts or ends rather than name code:
# a function at the same address is named instead, and an address whose
# nearest symbol is one (past _etext) has no function.
MARKER = re.compile(r"_s?text|_etext|_sinittext|_einittext|__\w*text_(start|end)")


class ProfileError(RunDirError):
    """A profile that cannot be read or does not add up."""


# ---------------------------------------------------------------- symbols

class Symbols:
    """The kernel's symbols from a System.map: for each address, the text
    symbol it belongs to (the nearest symbol at or below it, when that is
    a function)."""

    def __init__(self, path):
        self.path = path
        best: dict = {}
        with open(path) as f:
            for order, line in enumerate(f):
                fields = line.split()
                if len(fields) < 3:
                    continue
                try:
                    addr = int(fields[0], 16)
                except ValueError:
                    raise ProfileError(f"{path}:{order + 1}: not a System.map "
                                  f"line: {line.strip()[:60]!r}") from None
                kind, name = fields[1], fields[2]
                if addr < KERNEL_HALF or kind in "aA":
                    continue        # per-CPU offsets, absolute values
                is_func = kind in TEXT_TYPES and not MARKER.fullmatch(name)
                # Several names at one address: a function before a
                # section marker or data, a global one before a local or
                # weak alias (__x64_sys_munlockall before the static
                # __do_sys_munlockall it is), then the first one listed.
                rank = (not is_func, {"T": 0, "t": 1}.get(kind, 2), order)
                if addr not in best or rank < best[addr][0]:
                    best[addr] = (rank, name if is_func else None)
        if not best:
            raise ProfileError(f"{path}: no kernel symbols")
        self.addrs = sorted(best)
        self.names = [best[a][1] for a in self.addrs]

    def name(self, addr):
        if addr == NOWHERE:
            return UNPROFILED
        if addr < KERNEL_HALF:
            return USER
        i = bisect_right(self.addrs, addr) - 1
        if i < 0 or self.names[i] is None:
            return UNKNOWN
        return self.names[i]


# ---------------------------------------------------------------- profiles

def read_profile(path):
    """The plugin's profile file: ({header fields}, {address: count}).
    Refuses a file the plugin did not finish (QEMU killed) or whose lines
    do not add up to its own header."""
    fields: dict = {}
    counts: dict = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ProfileError(f"cannot read the profile {path}: {e.strerror}") from None
    for lineno, line in enumerate(lines, 1):
        if line.startswith("#"):
            for word in line[1:].split():
                key, eq, value = word.partition("=")
                if eq:
                    fields[key] = value
            continue
        try:
            addr, count = line.split()
            counts[int(addr, 16)] = counts.get(int(addr, 16), 0) + int(count)
        except ValueError:
            raise ProfileError(f"{path}:{lineno}: not 'ADDRESS COUNT': "
                          f"{line[:60]!r}") from None
    if "regions" not in fields:
        raise ProfileError(f"{path}: no '# regions=' header: the plugin did not "
                      "write it (did the guest finish?)")
    try:
        header = {k: int(v) for k, v in fields.items()}
    except ValueError:
        raise ProfileError(f"{path}: a header field that is not a number") from None
    total = sum(counts.values())
    if total != header.get("insns"):
        raise ProfileError(f"{path}: its lines add up to {total} instructions, its "
                      f"header says {header.get('insns')}")
    return header, counts


def by_function(counts, symbols):
    """{function: instructions}."""
    out: dict = {}
    for addr, n in counts.items():
        name = symbols.name(addr)
        out[name] = out.get(name, 0) + n
    return out


def ordered(funcs, key):
    """Largest first by KEY, ties by name: the same order on every run."""
    return sorted(funcs, key=lambda f: (-key(f), f))


# ---------------------------------------------------------------- tables

def table(title, funcs, regions, pages, top=None):
    """perf report's layout: share, instructions per page and per
    iteration, function; largest first. TOP: that many rows, then one for
    the rest."""
    total = sum(funcs.values())
    names = ordered(funcs, funcs.get)
    lines = [title,
             f"  {'share':>7}  {'insns/page':>10}  {'insns/iter':>11}  function"]

    def row(n, name):
        share = n / total * 100 if total else 0.0
        lines.append(f"  {share:6.2f}%  {n / regions / pages:10.2f}  "
                     f"{n / regions:11.1f}  {name}")

    shown = names if top is None else names[:top]
    for name in shown:
        row(funcs[name], name)
    rest = names[len(shown):]
    if rest:
        row(sum(funcs[n] for n in rest), f"({len(rest)} more functions)")
    row(total, "total")
    return "\n".join(lines)


def diff(funcs_a, funcs_b):
    """[(function, A, B, B - A)] over the functions of either, the largest
    change first (equal changes by name)."""
    names = set(funcs_a) | set(funcs_b)
    rows = [(n, funcs_a.get(n, 0), funcs_b.get(n, 0),
             funcs_b.get(n, 0) - funcs_a.get(n, 0)) for n in names]
    return sorted(rows, key=lambda r: (-abs(r[3]), r[0]))


def diff_table(title, funcs_a, regions_a, funcs_b, regions_b, pages, top=None):
    """Instructions per page of A and B, B - A, and B - A as a share of A's
    total (how much of A's cost the change in that function is)."""
    total_a = sum(funcs_a.values()) / regions_a / pages
    lines = [title,
             f"  {'A/page':>10}  {'B/page':>10}  {'B-A/page':>10}  "
             f"{'of A':>8}  function"]

    def row(a, b, name):
        a, b = a / regions_a / pages, b / regions_b / pages
        share = (b - a) / total_a * 100 if total_a else 0.0
        lines.append(f"  {a:10.2f}  {b:10.2f}  {b - a:+10.2f}  {share:+7.2f}%  "
                     f"{name}")

    rows = diff(funcs_a, funcs_b)
    shown = rows if top is None else rows[:top]
    for name, a, b, _ in shown:
        row(a, b, name)
    rest = rows[len(shown):]
    if rest:
        row(sum(r[1] for r in rest), sum(r[2] for r in rest),
            f"({len(rest)} more functions)")
    row(sum(funcs_a.values()), sum(funcs_b.values()), "total")
    return "\n".join(lines)


# ---------------------------------------------------------------- running

def profile_path(rundir, topo, scenario, kernel):
    return cell_path(rundir, topo, scenario, kernel)[:-4] + ".profile"


def check_plugin(env):
    """The plugin the run loads must know profile= (one built before it
    stops QEMU at start with "unknown argument")."""
    with open(env["cost_model"]["plugin"], "rb") as f:
        if b"profile=" not in f.read():
            raise ProfileError(f"the cost model plugin {env['cost_model']['plugin']} "
                          "predates profile=: rebuild it (meson compile -C "
                          "BUILD_DIR)")


def checked(cell, header, label):
    """The sum check: the profile's instructions are those of the cell's
    regions, as the plugin's records count them, to the instruction."""
    records = sum(r["insns"] for r in cell["model"])
    if header["regions"] != len(cell["model"]) or \
            header["insns"] != records or \
            header["insns"] != header.get("region_insns"):
        raise ProfileError(f"{label}: the profile counts {header['insns']} "
                      f"instructions in {header['regions']} regions, the "
                      f"cell's records {records} in {len(cell['model'])}")
    return (f"{label}: {header['insns']} instructions in {header['regions']} "
            f"regions, the sum of the cell's records' insns: {records}"
            + (f"; {header['lost']} counted without an address"
               if header.get("lost") else ""))


class Profile:
    def __init__(self, req: ProfileRequest):
        c = req.cells
        self.req, self.params, self.scenario = req, c.params, c.scenario
        self.kernels = mx.select_kernels(",".join(req.kernels),
                                         self.params.flavour)
        if c.run_dir:
            self.rundir = os.path.abspath(c.run_dir)
        else:
            self.rundir = os.path.join(
                os.path.abspath(c.results), "profiles",
                time.strftime("%Y%m%d-%H%M%S") + f"-{c.topology}-{c.scenario}")
        os.makedirs(self.rundir, exist_ok=True)
        self.topos = mx.select_topologies(c.topology, self.rundir)
        self.topo = next(iter(self.topos))
        self.env = write_env(self.rundir, self.params, self.kernels, self.topos,
                             {c.scenario: mx.SCENARIOS[c.scenario]})

    def measure(self, label):
        """The cell and profile of one kernel, run if not there yet."""
        scenario = self.scenario
        cell = cell_path(self.rundir, self.topo, scenario, label)
        prof = profile_path(self.rundir, self.topo, scenario, label)
        done = os.path.exists(cell) and os.path.exists(prof) and \
            os.path.getsize(prof) > 0
        if not done:
            mx.log(f"{label}: {scenario} on {self.topo}, model clock, "
                   f"profile")
            ok, reason = mx.run_cell(self.env, self.rundir, label, self.topo,
                                     scenario, profile=prof)
            if not ok:
                raise ProfileError(f"{label}: the benchmark failed: {reason} "
                                   f"(see {cell[:-4]}.failed)")
        return read_cell(cell), read_profile(prof)

    def run(self):
        top, scenario = self.req.top or None, self.scenario
        mx.build_kernels(self.env, self.rundir)
        check_plugin(self.env)
        out, checks, results = [], [], {}
        for label in self.kernels:
            cell, (header, counts) = self.measure(label)
            info = self.env["kernels"][label]
            symbols = Symbols(kbuild.system_map(self.kernels[label]))
            checks.append(checked(cell, header, label))
            funcs = by_function(counts, symbols)
            results[label] = (funcs, header["regions"], cell["pages"])
            out.append(table(
                f"{scenario} on {self.topo}, {label} ({info['source_version']}"
                f", {info['patches']} patches): {header['regions']} iterations"
                f" x {cell['pages']} pages, {header['insns']} instructions "
                "(model clock, timed regions)", funcs, header["regions"],
                cell["pages"], top))
        labels = list(results)
        for b in labels[1:]:
            fa, ra, pages = results[labels[0]]
            fb, rb, pages_b = results[b]
            if pages_b != pages:
                raise ProfileError(f"{labels[0]} and {b} have {pages} and "
                                   f"{pages_b} pages per iteration: not one "
                                   "benchmark")
            out.append(diff_table(
                f"{scenario} on {self.topo}, instructions per page: "
                f"A = {labels[0]}, B = {b}", fa, ra, fb, rb, pages, top))
        out.append("sums (profile = regions):\n" +
                   "\n".join("  " + c for c in checks))
        return "\n\n".join(out) + "\n"


def profile(req: ProfileRequest):
    """results/matrix profile: the tables, printed and in profile.txt."""
    if not req.kernels:
        raise UsageError("give the kernel to profile: --kernel SPEC (twice "
                         "for a diff)")
    p = Profile(req)
    text = p.run()
    atomic_write(os.path.join(p.rundir, "profile.txt"), text)
    print(text, end="")
    mx.log(f"cells, profiles and tables: {p.rundir}")
    return 0
