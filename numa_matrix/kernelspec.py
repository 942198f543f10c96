# SPDX-License-Identifier: GPL-2.0
"""Kernel specs: one way to name a kernel, everywhere (docs/kernel-specs.md).

  [LABEL=]BASE[+SERIES_DIR[@K]]

BASE is one of
  baseline | patched | series-K       linux-source-6.1 and its series
  linux-source-X.Y[@VARIANT]          a Debian source package (default
                                      variant baseline), with the series
                                      of kernel-series/linux-source-X.Y/
  PATH.tar[.xz|.gz|.bz2|.zst]         a kernel source tarball
  GITDIR@REV                          one commit of a git work tree
  GITDIR@A..B                         A, then each commit of A..B, oldest
                                      first: one kernel per commit
  PATH                                a ready bzImage (its .config beside it)

+SERIES_DIR puts the patches of a directory holding a `series` file (quilt
format) on top of BASE, the first K of them with @K. LABEL names the
kernel's column in reports (default: derived from the spec).

This module parses specs and works out everything about a kernel that can
be known without building it (plan()); kernels.py builds. Nothing here
writes anywhere, and nothing ever writes into a user's git repository:
only read-only git commands (rev-parse, rev-list, show, merge-base) run
there.
"""

import functools
import hashlib
import json
import os
import re
import subprocess

from . import KERNEL_SERIES, cache_root
from .errors import UsageError
from .types import KernelPlan, Source
from .util import atomic_write

DEFAULT_PACKAGE = "linux-source-6.1"
CONFIG_DIR = os.path.join(KERNEL_SERIES, "config")
# A flavour is a fragment config/<flavour>.config merged after base.config
# (and the series' series.config): every such file but base.config.
FLAVOURS = tuple(sorted(f[:-len(".config")] for f in os.listdir(CONFIG_DIR)
                        if f.endswith(".config") and f != "base.config"))
SERIES_CONFIG = "series.config"
VARIANT_RE = re.compile(r"baseline|patched|series-(\d+)")
PACKAGE_RE = re.compile(r"linux-source-(\d+\.\d+)")
TARBALL_RE = re.compile(r".+\.(tar|tar\.xz|tar\.gz|tar\.bz2|tar\.zst|tgz|txz)")
LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
SPEC_HELP = ("baseline, patched, series-K, linux-source-X.Y[@VARIANT], "
             "a .tar.xz path, GITDIR@COMMIT, GITDIR@A..B or a bzImage path, "
             "optionally +SERIES_DIR (docs/kernel-specs.md)")


class SpecError(UsageError):
    """A spec that names no kernel: the message says why and what to give."""


def sha(*chunks):
    h = hashlib.sha256()
    for c in chunks:
        h.update(c if isinstance(c, bytes) else c.encode())
        h.update(b"\0")
    return h.hexdigest()


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def expand(path):
    return os.path.abspath(os.path.expanduser(path))


# ---------------------------------------------------------------- parsing

class Spec:
    """One parsed spec. kind: package, tarball, git, image. A git spec
    with a range stands for several kernels until split by kernels()."""

    def __init__(self, text):
        self.text = text
        self.label = None
        self.kind = None
        self.package = None         # package: linux-source-X.Y
        self.variant = None         # package, tarball: baseline/patched/series-K
        self.path = None            # tarball, git work tree, image
        self.rev = None             # git: one revision
        self.range = None           # git: (A, B)
        self.series_dir = None      # the user's series on top
        self.series_k = None        # ... its first K patches (None: all)
        self.legacy_series = None   # build-kernel --series-dir: replaces ours
        self.variant_k = None       # ... and --patches K
        self.gitdir = None

    def __repr__(self):
        return f"Spec({self.text!r})"


