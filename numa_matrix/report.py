# SPDX-License-Identifier: GPL-2.0
"""Reports of matrix runs: the statistics, the seed-style tables (mmtests'
compare layout, as in the 2013 cover letter), the narrow tables of a few
kernels or of a series, patch by patch, the gnuplot SVGs, report.md, and the
comparison of two runs or kernels cell by cell. Reads run directories
through rundir.py; runs nothing.
"""

import math
import os
import textwrap
import shutil
import subprocess

from . import topology
from .errors import UsageError
from . import atlas
from .rundir import figures, identity_change, load_run, plan_cells, topo_copy
from .types import ONE_VCPU_CLOCKS
from .util import atomic_write
from .util import log as say


def log(msg):
    say("matrix", msg)


def stats(values):
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return {"min": min(values), "mean": mean, "stddev": math.sqrt(var),
            "max": max(values), "range": max(values) - min(values)}


def pct(base, new):
    """mmtests' percentage for lower-is-better figures: positive = better."""
    if base == 0:
        return 0.0 if new == 0 else -100.0
    return (base - new) / base * 100


ROWS = ("min", "mean", "stddev", "max", "range")


def seed_table(kernels, cells, env, topo, scenario):
    """One table in the format of the 2013 cover letter (mmtests compare):
    Elapsed time, or modelled Cycles under the model clock."""
    present = [k for k in kernels if (topo, scenario, k) in cells]
    if not present:
        return None
    clock = env["clock"]
    st = {k: stats(figures(cells[(topo, scenario, k)], clock)) for k in present}
    base = st[present[0]]
    note = [] if present[0] == kernels[0] else [
        f"(no figures of {kernels[0]} on {topo}: percentages are against "
        f"{present[0]})"]
    width = 22
    if clock == "model":
        label, unit, scale, page = "Cycles", "M", 1e-6, ("cycles/page mean", 1.0)
    else:
        label, unit, scale, page = "Elapsed", "s", 1.0, ("ns/page mean", 1e9)
        if max(s["max"] for s in st.values()) < 1:
            unit, scale = "ms", 1000.0
    head1 = f"{'':<18}" + "".join(f"{env['kernels'][k]['source_version']:>{width}}"
                                   for k in present)
    head2 = f"{'':<18}" + "".join(f"{k:>{width}}" for k in present)
    lines = note + [head1, head2]
    for row in ROWS:
        cols = []
        for k in present:
            v = st[k][row]
            cols.append(f"{v * scale:.3f} ({pct(base[row], v):7.2f}%)".rjust(width))
        lines.append(f"{label} {row:<7} {unit:<3}".ljust(18) + "".join(cols))
    per_page = []
    for k in present:
        c = cells[(topo, scenario, k)]
        v = st[k]["mean"] / c["pages"] * page[1]
        b = base["mean"] / cells[(topo, scenario, present[0])]["pages"] * page[1]
        per_page.append(f"{v:.1f} ({pct(b, v):7.2f}%)".rjust(width))
    lines.append(f"{page[0]:<18}" + "".join(per_page))
    return "\n".join(lines)


# The cost model's counts per page, in the order the report prints them.


# The cost model's counts per page, in the order the report prints them.
MODEL_ROWS = (("instructions", "insns"), ("atomics", "atomics"),
              ("L1D misses", "l1_miss"), ("L2 misses", "l2_miss"),
              ("LLC misses", "llc_miss"), ("remote misses", "remote"),
              ("modelled cycles", "cycles"))


def model_table(kernels, cells, topo, scenario):
    """Under the model clock: what each page cost, mean of the iterations."""
    present = [k for k in kernels if (topo, scenario, k) in cells]
    if not present:
        return None
    width = 14
    lines = [f"{'per page':<18}" + "".join(f"{k:>{width}}" for k in present)]
    for label, key in MODEL_ROWS:
        cols = []
        for k in present:
            c = cells[(topo, scenario, k)]
            mean = sum(r[key] for r in c["model"]) / len(c["model"])
            cols.append(f"{mean / c['pages']:.2f}".rjust(width))
        lines.append(f"{label:<18}" + "".join(cols))
    return "\n".join(lines)


