# SPDX-License-Identifier: GPL-2.0
"""The host side of a guest's control channel.

A command in the guest writes one request per line to the virtio port
nm.ctl (/dev/virtio-ports/nm.ctl, or qemu-topologies/guest-hostctl) and reads
one reply line: "ok ..." or "error ...". run-guest serves the requests
through QEMU's own monitor (QMP) while the guest runs. Requests:

  add-memory NODE SIZE   hot-add a pc-dimm of SIZE (e.g. 128M) to NODE
  query-memory           the hot-added DIMMs, as QMP's JSON on one line
  add-cpu NODE           hot-add a vCPU into a free slot of NODE (the
                         topology's spare vCPUs, Topology.spare_cpus());
                         the guest sees a new, offline cpuN to online
  query-cpus             QMP's query-hotpluggable-cpus, JSON on one line

Every request and reply is kept in the run directory's hostctl.log.
"""

import json
import os
import socket
import time

from . import topology


class Qmp:
    """A client of QEMU's monitor (QMP) on a unix socket that QEMU serves
    (-qmp unix:PATH,server=on,wait=off): connect once QEMU has made the
    socket, read its greeting, negotiate, then one command at a time.
    Events that arrive before a command's reply are noted and skipped."""

    def __init__(self, path, note=None):
        self.path = path
        self.note = note or (lambda text: None)
        self.sock = None
        self.buf = b""

    def qemu_args(self):
        return ["-qmp", f"unix:{self.path},server=on,wait=off"]

    def connect(self):
        """True once connected and negotiated; False while QEMU has not
        made its socket yet. OSError if QEMU closes it meanwhile."""
        if self.sock is not None:
            return True
        sock = connect_unix(self.path)
        if sock is None:
            return False
        sock.settimeout(30)
        self.sock = sock
        try:
            self.line()                     # the greeting
            ok, err = self.call("qmp_capabilities")
            if not ok:
                raise OSError(f"qmp_capabilities: {err}")
        except (OSError, ValueError):
            self.close()
            raise
        return True

    def line(self):
        assert self.sock is not None
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise OSError("QMP connection closed")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, execute, **arguments):
        """Run a QMP command; returns (True, value) or (False, message)."""
        if self.sock is None and not self.connect():
            raise OSError("QEMU's monitor is not up yet")
        assert self.sock is not None
        msg = {"execute": execute}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self.line()
            if "event" in reply:
                self.note(f"QMP event {reply['event']}")
                continue
            if "error" in reply:
                return False, reply["error"].get("desc", str(reply["error"]))
            return True, reply.get("return")

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None


def connect_unix(path):
    """A connected unix socket, or None when nothing listens at PATH yet."""
    if not os.path.exists(path):
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        s.close()
        return None
    return s


def pin_vcpus(qmp, binding, note, node_cpus=None, setaffinity=None):
    """KVM on a NUMA host: pin each vCPU thread to the host CPUs of the host
    node its guest node is bound to (guest.host_binding()), so that a
    vCPU's accesses to its own node's memory stay local on the hardware."""
    node_cpus = node_cpus or host_node_cpus
    setaffinity = setaffinity or os.sched_setaffinity
    ok, cpus = qmp.call("query-cpus-fast")
    if not ok:
        note(f"cannot pin vCPUs: query-cpus-fast: {cpus}")
        return 0
    pinned = 0
    for tid, host_cpus in vcpu_affinity(cpus, binding, node_cpus).items():
        try:
            setaffinity(tid, host_cpus)
            note(f"vCPU thread {tid} pinned to host CPUs {sorted(host_cpus)}")
            pinned += 1
        except OSError as e:
            note(f"cannot pin vCPU thread {tid}: {e}")
    return pinned


def transcript(path):
    """A function that appends a timestamped line to PATH (hostctl.log)."""
    def note(text):
        with open(path, "a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {text}\n")
    return note


class Binding:
    """While a KVM guest runs on a NUMA host: pins its vCPUs once QMP
    answers (its memory is bound on QEMU's command line already)."""

    def __init__(self, qmp, binding, note):
        self.qmp, self.binding, self.note = qmp, binding, note
        self.done = not binding

    def poll(self):
        if self.done:
            return
        try:
            if not self.qmp.connect():
                return
            pin_vcpus(self.qmp, self.binding, self.note)
        except OSError as e:
            self.note(f"cannot pin vCPUs: {e}")
        self.done = True


