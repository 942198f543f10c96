# SPDX-License-Identifier: GPL-2.0
"""Build a guest kernel and print the path of its bzImage.

  build-kernel [SPEC] [--flavour perf|debug]

SPEC names the kernel (docs/kernel-specs.md): baseline, patched, series-K
(Debian's linux-source-6.1 and the series in kernel-series/linux-source-6.1/),
linux-source-X.Y[@VARIANT], a source tarball, GITDIR@COMMIT or GITDIR@A..B
(one kernel per commit, one path per line), a ready bzImage, each with
+SERIES_DIR for a series of your own on top. Every kernel is configured as
tinyconfig + config/base.config + the series' series.config +
config/<flavour>.config. Everything is cached outside the repository, keyed by
the content of what went in (source, patches, fragments, compiler), so an
unchanged kernel is a lookup and a changed one an incremental build (ccache,
one build dir per tree and flavour; the commits of one git tree share theirs).
"""

import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from . import kernelspec as ks
from .errors import NumaMatrixError, UsageError, report
from .kernelspec import read
from .types import KERNEL_INFO_SCHEMA
from .util import replace_dir

FLAVOURS = ks.FLAVOURS
DEFAULT_SPEC = "patched"


class BuildError(NumaMatrixError):
    """A kernel that could not be built or found: the message says why."""


def log(msg):
    print(f"build-kernel: {msg}", file=sys.stderr, flush=True)


def run(cmd, cwd=None, env=None, logfile=None, what=None):
    """Run a command; on failure raise with the tail of its output."""
    out = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, check=False)
    if logfile:
        with open(logfile, "a") as f:
            f.write(f"$ {' '.join(cmd)}\n{out.stdout}")
    if out.returncode != 0:
        tail = "\n".join(out.stdout.splitlines()[-25:])
        raise BuildError(f"{what or ' '.join(cmd)} failed (exit {out.returncode}):"
                      f"\n{tail}")
    return out.stdout


# ---------------------------------------------------------------- source trees

def unpack_pristine(p):
    if os.path.isdir(p.pristine):
        return
    src = p.source
    log(f"unpacking {src.tarball} ({src.package or 'tarball'} "
        f"{src.version}) into {p.pristine}")
    tmp = f"{p.pristine}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    t0 = time.time()
    # Whatever ends the unpacking (a damaged tarball, a full disk, Ctrl-C),
    # no half tree is left behind: the next build starts it again.
    try:
        run(["tar", "-xf", src.tarball, "-C", tmp],
            what=f"unpacking {src.tarball}")
        entries = os.listdir(tmp)
        if len(entries) != 1 or not os.path.isfile(
                os.path.join(tmp, entries[0], "Makefile")):
            raise BuildError(f"{src.tarball}: not a kernel source tarball "
                             "(want one top directory with a Makefile, got "
                             f"{entries[:5]})")
        os.rename(tmp, p.pristine)
    except OSError:
        if not os.path.isdir(p.pristine):
            raise
        # unpacked meanwhile by another build
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"unpacked in {time.time() - t0:.0f} s")


def pristine_tree(p):
    top = os.listdir(p.pristine)[0]
    return os.path.join(p.pristine, top)


def patch_failure(p, name, output):
    """Turn GNU patch output into: which patch, which files, which hunks."""
    files = re.findall(r"^patching file (\S+)", output, re.M)
    failed = []
    current = None
    for line in output.splitlines():
        m = re.match(r"patching file (\S+)", line)
        if m:
            current = m.group(1)
        elif "FAILED" in line or "can't find file" in line or \
                "Reversed (or previously applied)" in line:
            failed.append(f"  {current or '?'}: {line.strip()}")
    detail = "\n".join(failed) or output.strip()
    where = (f"commit {p.commit[:12]} of {p.source.repo}"
             if p.kind == "git" else
             f"the {p.source.package or p.source.tarball} tree")
    return (f"patch {name} does not apply to {where} ({len(files)} file(s) "
            f"touched): refresh it against that source (see "
            f"docs/kernel-specs.md)\n{detail}")


def apply_patches(p, tree):
    for name, path in zip(p.patch_names, p.patch_paths):
        out = subprocess.run(["patch", "-p1", "--forward", "--batch",
                              "--no-backup-if-mismatch", "-i", path],
                             cwd=tree, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, check=False)
        if out.returncode != 0:
            raise BuildError(patch_failure(p, name, out.stdout))


