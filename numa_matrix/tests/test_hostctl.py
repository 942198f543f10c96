#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of the host side of a guest's control channel and of
QEMU's monitor (QMP) client, against a stand-in monitor on a unix socket
that answers as QEMU 7.2 does: a greeting, qmp_capabilities, events in
between, errors as {"error": {"class", "desc"}}."""

import json
import os
import socket
import sys
import tempfile
import threading
import unittest
import unittest.mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import hostctl, topology  # noqa: E402

GREETING = {"QMP": {"version": {"qemu": {"major": 7, "minor": 2, "micro": 22}},
                    "capabilities": ["oob"]}}


class FakeMonitor:
    """Serves one connection: the greeting, then one reply per command
    from ANSWERS ({command: reply dict, or a function of the arguments}),
    an event before each reply when EVENTS is set. Keeps the commands."""

    def __init__(self, path, answers, events=False, close_after=None):
        self.path, self.answers, self.events = path, answers, events
        self.close_after = close_after
        self.commands = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(1)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        try:
            conn, _ = self.server.accept()
        except OSError:
            return                  # stopped before anyone connected
        with conn, conn.makefile("rwb") as f:
            f.write(json.dumps(GREETING).encode() + b"\n")
            f.flush()
            for line in f:
                msg = json.loads(line)
                self.commands.append((msg["execute"], msg.get("arguments", {})))
                if self.close_after and len(self.commands) >= self.close_after:
                    return
                answer = self.answers.get(msg["execute"],
                                          {"error": {"class": "CommandNotFound",
                                                     "desc": "no such command"}})
                if callable(answer):
                    answer = answer(msg.get("arguments", {}))
                if self.events:
                    f.write(b'{"event": "RTC_CHANGE", "data": {}}\n')
                f.write(json.dumps(answer).encode() + b"\n")
                f.flush()

    def stop(self):
        self.server.close()


class QmpClient(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "qmp.sock")
        self.notes = []

    def tearDown(self):
        self.tmp.cleanup()

    def client(self, answers, **kw):
        self.monitor = FakeMonitor(self.path, answers, **kw)
        self.addCleanup(self.monitor.stop)
        qmp = hostctl.Qmp(self.path, self.notes.append)
        self.addCleanup(qmp.close)
        return qmp

    def test_not_up_yet_is_not_an_error(self):
        qmp = hostctl.Qmp(self.path)
        self.assertFalse(qmp.connect())
        with self.assertRaisesRegex(OSError, "not up yet"):
            qmp.call("query-status")

    def test_negotiates_then_calls_skipping_events(self):
        qmp = self.client({"qmp_capabilities": {"return": {}},
                           "query-status": {"return": {"status": "running"}}},
                          events=True)
        self.assertTrue(qmp.connect())
        self.assertEqual(qmp.call("query-status"),
                         (True, {"status": "running"}))
        self.assertEqual([c for c, _ in self.monitor.commands],
                         ["qmp_capabilities", "query-status"])
        self.assertIn("QMP event RTC_CHANGE", self.notes)
        qmp.close()

    def test_errors_are_returned_with_their_description(self):
        qmp = self.client({"qmp_capabilities": {"return": {}}})
        self.assertEqual(qmp.call("device_add", driver="x"),
                         (False, "no such command"))
        self.assertEqual(self.monitor.commands[-1],
                         ("device_add", {"driver": "x"}))

    def test_refused_negotiation_and_a_closed_monitor_are_oserrors(self):
        qmp = self.client({})
        with self.assertRaisesRegex(OSError, "qmp_capabilities: no such"):
            qmp.connect()

    def test_monitor_gone_mid_call(self):
        qmp = self.client({"qmp_capabilities": {"return": {}}}, close_after=2)
        qmp.connect()
        with self.assertRaisesRegex(OSError, "closed"):
            qmp.call("query-status")


class HotplugThroughQmp(unittest.TestCase):
    """The guest's requests, served through the monitor."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        path = os.path.join(self.tmp.name, "qmp.sock")
        self.monitor = FakeMonitor(path, {
            "qmp_capabilities": {"return": {}},
            "object-add": {"return": {}},
            "device_add": {"return": {}},
            "query-hotpluggable-cpus": {"return": [
                {"type": "qemu64-x86_64-cpu", "vcpus-count": 1,
                 "props": {"node-id": 1, "socket-id": 3, "core-id": 0,
                           "thread-id": 0}},
                {"type": "qemu64-x86_64-cpu", "vcpus-count": 1,
                 "props": {"node-id": 0, "socket-id": 2, "core-id": 0,
                           "thread-id": 0}},
                {"type": "qemu64-x86_64-cpu", "vcpus-count": 1,
                 "qom-path": "/machine/unattached/device[0]",
                 "props": {"node-id": 0, "socket-id": 0, "core-id": 0,
                           "thread-id": 0}}]}})
        self.addCleanup(self.monitor.stop)
        topo = topology.parse("description x\nnode 0 cpus=0 mem=512M\n"
                              "node 1 cpus=1 mem=512M\n"
                              "hotplug slots=2 maxmem=2G maxcpus=4\n")
        notes = []
        self.ctl = hostctl.HostControl(self.tmp.name, topo,
                                       hostctl.Qmp(path, notes.append),
                                       notes.append)

    def tearDown(self):
        self.ctl.close()
        self.tmp.cleanup()

    def test_add_memory(self):
        self.assertEqual(self.ctl.handle("add-memory 1 256M"), "ok dimm0")
        self.assertEqual(self.monitor.commands[1:], [
            ("object-add", {"qom-type": "memory-backend-ram", "id": "hpmem0",
                            "size": 256 << 20}),
            ("device_add", {"driver": "pc-dimm", "id": "dimm0",
                            "memdev": "hpmem0", "node": 1})])
        self.assertEqual(self.ctl.handle("add-memory 0 100M"),
                         "error size 100M: a multiple of 128M (a memory block)")
        self.assertEqual(self.ctl.handle("add-memory 0 2G"),
                         "error 2G does not fit: 768M left below maxmem")

    def test_add_cpu_takes_the_lowest_free_slot_of_the_node(self):
        self.assertEqual(self.ctl.handle("add-cpu 0"),
                         "ok core-id=0 node-id=0 socket-id=2 thread-id=0")
        self.assertEqual(self.monitor.commands[-1][1]["socket-id"], 2)

    def test_unknown_request(self):
        self.assertTrue(self.ctl.handle("reboot").startswith(
            "error unknown request 'reboot'"))