class HostControl:
    """The guest's requests on its control port, served through QMP."""

    def __init__(self, sockdir, topo, qmp, note):
        self.ctl_path = os.path.join(sockdir, "ctl.sock")
        self.topo = topo
        self.note = note
        self.qmp = qmp
        self.ctl = None
        self.ctl_buf = b""
        self.dimms = 0
        self.added_mib = 0
        self.cpus_added = 0

    def qemu_args(self):
        return ["-chardev", f"socket,id=ctl,path={self.ctl_path},server=on,wait=off",
                "-device", "virtserialport,chardev=ctl,name=nm.ctl"]

    def connect(self):
        if self.ctl is None:
            self.ctl = connect_unix(self.ctl_path)
            if self.ctl:
                self.ctl.setblocking(False)
        self.qmp.connect()

    def qmp_call(self, execute, **arguments):
        return self.qmp.call(execute, **arguments)

    def poll(self):
        """Serve whatever requests the guest has sent; never blocks long."""
        try:
            self.connect()
        except OSError as e:
            self.note(f"cannot reach QMP: {e}")
            return
        if self.ctl is None:
            return
        try:
            data = self.ctl.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.ctl.close()
            self.ctl = None
            return
        self.ctl_buf += data
        while b"\n" in self.ctl_buf:
            line, self.ctl_buf = self.ctl_buf.split(b"\n", 1)
            request = line.decode(errors="replace").strip()
            if not request:
                continue
            reply = self.handle(request)
            self.note(f"guest: {request} -> {reply}")
            self.ctl.setblocking(True)
            self.ctl.sendall(reply.encode() + b"\n")
            self.ctl.setblocking(False)

    def handle(self, request):
        words = request.split()
        try:
            if words[0] == "add-memory" and len(words) == 3:
                return self.add_memory(words[1], words[2])
            if words == ["query-memory"]:
                ok, value = self.qmp_call("query-memory-devices")
                return ("ok " if ok else "error ") + json.dumps(value)
            if words[0] == "add-cpu" and len(words) == 2:
                return self.add_cpu(words[1])
            if words == ["query-cpus"]:
                ok, value = self.qmp_call("query-hotpluggable-cpus")
                return ("ok " if ok else "error ") + json.dumps(value)
        except OSError as e:
            return f"error QMP failed: {e}"
        return (f"error unknown request '{request}': add-memory NODE SIZE, "
                "query-memory, add-cpu NODE, query-cpus")

    def add_cpu(self, node_text):
        if not node_text.isdigit() or int(node_text) >= len(self.topo.nodes):
            return f"error no node {node_text} (nodes 0-{len(self.topo.nodes) - 1})"
        node = int(node_text)
        if node not in self.topo.spare_cpus().values():
            return (f"error topology {self.topo.name} has no spare vCPU for node "
                    f"{node} (hotplug maxcpus=, docs/topologies.md)")
        ok, slots = self.qmp_call("query-hotpluggable-cpus")
        if not ok:
            return f"error query-hotpluggable-cpus: {slots}"
        free = [s for s in slots if "qom-path" not in s
                and s["props"].get("node-id") == node]
        if not free:
            return f"error every spare vCPU slot of node {node} is in use"
        # QEMU lists the slots newest first; take the lowest, like a boot would.
        slot = min(free, key=lambda s: sorted(s["props"].items()))
        props = slot["props"]
        ok, err = self.qmp_call("device_add", driver=slot["type"],
                                id=f"hpcpu{self.cpus_added}", **props)
        if not ok:
            return f"error device_add: {err}"
        self.cpus_added += 1
        return "ok " + " ".join(f"{k}={v}" for k, v in sorted(props.items()))

    def add_memory(self, node_text, size_text):
        hp = self.topo.hotplug
        if not hp or not hp.slots:
            return f"error topology {self.topo.name} has no DIMM slots"
        if self.dimms >= hp.slots:
            return f"error all {hp.slots} DIMM slots are used"
        if not node_text.isdigit() or int(node_text) >= len(self.topo.nodes):
            return f"error no node {node_text} (nodes 0-{len(self.topo.nodes) - 1})"
        mib = topology.parse_size(size_text)
        if not mib or mib % 128:
            return f"error size {size_text}: a multiple of 128M (a memory block)"
        room = hp.maxmem_mib - self.topo.mem_mib - self.added_mib
        if mib > room:
            return f"error {size_text} does not fit: {room}M left below maxmem"
        n = self.dimms
        ok, err = self.qmp_call("object-add", **{"qom-type": "memory-backend-ram",
                                                 "id": f"hpmem{n}",
                                                 "size": mib << 20})
        if not ok:
            return f"error object-add: {err}"
        ok, err = self.qmp_call("device_add", driver="pc-dimm", id=f"dimm{n}",
                                memdev=f"hpmem{n}", node=int(node_text))
        if not ok:
            return f"error device_add: {err}"
        self.dimms += 1
        self.added_mib += mib
        return f"ok dimm{n}"

    def close(self):
        if self.ctl:
            self.ctl.close()
        self.qmp.close()


def host_node_cpus(node):
    """The host CPUs of a host NUMA node, from sysfs."""
    with open(f"/sys/devices/system/node/node{node}/cpulist") as f:
        return set(topology.parse_cpulist(f.read().strip()))


def vcpu_affinity(cpus_fast, binding, node_cpus):
    """{vCPU thread id: host CPUs} from QMP query-cpus-fast: a vCPU of guest
    node g runs on the CPUs of host node binding[g]; vCPUs of unbound nodes,
    and host nodes without CPUs, are left alone."""
    out = {}
    for c in cpus_fast:
        g = c.get("props", {}).get("node-id")
        if g not in binding:
            continue
        host = node_cpus(binding[g])
        if host:
            out[c["thread-id"]] = host
    return out