def prepare_tree(p):
    """Hard-link copy of the pristine tree with the patches applied.

    GNU patch writes each patched file anew, so the hard links to the
    pristine tree are broken exactly for the files the series touches.
    """
    if os.path.isdir(p.tree):
        return
    unpack_pristine(p)
    tmp = p.tree + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        run(["cp", "-al", pristine_tree(p), tmp],
            what="copying the pristine tree")
        apply_patches(p, tmp)
        os.rename(tmp, p.tree)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"tree {p.tree}: {p.patches} patch(es) applied")


def cache_git(p, *args):
    return run(["git", "-c", "safe.directory=*", "-C", p.tree, *args],
               what=f"git {args[0]} in the cache clone {p.tree}")


def prepare_git(p):
    """The cache's clone of the user's repository, at the commit, with the
    series on top. The clone shares the user's objects (git clone --shared
    writes the alternates file into the clone, nothing into the user's
    repository); checking out another commit rewrites only the files that
    differ, so make rebuilds only what they touch."""
    src = p.source
    if not os.path.isdir(os.path.join(p.tree, ".git")):
        shutil.rmtree(p.clone, ignore_errors=True)
        os.makedirs(p.clone)
        log(f"cloning {src.repo} into {p.tree} (objects shared, "
            "nothing written into the original)")
        run(["git", "-c", "safe.directory=*", "clone", "--quiet", "--shared",
             "--no-checkout", src.gitdir, p.tree],
            what=f"git clone --shared {src.gitdir}")
        with open(os.path.join(p.clone, "origin"), "w") as f:
            f.write(src.repo + "\n")
    t0 = time.time()
    cache_git(p, "checkout", "--quiet", "--force", "--detach", p.commit)
    # Patches of the previous kernel may have added files; the build
    # directories stay.
    cache_git(p, "clean", "-q", "-f", "-d", "-e", "/build-*/")
    apply_patches(p, p.tree)
    log(f"tree {p.tree} at {p.commit[:12]} ({p.subject}), "
        f"{p.patches} patch(es) on top, in {time.time() - t0:.0f} s")


# ---------------------------------------------------------------- config

def parse_config(text):
    values = {}
    for line in text.splitlines():
        m = re.match(r"^(CONFIG_\w+)=(.*)$", line)
        if m:
            values[m.group(1)] = m.group(2)
            continue
        m = re.match(r"^# (CONFIG_\w+) is not set$", line)
        if m:
            values[m.group(1)] = "n"
    return values


def kconfig_entry(tree, option):
    """The 'depends on' lines of a Kconfig symbol, to say why it was dropped."""
    sym = option[len("CONFIG_"):]
    out = subprocess.run(["grep", "-rn", "--include=Kconfig*", "-E",
                          rf"^\s*(menu)?config {sym}\s*$", "."],
                         cwd=tree, capture_output=True, text=True, check=False)
    if not out.stdout:
        return None
    loc = out.stdout.splitlines()[0].split(":")
    path, lineno = loc[0], int(loc[1])
    deps = []
    with open(os.path.join(tree, path)) as f:
        lines = f.read().splitlines()[lineno:]
    for line in lines:
        s = line.strip()
        if re.match(r"^(menu)?config |^choice|^endmenu|^menu |^if |^endif", s):
            break
        if s.startswith("depends on"):
            deps.append(s)
    return f"{path}:{lineno}" + ("; " + "; ".join(deps) if deps else "")


def requested(frag):
    """[(lineno, option, value, alternatives)] of a fragment. A line
    `# or CONFIG_NEW=y` right below an option names what a tree that
    renamed it calls it: either one satisfies the check."""
    out: list[tuple] = []
    for lineno, line in enumerate(read(frag).splitlines(), 1):
        alt = re.fullmatch(r"#\s*or\s+(CONFIG_\w+)=(\S+)\s*", line)
        if alt and out:
            out[-1][3].append((alt.group(1), alt.group(2)))
            continue
        for opt, val in parse_config(line).items():
            out.append((lineno, opt, val, []))
    return out


