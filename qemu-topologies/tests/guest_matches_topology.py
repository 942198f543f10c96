#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""In a guest: does the machine the kernel sees match its topology file?

run-guest exports NUMA_MATRIX_TOPOLOGY_FILE and NUMA_MATRIX_CLOCK; outside a
numa-matrix guest there is no file to compare with and the test skips.
Compared: online nodes, CPUs per node, memory per node (MemTotal within
MEM_TOLERANCE below the declared size: the kernel's own image, memmap and
reservations come out of it), SLIT rows, and for HMAT machines the best
initiator, read latency and read bandwidth the kernel reports per target.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import topology  # noqa: E402

NODE_SYSFS = "/sys/devices/system/node"
# Measured on 6.1 guests of the catalogue: MemTotal was 85.5% (a hotplug
# machine's node 1, whose memmap covers the hotplug area) to 98.5% of mem=.
MEM_TOLERANCE = 0.20

results = []


def check(ok, name, diag=None):
    results.append((bool(ok), name, diag))


def read(path):
    with open(path) as f:
        return f.read().strip()


def node_ids(listfile):
    text = read(os.path.join(NODE_SYSFS, listfile))
    return topology.parse_cpulist(text) if text else []


def mem_total_mib(nid):
    for line in read(os.path.join(NODE_SYSFS, f"node{nid}", "meminfo")).splitlines():
        if "MemTotal:" in line:
            return int(line.split()[3]) / 1024
    raise RuntimeError(f"node{nid}/meminfo has no MemTotal")


def check_nodes(t):
    # The guest numbers the nodes densely, CPU nodes first (see
    # Topology.kernel_node_ids()): an empty node, a hole in sparse node ids,
    # has no number there.
    kid = t.kernel_node_ids()
    present = sorted((n for n in t.nodes if n.id in kid), key=lambda n: kid[n.id])
    check(node_ids("online") == list(range(len(present))),
          f"online nodes are 0-{len(present) - 1}",
          f"online: {read(NODE_SYSFS + '/online')}")
    mem = sorted(kid[n] for n in t.memory_nodes())
    check(node_ids("has_memory") == mem,
          f"nodes with memory are {topology.format_cpulist(mem)}",
          f"has_memory: {read(NODE_SYSFS + '/has_memory')}")
    for node in present:
        name = f"node {node.id}" + (f" (guest node {kid[node.id]})"
                                    if kid[node.id] != node.id else "")
        base = os.path.join(NODE_SYSFS, f"node{kid[node.id]}")
        text = read(base + "/cpulist")
        cpus = topology.parse_cpulist(text) if text else []
        check(cpus == node.cpus, f"{name} CPUs are "
              f"{topology.format_cpulist(node.cpus) or 'none'}",
              f"cpulist: '{text}'")
        mib = mem_total_mib(kid[node.id])
        lo = node.mem_mib * (1 - MEM_TOLERANCE)
        check(lo <= mib <= node.mem_mib,
              f"{name} MemTotal {mib:.0f} MiB within "
              f"{MEM_TOLERANCE:.0%} below {node.mem_mib} MiB")
        # nodeN/distance lists the distances to the online nodes, in order.
        want = [t.distance(node.id, b.id) for b in present]
        got = [int(v) for v in read(base + "/distance").split()]
        check(got == want, f"{name} distances are {want}", f"got {got}")


def best_initiators(t, target):
    """The initiators the kernel calls best for a target: best latency and
    best bandwidth at once (drivers/acpi/numa/hmat.c)."""
    rows = [h for h in t.hmat if h.target == target]
    if not rows:
        return None
    lat = min(h.latency for h in rows)
    bw = max(bandwidth_mib(h.bandwidth) for h in rows)
    best = [h for h in rows if h.latency == lat and
            bandwidth_mib(h.bandwidth) == bw]
    return best


def bandwidth_mib(text):
    scale = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
    if text[-1] in scale:
        return int(float(text[:-1]) * scale[text[-1]])
    return int(text) // (1024 * 1024)


def check_hmat(t):
    for node in t.nodes:
        if not node.mem_mib:
            continue
        best = best_initiators(t, node.id)
        if best is None:
            continue
        base = os.path.join(NODE_SYSFS, f"node{node.id}", "access0", "initiators")
        if not os.path.isdir(base):
            check(False, f"node {node.id} has HMAT access0 attributes",
                  f"{base} missing")
            continue
        want = sorted(h.initiator for h in best)
        got = sorted(int(e[4:]) for e in os.listdir(base) if e.startswith("node"))
        check(got == want, f"node {node.id} best initiators are {want}", f"got {got}")
        check(int(read(base + "/read_latency")) == best[0].latency,
              f"node {node.id} read_latency is {best[0].latency} ns",
              f"got {read(base + '/read_latency')}")
        bw = bandwidth_mib(best[0].bandwidth)
        check(int(read(base + "/read_bandwidth")) == bw,
              f"node {node.id} read_bandwidth is {bw} MiB/s",
              f"got {read(base + '/read_bandwidth')}")


def main():
    print("TAP version 13", flush=True)
    path = os.environ.get("NUMA_MATRIX_TOPOLOGY_FILE")
    if not path:
        print("1..0 # SKIP not in a numa-matrix guest: no topology file to "
              "compare with (NUMA_MATRIX_TOPOLOGY_FILE unset)")
        return 0
    t = topology.load(path)
    if os.environ.get("NUMA_MATRIX_CLOCK") == "icount":
        t = t.single_cpu()
    print(f"# {t.name}: {t.summary()}")
    check_nodes(t)
    check_hmat(t)
    print(f"1..{len(results)}")
    failed = 0
    for i, (ok, name, diag) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok:
            failed += 1
            if diag:
                print(f"# {diag}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