def parse(text):
    """A spec string -> Spec, or SpecError naming what is wrong."""
    spec = Spec(text)
    if not text or text != text.strip():
        raise SpecError(f"kernel spec '{text}' is empty or has spaces around "
                        f"it: give {SPEC_HELP}")
    rest = text
    m = re.match(r"([^=/]+)=(.+)", rest)
    if m and not os.path.exists(expand(rest)):
        if not LABEL_RE.fullmatch(m.group(1)):
            raise SpecError(f"kernel spec '{text}': label '{m.group(1)}' may "
                            "hold only letters, digits and . _ + -")
        spec.label, rest = m.group(1), m.group(2)
    rest = split_series(spec, rest)
    parse_base(spec, rest)
    if spec.kind == "image" and spec.series_dir:
        raise SpecError(f"kernel spec '{text}': a ready bzImage cannot take "
                        "a series on top; give its source tree instead")
    return spec


def split_series(spec, text):
    """BASE+SERIES_DIR[@K]: the last '+' followed by an existing directory
    (a Debian version or a file name may hold '+' too)."""
    for i in range(len(text) - 1, 0, -1):
        if text[i] != "+":
            continue
        right = text[i + 1:]
        m = re.fullmatch(r"(.+?)(?:@(\d+))?", right)
        if not m:
            continue                        # a '+' at the end
        if os.path.isdir(expand(m.group(1))):
            spec.series_dir = expand(m.group(1))
            spec.series_k = int(m.group(2)) if m.group(2) else None
            if not os.path.isfile(os.path.join(spec.series_dir, "series")):
                raise SpecError(f"kernel spec '{spec.text}': {spec.series_dir} "
                                "has no 'series' file: list its patches there, "
                                "one per line, in the order they apply")
            return text[:i]
        if "/" in right or right.startswith(("~", ".")):
            raise SpecError(f"kernel spec '{spec.text}': series directory "
                            f"{m.group(1)} does not exist")
    return text


def parse_base(spec, text):
    if VARIANT_RE.fullmatch(text):
        spec.kind, spec.package, spec.variant = "package", DEFAULT_PACKAGE, text
        return
    m = re.fullmatch(r"(linux-source-[^@]*)(?:@(.*))?", text)
    if m:
        if not PACKAGE_RE.fullmatch(m.group(1)):
            raise SpecError(f"kernel spec '{spec.text}': '{m.group(1)}' is not "
                            "a Debian source package name: linux-source-X.Y "
                            "(e.g. linux-source-6.12)")
        variant = m.group(2) if m.group(2) is not None else "baseline"
        if not VARIANT_RE.fullmatch(variant):
            raise SpecError(f"kernel spec '{spec.text}': unknown variant "
                            f"'{variant}': use baseline, patched or series-K")
        spec.kind, spec.package, spec.variant = "package", m.group(1), variant
        return
    if "@" in text:
        # GITDIR@REV: the first '@' after which the left part is a directory.
        for i, c in enumerate(text):
            if c == "@" and os.path.isdir(expand(text[:i])):
                return parse_git(spec, expand(text[:i]), text[i + 1:])
        left = text.split("@", 1)[0]
        raise SpecError(f"kernel spec '{spec.text}': {left} is not a "
                        "directory: GITDIR@COMMIT wants a git work tree")
    path = expand(text)
    if os.path.isfile(path):
        spec.path = path
        spec.kind = "tarball" if TARBALL_RE.fullmatch(path) else "image"
        spec.variant = "baseline"
        return
    if os.path.isdir(path):
        how = (f"give a commit: {text}@HEAD, or a range {text}@A..B"
               if os.path.exists(os.path.join(path, ".git")) else
               "give a git work tree with @COMMIT, a tarball or a bzImage")
        raise SpecError(f"kernel spec '{spec.text}': {path} is a directory: "
                        + how)
    if "/" in text or text.startswith(("~", ".")) or TARBALL_RE.fullmatch(text):
        raise SpecError(f"kernel spec '{spec.text}': {path} does not exist")
    raise SpecError(f"kernel spec '{spec.text}' names no kernel: give "
                    + SPEC_HELP)