def verify_config(p, tree):
    """Every requested option must be in the final .config.

    An option of a series.config that this tree's Kconfig does not define
    yet belongs to a patch beyond the first K and is not required; with the
    whole series applied, every one of them must exist.
    """
    final = parse_config(read(os.path.join(p.build, ".config")))
    partial = {path for path, whole in p.series_configs if not whole}
    # As merge_config.sh merges them: a later fragment's value of an option
    # replaces an earlier one's (the noswap flavour unsets base's SWAP).
    wanted = {}
    for frag in p.fragments:
        for lineno, opt, val, alts in requested(frag):
            wanted[opt] = (frag, lineno, val, alts)
    problems = []
    for opt, (frag, lineno, val, alts) in wanted.items():
        choices = [(opt, val)] + alts
        if any(final.get(o, "n") == v for o, v in choices):
            continue
        where = [(o, kconfig_entry(tree, o)) for o, _ in choices]
        defined = [(o, w) for o, w in where if w is not None]
        if not defined and frag in partial:
            continue
        got = final.get(opt, "n")
        if defined:
            why = "; ".join(f"{o} defined at {w}" for o, w in defined)
        else:
            why = ("no such option in this tree's Kconfig: renamed? add "
                   "'# or CONFIG_NEWNAME=y' below it in the fragment")
        problems.append(f"  {os.path.basename(frag)}:{lineno}: {opt}="
                        f"{val} requested, .config has "
                        f"{'not set' if got == 'n' else got} ({why})")
    if problems:
        raise BuildError("olddefconfig dropped or changed requested options "
                      "(an unmet dependency, or a typo):\n"
                      + "\n".join(problems))


def guest_fragment(flavour="perf"):
    """What `numa-matrix config` prints: the options the guests and tests
    need, to merge into a .config of one's own."""
    parts = [f"# numa-matrix guest kernel options ({flavour} flavour), from "
             f"kernel-series/config/base.config and {flavour}.config.",
             "# Merge into your .config:",
             "#   scripts/kconfig/merge_config.sh -m .config this-file && "
             "make olddefconfig",
             "# Everything must be built in (=y): the guests boot without "
             "an initramfs.", ""]
    for name in ("base.config", f"{flavour}.config"):
        parts.append(f"# ---- {name}")
        parts.append(read(os.path.join(ks.CONFIG_DIR, name)).rstrip("\n"))
        parts.append("")
    return "\n".join(parts)


def check_image_config(p):
    """A ready bzImage: are the options the guests and the tests need in
    its .config? [] when they are, else one entry per missing option."""
    if not p.config:
        return None
    final = parse_config(read(p.config))
    missing = []
    for lineno, opt, val, alts in requested(
            os.path.join(ks.CONFIG_DIR, "base.config")):
        choices = [(opt, val)] + alts
        if any(final.get(o, "n") == v for o, v in choices):
            continue
        got = final.get(opt, "n")
        missing.append(f"{opt}={val} ({'not set' if got == 'n' else got})")
    return missing


def image_path(p, check_config=True):
    """The bzImage of an image spec, after checking its .config."""
    if not check_config:
        return p.image
    missing = check_image_config(p)
    if missing is None:
        log(f"warning: no .config found beside {p.image}: the options the "
            "guests need are not checked (./numa-matrix config lists them)")
    elif missing:
        raise BuildError(f"{p.image} lacks what the guests and tests need "
                      f"(its config {p.config}): {', '.join(missing)}: "
                      "merge the output of './numa-matrix config' into its "
                      ".config and rebuild")
    return p.image


# ---------------------------------------------------------------- building

def make_env(p):
    env = dict(os.environ)
    env.update({
        "CCACHE_DIR": os.environ.get("CCACHE_DIR",
                                     os.path.join(p.root, "ccache")),
        "CCACHE_BASEDIR": p.root,
        "CCACHE_MAXSIZE": os.environ.get("CCACHE_MAXSIZE", "8G"),
        # Reproducible identification strings: uname -v names the series
        # (and the commit of a git tree).
        "KBUILD_BUILD_TIMESTAMP": "2013-09-11",
        "KBUILD_BUILD_USER": "numa-matrix",
        "KBUILD_BUILD_HOST": "qemu",
        "KBUILD_BUILD_VERSION": p.build_version,
        "LC_ALL": "C",
    })
    return env


