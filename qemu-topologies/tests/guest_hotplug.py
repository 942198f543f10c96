#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""In a guest: hot-add a DIMM to the last node through run-guest's control
channel and see exactly that node grow; offline and online a vCPU and see
its node's CPU list follow; hot-add a spare vCPU to a node and see it appear
there. Skips, with the reason, where the machine has no free DIMM slot, no
second CPU or no spare vCPU."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import topology  # noqa: E402

PORT = "/dev/virtio-ports/nm.ctl"
NODE = "/sys/devices/system/node"
CPU = "/sys/devices/system/cpu"
DIMM_MIB = 128

results = []


def check(ok, name, diag=None):
    results.append(("ok" if ok else "not ok", name, diag))


def skip(name, reason):
    results.append(("skip", name, reason))


def read(path):
    with open(path) as f:
        return f.read().strip()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def mem_total_kib(t, nid):
    for line in read(f"{node_dir(t, nid)}/meminfo").splitlines():
        if "MemTotal:" in line:
            return int(line.split()[3])
    raise RuntimeError(f"node{nid}/meminfo has no MemTotal")


def node_dir(t, nid):
    """The guest numbers nodes densely, CPU nodes first
    (Topology.kernel_node_ids()): node 8 of a topology may be node1 here."""
    return f"{NODE}/node{t.kernel_node_ids()[nid]}"


def node_cpus(t, nid):
    """The CPUs sysfs lists for node nid, [] for none, None if unreadable."""
    text = read(f"{node_dir(t, nid)}/cpulist")
    return topology.parse_cpulist(text) if text else []


def hostctl(request):
    fd = os.open(PORT, os.O_RDWR)
    try:
        os.write(fd, request.encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            reply += chunk
    finally:
        os.close(fd)
    return reply.decode().strip()


def hot_add_memory(t):
    name = f"hot-added {DIMM_MIB} MiB DIMM"
    if not t.hotplug or not t.hotplug.slots:
        skip(name, f"topology {t.name} has no DIMM slots")
        return
    if not os.path.exists(PORT):
        skip(name, f"{PORT} missing: no host control channel")
        return
    target = t.memory_nodes()[-1]
    before = {n: mem_total_kib(t, n) for n in t.memory_nodes()}
    reply = hostctl(f"add-memory {target} {DIMM_MIB}M")
    check(reply.startswith("ok"), f"host accepted add-memory {target} {DIMM_MIB}M",
          f"reply: {reply}")
    # Blocks come online by themselves (memhp_default_state=online).
    want = before[target] + DIMM_MIB * 1024
    deadline = time.time() + 30
    while mem_total_kib(t, target) != want and time.time() < deadline:
        time.sleep(0.2)
    got = mem_total_kib(t, target)
    check(got == want, f"node {target} MemTotal grew by exactly {DIMM_MIB} MiB",
          f"before {before[target]} kB, after {got} kB")
    others = {n: mem_total_kib(t, n) for n in before if n != target}
    check(all(others[n] == before[n] for n in others),
          "no other node's MemTotal changed",
          f"before {before}, after {others}")
    reply = hostctl(f"add-memory {target} 100M")
    check(reply.startswith("error"), "a DIMM that is not whole memory blocks "
          "is refused with a reason", f"reply: {reply}")


def present_cpus():
    return {int(d[3:]) for d in os.listdir(CPU) if d[3:].isdigit() and d.startswith("cpu")}


def hot_add_cpu(t):
    """A spare vCPU hot-added to node K through QMP appears as a new, present
    CPU of node K. Not onlined: on QEMU 7.2 TCG the guest hangs onlining a
    hot-added vCPU (docs/topologies.md)."""
    name = "hot-added vCPU"
    spare = t.spare_cpus()
    if not spare:
        skip(name, f"topology {t.name} has no spare vCPU (hotplug maxcpus=)")
        return
    if not os.path.exists(PORT):
        skip(name, f"{PORT} missing: no host control channel")
        return
    target = max(spare.values())
    before = present_cpus()
    reply = hostctl(f"add-cpu {target}")
    check(reply.startswith("ok"), f"host accepted add-cpu {target}", f"reply: {reply}")
    deadline = time.time() + 30
    while present_cpus() == before and time.time() < deadline:
        time.sleep(0.2)
    new = sorted(present_cpus() - before)
    check(len(new) == 1, "exactly one new CPU appears",
          f"before {sorted(before)}, new {new}")
    if len(new) != 1:
        return
    cpu = new[0]
    nodes = [d for d in os.listdir(f"{CPU}/cpu{cpu}") if d.startswith("node")]
    want = os.path.basename(node_dir(t, target))
    check(nodes == [want], f"cpu{cpu} belongs to node {target}",
          f"cpu{cpu} links: {nodes}")
    check(read(f"{CPU}/cpu{cpu}/online") == "0", f"cpu{cpu} arrives offline",
          f"online={read(f'{CPU}/cpu{cpu}/online')}")
    used = sum(1 for n in spare.values() if n == target)
    for _ in range(used - 1):
        hostctl(f"add-cpu {target}")
    reply = hostctl(f"add-cpu {target}")
    check(reply.startswith("error"), f"add-cpu {target} beyond its spare slots is "
          "refused with a reason", f"reply: {reply}")


def offline_online_cpu(t):
    name = "vCPU offline and online"
    cpus = [c for n in t.nodes for c in n.cpus]
    victim = cpus[-1] if len(cpus) > 1 else None
    if victim is None or victim == 0:
        skip(name, f"topology {t.name} has one vCPU: nothing to offline")
        return
    nid = next(n.id for n in t.nodes if victim in n.cpus)
    ctl = f"{CPU}/cpu{victim}/online"
    # Listed before, or the check below would pass on the wrong node.
    listed = node_cpus(t, nid)
    check(listed is not None and victim in listed,
          f"cpu{victim} listed in node {nid}'s CPU list",
          f"{node_dir(t, nid)}/cpulist: {listed}")
    write(ctl, "0")
    listed = node_cpus(t, nid)
    check(read(ctl) == "0" and listed is not None and victim not in listed,
          f"cpu{victim} offline and gone from node {nid}'s CPU list",
          f"online={read(ctl)} {node_dir(t, nid)}/cpulist: {listed}")
    write(ctl, "1")
    listed = node_cpus(t, nid)
    check(read(ctl) == "1" and listed is not None and victim in listed,
          f"cpu{victim} back online in node {nid}",
          f"online={read(ctl)} {node_dir(t, nid)}/cpulist: {listed}")


def main():
    print("TAP version 13", flush=True)
    path = os.environ.get("NUMA_MATRIX_TOPOLOGY_FILE")
    if not path:
        print("1..0 # SKIP not in a numa-matrix guest (NUMA_MATRIX_TOPOLOGY_FILE unset)")
        return 0
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root to hot-plug memory and CPUs")
        return 0
    t = topology.load(path)
    if os.environ.get("NUMA_MATRIX_CLOCK") == "icount":
        t = t.single_cpu()
    hot_add_memory(t)
    offline_online_cpu(t)
    hot_add_cpu(t)
    print(f"1..{len(results)}")
    failed = 0
    for i, (res, name, diag) in enumerate(results, 1):
        if res == "skip":
            print(f"ok {i} - {name} # SKIP {diag}")
            continue
        print(f"{res} {i} - {name}")
        if res != "ok":
            failed += 1
            if diag:
                print(f"# {diag}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