def parse_git(spec, path, what):
    spec.kind, spec.path = "git", path
    if not what:
        raise SpecError(f"kernel spec '{spec.text}': no commit after '@': "
                        "give e.g. @HEAD or a range @A..B")
    if "..." in what:
        raise SpecError(f"kernel spec '{spec.text}': '...' is not supported: "
                        "give a range A..B (A, then each commit up to B)")
    if ".." in what:
        a, b = what.split("..", 1)
        if not a or not b:
            raise SpecError(f"kernel spec '{spec.text}': a range needs both "
                            "ends: A..B")
        spec.range = (a, b)
    else:
        spec.rev = what


# ---------------------------------------------------------------- git, read-only

def git(repo, *args, check=True):
    """A read-only git command in the user's repository. safe.directory:
    a tree owned by another user (root judging a user's tree) is only
    read, never written."""
    out = subprocess.run(["git", "-c", "safe.directory=*", "-C", repo, *args],
                         capture_output=True, text=True, check=False)
    if check and out.returncode != 0:
        raise SpecError(out.stderr.strip().splitlines()[-1]
                        if out.stderr.strip() else f"git {args[0]} failed")
    return out


def git_toplevel(path, text):
    """(the tree's top directory, its git directory). A bare repository
    is its own top."""
    try:
        out = git(path, "rev-parse", "--is-bare-repository", "--git-dir",
                  check=False)
    except FileNotFoundError:
        raise SpecError("git not found: as root, ./numa-matrix deps "
                        "(or apt-get install git)") from None
    if out.returncode != 0:
        raise SpecError(f"kernel spec '{text}': {path} is not a git work tree "
                        "(git rev-parse failed): give a git checkout, or a "
                        "tarball of the tree")
    bare, gitdir = out.stdout.splitlines()[:2]
    gitdir = os.path.abspath(os.path.join(path, gitdir))
    if bare == "true":
        return gitdir, gitdir
    top = git(path, "rev-parse", "--show-toplevel").stdout.strip()
    return top, gitdir


def resolve_commit(repo, rev, text):
    out = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}",
              check=False)
    if out.returncode != 0:
        raise SpecError(f"kernel spec '{text}': no commit '{rev}' in {repo}: "
                        "give a commit id, branch or tag of that tree "
                        "(git log there lists them)")
    return out.stdout.strip()


def commit_facts(repo, commit):
    """Subject, source version and `make kernelversion` (from the top
    Makefile) of a commit."""
    subject = git(repo, "log", "-1", "--format=%s", commit).stdout.strip()
    mk = git(repo, "show", f"{commit}:Makefile", check=False)
    if mk.returncode != 0:
        raise SpecError(f"commit {commit[:12]} of {repo} has no top-level "
                        "Makefile: give a commit of a Linux kernel tree")
    return subject, makefile_version(mk.stdout), \
        kernelversion(mk.stdout) or "unknown"


def makefile_version(text):
    """A git commit's version as its source_version: make kernelversion
    without a zero SUBLEVEL (6.12, not 6.12.0), as runs have recorded it."""
    v = kernelversion(text)
    if v is None:
        return "unknown"
    return re.sub(r"^(\d+\.\d+)\.0(?=\D|$)", r"\1", v)


def git_commits(spec):
    """The commits a git spec names, oldest first: one, or A and then each
    commit of A..B (git rev-list --topo-order)."""
    top, gitdir = git_toplevel(spec.path, spec.text)
    spec.path, spec.gitdir = top, gitdir
    if spec.rev is not None:
        return [resolve_commit(top, spec.rev, spec.text)]
    a = resolve_commit(top, spec.range[0], spec.text)
    b = resolve_commit(top, spec.range[1], spec.text)
    if git(top, "merge-base", "--is-ancestor", a, b, check=False).returncode:
        raise SpecError(f"kernel spec '{spec.text}': {spec.range[0]} is not an "
                        f"ancestor of {spec.range[1]}: give A..B with A the "
                        "older commit")
    rest = git(top, "rev-list", "--reverse", "--topo-order",
               f"{a}..{b}").stdout.split()
    if not rest:
        raise SpecError(f"kernel spec '{spec.text}': the range is empty "
                        f"({spec.range[0]} and {spec.range[1]} are the same "
                        "commit)")
    return [a] + rest


# ---------------------------------------------------------------- sources

