# SPDX-License-Identifier: GPL-2.0
"""Read, check and describe the emulated machines in qemu-topologies/*.topo.

The format is documented in docs/topologies.md. Every error names the file,
the line and what to change. This module knows nothing about QEMU's command
line: run-guest turns a Topology into QEMU arguments.
"""

import os
import re
from typing import List, NoReturn, Optional

from . import QEMU_TOPOLOGIES
from .errors import UsageError
from .types import Hmat, Hotplug

SUFFIX = ".topo"
LOCAL_DISTANCE = 10
MAX_DISTANCE = 254          # 255 means "unreachable" in ACPI SLIT
KEYS = ("description", "node", "distance", "asymmetric-distances", "hmat",
        "hotplug")


class TopologyError(UsageError):
    """A malformed topology: the message says where and how to fix it."""

    def __init__(self, path, lineno, msg, fix=None):
        where = f"{path}:{lineno}" if lineno else path
        text = f"{where}: {msg}"
        if fix:
            text += f": {fix}"
        super().__init__(text)
        self.path, self.lineno = path, lineno


class Node:
    def __init__(self, nid, lineno):
        self.id = nid
        self.lineno = lineno
        self.cpus = []
        self.mem_mib = 0
        self.initiator = None
        self.empty = False          # declared 'empty': a hole in the node ids

    def __repr__(self):
        return f"Node({self.id}, cpus={self.cpus}, mem={self.mem_mib}M)"


class Topology:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)[:-len(SUFFIX)] \
            if path.endswith(SUFFIX) else os.path.basename(path)
        self.description = None
        self.nodes = []
        self.distances = None       # n x n list, or None for QEMU's default
        self.asymmetric = False
        self.hmat: List[Hmat] = []
        self.hotplug: Optional[Hotplug] = None

    @property
    def ncpus(self):
        return sum(len(n.cpus) for n in self.nodes)

    @property
    def mem_mib(self):
        return sum(n.mem_mib for n in self.nodes)

    def memory_nodes(self):
        return [n.id for n in self.nodes if n.mem_mib]

    def cpu_nodes(self):
        return [n.id for n in self.nodes if n.cpus]

    def spare_cpus(self):
        """{cpu: node} for the vCPUs beyond the nodes' own, up to maxcpus:
        absent at boot, hot-added through QMP (add-cpu). They go round-robin
        to the nodes that have CPUs, so no CPU-less node gains one."""
        hp = self.hotplug
        homes = self.cpu_nodes()
        if not hp or not hp.maxcpus or not homes:
            return {}
        return {cpu: homes[i % len(homes)]
                for i, cpu in enumerate(range(self.ncpus, hp.maxcpus))}

    def kernel_node_ids(self):
        """{node id here: node id in the guest}. QEMU passes node ids as ACPI
        proximity domains; x86 Linux numbers the domains densely in the order
        SRAT names them (acpi_map_pxm_to_node()): first the CPUs' domains in
        CPU order, then those with memory only. An empty node gets no id."""
        order = sorted((n for n in self.nodes if n.cpus),
                       key=lambda n: min(n.cpus))
        order += [n for n in self.nodes if n.mem_mib and not n.cpus]
        return {n.id: i for i, n in enumerate(order)}

    def distance(self, a, b):
        if self.distances is None:
            return LOCAL_DISTANCE if a == b else 20
        return self.distances[a][b]

    def peak(self):
        """(MiB, vCPUs) at most, hot-added ones included: what the host
        must be able to give this guest (check_fits, a Slurm allocation)."""
        mem, cpus = self.mem_mib, self.ncpus
        if self.hotplug and self.hotplug.maxmem_mib:
            mem = self.hotplug.maxmem_mib
        if self.hotplug and self.hotplug.maxcpus:
            cpus = max(cpus, self.hotplug.maxcpus)
        return mem, cpus

    def summary(self):
        parts = []
        for n in self.nodes:
            cpus = format_cpulist(n.cpus) if n.cpus else "-"
            mem = format_size(n.mem_mib) if n.mem_mib else "-"
            parts.append(f"{n.id}:{cpus}/{mem}")
        extra = []
        if self.distances is not None:
            extra.append("asymmetric SLIT" if self.asymmetric else "SLIT")
        if self.hmat:
            extra.append("HMAT")
        if self.hotplug:
            extra.append(f"hotplug {self.hotplug.slots} slots")
        empty = sum(1 for n in self.nodes if n.empty)
        nodes = (f"{len(self.nodes)} node ids ({empty} empty)" if empty
                 else plural(len(self.nodes), "node"))
        return (f"{nodes}, {plural(self.ncpus, 'vCPU')}, "
                f"{format_size(self.mem_mib)}  [{' '.join(parts)}]"
                + (f" {', '.join(extra)}" if extra else ""))

    def single_cpu(self):
        """The same memory layout with one vCPU: what icount mode runs.

        QEMU 7.2 hangs at SMP bring-up with -icount, so the vCPU goes to the
        lowest node that had CPUs and every other node becomes CPU-less.
        """
        home = self.cpu_nodes()[0]
        t = Topology(self.path)
        t.name, t.description = self.name, self.description
        t.distances, t.asymmetric = self.distances, self.asymmetric
        t.hmat = list(self.hmat)
        for n in self.nodes:
            c = Node(n.id, n.lineno)
            c.mem_mib, c.initiator = n.mem_mib, n.initiator
            c.empty = n.empty
            if n.id == home:
                c.cpus = [0]
            elif n.cpus:
                if not n.mem_mib:
                    raise TopologyError(self.path, n.lineno,
                                        f"node {n.id} has CPUs but no memory",
                                        "a one-vCPU (icount) run would leave "
                                        "it empty; use a topology whose "
                                        "non-CPU-0 nodes all have memory")
                if self.hmat:
                    c.initiator = home
            t.nodes.append(c)
        return t


