#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of the topology parser: the catalogue, malformed files
(each must be refused with its file, line and fix), and random mutations of
valid files (never a crash, only a TopologyError or a valid topology)."""

import os
import tempfile
import random
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from numa_matrix import QEMU_TOPOLOGIES, topology  # noqa: E402

GOOD = """\
description test machine
node 0 cpus=0-1 mem=512M
node 1 cpus=2 mem=256M
node 2 mem=256M initiator=0
distance 0: 10 20 30
distance 1: 20 10 25
distance 2: 30 25 10
"""


def refuse(test, text, line, *words):
    """The parser must refuse text at line, saying all of words."""
    with test.assertRaises(topology.TopologyError) as cm:
        topology.parse(text, "bad.topo")
    msg = str(cm.exception)
    where = f"bad.topo:{line}" if line else "bad.topo"
    # file[:line]: what is wrong: how to fix it
    test.assertRegex(msg, "^" + re.escape(where) + r": [^:]+: .+")
    for w in words:
        test.assertIn(w, msg)


class Catalogue(unittest.TestCase):
    def test_every_file_parses_and_fits(self):
        paths = topology.catalogue()
        self.assertGreaterEqual(len(paths), 3)
        limits = {"mem_mib": 12 * 1024, "vcpus": 16}
        for p in paths:
            t = topology.load(p)
            topology.check_fits(t, limits)
            self.assertTrue(t.description)

    def test_find_by_name_and_path(self):
        self.assertEqual(topology.find("4node").name, "4node")
        path = os.path.join(QEMU_TOPOLOGIES, "2node.topo")
        self.assertEqual(len(topology.find(path).nodes), 2)
        with self.assertRaises(topology.TopologyError) as cm:
            topology.find("no-such-machine")
        self.assertIn("4node", str(cm.exception))

    def test_names(self):
        # A file of one's own needs no Meson-safe name; a catalogue file does.
        text = "description x\nnode 0 cpus=0 mem=512M\n"
        with tempfile.TemporaryDirectory() as d:
            for name, ok in (("my_box.v2", True), ("My-Box", True),
                             ("bad name", False), ("-x", False)):
                path = os.path.join(d, name + ".topo")
                with open(path, "w") as f:
                    f.write(text)
                with self.subTest(name=name):
                    if ok:
                        self.assertEqual(topology.find(path).name, name)
                    else:
                        with self.assertRaises(topology.TopologyError):
                            topology.find(path)
            with self.assertRaises(topology.TopologyError) as cm:
                topology.find("my_box.v2", directory=d)
            self.assertIn("test setup", str(cm.exception))

    def test_summary_counts_in_words(self):
        self.assertTrue(topology.find("1node").summary().startswith(
            "1 node, 2 vCPUs"))
        t = topology.parse("description x\nnode 0 cpus=0 mem=512M\n")
        self.assertTrue(t.summary().startswith("1 node, 1 vCPU,"))


class Valid(unittest.TestCase):
    def test_good(self):
        t = topology.parse(GOOD)
        self.assertEqual([n.cpus for n in t.nodes], [[0, 1], [2], []])
        self.assertEqual(t.mem_mib, 1024)
        self.assertEqual(t.ncpus, 3)
        self.assertEqual(t.distance(0, 2), 30)
        self.assertEqual(t.memory_nodes(), [0, 1, 2])
        self.assertEqual(t.cpu_nodes(), [0, 1])

    def test_memoryless_cpu_node(self):
        t = topology.parse("description x\nnode 0 cpus=0 mem=512M\nnode 1 cpus=1\n")
        self.assertEqual(t.memory_nodes(), [0])

    def test_default_distances(self):
        t = topology.parse("description x\nnode 0 cpus=0 mem=2G\nnode 1 mem=64M\n")
        self.assertIsNone(t.distances)
        self.assertEqual(t.distance(0, 1), 20)
        self.assertEqual(t.mem_mib, 2048 + 64)

    def test_asymmetric_when_declared(self):
        text = GOOD.replace("distance 2: 30 25 10", "distance 2: 40 25 10")
        t = topology.parse(text + "asymmetric-distances\n")
        self.assertEqual((t.distance(0, 2), t.distance(2, 0)), (30, 40))

    def test_single_cpu(self):
        t = topology.parse(GOOD).single_cpu()
        self.assertEqual([n.cpus for n in t.nodes], [[0], [], []])
        self.assertEqual(t.mem_mib, 1024)

    def test_single_cpu_refuses_memoryless_cpu_node(self):
        t = topology.parse("description x\nnode 0 cpus=0 mem=512M\nnode 1 cpus=1\n")
        with self.assertRaises(topology.TopologyError):
            t.single_cpu()

    def test_hotplug_and_hmat(self):
        t = topology.parse(GOOD + "hotplug slots=2 maxmem=2G maxcpus=4\n"
                           "hmat initiator=0 target=2 latency=200 bandwidth=800M\n")
        self.assertEqual(t.hotplug.slots, 2)
        self.assertEqual(t.hotplug.maxmem_mib, 2048)
        self.assertEqual(t.hmat[0].target, 2)

    def test_spare_cpus_round_robin_over_cpu_nodes(self):
        # GOOD: nodes 0 and 1 have CPUs 0-2, node 2 is CPU-less.
        t = topology.parse(GOOD + "hotplug slots=1 maxmem=2G maxcpus=6\n")
        self.assertEqual(t.spare_cpus(), {3: 0, 4: 1, 5: 0})
        self.assertEqual(topology.parse(GOOD).spare_cpus(), {})

    def test_peak_counts_hot_added_memory_and_cpus(self):
        # GOOD: 1 GiB and 3 vCPUs at boot.
        self.assertEqual(topology.parse(GOOD).peak(), (1024, 3))
        t = topology.parse(GOOD + "hotplug slots=1 maxmem=2G maxcpus=6\n")
        self.assertEqual(t.peak(), (2048, 6))
        t = topology.parse(GOOD + "hotplug slots=1 maxmem=3G\n")
        self.assertEqual(t.peak(), (3072, 3))
        with self.assertRaises(topology.TopologyError):
            topology.check_fits(t, {"mem_mib": 2048, "vcpus": 16})
        topology.check_fits(t, {"mem_mib": 3072, "vcpus": 3})

    def test_cpulist_roundtrip(self):
        for cpus in ([0], [0, 1, 2], [0, 2, 3, 4, 7]):
            text = topology.format_cpulist(cpus)
            self.assertEqual(topology.parse_cpulist(text), cpus)


class Malformed(unittest.TestCase):
    def test_unknown_key(self):
        refuse(self, GOOD + "nodes 3 cpus=3\n", 8, "unknown key 'nodes'")

    def test_unknown_node_key(self):
        refuse(self, "description x\nnode 0 cpus=0 memory=1G\n", 2, "'memory'")

    def test_cpu_in_two_nodes(self):
        refuse(self, GOOD.replace("node 1 cpus=2", "node 1 cpus=1-2"), 3,
               "CPU 1", "node 0", "node 1")

    def test_cpu_gap(self):
        refuse(self, "description x\nnode 0 cpus=0,2 mem=1G\n", 2, "CPUs 1")

    def test_bad_size(self):
        refuse(self, "description x\nnode 0 cpus=0 mem=512\n", 2, "mem '512'")
        refuse(self, "description x\nnode 0 cpus=0 mem=1T\n", 2, "mem '1T'")

    def test_empty_node(self):
        refuse(self, "description x\nnode 0 cpus=0 mem=1G\nnode 1\n", 3,
               "neither cpus nor mem", "node 1 empty")
        refuse(self, "description x\nnode 0 cpus=0 mem=1G\n"
               "node 1 empty mem=1G\n", 3, "empty but has mem=")

    def test_sparse_node_ids(self):
        t = topology.parse("description x\nnode 0 cpus=0 mem=1G\n"
                           "node 1 empty\nnode 2 cpus=1 mem=1G\n")
        self.assertEqual([n.empty for n in t.nodes], [False, True, False])
        self.assertEqual(t.memory_nodes(), [0, 2])
        self.assertEqual(t.cpu_nodes(), [0, 2])
        s = t.single_cpu()
        self.assertEqual([(n.cpus, n.mem_mib, n.empty) for n in s.nodes],
                         [([0], 1024, False), ([], 0, True), ([], 1024, False)])

    def test_node_order(self):
        refuse(self, "description x\nnode 1 cpus=0 mem=1G\n", 2, "out of order")

    def test_missing_distance_row(self):
        text = "\n".join(l for l in GOOD.splitlines()
                         if not l.startswith("distance 1")) + "\n"
        refuse(self, text, None, "no distance row for node 1")

    def test_short_distance_row(self):
        refuse(self, GOOD.replace("distance 1: 20 10 25", "distance 1: 20 10"),
               6, "2 values")

    def test_asymmetric(self):
        refuse(self, GOOD.replace("distance 2: 30 25 10", "distance 2: 31 25 10"),
               7, "0->2 is 30 but 2->0 is 31", "asymmetric-distances")

    def test_distance_under_ten(self):
        text = GOOD.replace("10 20 30", "10 9 30").replace("20 10 25", "9 10 25")
        refuse(self, text, 5, "0->1 is 9")

    def test_self_distance(self):
        refuse(self, GOOD.replace("distance 1: 20 10 25", "distance 1: 20 11 25"),
               6, "1->1 is 11", "itself is 10")

    def test_no_description(self):
        refuse(self, "node 0 cpus=0 mem=1G\n", None, "no description")

    def test_no_memory(self):
        refuse(self, "description x\nnode 0 cpus=0\n", 2, "no node has memory")

    def test_bad_initiator(self):
        refuse(self, GOOD.replace("initiator=0", "initiator=2"), 4,
               "initiator 2 of node 2")

    def test_hmat_needs_initiators(self):
        text = GOOD.replace(" initiator=0", "") + \
            "hmat initiator=0 target=1 latency=20 bandwidth=1G\n"
        refuse(self, text, 4, "CPU-less node 2 has no initiator")

    def test_maxmem_too_small(self):
        refuse(self, GOOD + "hotplug slots=1 maxmem=1G\n", 8, "maxmem 1G")

    def test_too_big_for_host(self):
        t = topology.parse("description x\nnode 0 cpus=0-3 mem=8G\n", "big.topo")
        with self.assertRaises(topology.TopologyError) as cm:
            topology.check_fits(t, {"mem_mib": 4096, "vcpus": 16})
        self.assertIn("8G", str(cm.exception))
        with self.assertRaises(topology.TopologyError):
            topology.check_fits(t, {"mem_mib": 16384, "vcpus": 2})

    def test_unreadable(self):
        with self.assertRaises(topology.TopologyError) as cm:
            topology.load("/nonexistent/x.topo")
        self.assertIn("/nonexistent/x.topo", str(cm.exception))


class Mutations(unittest.TestCase):
    """Random edits of every catalogue file: a clean error or a valid machine."""

    def mutate(self, rng, text):
        lines = text.splitlines()
        i = rng.randrange(len(lines))
        op = rng.randrange(5)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif op == 2 and lines[i]:
            j = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:j] + rng.choice("0123456789=:-, xMG#") + \
                lines[i][j + 1:]
        elif op == 3:
            words = lines[i].split(" ")
            rng.shuffle(words)
            lines[i] = " ".join(words)
        else:
            lines[i] = lines[i].replace("1", str(rng.randrange(300)), 1)
        return "\n".join(lines) + "\n"

    def test_random_mutations(self):
        rng = random.Random(20130911)
        refused = accepted = 0
        for path in topology.catalogue():
            with open(path) as f:
                original = f.read()
            for _ in range(300):
                text = original
                for _ in range(rng.randrange(1, 4)):
                    text = self.mutate(rng, text)
                try:
                    t = topology.parse(text, "m.topo")
                except topology.TopologyError as e:
                    self.assertRegex(str(e), r"^m\.topo(:\d+)?: .+: .+")
                    refused += 1
                    continue
                accepted += 1
                # Whatever is accepted must be self-consistent.
                self.assertEqual(sorted(c for n in t.nodes for c in n.cpus),
                                 list(range(t.ncpus)))
                self.assertTrue(t.memory_nodes())
        self.assertGreater(refused, 0)
        self.assertGreater(accepted, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
