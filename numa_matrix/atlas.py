# SPDX-License-Identifier: GPL-2.0
"""The batching atlas: every batched LRU path of mm, bound against
interleaved, on machines of 1 to 16 nodes.

A path is a pair of matrix scenarios, the same operation on an area bound
to one node and on one interleaved page by page over every memory node;
its penalty on a machine is the interleaved cost per page over the bound
one. timedbatch (numa-tests/bench) times the paths beside munlock's,
timedmunlock the locked-memory ones and the exit and munmap floors. This
module names the paths and their scenarios and writes the report's atlas
section: one table of penalties, ranked, and one plot of penalty against
nodes. docs/atlas.md says what each path is in the kernel.
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from . import topology
from .rundir import figures, topo_copy

# `run --atlas` without --topologies / --kernels.
TOPOLOGIES = ["1node", "2node", "2node-sparse", "4node", "8node", "16node"]
KERNELS = "6.1=linux-source-6.1,6.12=linux-source-6.12"
ITERATIONS = 3


@dataclass(frozen=True)
class Path:
    label: str          # the table's row, at most 24 characters
    interleaved: str    # scenario names
    bound: str


def _batch(op: str, what: str, **extra: Any) -> Dict[str, Dict[str, Any]]:
    """The two timedbatch scenarios of OP: interleaved (OP) and bound
    (OP-bind)."""
    return {
        op: {"bench": "timedbatch", "op": op, "policy": "interleave:all",
             "what": f"{what}, interleaved over all nodes", **extra},
        op + "-bind": {"bench": "timedbatch", "op": op, "policy": "bind:0",
                       "what": f"{what}, bound to node 0", **extra},
    }


# timedbatch's scenarios, merged into the matrix's.
SCENARIOS: Dict[str, Dict[str, Any]] = {
    **_batch("populate", "mmap(MAP_POPULATE) of private anonymous memory "
             "(lru_add)"),
    **_batch("dontneed", "MADV_DONTNEED of populated anonymous memory "
             "(release_pages / folios_put_refs)"),
    **_batch("truncate", "ftruncate(0) of a filled memfd (shmem_undo_range)"),
    **_batch("lazyfree", "MADV_FREE of populated anonymous memory "
             "(lru_lazyfree)"),
    **_batch("cold", "MADV_COLD of a mapped memfd read twice "
             "(lru_deactivate)"),
    **_batch("reread", "read() of a memfd written once (lru_activate)"),
    **_batch("shm-unlock", "SHM_UNLOCK of a locked SysV segment "
             "(check_move_unevictable_folios)"),
    **_batch("move", "move_pages() of every page to the next node "
             "(do_pages_move)", min_memory_nodes=2),
    **_batch("mbind-move", "mbind(MPOL_BIND, MPOL_MF_MOVE) to one node "
             "(migration, no batch: a control)", min_memory_nodes=2),
    **_batch("collapse", "MADV_COLLAPSE of small anonymous pages "
             "(collapse_huge_page)", size_multiple=2 << 20),
    **_batch("pageout", "MADV_PAGEOUT of a clean mapped ext4 file "
             "(reclaim_pages)"),
    **_batch("fadvise", "POSIX_FADV_DONTNEED of a mapped ext4 file "
             "(lru_deactivate_file)"),
    # pgrotated: the pages the writeback's end rotated (lru_move_tail),
    # which depends on the runs (docs/atlas.md).
    **_batch("swapout", "MADV_PAGEOUT of populated anonymous memory to a "
             "swap file, and its writeback (reclaim_pages, lru_move_tail)",
             vmstat=("pswpout", "pgrotated")),
}

PATHS: List[Path] = [
    Path("release: exit", "exit-unlocked", "exit-bind-unlocked"),
    Path("release: munmap", "munmap-unlocked", "munmap-bind-unlocked"),
    Path("release: MADV_DONTNEED", "dontneed", "dontneed-bind"),
    Path("release: truncate memfd", "truncate", "truncate-bind"),
    Path("reclaim: MADV_PAGEOUT", "pageout", "pageout-bind"),
    Path("reclaim: PAGEOUT to swap", "swapout", "swapout-bind"),
    Path("move_pages", "move", "move-bind"),
    Path("lru_add: populate", "populate", "populate-bind"),
    Path("lazyfree: MADV_FREE", "lazyfree", "lazyfree-bind"),
    Path("deactivate: MADV_COLD", "cold", "cold-bind"),
    Path("deactivate_file: fadv", "fadvise", "fadvise-bind"),
    Path("activate: 2nd read", "reread", "reread-bind"),
    Path("SHM_UNLOCK", "shm-unlock", "shm-unlock-bind"),
    Path("MADV_COLLAPSE", "collapse", "collapse-bind"),
    Path("mbind MOVE (control)", "mbind-move", "mbind-move-bind"),
    Path("munlock", "interleave", "bind"),
    Path("mlock", "mlock", "mlock-bind"),
    Path("exit, locked", "exit", "exit-bind"),
    Path("munmap, locked", "munmap", "munmap-bind"),
]


def scenarios() -> List[str]:
    """Every scenario of the atlas, in the order of PATHS."""
    return [s for p in PATHS for s in (p.interleaved, p.bound)]


def per_page(cells, topo: str, scenario: str, kernel: str,
             clock: str) -> Optional[float]:
    c = cells.get((topo, scenario, kernel))
    if not c or not c["pages"]:
        return None
    vals = figures(c, clock)
    return sum(vals) / len(vals) / c["pages"] * (1.0 if clock == "model" else 1e9)


def penalty(cells, topo, path: Path, kernel, clock) -> Optional[float]:
    i = per_page(cells, topo, path.interleaved, kernel, clock)
    b = per_page(cells, topo, path.bound, kernel, clock)
    return i / b if i and b else None


def memory_nodes(rundir, topo) -> int:
    return len(topology.load(topo_copy(rundir, topo)).memory_nodes())


def in_run(env) -> List[Path]:
    return [p for p in PATHS
            if p.interleaved in env["scenarios"] and p.bound in env["scenarios"]]


def table(rundir, env, cells, kernel) -> List[str]:
    """Interleaved / bound per path (rows, ranked by their largest
    penalty) and machine (columns, by memory nodes): at most 72 wide for
    six machines."""
    clock = env["clock"]
    topos = sorted(env["topologies"], key=lambda t: memory_nodes(rundir, t))
    rows = []
    for p in in_run(env):
        vals = [penalty(cells, t, p, kernel, clock) for t in topos]
        rows.append((max((v for v in vals if v), default=0.0), p, vals))
    rows.sort(key=lambda r: -r[0])
    heads = [t.replace("node", "n").replace("-sparse", "sp")[:7] for t in topos]
    lines = [f"{'interleaved / bound':<24}" + "".join(f"{h:>8}" for h in heads)]
    for _, p, vals in rows:
        lines.append(f"{p.label[:24]:<24}" + "".join(
            f"{v:>8.3f}" if v else f"{'-':>8}" for v in vals))
    return lines


def plot(rundir, env, cells, kernel, plot_lines) -> Optional[str]:
    """Penalty against memory nodes, one line per path: plots/atlas-K.svg.
    Machines with the same number of memory nodes (2node-sparse) are left
    to the table."""
    clock = env["clock"]
    seen: Dict[int, str] = {}
    for t in sorted(env["topologies"], key=lambda t: memory_nodes(rundir, t)):
        seen.setdefault(memory_nodes(rundir, t), t)
    xs = sorted(seen)
    if len(xs) < 2:
        return None
    series = {}
    for p in in_run(env):
        pts = [(x, penalty(cells, seen[x], p, kernel, clock)) for x in xs]
        pts = [(x, y) for x, y in pts if y]
        if pts:
            series[p.label] = pts
    if not series:
        return None
    return plot_lines(rundir, f"atlas-{kernel}",
                      f"interleaved / bound per page, {kernel} ({clock})",
                      "penalty (ratio)", series, xs)


def section(rundir, env, cells, plot_lines) -> List[str]:
    """The report's atlas section, before everything else; [] when the
    run has no path's both scenarios."""
    if not in_run(env):
        return []
    what = {"model": "modelled cycles", "icount": "instructions"}.get(
        env["clock"], "wall-clock ns")
    md = ["## the batching atlas", "",
          f"Cost per page interleaved over every memory node over the cost "
          f"bound to node 0 ({what}, mean of the iterations); 1.000 is no "
          "penalty. Rows ranked by their largest penalty; '-' where the "
          "path cannot run (one memory node) or a cell failed. What each "
          "path is: docs/atlas.md.", ""]
    for k in env["kernels"]:
        md += [f"{k}:", "", "```"] + table(rundir, env, cells, k) + ["```", ""]
        p = plot(rundir, env, cells, k, plot_lines)
        if p:
            md += [f"![{p}]({p})", ""]
    return md