def configure(p, tree, env, logfile):
    build = p.build
    os.makedirs(build, exist_ok=True)
    mk = ["make", "-C", tree, f"O={build}", f"LOCALVERSION={p.localversion}"]
    run(mk + ["tinyconfig"], env=env, logfile=logfile, what="make tinyconfig")
    run([os.path.join(tree, "scripts/kconfig/merge_config.sh"), "-m", "-O",
         build, os.path.join(build, ".config")] + p.fragments,
        cwd=tree, env=env, logfile=logfile, what="merge_config.sh")
    run(mk + ["olddefconfig"], env=env, logfile=logfile, what="make olddefconfig")
    verify_config(p, tree)


def stop_group(proc, grace=5):
    """Stop a process started in a session of its own and all that is left
    of what it started: SIGTERM to the group, SIGKILL after GRACE seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    proc.wait()


def on_signal(signum, frame):
    """SIGTERM and SIGHUP end a build like an interrupt: make's group is
    stopped, the lock released, the half-built tree left for the next run
    to finish incrementally."""
    raise KeyboardInterrupt


def compile_kernel(p, tree, env, logfile, jobs):
    cmd = ["make", "-C", tree, f"O={p.build}", f"-j{jobs}",
           f"LOCALVERSION={p.localversion}", "CC=ccache gcc", "bzImage"]
    with open(logfile, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        # Its own session: an interrupt stops make and every compiler it
        # started, and none is left to race the next build.
        proc = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
    t0 = time.time()
    last = t0
    while True:
        try:
            rc = proc.wait(timeout=1)
            break
        except subprocess.TimeoutExpired:
            pass
        except BaseException:
            stop_group(proc)
            raise
        if time.time() - last >= 15:
            last = time.time()
            compiled = sum(1 for line in open(logfile, errors="replace")
                           if line.startswith("  CC "))
            log(f"{p.label}/{p.flavour}: {compiled} objects compiled, "
                f"{last - t0:.0f} s")
    stop_group(proc)
    if rc != 0:
        tail = "\n".join(read(logfile).splitlines()[-30:])
        raise BuildError(f"make bzImage failed (exit {rc}); full log: {logfile}\n"
                      f"{tail}")
    return time.time() - t0


INFO_KEYS = ("kind", "label", "spec", "variant", "patches", "patch_names",
             "flavour", "series_hash", "config_hash", "localversion",
             "source_version", "compiler", "commit", "subject")


def describe(p):
    """What a kernel is, for info.json, env.json and --info: the plan's
    identity, flat, with the schema it follows (KERNEL_INFO_SCHEMA)."""
    info = {k: getattr(p, k) for k in INFO_KEYS}
    src = p.source
    info.update({"schema": KERNEL_INFO_SCHEMA, "source_kind": src.kind,
                 "source_package": src.package,
                 "source": src.tarball or src.repo or p.image,
                 "source_id": src.id,
                 # Kernels of one tree build one after the other.
                 "build_tree": p.tree})
    return info


def store(p, seconds):
    tmp = p.store + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    shutil.copy2(os.path.join(p.build, "arch/x86/boot/bzImage"), tmp)
    shutil.copy2(os.path.join(p.build, ".config"),
                 os.path.join(tmp, "config"))
    # The symbols of this very image (the build dir of a git tree serves
    # every commit): what `results/matrix profile` names functions with.
    shutil.copy2(os.path.join(p.build, "System.map"), tmp)
    release = read(os.path.join(p.build, "include/config/kernel.release"))
    info = describe(p)
    info.update({"kernel_release": release.strip(),
                 "build_seconds": round(seconds, 1),
                 "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    with open(os.path.join(tmp, "info.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    replace_dir(tmp, p.store)


def built_image(p):
    """The path of a kernel if it is there (a lookup, nothing built)."""
    if p.kind == "image":
        return image_path(p)
    image = os.path.join(p.store, "bzImage")
    return image if os.path.isfile(image) else None


def files_equal(a, b):
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def system_map(p):
    """The System.map of a built kernel, or a BuildError saying why there is
    none to trust. A kernel stored since build-kernel keeps one has it
    beside its bzImage; one stored before, of a Debian source or a tarball,
    has it in its tree's build dir as long as that dir's last build is this
    very bzImage (the build dir serves every config of its flavour). The
    build dir of a git tree serves every commit: only a copy made at build
    time says which commit it is of."""
    if p.kind == "image":
        d = os.path.dirname(p.image)
        candidates = [os.path.join(d, "System.map")]
        if p.image.endswith(os.path.join("arch", "x86", "boot", "bzImage")):
            candidates.append(os.path.join(d, "..", "..", "..", "System.map"))
        for candidate in candidates:
            if os.path.isfile(candidate):
                return os.path.abspath(candidate)
        raise BuildError(f"no System.map beside {p.image} (nor at the top of "
                      "the kbuild tree it was built in): put the one of its "
                      "build beside it")
    image = os.path.join(p.store, "bzImage")
    if not os.path.isfile(image):
        raise BuildError(f"kernel {p.label}/{p.flavour} is not built: run "
                      f"kernel-series/build-kernel {p.spec} --flavour "
                      f"{p.flavour}")
    stored = os.path.join(p.store, "System.map")
    if os.path.isfile(stored):
        return stored
    built = os.path.join(p.build, "System.map")
    last_image = os.path.join(p.build, "arch/x86/boot/bzImage")
    if p.kind == "git":
        why = ("the build dir of a git tree is shared by all its commits, so "
               "no System.map there can be trusted to be this commit's")
    elif not os.path.isfile(built):
        why = f"its build dir {p.build} has none"
    # The same image, and no link of vmlinux after it (a build that failed
    # later would leave a newer System.map beside the old bzImage).
    elif not files_equal(last_image, image) or \
            os.path.getmtime(built) > os.path.getmtime(last_image):
        why = (f"its build dir {p.build} has built another image since "
               "(another config of the flavour): its System.map is not this "
               "kernel's")
    else:
        return built
    raise BuildError(f"kernel {p.label}/{p.flavour} was stored without its "
                  f"System.map, and {why}: remove {p.store} and run "
                  f"kernel-series/build-kernel {p.spec} --flavour "
                  f"{p.flavour} (an incremental build with ccache), which "
                  "keeps System.map beside the bzImage")


@contextlib.contextmanager
def flocked(path, waiting, say):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(waiting)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def build_lock(root, say=log):
    """The machine's one heavy build at a time: kernels, and the selftests
    (build-selftests) that share their trees. NUMA_MATRIX_BUILD_LOCK names
    another lock file, or none: a Slurm build job has CPUs of its own, and
    holding a lock on a cache shared by every node would make the builds of
    different kernels wait for each other."""
    path = os.environ.get("NUMA_MATRIX_BUILD_LOCK",
                          os.path.join(root, "build.lock"))
    if path == "none":
        yield
        return
    with flocked(path, "waiting for another build to finish", say):
        yield


@contextlib.contextmanager
def tree_lock(p, say=log):
    """One build at a time in a tree and its build dirs (the flavours of a
    source, the commits of a git repository's one clone), whatever
    build_lock() allows."""
    path = os.path.join(p.root, "locks",
                        ks.sha(os.path.abspath(p.tree))[:16] + ".lock")
    with flocked(path, f"waiting for another build in {p.tree}", say):
        yield


@contextlib.contextmanager
def building(p, say=log):
    with build_lock(p.root, say), tree_lock(p, say):
        yield


def build(p, jobs):
    if p.kind == "image":
        return image_path(p)
    image = os.path.join(p.store, "bzImage")
    if os.path.isfile(image):
        return image
    with building(p):
        if os.path.isfile(image):
            return image
        if p.kind == "git":
            prepare_git(p)
        else:
            prepare_tree(p)
        env = make_env(p)
        logfile = os.path.join(p.build, "build.log")
        os.makedirs(p.build, exist_ok=True)
        with open(logfile, "w"):
            pass
        log(f"building {p.label} ({p.source_version}, {p.patches} "
            f"patch(es)), flavour {p.flavour}; log: {logfile}")
        configure(p, p.tree, env, logfile)
        seconds = compile_kernel(p, p.tree, env, logfile, jobs)
        store(p, seconds)
        log(f"built {p.label}/{p.flavour} in {seconds:.0f} s")
    return image


def legacy_spec(patches, series_dir):
    """--patches K and --series-dir DIR, from before kernel specs: the
    first K patches of DIR's series on the default Debian source."""
    series_dir = os.path.abspath(series_dir) if series_dir else None
    names = ks.read_series(series_dir or ks.series_dir_of(ks.DEFAULT_PACKAGE))
    k = patches if patches is not None else len(names)
    if not 0 <= k <= len(names):
        raise UsageError(f"--patches {k}: the series has {len(names)} patches")
    spec = ks.Spec(f"--patches {k}" + (f" --series-dir {series_dir}"
                                       if series_dir else ""))
    spec.kind, spec.package = "package", ks.DEFAULT_PACKAGE
    if series_dir:
        spec.legacy_series, spec.variant_k = series_dir, k
        spec.variant = ks.variant_name(k, len(names))
    else:
        spec.variant = ks.variant_name(k, len(names))
    return spec


def list_sources():
    """The Debian sources this machine has or the project has a series
    for, with their variants."""
    packages = {f[:-len(".tar.xz")] for f in os.listdir("/usr/src")
                if re.fullmatch(r"linux-source-\d+\.\d+\.tar\.xz", f)} \
        if os.path.isdir("/usr/src") else set()
    packages |= {d for d in os.listdir(ks.KERNEL_SERIES)
                 if ks.PACKAGE_RE.fullmatch(d)}
    packages.add(ks.DEFAULT_PACKAGE)
    for package in sorted(packages, key=lambda s: [int(x) for x in
                                                   s.split("-")[-1].split(".")]):
        installed = os.path.isfile(f"/usr/src/{package}.tar.xz")
        for name, what in ks.variants(package):
            spec = name if package == ks.DEFAULT_PACKAGE else f"{package}@{name}"
            print(f"{spec:<28} {what}" + ("" if installed else
                                         f" ({package} not installed)"))


def main():
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Kernel specs: docs/kernel-specs.md. Examples: patched; "
               "linux-source-6.12; ~/src/linux@HEAD; ~/src/linux@v6.12..HEAD; "
               "linux-source-6.12+~/my-series; ~/linux.tar.xz; "
               "~/src/linux/arch/x86/boot/bzImage")
    ap.add_argument("spec", nargs="?",
                    help=f"the kernel (default: {DEFAULT_SPEC})")
    ap.add_argument("--flavour", choices=FLAVOURS, default="perf")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--info", action="store_true",
                    help="describe the kernel(s) as JSON, build nothing")
    ap.add_argument("--path-only", action="store_true",
                    help="print the bzImage path(s) if built, fail if not")
    ap.add_argument("--list", action="store_true",
                    help="list the Debian sources and their variants")
    ap.add_argument("--config", action="store_true",
                    help="print the config fragment guest kernels need")
    ap.add_argument("--patches", type=int, metavar="K", help=argparse.SUPPRESS)
    ap.add_argument("--series-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    try:
        if args.list:
            list_sources()
            return 0
        if args.config:
            print(guest_fragment(args.flavour))
            return 0
        if args.patches is not None or args.series_dir:
            if args.spec:
                raise UsageError("give a spec or --patches/--series-dir, not both")
            spec = legacy_spec(args.patches, args.series_dir)
        else:
            spec = args.spec or DEFAULT_SPEC
        ps = ks.kernels(spec, args.flavour)
        if args.info:
            out = []
            for p in ps:
                info = describe(p)
                info["image"] = built_image(p) if p.kind == "image" else \
                    os.path.join(p.store, "bzImage")
                info["built"] = os.path.isfile(info["image"])
                out.append(info)
            json.dump(out if len(out) > 1 else out[0], sys.stdout, indent=2)
            print()
            return 0
        if args.path_only:
            for p in ps:
                image = built_image(p)
                if not image:
                    raise BuildError(f"kernel {p.label}/{p.flavour} is not "
                                  f"built: run kernel-series/build-kernel "
                                  f"{spec if len(ps) == 1 and isinstance(spec, str) else p.spec} "
                                  f"--flavour {p.flavour}")
                print(image)
            return 0
        if len(ps) > 1:
            log(f"{len(ps)} kernels: {', '.join(p.label for p in ps)}")
        for p in ps:
            print(build(p, args.jobs), flush=True)
        return 0
    except NumaMatrixError as e:
        return report("build-kernel", e)
    except KeyboardInterrupt:
        print("build-kernel: interrupted", file=sys.stderr)
        return 130
