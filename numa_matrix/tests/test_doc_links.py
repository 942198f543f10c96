#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Every relative link of the landing page, the reference pages and the
results catalogue resolves: README.md, docs/*.md and the hand-written pages
of results/ (README.md, notes.md; a run's report.md is written by the
tooling and not checked here). A link names a file or folder of the
checkout, never one outside it, and a #fragment names a heading of the
page it points at (GitHub's anchors)."""

import os
import re
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# [text](target "title") and [text]: target, outside code.
INLINE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def outside_fences(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    out = []
    fence = None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        out.append((n, line))
    return out


def anchors(text: str) -> set[str]:
    """GitHub's anchors for the headings of a page: lower case, punctuation
    but '-' and '_' dropped, spaces to '-', a repeat suffixed -1, -2..."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in outside_fences(text):
        m = HEADING.match(line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2))
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(text: str) -> list[tuple[int, str]]:
    out = []
    for n, line in outside_fences(text):
        # A path in backticks is not a link.
        line = re.sub(r"(`+)(.+?)\1", "", line)
        out += [(n, m.group(1)) for m in INLINE.finditer(line)]
        m = REFDEF.match(line)
        if m:
            out.append((n, m.group(1)))
    return out


def broken_links(path: str, top: str = TOP) -> list[str]:
    """One line per link of the page at path that does not resolve."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    here = os.path.dirname(path)
    rel = os.path.relpath(path, top)
    bad = []
    for n, target in links(text):
        if not target or SCHEME.match(target) or target.startswith("//"):
            continue
        target_path, _, fragment = target.partition("#")
        if target_path.startswith("/"):
            bad.append(f"{rel}:{n}: {target}: an absolute path, not one "
                       f"relative to the page")
            continue
        dest = os.path.normpath(os.path.join(here, target_path)) \
            if target_path else path
        if os.path.relpath(dest, top).startswith(os.pardir):
            bad.append(f"{rel}:{n}: {target}: outside the repository")
            continue
        if not os.path.exists(dest):
            bad.append(f"{rel}:{n}: {target}: no such file")
            continue
        if fragment and dest.endswith(".md") and os.path.isfile(dest):
            with open(dest, encoding="utf-8") as f:
                if fragment not in anchors(f.read()):
                    bad.append(f"{rel}:{n}: {target}: no heading "
                               f"#{fragment} in {os.path.relpath(dest, top)}")
    return bad


def checked_pages(top: str = TOP) -> list[str]:
    pages = [os.path.join(top, "README.md")]
    for folder in ("docs", "results"):
        for d, dirs, files in os.walk(os.path.join(top, folder)):
            dirs.sort()
            pages += [os.path.join(d, f) for f in sorted(files)
                      if f.endswith(".md") and
                      (folder == "docs" or f in ("README.md", "notes.md"))]
    return pages


class Checker(unittest.TestCase):
    """The checker finds what it must: a planted broken link of each kind."""

    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.top = self.tmp.name
        os.makedirs(os.path.join(self.top, "docs"))
        self.page = os.path.join(self.top, "docs", "page.md")
        with open(os.path.join(self.top, "docs", "other.md"), "w") as f:
            f.write("# Other\n\n## The host tooling: `numa_matrix/`\n\n"
                    "## Twice\n\n## Twice\n\n```\n# not a heading\n```\n")

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def check(self, body: str) -> list[str]:
        with open(self.page, "w") as f:
            f.write(body)
        return broken_links(self.page, self.top)

    def test_good_links_pass(self) -> None:
        self.assertEqual(self.check(
            "[o](other.md) [o](./other.md#other) [up](../docs/)\n"
            "[a](other.md#the-host-tooling-numa_matrix) [b](other.md#twice-1)\n"
            "[w](https://lwn.net/Articles/548108/) [self](#a-page)\n"
            "# A page\n`[not](a-link.md)`\n```\n[nor](this.md)\n```\n"
            "[ref]: other.md\n"), [])

    def test_missing_file(self) -> None:
        self.assertEqual(len(self.check("see [x](missing.md)\n")), 1)

    def test_missing_reference_target(self) -> None:
        self.assertEqual(len(self.check("[x]: ../results/gone/\n")), 1)

    def test_missing_heading(self) -> None:
        bad = self.check("[x](other.md#twice-2) [y](other.md#not-a-heading)\n")
        self.assertEqual(len(bad), 2, bad)

    def test_outside_the_repository(self) -> None:
        open(os.path.join(os.path.dirname(self.top), "x.md"), "a").close()
        self.assertEqual(len(self.check("[x](../../x.md)\n")), 1)
        self.assertEqual(len(self.check("[x](/etc/passwd)\n")), 1)


class Repository(unittest.TestCase):
    def test_pages_exist(self) -> None:
        pages = checked_pages()
        self.assertIn(os.path.join(TOP, "README.md"), pages)
        self.assertIn(os.path.join(TOP, "results", "README.md"), pages)
        self.assertGreater(len([p for p in pages if "/docs/" in p]), 5)

    def test_every_link_resolves(self) -> None:
        bad = []
        for page in checked_pages():
            bad += broken_links(page)
        self.assertEqual(bad, [], "\n" + "\n".join(bad))


if __name__ == "__main__":
    unittest.main(verbosity=2)