@functools.lru_cache(maxsize=None)
def compiler():
    """The compiler every kernel is built with, as `gcc --version` names
    it: part of a kernel's identity. Asked once per process."""
    try:
        out = subprocess.run(["gcc", "--version"], capture_output=True,
                             text=True, check=False)
    except FileNotFoundError:
        out = None
    if out is None or out.returncode != 0:
        raise SpecError("gcc not found: as root, ./numa-matrix deps "
                        "(or apt-get install gcc)")
    return out.stdout.splitlines()[0].strip()


def package_info(package):
    """A Debian linux-source-X.Y package: its tarball and version."""
    tarball = f"/usr/src/{package}.tar.xz"
    if not os.path.isfile(tarball):
        raise SpecError(f"kernel source {tarball} not found: the Debian "
                        f"package {package} is not installed (as root: "
                        f"apt-get install {package}; ./numa-matrix deps "
                        "installs the ones the project uses)")
    st = os.stat(tarball)
    version = None
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                           capture_output=True, text=True, check=False)
        if r.returncode == 0 and r.stdout:
            version = r.stdout.strip()
    except FileNotFoundError:
        pass
    if not version:
        version = f"size{st.st_size}-mtime{int(st.st_mtime)}"
    return Source(kind="package", tarball=tarball, package=package,
                  version=version, id=sha(tarball, version, str(st.st_size))[:12])


def remembered(name, path, compute):
    """COMPUTE(PATH), remembered per (path, size, mtime) in the cache's
    src/NAME.json: a 150 MB tarball is read once, not on every lookup."""
    st = os.stat(path)
    memo_path = os.path.join(cache_root(), "src", name + ".json")
    key = f"{path}\0{st.st_size}\0{st.st_mtime_ns}"
    try:
        memo = json.loads(read(memo_path))
    except (OSError, ValueError):
        memo = {}
    if key in memo:
        return memo[key]
    memo[key] = compute(path)
    # Not the first thing to make the cache: a check of a command line
    # (results/matrix run --check-args) leaves a fresh machine as it was.
    if os.path.isdir(cache_root()):
        try:
            atomic_write(memo_path, json.dumps(memo))
        except OSError:
            pass                # a read-only cache only costs a re-read
    return memo[key]


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_digest(path):
    """sha256 of a file (a tarball, a bzImage), remembered."""
    return remembered("digests", path, sha256_of)


def kernelversion(makefile):
    """What `make kernelversion` prints for a top-level Makefile's text:
    VERSION.PATCHLEVEL.SUBLEVEL and EXTRAVERSION (6.1.192, 6.12.0, 6.13.0-rc3),
    without a Debian revision or a local version. None when it names none."""
    v = {}
    for key in ("VERSION", "PATCHLEVEL", "SUBLEVEL", "EXTRAVERSION"):
        m = re.search(rf"^{key}[ \t]*=[ \t]*(\S*)", makefile, re.M)
        v[key] = m.group(1) if m else ""
    if not v["VERSION"].isdigit():
        return None
    out = v["VERSION"]
    if v["PATCHLEVEL"]:
        out += "." + v["PATCHLEVEL"]
        if v["SUBLEVEL"]:
            out += "." + v["SUBLEVEL"]
    return out + v["EXTRAVERSION"]


def tarball_makefile(path):
    """The top-level Makefile of a kernel source tarball, read without
    unpacking the rest (tar stops at it: it comes early)."""
    try:
        out = subprocess.run(["tar", "-xf", path, "-O", "--wildcards",
                              "--no-wildcards-match-slash", "--occurrence=1",
                              "*/Makefile"], capture_output=True, text=True,
                             errors="replace", check=False)
    except FileNotFoundError:
        raise SpecError("tar not found: apt-get install tar") from None
    return out.stdout


def tarball_kernelversion(path):
    """`make kernelversion` of a source tarball, remembered."""
    version = remembered("kernelversions", path,
                         lambda p: kernelversion(tarball_makefile(p)))
    if not version:
        raise SpecError(f"{path}: no top-level Makefile with a VERSION in it: "
                        "give a kernel source tarball")
    return version