def parse_size(text):
    """'512M', '2G' -> MiB. Sizes are whole MiB."""
    m = re.fullmatch(r"(\d+)([MG])", text)
    if not m:
        return None
    return int(m.group(1)) * (1024 if m.group(2) == "G" else 1)


def format_size(mib):
    return f"{mib // 1024}G" if mib % 1024 == 0 and mib >= 1024 else f"{mib}M"


def parse_cpulist(text):
    cpus: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            return None
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            return None
        cpus.extend(range(lo, hi + 1))
    return cpus


def format_cpulist(cpus):
    runs: list[list[int]] = []
    for c in sorted(cpus):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def parse_bandwidth(text):
    """'5G' / '800M' (bytes per second, as QEMU's hmat-lb takes them)."""
    return text if re.fullmatch(r"\d+[KMGT]?", text) else None


def _kv(path, lineno, words, allowed):
    out = {}
    for w in words:
        if "=" not in w:
            raise TopologyError(path, lineno, f"'{w}' is not key=value",
                                f"write one of {', '.join(allowed)} as key=value")
        k, v = w.split("=", 1)
        if k not in allowed:
            raise TopologyError(path, lineno, f"unknown key '{k}'",
                                f"known keys here: {', '.join(allowed)}")
        if k in out:
            raise TopologyError(path, lineno, f"'{k}' given twice",
                                "keep one")
        out[k] = v
    return out


def _int(path, lineno, text, what):
    if not re.fullmatch(r"\d+", text):
        raise TopologyError(path, lineno, f"{what} '{text}' is not a number",
                            f"write {what} as a decimal number")
    return int(text)