def per_page(cells, topo, scenario, kernel, clock):
    """Mean cost per page: ns (instructions under icount), or modelled cycles."""
    c = cells.get((topo, scenario, kernel))
    if not c:
        return None
    scale = 1.0 if clock == "model" else 1e9
    return stats(figures(c, clock))["mean"] / c["pages"] * scale


def gnuplot(script, out):
    if not shutil.which("gnuplot"):
        log("gnuplot not found (apt-get install gnuplot-nox): no plots")
        return False
    r = subprocess.run(["gnuplot"], input=script, text=True,
                       capture_output=True, check=False)
    if r.returncode != 0:
        log(f"gnuplot failed for {out}: {r.stderr.strip()}")
        return False
    return True


def nodes_of(rundir, topo):
    return len(topology.load(topo_copy(rundir, topo)).nodes)


def plot_lines(rundir, name, title, ylabel, series, xs):
    """series: {label: [(x, y) ...]} -> plots/<name>.svg (gnuplot)."""
    os.makedirs(os.path.join(rundir, "plots"), exist_ok=True)
    data = os.path.join(rundir, "plots", name + ".dat")
    with open(data, "w") as f:
        for label, points in series.items():
            f.write(f'"{label}"\n')
            for x, y in points:
                f.write(f"{x} {y}\n")
            f.write("\n\n")
    out = os.path.join(rundir, "plots", name + ".svg")
    plots = ", ".join(f"'{data}' index {i} using 1:2 with linespoints "
                      f"title columnheader(1)" for i in range(len(series)))
    script = (f"set terminal svg size 800,480 dynamic font 'sans,12'\n"
              f"set output '{out}'\nset title '{title}'\n"
              f"set xlabel 'NUMA nodes'\nset ylabel '{ylabel}'\n"
              f"set xtics ({', '.join(str(x) for x in xs)})\nset logscale x 2\n"
              # A margin on both sides: a tic on the border (the largest
              # machine's) lost its label.
              f"set xrange [{xs[0] / 1.3:g}:{xs[-1] * 1.3:g}]\n"
              f"set key outside right\nset grid\nplot {plots}\n")
    return gnuplot(script, out) and os.path.relpath(out, rundir)


def plots(rundir, env, cells):
    kernels = list(env["kernels"])
    topos = sorted(env["topologies"], key=lambda t: nodes_of(rundir, t))
    xs = sorted({nodes_of(rundir, t) for t in topos})
    made = []
    clock = env["clock"]
    unit = {"icount": "instructions per page (icount)",
            "model": "modelled cycles per page (cost model)"}.get(clock, "ns per page")
    for scenario in env["scenarios"]:
        if scenario not in ("bind", "interleave"):
            continue
        series = {}
        for k in kernels:
            pts = [(nodes_of(rundir, t), per_page(cells, t, scenario, k, clock))
                   for t in topos]
            pts = [(x, y) for x, y in pts if y is not None]
            if pts:
                series[k] = pts
        if series and len(xs) > 1:
            p = plot_lines(rundir, f"per-page-{scenario}",
                           f"munlock cost per page, {scenario}", unit, series, xs)
            if p:
                made.append(p)
    if "bind" in env["scenarios"] and "interleave" in env["scenarios"] and len(xs) > 1:
        series = {}
        for k in kernels:
            pts = []
            for t in topos:
                b = per_page(cells, t, "bind", k, clock)
                i = per_page(cells, t, "interleave", k, clock)
                if b and i:
                    pts.append((nodes_of(rundir, t), i / b))
            if pts:
                series[k] = pts
        if series:
            p = plot_lines(rundir, "interleave-bind-ratio",
                           "munlock cost, interleaved / bound", "ratio", series, xs)
            if p:
                made.append(p)
    return made