def tarball_info(path):
    stem = re.sub(r"\.(tar|tar\.xz|tar\.gz|tar\.bz2|tar\.zst|tgz|txz)$", "",
                  os.path.basename(path))
    return Source(kind="tarball", tarball=path, version=stem,
                  id="tar-" + file_digest(path)[:12])


def read_series(series_dir):
    """Patch names of a quilt series file ([] when there is none)."""
    path = os.path.join(series_dir, "series")
    if not os.path.exists(path):
        return []
    names = []
    for lineno, line in enumerate(read(path).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name = line.split()[0]
        if not os.path.isfile(os.path.join(series_dir, name)):
            raise SpecError(f"{path}:{lineno}: patch {name} is listed but "
                            "missing")
        names.append(name)
    return names


def series_dir_of(package):
    return os.path.join(KERNEL_SERIES, package)


def variant_name(k, total):
    if k == 0:
        return "baseline"
    return "patched" if k == total else f"series-{k}"


def variants(package=DEFAULT_PACKAGE):
    """[(name, what)] of a Debian source: baseline and, where its series
    folder has patches, series-1 .. patched."""
    names = read_series(series_dir_of(package))
    return [(variant_name(k, len(names)), names[k - 1] if k else "no patches")
            for k in range(len(names) + 1)]


def variant_patches(spec, series_dir, names):
    """How many of our series' patches a variant applies."""
    v = spec.variant
    if v == "baseline":
        return 0
    if not names:
        raise SpecError(f"kernel spec '{spec.text}': {spec.package} has no "
                        f"series (no patches in kernel-series/{spec.package}/"
                        "series): only baseline")
    if v == "patched":
        return len(names)
    m = VARIANT_RE.fullmatch(v)
    assert m is not None                    # parse_base() checked it
    k = int(m.group(1))
    if not 0 <= k <= len(names):
        raise SpecError(f"kernel spec '{spec.text}': {v} needs {k} patches, "
                        f"the {spec.package} series has {len(names)}: give "
                        f"series-1 .. series-{len(names) - 1} or patched")
    return k


# ---------------------------------------------------------------- plans

def fragments(series_configs, flavour):
    """Config fragments in merge order: base, each series' series.config
    (options its patches introduce, see kernels.verify_config()), flavour."""
    frags = [os.path.join(CONFIG_DIR, "base.config")]
    frags += [path for path, _ in series_configs]
    frags.append(os.path.join(CONFIG_DIR, f"{flavour}.config"))
    for f in frags:
        if not os.path.isfile(f):
            raise SpecError(f"config fragment {f} missing (flavours: "
                            f"{', '.join(FLAVOURS)})")
    return frags


def kernels(text, flavour="perf"):
    """Every kernel a spec names, as plans, in order (a git range: one per
    commit, the range's first commit first)."""
    spec = text if isinstance(text, Spec) else parse(text)
    if flavour not in FLAVOURS:
        raise SpecError(f"flavour '{flavour}': use {' or '.join(FLAVOURS)}")
    if spec.kind == "git":
        commits = git_commits(spec)
        plans = [plan_git(spec, c, flavour) for c in commits]
        if spec.label and len(plans) > 1:
            for i, p in enumerate(plans):
                p.label = f"{spec.label}-{i}"
        return plans
    if spec.kind == "image":
        return [plan_image(spec)]
    return [plan_tree(spec, flavour)]


def one(text, flavour="perf"):
    """The one kernel a spec names; a range is refused."""
    plans = kernels(text, flavour)
    if len(plans) > 1:
        raise SpecError(f"kernel spec '{plans[0].spec_text}' names "
                        f"{len(plans)} kernels (a range): give one commit")
    return plans[0]


def patch_list(spec, names, k, series_dir):
    """(patch paths, series configs, legacy variant info) of a tree spec:
    our series' first k patches, then the user's series."""
    patches = [(n, os.path.join(series_dir, n)) for n in names[:k]]
    configs = []
    own_config = os.path.join(series_dir or "", SERIES_CONFIG)
    if names and os.path.isfile(own_config):
        configs.append((own_config, k == len(names)))
    if spec.series_dir:
        user = read_series(spec.series_dir)
        if not user:
            raise SpecError(f"kernel spec '{spec.text}': "
                            f"{spec.series_dir}/series lists no patch")
        uk = len(user) if spec.series_k is None else spec.series_k
        if not 0 < uk <= len(user):
            raise SpecError(f"kernel spec '{spec.text}': @{uk}: "
                            f"{spec.series_dir} has {len(user)} patches")
        patches += [(n, os.path.join(spec.series_dir, n)) for n in user[:uk]]
        user_config = os.path.join(spec.series_dir, SERIES_CONFIG)
        if os.path.isfile(user_config):
            configs.append((user_config, uk == len(user)))
    return patches, configs


def series_suffix(spec):
    if not spec.series_dir:
        return ""
    s = "+" + os.path.basename(spec.series_dir.rstrip("/"))
    return s + (f"-{spec.series_k}" if spec.series_k is not None else "")


def common(spec, flavour, patches, configs):
    """The fields of a KernelPlan every built kernel has."""
    frags = fragments(configs, flavour)
    cc = compiler()
    return dict(
        spec_text=spec.text, flavour=flavour,
        patch_names=[n for n, _ in patches],
        patch_paths=[p for _, p in patches],
        series_configs=configs, fragments=frags, compiler=cc,
        series_hash=sha(*[read(p, "rb") for _, p in patches])[:12],
        # The compiler is part of the configuration: another gcc, another
        # kernel (and another cache entry).
        config_hash=sha(flavour, *[read(f, "rb") for f in frags], cc)[:12],
        root=cache_root())


def plan_tree(spec, flavour):
    """A Debian package or a tarball, with patches on top."""
    if spec.kind == "package":
        src = package_info(spec.package)
        series_dir = spec.legacy_series or series_dir_of(spec.package)
        names = read_series(series_dir)
        k = variant_patches(spec, series_dir, names) \
            if spec.legacy_series is None else spec.variant_k
    else:
        src = tarball_info(spec.path)
        series_dir, names, k = None, [], 0
    patches, configs = patch_list(spec, names, k, series_dir)
    c = common(spec, flavour, patches, configs)
    variant = variant_name(k, len(names))
    if spec.kind == "package" and spec.package == DEFAULT_PACKAGE:
        label = variant
    elif spec.kind == "package":
        label = f"{spec.package.removeprefix('linux-source-')}-{variant}"
    else:
        label = src.version
    root = c["root"]
    tree_key = f"{src.id}-{c['series_hash']}"
    return KernelPlan(
        kind=spec.kind, label=spec.label or label + series_suffix(spec),
        variant=variant, source=src, source_version=src.version,
        spec=canonical(spec, variant),
        pristine=os.path.join(root, "src", f"pristine-{src.id}"),
        tree=os.path.join(root, "src", tree_key),
        # A direct child of the tree: kbuild then uses srctree := .., so
        # compiler command lines are the same for every tree and ccache
        # hits across variants, sources and commits.
        build=os.path.join(root, "src", tree_key, f"build-{flavour}"),
        store=os.path.join(root, "kernels",
                           f"{tree_key}-{flavour}-{c['config_hash']}"),
        localversion=f"-nm{len(patches)}-{flavour}",
        build_version=f"1-{c['series_hash']}", **c)


def canonical(spec, variant):
    """A spec for exactly this one kernel (what a Slurm build job or a
    resumed run is given)."""
    if spec.legacy_series:
        return None
    if spec.kind == "package":
        base = spec.package + "@" + variant
    else:
        base = spec.path
    if spec.series_dir:
        base += "+" + spec.series_dir
        if spec.series_k is not None:
            base += f"@{spec.series_k}"
    return base


def plan_git(spec, commit, flavour):
    subject, version, kversion = commit_facts(spec.path, commit)
    patches, configs = patch_list(spec, [], 0, None)
    c = common(spec, flavour, patches, configs)
    repo_id = sha(spec.gitdir)[:12]
    clone = os.path.join(c["root"], "src", f"git-{repo_id}")
    ident = commit[:12] + (f"+{c['series_hash']}" if patches else "")
    text = f"{spec.path}@{commit}"
    if spec.series_dir:
        text += "+" + spec.series_dir + (f"@{spec.series_k}"
                                         if spec.series_k is not None else "")
    return KernelPlan(
        kind="git", label=spec.label or commit[:12] + series_suffix(spec),
        source=Source(kind="git", repo=spec.path, gitdir=spec.gitdir,
                      version=version, id=f"git-{commit[:12]}"),
        source_version=version, kernel_version=kversion, commit=commit,
        subject=subject, spec=text, clone=clone,
        tree=os.path.join(clone, "linux"),
        # One work tree and build dir per repository: the commits of one
        # tree are incremental builds of each other.
        build=os.path.join(clone, "linux", f"build-{flavour}"),
        store=os.path.join(c["root"], "kernels",
                           f"git-{commit[:12]}-{c['series_hash']}-{flavour}-"
                           f"{c['config_hash']}"),
        localversion=f"-nm-{commit[:8]}" + (f"+{len(patches)}" if patches
                                            else "") + f"-{flavour}",
        build_version=f"1-{ident}", **c)


# ---------------------------------------------------------------- ready images

def bzimage_version(path):
    """The version string a bzImage carries (boot protocol header), or
    None when the file is not a bzImage."""
    with open(path, "rb") as f:
        head = f.read(0x4000)
    if len(head) < 0x210 or head[0x202:0x206] != b"HdrS":
        return None
    off = int.from_bytes(head[0x20E:0x210], "little") + 0x200
    with open(path, "rb") as f:
        f.seek(off)
        text = f.read(256).split(b"\0", 1)[0]
    return text.decode(errors="replace")


def image_config(path):
    """The .config of a ready bzImage, when it can be found: beside it
    (.config, config, config-<release> as in /boot), or at the top of the
    kbuild tree it was built in (arch/x86/boot/bzImage)."""
    d = os.path.dirname(path)
    names = [".config", "config"]
    base = os.path.basename(path)
    if base.startswith("vmlinuz-"):
        names.append("config-" + base[len("vmlinuz-"):])
    for n in names:
        if os.path.isfile(os.path.join(d, n)):
            return os.path.join(d, n)
    if path.endswith(os.path.join("arch", "x86", "boot", "bzImage")):
        top = os.path.join(d, "..", "..", "..", ".config")
        if os.path.isfile(top):
            return os.path.abspath(top)
    return None


def plan_image(spec):
    version = bzimage_version(spec.path)
    if version is None:
        raise SpecError(f"kernel spec '{spec.text}': {spec.path} is not a "
                        "bzImage (no Linux boot header): give "
                        "arch/x86/boot/bzImage of a built tree")
    digest = file_digest(spec.path)
    m = re.search(r"\((gcc[^)]*\)[^,)]*)", version)
    return KernelPlan(
        kind="image", spec_text=spec.text, spec=spec.path,
        label=spec.label or f"image-{digest[:8]}", image=spec.path,
        config=image_config(spec.path),
        source=Source(kind="image", version=version.split()[0],
                      id=f"img-{digest[:12]}"),
        source_version=version.split()[0], version_string=version,
        compiler=m.group(1) if m else "unknown", series_hash=digest[:12])


def kernel_version(plan):
    """`make kernelversion` of a kernel's source (6.1.192, 6.12.118,
    6.13.0-rc3): no Debian revision, no local version. A Debian package
    or a tarball: its top Makefile (a Debian package whose tarball cannot
    be read: its version without the Debian revision); a git commit: its
    Makefile; a ready bzImage: its version string up to the first '-'.
    What results/<version>/ is named after."""
    if plan.kernel_version:
        return plan.kernel_version
    src = plan.source
    if src.kind == "image":
        return plan.source_version.split("-", 1)[0]
    try:
        return tarball_kernelversion(src.tarball)
    except (OSError, SpecError):
        if src.kind == "package":
            return src.version.rsplit("-", 1)[0]
        raise