class _Parser:
    def __init__(self, path, text):
        self.path = path
        self.text = text
        self.t = Topology(path)
        self.rows = {}              # node id -> (lineno, [distances])
        self.cpu_owner = {}         # cpu -> (node id, lineno)

    def error(self, lineno, msg, fix=None) -> NoReturn:
        raise TopologyError(self.path, lineno, msg, fix)

    def parse(self):
        for lineno, raw in enumerate(self.text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            key, _, rest = line.partition(" ")
            rest = rest.strip()
            if key not in KEYS:
                self.error(lineno, f"unknown key '{key}'",
                           f"a line starts with one of {', '.join(KEYS)}")
            getattr(self, "line_" + key.replace("-", "_"))(lineno, rest)
        self.finish()
        return self.t

    def line_description(self, lineno, rest):
        if self.t.description is not None:
            self.error(lineno, "second description", "keep one")
        if not rest:
            self.error(lineno, "empty description", "say what the machine models")
        self.t.description = rest

    def line_node(self, lineno, rest):
        words = rest.split()
        if not words:
            self.error(lineno, "node without an id", "write 'node <id> cpus=.. mem=..'")
        nid = _int(self.path, lineno, words[0], "node id")
        if nid != len(self.t.nodes):
            self.error(lineno, f"node {nid} out of order",
                       f"declare nodes 0, 1, 2, ... in order (expected node "
                       f"{len(self.t.nodes)})")
        node = Node(nid, lineno)
        # Real machines number nodes sparsely (0 and 8 on two sockets), but
        # QEMU refuses a gap in node ids: an empty node (neither CPUs nor
        # memory) fills it, and must be asked for by name.
        node.empty = "empty" in words[1:]
        kv = _kv(self.path, lineno, [w for w in words[1:] if w != "empty"],
                 ("cpus", "mem", "initiator"))
        if node.empty and kv:
            self.error(lineno, f"node {nid} is empty but has "
                       f"{', '.join(k + '=' for k in kv)}",
                       "drop 'empty', or drop the keys")
        if "cpus" in kv:
            cpus = parse_cpulist(kv["cpus"])
            if cpus is None:
                self.error(lineno, f"cpus '{kv['cpus']}' is not a CPU list",
                           "write e.g. cpus=0 or cpus=0-3 or cpus=0,2")
            for c in cpus:
                if c in self.cpu_owner:
                    other, oline = self.cpu_owner[c]
                    self.error(lineno, f"CPU {c} is in node {other} (line "
                               f"{oline}) and node {nid}",
                               "give each CPU to exactly one node")
                self.cpu_owner[c] = (nid, lineno)
            node.cpus = cpus
        if "mem" in kv:
            mib = parse_size(kv["mem"])
            if not mib or mib % 2:
                self.error(lineno, f"mem '{kv['mem']}' is not a size",
                           "write a positive, even number of MiB: mem=512M or mem=1G")
            node.mem_mib = mib
        if "initiator" in kv:
            node.initiator = _int(self.path, lineno, kv["initiator"], "initiator")
        if not node.cpus and not node.mem_mib and not node.empty:
            self.error(lineno, f"node {nid} has neither cpus nor mem",
                       "give it cpus=, mem= or both, or write 'node "
                       f"{nid} empty' for a hole in the node ids")
        self.t.nodes.append(node)

    def line_distance(self, lineno, rest):
        m = re.fullmatch(r"(\d+):\s*(.*)", rest)
        if not m:
            self.error(lineno, "malformed distance row",
                       "write 'distance <node>: <d0> <d1> ...', one value per node")
        nid = int(m.group(1))
        if nid in self.rows:
            self.error(lineno, f"second distance row for node {nid} (first at "
                       f"line {self.rows[nid][0]})", "keep one row per node")
        vals = [_int(self.path, lineno, v, "distance") for v in m.group(2).split()]
        self.rows[nid] = (lineno, vals)

    def line_asymmetric_distances(self, lineno, rest):
        if rest:
            self.error(lineno, "asymmetric-distances takes no value",
                       "write the bare keyword")
        self.t.asymmetric = True

    def line_hmat(self, lineno, rest):
        kv = _kv(self.path, lineno, rest.split(),
                 ("initiator", "target", "latency", "bandwidth"))
        for k in ("initiator", "target", "latency", "bandwidth"):
            if k not in kv:
                self.error(lineno, f"hmat without {k}",
                           "write 'hmat initiator=I target=T latency=NS "
                           "bandwidth=5G'")
        if not parse_bandwidth(kv["bandwidth"]):
            self.error(lineno, f"bandwidth '{kv['bandwidth']}' is not a rate",
                       "write bytes per second, e.g. bandwidth=800M")
        self.t.hmat.append(Hmat(
            lineno=lineno,
            initiator=_int(self.path, lineno, kv["initiator"], "initiator"),
            target=_int(self.path, lineno, kv["target"], "target"),
            latency=_int(self.path, lineno, kv["latency"], "latency"),
            bandwidth=kv["bandwidth"]))

    def line_hotplug(self, lineno, rest):
        if self.t.hotplug is not None:
            self.error(lineno, "second hotplug line", "keep one")
        kv = _kv(self.path, lineno, rest.split(), ("slots", "maxmem", "maxcpus"))
        hp = Hotplug(lineno=lineno,
                     slots=_int(self.path, lineno, kv.get("slots", "0"), "slots"))
        if "maxmem" in kv:
            hp.maxmem_mib = parse_size(kv["maxmem"])
            if not hp.maxmem_mib:
                self.error(lineno, f"maxmem '{kv['maxmem']}' is not a size",
                           "write e.g. maxmem=4G")
        if "maxcpus" in kv:
            hp.maxcpus = _int(self.path, lineno, kv["maxcpus"], "maxcpus")
        if hp.slots and hp.maxmem_mib is None:
            self.error(lineno, "memory slots without maxmem",
                       "add maxmem=<total including hot-added memory>")
        self.t.hotplug = hp

    def finish(self):
        t = self.t
        if t.description is None:
            self.error(0, "no description line",
                       "add 'description <what this machine models>'")
        if not t.nodes:
            self.error(0, "no nodes", "add 'node 0 cpus=0 mem=512M'")
        n = len(t.nodes)
        cpus = sorted(self.cpu_owner)
        if not cpus:
            self.error(t.nodes[0].lineno, "no node has CPUs",
                       "give at least one node cpus=")
        if cpus != list(range(len(cpus))):
            missing = sorted(set(range(cpus[-1] + 1)) - set(cpus))
            self.error(t.nodes[0].lineno, f"CPUs {format_cpulist(missing)} are "
                       "in no node", "number the CPUs 0..N-1 without gaps")
        if not t.memory_nodes():
            self.error(t.nodes[0].lineno, "no node has memory",
                       "give at least one node mem=")
        self.finish_distances(n)
        self.finish_initiators(n)
        self.finish_hotplug()

    def finish_distances(self, n):
        t = self.t
        if not self.rows:
            if t.asymmetric:
                self.error(0, "asymmetric-distances without distance rows",
                           "add the rows or drop the keyword")
            return
        for nid in range(n):
            if nid not in self.rows:
                self.error(0, f"no distance row for node {nid}",
                           f"add 'distance {nid}: ...' with {n} values")
        matrix = []
        for nid in range(n):
            lineno, vals = self.rows[nid]
            if len(vals) != n:
                self.error(lineno, f"distance row for node {nid} has "
                           f"{len(vals)} values", f"give one per node ({n})")
            for j, v in enumerate(vals):
                if j == nid and v != LOCAL_DISTANCE:
                    self.error(lineno, f"distance {nid}->{nid} is {v}",
                               "a node's distance to itself is 10")
                if j != nid and not LOCAL_DISTANCE < v <= MAX_DISTANCE:
                    self.error(lineno, f"distance {nid}->{j} is {v}",
                               "remote distances are 11..254 (10 is local)")
            matrix.append(vals)
        for a in range(n):
            for b in range(a + 1, n):
                if matrix[a][b] != matrix[b][a] and not t.asymmetric:
                    self.error(self.rows[b][0], f"distance {a}->{b} is "
                               f"{matrix[a][b]} but {b}->{a} is {matrix[b][a]}",
                               "make them equal, or add the line "
                               "'asymmetric-distances' if that is intended")
        for nid in self.rows:
            if nid >= n:
                self.error(self.rows[nid][0], f"distance row for node {nid}, "
                           f"which is not declared", "remove it")
        t.distances = matrix

    def finish_initiators(self, n):
        t = self.t
        for node in t.nodes:
            if node.initiator is None:
                continue
            i = node.initiator
            if i >= n or not t.nodes[i].cpus:
                self.error(node.lineno, f"initiator {i} of node {node.id} is "
                           "not a node with CPUs", "name a node that has cpus=")
            if node.cpus and i != node.id:
                self.error(node.lineno, f"node {node.id} has CPUs, so its "
                           f"initiator is itself, not {i}", "drop initiator=")
        if not t.hmat:
            return
        for node in t.nodes:
            if node.mem_mib and not node.cpus and node.initiator is None:
                self.error(node.lineno, f"CPU-less node {node.id} has no "
                           "initiator", "HMAT needs initiator=<a CPU node>")
        for h in t.hmat:
            for k in ("initiator", "target"):
                if getattr(h, k) >= n:
                    self.error(h.lineno, f"hmat {k} {getattr(h, k)} is not a node",
                               f"nodes are 0..{n - 1}")
            if not t.nodes[h.initiator].cpus:
                self.error(h.lineno, f"hmat initiator {h.initiator} has "
                           "no CPUs", "an initiator is a node with cpus=")
            if not t.nodes[h.target].mem_mib:
                self.error(h.lineno, f"hmat target {h.target} has no "
                           "memory", "a target is a node with mem=")

    def finish_hotplug(self):
        t = self.t
        hp = t.hotplug
        if not hp:
            return
        if hp.maxmem_mib is not None and hp.maxmem_mib <= t.mem_mib:
            self.error(hp.lineno, f"maxmem {format_size(hp.maxmem_mib)} "
                       f"leaves no room above the {format_size(t.mem_mib)} of "
                       "the nodes", "raise maxmem")
        if hp.maxcpus is not None and hp.maxcpus < t.ncpus:
            self.error(hp.lineno, f"maxcpus {hp.maxcpus} is below the "
                       f"{t.ncpus} CPUs of the nodes", "raise maxcpus")


def plural(n, what):
    return f"{n} {what}" + ("" if n == 1 else "s")


def parse(text, path="<text>"):
    return _Parser(path, text).parse()


# A catalogue file becomes a Meson test setup, guest_<name> with '-' turned
# into '_': lowercase, digits and '-' keep two names from meeting in one
# setup. A file given by path only has to make a file name in a run
# directory and a cell's key.
CATALOGUE_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
ADHOC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def load(path, in_catalogue=False):
    name = os.path.basename(path)
    name = name[:-len(SUFFIX)] if name.endswith(SUFFIX) else name
    if in_catalogue and not CATALOGUE_NAME.fullmatch(name):
        raise TopologyError(path, 0, f"name '{name}' is not usable as a "
                            "test setup", "name a catalogue file with "
                            "lowercase letters, digits and '-' only")
    if not ADHOC_NAME.fullmatch(name):
        raise TopologyError(path, 0, f"name '{name}' is not usable as a "
                            "machine's name", "name the file with letters, "
                            "digits, '_', '.' and '-' only")
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise TopologyError(path, 0, f"cannot read: {e.strerror}",
                            "give a .topo file or a name from "
                            "'run-guest --list'") from None
    return parse(text, path)


def catalogue(directory=QEMU_TOPOLOGIES):
    return sorted(os.path.join(directory, f) for f in os.listdir(directory)
                  if f.endswith(SUFFIX))


def find(name_or_path, directory=QEMU_TOPOLOGIES):
    """A topology by catalogue name ('4node') or by path."""
    if os.sep in name_or_path or name_or_path.endswith(SUFFIX):
        in_catalogue = os.path.dirname(os.path.abspath(name_or_path)) == \
            os.path.abspath(directory)
        return load(name_or_path, in_catalogue)
    path = os.path.join(directory, name_or_path + SUFFIX)
    if not os.path.exists(path):
        names = [os.path.basename(p)[:-len(SUFFIX)] for p in catalogue(directory)]
        raise TopologyError(name_or_path, 0, "no such topology",
                            f"known: {', '.join(names)} (or give a path)")
    return load(path, in_catalogue=True)


def host_limits():
    """What this host can give guests: half its RAM, 8 vCPUs per core."""
    mem_kib = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    return {"mem_mib": mem_kib // 1024 // 2, "vcpus": 8 * (os.cpu_count() or 1)}


def check_fits(t, limits):
    mem, cpus = t.peak()
    if mem > limits["mem_mib"]:
        raise TopologyError(t.path, 0, f"needs {format_size(mem)} of guest "
                            f"memory, this host gives guests at most "
                            f"{format_size(limits['mem_mib'])}",
                            "shrink the nodes' mem=")
    if cpus > limits["vcpus"]:
        raise TopologyError(t.path, 0, f"needs {cpus} vCPUs, this host "
                            f"emulates at most {limits['vcpus']}",
                            "give the nodes fewer cpus=")


def setup_name(name):
    """The Meson test setup of a topology. Meson wants an identifier
    ([_a-zA-Z][_0-9a-zA-Z]*), and '4node' is not one: 4node -> guest_4node,
    4node-ring -> guest_4node_ring."""
    return "guest_" + name.replace("-", "_")


if __name__ == "__main__":
    # `python3 -m numa_matrix.topology setups`: "name setup" per catalogue
    # file, for meson.build.
    import sys
    if sys.argv[1:] != ["setups"]:
        sys.exit("usage: python3 -m numa_matrix.topology setups")
    for p in catalogue():
        name = os.path.basename(p)[:-len(SUFFIX)]
        print(name, setup_name(name))