class VcpuPinning(unittest.TestCase):
    """KVM on a NUMA host: each vCPU thread on its guest node's host node."""

    CPUS = [{"thread-id": 101, "props": {"node-id": 0}},
            {"thread-id": 102, "props": {"node-id": 1}},
            {"thread-id": 103, "props": {}}]

    def test_threads_follow_their_node(self):
        host = {0: {0, 1}, 1: {2, 3}}
        self.assertEqual(hostctl.vcpu_affinity(self.CPUS, {0: 1, 1: 0},
                                               host.get),
                         {101: {2, 3}, 102: {0, 1}})

    def test_pinned_through_the_monitor_once_it_answers(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "qmp.sock")
            notes, pinned = [], {}
            qmp = hostctl.Qmp(path, notes.append)
            binding = hostctl.Binding(qmp, {0: 0, 1: 1}, notes.append)
            binding.poll()                  # QEMU has no socket yet
            self.assertFalse(binding.done)
            monitor = FakeMonitor(path, {"qmp_capabilities": {"return": {}},
                                         "query-cpus-fast": {"return": self.CPUS}})
            self.addCleanup(monitor.stop)
            with unittest.mock.patch.object(hostctl, "host_node_cpus",
                                            {0: {0, 1}, 1: {2, 3}}.get), \
                    unittest.mock.patch.object(hostctl.os, "sched_setaffinity",
                                               pinned.__setitem__):
                binding.poll()
                binding.poll()              # once only
            qmp.close()
        self.assertTrue(binding.done)
        self.assertEqual(pinned, {101: {0, 1}, 102: {2, 3}})
        self.assertEqual([c for c, _ in monitor.commands],
                         ["qmp_capabilities", "query-cpus-fast"])
        self.assertIn("vCPU thread 101 pinned to host CPUs [0, 1]", notes)


if __name__ == "__main__":
    unittest.main(verbosity=2)
