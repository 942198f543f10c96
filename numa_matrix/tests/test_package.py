#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host unit tests of the numa_matrix package itself: one cache root for
every program, and every program an entry point into the package rather
than a loader of another script."""

import ast
import json
import os
import re
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
import numa_matrix  # noqa: E402

ENTRY_POINTS = (numa_matrix.BUILD_KERNEL, numa_matrix.RUN_GUEST,
                numa_matrix.MATRIX, numa_matrix.SLURM_SUBMIT)


class CacheRoot(unittest.TestCase):
    def test_environment_wins(self):
        with mock.patch.dict(os.environ, {"NUMA_MATRIX_CACHE": "rel/cache",
                                          "XDG_CACHE_HOME": "/x"}):
            self.assertEqual(numa_matrix.cache_root(),
                             os.path.join(os.getcwd(), "rel/cache"))

    def test_xdg_then_home(self):
        env = {k: v for k, v in os.environ.items()
               if k not in ("NUMA_MATRIX_CACHE", "XDG_CACHE_HOME")}
        with mock.patch.dict(os.environ, env | {"XDG_CACHE_HOME": "/x"},
                             clear=True):
            self.assertEqual(numa_matrix.cache_root(), "/x/numa-matrix")
        with mock.patch.dict(os.environ, env | {"HOME": "/h"}, clear=True):
            self.assertEqual(numa_matrix.cache_root(), "/h/.cache/numa-matrix")


class EntryPoints(unittest.TestCase):
    def test_thin_and_executable(self):
        for path in ENTRY_POINTS:
            self.assertTrue(os.access(path, os.X_OK), path)
            with open(path) as f:
                text = f.read()
            self.assertRegex(text, r"from numa_matrix import \w+", path)
            self.assertLess(len(text.splitlines()), 15, path)

    def test_no_script_loads_another_by_path(self):
        scripts = []
        for folder in ("kernel-series", "kernel-series/mutants",
                       "qemu-topologies", "qemu-topologies/tests", "results",
                       "results/tests", "numa_matrix", "numa_matrix/tests"):
            d = os.path.join(numa_matrix.TOP, folder)
            scripts += [os.path.join(d, f) for f in os.listdir(d)
                        if os.path.isfile(os.path.join(d, f))
                        and os.path.join(d, f) != os.path.abspath(__file__)]
        for path in scripts:
            with open(path, errors="replace") as f:
                first = f.readline()
                text = first + f.read()
            if "python" not in first and not path.endswith(".py"):
                continue
            self.assertNotRegex(text, r"SourceFileLoader|exec_module|"
                                r"runpy\.|exec\(open", path)
            # Only the package's top folder goes on sys.path.
            for m in re.finditer(r"^sys\.path\.insert\(0, (.*)", text, re.M):
                self.assertIn("dirname(os.path.dirname(", m.group(1), path)


def package_modules():
    """{module name: its syntax tree} of every module of the package."""
    d = os.path.join(numa_matrix.TOP, "numa_matrix")
    out = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".py"):
            with open(os.path.join(d, f)) as src:
                out[f[:-3]] = ast.parse(src.read(), f)
    return out


def imports(tree, names):
    """The modules of the package a module imports, however it says so:
    from . import x, from .x import y, from numa_matrix import x."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level == 0 and not base.startswith("numa_matrix"):
                continue
            base = base.removeprefix("numa_matrix").lstrip(".")
            if base:
                found.add(base.split(".")[0])
            else:
                found |= {a.name for a in node.names if a.name in names}
    return found & set(names)


class Shape(unittest.TestCase):
    """The package's shape (docs/architecture.md): modules import each
    other one way only, and no module below the command line sees argparse."""

    # Where a command line is parsed: these functions, and cli.py whole.
    COMMAND_LINES = {"guest": {"main", "request"}, "kernels": {"main"},
                     "selftests": {"main", "guest_main"},
                     "slurm": {"main"}, "mutants": {"main"}}

    def test_no_import_cycle(self):
        mods = package_modules()
        graph = {m: imports(t, mods) - {m} for m, t in mods.items()}
        state = {}

        def visit(m, path):
            if state.get(m) == "done":
                return
            self.assertNotEqual(state.get(m), "open",
                                "import cycle: " + " -> ".join(path + [m]))
            state[m] = "open"
            for n in sorted(graph[m]):
                visit(n, path + [m])
            state[m] = "done"

        for m in sorted(graph):
            visit(m, [])

    def test_a_planted_cycle_is_found(self):
        # The check above can fail: a graph with a cycle in it.
        trees = {"a": ast.parse("from . import b"),
                 "b": ast.parse("from .c import x"),
                 "c": ast.parse("from numa_matrix import a")}
        self.assertEqual(imports(trees["c"], trees), {"a"})
        self.assertEqual(imports(trees["b"], trees), {"c"})

    def test_argparse_only_at_the_command_line(self):
        for name, tree in package_modules().items():
            if name == "cli":
                continue
            allowed = self.COMMAND_LINES.get(name, set())
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.Lambda)) and \
                        getattr(node, "name", None) not in allowed:
                    for arg in node.args.args:
                        self.assertNotIn(arg.arg, ("args", "namespace"),
                                         f"{name}.{getattr(node, 'name', '?')}"
                                         " takes a parsed command line")
            if not allowed:
                self.assertNotIn("argparse", {n.name for node in ast.walk(tree)
                                              if isinstance(node, ast.Import)
                                              for n in node.names}, name)


class UnitTestsFound(unittest.TestCase):
    """The unit tests are found by a glob when Meson configures: a file
    added since is not run until the build dir is reconfigured, which
    ./numa-matrix setup does when the set of files changes."""

    def test_every_test_file_is_a_meson_test(self):
        build = os.environ.get("NUMA_MATRIX_MESON_BUILD")
        if not build:
            self.skipTest("not run by meson test: no NUMA_MATRIX_MESON_BUILD")
        with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
            registered = {os.path.realpath(t["cmd"][-1])
                          for t in json.load(f) if t["cmd"]}
        here = os.path.dirname(os.path.abspath(__file__))
        on_disk = {os.path.realpath(os.path.join(here, f))
                   for f in os.listdir(here)
                   if re.fullmatch(r"test_\w+\.py", f)}
        self.assertEqual(on_disk - registered, set(),
                         "reconfigure: ./numa-matrix setup")


if __name__ == "__main__":
    unittest.main(verbosity=2)