def ratio_table(env, cells, topos):
    kernels = list(env["kernels"])
    lines = ["| topology | " + " | ".join(kernels) + " |",
             "|---|" + "---|" * len(kernels)]
    for t in topos:
        row = []
        for k in kernels:
            b = per_page(cells, t, "bind", k, env["clock"])
            i = per_page(cells, t, "interleave", k, env["clock"])
            row.append(f"{i / b:.4f}" if b and i else "-")
        lines.append(f"| {t} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def headline(rundir):
    """The table to paste into a cover letter: the worst case (interleave,
    else the first scenario) on the machine with the most nodes."""
    env, cells, _ = load_run(rundir)
    topos = sorted(env["topologies"], key=lambda t: nodes_of(rundir, t))
    scenario = "interleave" if "interleave" in env["scenarios"] \
        else next(iter(env["scenarios"]))
    for t in reversed(topos):
        table = seed_table(list(env["kernels"]), cells, env, t, scenario)
        if table:
            return (f"timedmunlock, {scenario} on {t} ({env['clock']}, "
                    f"{env['iterations']} x {env['size']}):\n{table}")
    return "no cell finished"


def source_of(info):
    """Which source a column was built from, for the report."""
    kind = info.get("source_kind", "package")
    if kind == "git":
        return (f"commit {info['commit'][:12]} \"{info['subject']}\" of "
                f"{os.path.basename(info['source'])}")
    if kind in ("tarball", "image"):
        return f"{kind} {os.path.basename(info['source'])}"
    return info.get("source_package") or "linux-source-6.1"


ROOT_TEXT = {
    "host": "the host's, over 9p (the guest waits for host I/O before the "
            "benchmark, so counts differ between boots in the last digits)",
    "initramfs": "an initramfs with timedmunlock alone (the guest reads "
                 "nothing from the host: the same kernel gives the same "
                 "counts, boot after boot)",
}


CLOCK_TEXT = {
    "icount": " (QEMU `-icount shift=0,sleep=off`, one vCPU: guest time counts "
              "executed instructions, 1 ns each. Host load does not change it; "
              "the spread left is the guest's own iteration-to-iteration "
              "variation)",
    "model": " (icount plus the cost model, docs/cost-model.md: modelled cycles "
             "of the timed call = instructions + cache misses x latency by level "
             "and SLIT distance + atomics x their cost, with the plugin's "
             "defaults, one core of an AMD EPYC 7742. Deterministic like icount; "
             "no contention, prefetcher or TLB)",
}


def where_cells_ran(cells):
    """Report lines: the accelerator and host of each cell, grouped."""
    groups: dict = {}
    for (t, s, k), c in sorted(cells.items()):
        w = c.get("where")
        key = (w["accel"], w["host"], w["cpu_model"], w["host_kernel"],
               w["qemu"]) if w else None
        groups.setdefault(key, []).append(f"{t} {s} {k}")
    if not groups:
        return []
    md = ["## where the cells ran", ""]
    for key, names in groups.items():
        if key is None:
            what = "not recorded (a cell from before cells kept it)"
        else:
            accel, host, cpu, hk, qemu = key
            what = f"{accel} on {host} ({cpu}; kernel {hk}; {qemu})"
        which = "every cell" if len(groups) == 1 else \
            f"{len(names)} cell(s): {', '.join(names)}"
        md.append(f"- {which}: {what}")
    return md + [""]


def write_report(rundir):
    env, cells, failed = load_run(rundir)
    kernels = list(env["kernels"])
    clock = env["clock"]
    h = env["host"]
    md = [f"# matrix run {os.path.basename(rundir)}", "",
          f"- clock: **{clock}**" + CLOCK_TEXT.get(
              clock, f" under {env['accel']} (noisy: compare runs with "
              "`matrix compare`)"),
          f"- {env['iterations']} iterations of a {env['size']} area per cell, "
          f"flavour {env['flavour']}",
          "- guest root: " + ROOT_TEXT[env.get("root", "host")],
          f"- planned on: {h['cpu_model']}, {h['cpus']} CPUs, {h['memory_mib']} MiB, "
          f"kernel {h['host_kernel']}; {h['qemu']}",
          f"- numa-matrix {env['numa_matrix']}; started {env.get('started')}, "
          f"finished {env.get('finished', 'not yet')}", "",
          "| kernel | source | version | patches | series hash | config hash "
          "| compiler |", "|---|---|---|---|---|---|---|"]
    for k, info in env["kernels"].items():
        md.append(f"| {k} | {source_of(info)} | {info['source_version']} | "
                  f"{info['patches']} | {info['series_hash']} | "
                  f"{info['config_hash']} | {info.get('compiler', 'not recorded')} |")
    md += ["", "Percentages are mmtests': (base - new) / base x 100 against the "
           "first column, so positive is better.", ""]
    topos = sorted(env["topologies"], key=lambda t: nodes_of(rundir, t))
    md += atlas.section(rundir, env, cells, plot_lines)
    for scenario in env["scenarios"]:
        md += [f"## {scenario}: {env['scenarios'][scenario]['what']}", ""]
        for t in topos:
            table = seed_table(kernels, cells, env, t, scenario)
            if table:
                md += [f"{t}:", "", "```", "timedmunlock", table, "```", ""]
    if clock == "model":
        md += [f"- cost model plugin sha256 {env['cost_model']['sha256']}", ""]
        for scenario in env["scenarios"]:
            md += [f"## {scenario}, what each page cost under the model", ""]
            for t in topos:
                table = model_table(kernels, cells, t, scenario)
                if table:
                    md += [f"{t}:", "", "```", table, "```", ""]
    if "bind" in env["scenarios"] and "interleave" in env["scenarios"]:
        what = "modelled cycles" if clock == "model" else "mean cost"
        md += [f"## interleaved / bound, {what} per page", "",
               ratio_table(env, cells, topos), ""]
    narrow = narrow_report(env, cells, topos)
    if narrow:
        md += [f"## the same, at most {NARROW} columns", ""] + narrow
    md += where_cells_ran(cells)
    made = plots(rundir, env, cells)
    if made:
        md += ["## plots", ""] + [f"![{p}]({p})" for p in made] + [""]
    if failed:
        # Damaged cells too ("damaged: ..."); the heading is what readers
        # and the Slurm test look for.
        md += ["## failed cells", ""] + [
            f"- {t} {s} {k}: {why}" for (t, s, k), why in sorted(failed.items())]
        md.append("")
    missing = [(t, s, k) for k, t, s in plan_cells(env)
               if (t, s, k) not in cells and (t, s, k) not in failed]
    if missing:
        md += [f"{len(missing)} cell(s) not run yet.", ""]
    path = os.path.join(rundir, "report.md")
    atomic_write(path, "\n".join(md))
    return path


# ---------------------------------------------------------------- narrow

# What fits a mail, a cover letter or a terminal: no line wider.
NARROW = 72
LETTERS = "ABCD"


def unit_of(clock):
    return {"model": "modelled cycles per page",
            "icount": "instructions per page (icount)"}.get(
                clock, "ns per page")


def page_figures(cell, clock):
    """What a cell measured per iteration, per page: ns (instructions under
    icount), or modelled cycles."""
    scale = 1.0 if clock == "model" else 1e9
    return [v / cell["pages"] * scale for v in figures(cell, clock)]


def verdict(a, b):
    """B's per-iteration figures against A's: identical, within noise (a
    difference under twice the larger standard deviation), better
    (fewer) or worse."""
    sa, sb = stats(a), stats(b)
    if sa["mean"] == sb["mean"]:
        return "identical"
    if abs(sa["mean"] - sb["mean"]) <= 2 * max(sa["stddev"], sb["stddev"]):
        return "within noise"
    return "better" if sb["mean"] < sa["mean"] else "worse"


def change(a, b):
    """B against A in percent, (B - A) / A: negative is fewer."""
    if a == 0:
        return 0.0 if b == 0 else math.inf
    # No "-0.00%" for a change that rounds to nothing.
    return round((b - a) / a * 100, 2) + 0.0


def fit(text, width):
    return text if len(text) <= width else text[:width - 1] + "~"


def narrow_table(sides, groups, clock):
    """Two to four columns side by side, at most NARROW wide. SIDES:
    [{key: cell}] as columns A, B, ...; GROUPS: [(heading, [(label, key)])]
    with the rows under each heading. Each row: the mean per page of each
    column, the last against A, and with two columns the verdict."""
    n = len(sides)
    last = LETTERS[n - 1]
    lines = [f"{'':<22}" + "".join(f"{LETTERS[i]:>10}" for i in range(n))
             + f"{last + ' vs A':>10}" + ("  verdict" if n == 2 else "")]
    for heading, rows in groups:
        lines.append(fit(heading, NARROW))
        for label, key in rows:
            figs = [page_figures(side[key], clock) for side in sides]
            means = [stats(f)["mean"] for f in figs]
            line = f"  {fit(label, 20):<20}" + \
                "".join(f"{m:>10.1f}" for m in means) + \
                f"{change(means[0], means[-1]):>+9.2f}%"
            if n == 2:
                line += f"  {verdict(figs[0], figs[1])}"
            lines.append(line)
    return "\n".join(lines)


def per_patch_table(kernels, cells, topo, scenario, clock):
    """One row per kernel, in column order: its mean per page, and the
    change against the kernel before it and against the first. What a
    series' cover letter shows patch by patch; at most NARROW wide."""
    present = [k for k in kernels if (topo, scenario, k) in cells]
    if not present:
        return None
    lines = [f"{'kernel':<22}{'per page':>12}{'vs previous':>14}"
             f"{'vs first':>12}"]
    first = prev = None
    for k in present:
        mean = stats(page_figures(cells[(topo, scenario, k)], clock))["mean"]
        cols = f"{mean:>12.1f}"
        if first is not None:
            cols += f"{change(prev, mean):>+13.2f}%{change(first, mean):>+11.2f}%"
        lines.append(f"{fit(k, 21):<22}" + cols)
        first = mean if first is None else first
        prev = mean
    return "\n".join(lines)


def legend(letter, name, info):
    """Which column a letter is: at most two lines, NARROW wide."""
    out = [fit(f"{letter}  {name}", NARROW)]
    if info:
        patches = info.get("patches")
        out.append(fit(f"   {source_of(info)} {info['source_version']}"
                       + (f", {patches} patch{'es' if patches > 1 else ''}"
                          if patches else ""), NARROW))
    return out


def narrow_report(env, cells, topos):
    """The report's narrow tables: two to four kernels side by side, or,
    for a series, one row per kernel of each scenario on the largest
    machine."""
    kernels = list(env["kernels"])
    clock = env["clock"]
    unit = f"{unit_of(clock)}, mean of {env['iterations']} iterations"
    if 2 <= len(kernels) <= 4:
        groups = [(t, [(s, (t, s)) for s in env["scenarios"]
                       if all((t, s, k) in cells for k in kernels)])
                  for t in topos]
        groups = [g for g in groups if g[1]]
        if not groups:
            return []
        out = [unit + ":"]
        for i, k in enumerate(kernels):
            out += legend(LETTERS[i], k, env["kernels"][k])
        sides = [{(t, s): c for (t, s, k2), c in cells.items() if k2 == k}
                 for k in kernels]
        return ["```"] + out + [narrow_table(sides, groups, clock), "```", ""]
    if len(kernels) < 2 or not topos:
        return []
    out = []
    for s in env["scenarios"]:
        table = per_patch_table(kernels, cells, topos[-1], s, clock)
        if table:
            out += ["```", fit(f"{s} on {topos[-1]}, {env['iterations']} "
                               f"iterations, {unit_of(clock)}:", NARROW),
                    table, "```", ""]
    return out


# ---------------------------------------------------------------- compare

def compare_side(arg):
    """RUN_DIR, or RUN_DIR:KERNEL for one column of it: (run, kernel,
    env, cells), the cells of one column keyed with kernel None."""
    run, kernel = arg, None
    if not os.path.isdir(arg) and ":" in arg:
        run, kernel = arg.rsplit(":", 1)
    env, cells, _ = load_run(run)
    if kernel is None:
        return run, None, env, cells
    if kernel not in env["kernels"]:
        raise UsageError(f"{run} has no kernel '{kernel}' (it has "
                         f"{', '.join(env['kernels'])})")
    return run, kernel, env, {(t, s, None): c for (t, s, k), c in cells.items()
                              if k == kernel}


def wrap(text):
    return textwrap.wrap(text, NARROW, subsequent_indent="  ")


def compare(*args):
    """Two to four runs, or kernels of any runs (RUN_DIR:KERNEL), cell by
    cell, at most NARROW wide: the text to print."""
    if not 2 <= len(args) <= 4:
        raise UsageError(f"compare takes two to four runs or kernels, not "
                         f"{len(args)}")
    sides = [compare_side(a) for a in args]
    named = [k is not None for _, k, _, _ in sides]
    if any(named) and not all(named):
        raise UsageError("name a kernel on every side (RUN_DIR:KERNEL) or on "
                         "none")
    common = set(sides[0][3])
    for side in sides[1:]:
        common &= set(side[3])
    if not common:
        raise UsageError("the runs have no cell in common")
    clocks = {env["clock"] for _, _, env, _ in sides}
    clock = sides[0][2]["clock"]
    out = [f"{unit_of(clock)}, mean of each cell's iterations:"]
    for i, (run, k, env, _) in enumerate(sides):
        name = os.path.basename(os.path.normpath(run)) + (f":{k}" if k else "")
        out += legend(LETTERS[i], name, env["kernels"][k] if k else None)
    if not all(named):
        for k in sorted({key[2] for key in common}):
            for i, (_, _, env, _) in enumerate(sides[1:], 1):
                changed = identity_change(sides[0][2]["kernels"][k],
                                          env["kernels"][k])
                if changed:
                    out += wrap(f"note: {k} is not the same kernel in A and "
                                f"{LETTERS[i]}: {'; '.join(changed)}")
    if len(clocks) > 1:
        out += wrap("warning: the runs use different clocks; their figures "
                    "are not comparable")
    elif clock in ONE_VCPU_CLOCKS:
        what = "count instructions (icount)" if clock == "icount" else \
            "count modelled cycles (the cost model)"
        out += wrap(f"The runs {what}: the host's load adds no noise; what "
                    "spread there is comes from the guest itself (its page "
                    "allocator starts each iteration in another state), and "
                    "a difference beyond it is the kernels'.")
    groups = []
    order = list(sides[0][2]["kernels"])
    for k in sorted({key[2] for key in common},
                    key=lambda k: order.index(k) if k in order else -1):
        for t in sorted({key[0] for key in common if key[2] == k}):
            rows = [(s, (t, s, k)) for s in sorted(
                {key[1] for key in common if key[:1] == (t,) and key[2] == k})]
            groups.append((t if k is None else f"{k} on {t}", rows))
    out.append(narrow_table([side[3] for side in sides], groups, clock))
    return "\n".join(out) + "\n"
