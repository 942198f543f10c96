# SPDX-License-Identifier: GPL-2.0
"""Build a guest kernel variant and print the path of its bzImage.

A variant is Debian's linux-source-6.1 with the first K patches of
kernel-series/linux-source-6.1/series applied, configured as tinyconfig +
config/base.config + the series' series.config + config/<flavour>.config. Everything is cached outside the repository, keyed by
the content of what went in, so an unchanged variant is a lookup and a changed
one is an incremental build (ccache, one build dir per tree and flavour).

Variant names: baseline (0 patches), patched (all), series-K (first K).
"""

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

from . import KERNEL_SERIES, cache_root

CONFIG_DIR = os.path.join(KERNEL_SERIES, "config")
SERIES_DIR = os.path.join(KERNEL_SERIES, "linux-source-6.1")
TARBALL = "/usr/src/linux-source-6.1.tar.xz"
PACKAGE = "linux-source-6.1"
FLAVOURS = ("perf", "debug")
# Options whose value the build script sets itself, not the fragments.
LOCALVERSION_FMT = "-nm{k}-{flavour}"
SERIES_CONFIG = "series.config"


class Failure(Exception):
    """An error the user can act on; the message names the cause."""


def log(msg):
    print(f"build-kernel: {msg}", file=sys.stderr, flush=True)


def sha(*chunks):
    h = hashlib.sha256()
    for c in chunks:
        h.update(c if isinstance(c, bytes) else c.encode())
        h.update(b"\0")
    return h.hexdigest()


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def source_info():
    """Identify the kernel source: package version when dpkg knows it."""
    tarball = os.environ.get("NUMA_MATRIX_KERNEL_TARBALL", TARBALL)
    if not os.path.isfile(tarball):
        raise Failure(f"kernel source {tarball} not found: the Debian package "
                      f"{PACKAGE} is not installed (as root: apt-get install "
                      f"{PACKAGE}, or run ./numa-matrix which installs it)")
    st = os.stat(tarball)
    version = None
    if tarball == TARBALL:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", PACKAGE],
                           capture_output=True, text=True, check=False)
        if r.returncode == 0 and r.stdout:
            version = r.stdout.strip()
    if not version:
        version = f"size{st.st_size}-mtime{int(st.st_mtime)}"
    return {"tarball": tarball, "package": PACKAGE, "version": version,
            "id": sha(tarball, version, str(st.st_size))[:12]}


def read_series(series_dir):
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
            raise Failure(f"{path}:{lineno}: patch {name} is listed but missing")
        names.append(name)
    return names


def resolve_patches(args, series):
    if args.patches is not None:
        k = args.patches
    elif args.variant == "baseline":
        k = 0
    elif args.variant == "patched":
        k = len(series)
    else:
        m = re.fullmatch(r"series-(\d+)", args.variant or "")
        if not m:
            raise Failure(f"unknown variant '{args.variant}': use baseline, "
                          f"patched or series-K (K = 0..{len(series)})")
        k = int(m.group(1))
    if not 0 <= k <= len(series):
        raise Failure(f"--patches {k}: the series has {len(series)} patches")
    return k


def variant_name(k, total):
    if k == 0:
        return "baseline"
    return "patched" if k == total else f"series-{k}"


def fragments(series_dir, flavour):
    """Config fragments in merge order. The series directory's series.config
    holds the options that patches of the series introduce: see
    verify_config()."""
    series_config = os.path.join(series_dir, SERIES_CONFIG)
    return ([os.path.join(CONFIG_DIR, "base.config")]
            + ([series_config] if os.path.isfile(series_config) else [])
            + [os.path.join(CONFIG_DIR, f"{flavour}.config")])


def plan(args):
    """Everything about a variant that can be known without building it."""
    series_dir = os.path.abspath(args.series_dir)
    src = source_info()
    series = read_series(series_dir)
    k = resolve_patches(args, series)
    patches = [os.path.join(series_dir, p) for p in series[:k]]
    frags = fragments(series_dir, args.flavour)
    for f in frags:
        if not os.path.isfile(f):
            raise Failure(f"config fragment {f} missing (flavours: "
                          f"{', '.join(FLAVOURS)})")
    series_hash = sha(*[read(p, "rb") for p in patches])[:12]
    config_hash = sha(args.flavour, *[read(f, "rb") for f in frags])[:12]
    tree_key = f"{src['id']}-{series_hash}"
    root = cache_root()
    return {
        "variant": variant_name(k, len(series)),
        "patches": k,
        "series_length": len(series),
        "patch_names": series[:k],
        "patch_paths": patches,
        "flavour": args.flavour,
        "fragments": frags,
        "source": src,
        "series_hash": series_hash,
        "config_hash": config_hash,
        "root": root,
        "pristine": os.path.join(root, "src", f"pristine-{src['id']}"),
        "tree": os.path.join(root, "src", tree_key),
        # A direct child of the tree: kbuild then uses srctree := .., so
        # compiler command lines are the same for every tree and ccache
        # hits across variants.
        "build": os.path.join(root, "src", tree_key, f"build-{args.flavour}"),
        "store": os.path.join(root, "kernels",
                              f"{tree_key}-{args.flavour}-{config_hash}"),
        "localversion": LOCALVERSION_FMT.format(k=k, flavour=args.flavour),
    }


def run(cmd, cwd=None, env=None, logfile=None, what=None):
    """Run a command; on failure raise with the tail of its output."""
    out = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, check=False)
    if logfile:
        with open(logfile, "a") as f:
            f.write(f"$ {' '.join(cmd)}\n{out.stdout}")
    if out.returncode != 0:
        tail = "\n".join(out.stdout.splitlines()[-25:])
        raise Failure(f"{what or ' '.join(cmd)} failed (exit {out.returncode}):"
                      f"\n{tail}")
    return out.stdout


def unpack_pristine(p):
    if os.path.isdir(p["pristine"]):
        return
    src = p["source"]
    log(f"unpacking {src['tarball']} ({src['package']} {src['version']}) "
        f"into {p['pristine']}")
    tmp = p["pristine"] + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    t0 = time.time()
    run(["tar", "-xJf", src["tarball"], "-C", tmp], what="unpacking the source")
    entries = os.listdir(tmp)
    if len(entries) != 1:
        raise Failure(f"{src['tarball']}: expected one top directory, got "
                      f"{entries}")
    os.rename(tmp, p["pristine"])
    log(f"unpacked in {time.time() - t0:.0f} s")


def pristine_tree(p):
    top = os.listdir(p["pristine"])[0]
    return os.path.join(p["pristine"], top)


def patch_failure(name, output):
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
    return (f"patch {name} does not apply to the {PACKAGE} tree "
            f"({len(files)} file(s) touched):\n{detail}\n"
            f"Refresh it against the current source (see docs/kernel-series.md).")


def prepare_tree(p):
    """Hard-link copy of the pristine tree with the first K patches applied.

    GNU patch writes each patched file anew, so the hard links to the
    pristine tree are broken exactly for the files the series touches.
    """
    if os.path.isdir(p["tree"]):
        return
    tmp = p["tree"] + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    run(["cp", "-al", pristine_tree(p), tmp], what="copying the pristine tree")
    for name, path in zip(p["patch_names"], p["patch_paths"]):
        out = subprocess.run(["patch", "-p1", "--forward", "--batch",
                              "--no-backup-if-mismatch", "-i", path],
                             cwd=tmp, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, check=False)
        if out.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise Failure(patch_failure(name, out.stdout))
    os.rename(tmp, p["tree"])
    log(f"tree {p['tree']}: {p['patches']} patch(es) applied")


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


def verify_config(p, tree):
    """Every requested option must be in the final .config.

    An option of series.config that this tree's Kconfig does not define yet
    belongs to a patch beyond the first K and is not required; with the whole
    series applied, every one of them must exist.
    """
    final = parse_config(read(os.path.join(p["build"], ".config")))
    whole_series = p["patches"] == p["series_length"]
    problems = []
    for frag in p["fragments"]:
        later_ok = os.path.basename(frag) == SERIES_CONFIG and not whole_series
        for lineno, line in enumerate(read(frag).splitlines(), 1):
            want = parse_config(line)
            for opt, val in want.items():
                got = final.get(opt, "n")
                if got == val:
                    continue
                where = kconfig_entry(tree, opt)
                if where is None and later_ok:
                    continue
                if where is None:
                    why = "no such option in this tree's Kconfig"
                else:
                    why = f"defined at {where}"
                problems.append(f"  {os.path.basename(frag)}:{lineno}: {opt}="
                                f"{val} requested, .config has "
                                f"{'not set' if got == 'n' else got} ({why})")
    if problems:
        raise Failure("olddefconfig dropped or changed requested options "
                      "(an unmet dependency, or a typo):\n"
                      + "\n".join(problems))


def make_env(p):
    env = dict(os.environ)
    env.update({
        "CCACHE_DIR": os.environ.get("CCACHE_DIR",
                                     os.path.join(p["root"], "ccache")),
        "CCACHE_BASEDIR": p["root"],
        "CCACHE_MAXSIZE": os.environ.get("CCACHE_MAXSIZE", "8G"),
        # Reproducible identification strings: uname -v names the series.
        "KBUILD_BUILD_TIMESTAMP": "2013-09-11",
        "KBUILD_BUILD_USER": "numa-matrix",
        "KBUILD_BUILD_HOST": "qemu",
        "KBUILD_BUILD_VERSION": f"1-{p['series_hash']}",
        "LC_ALL": "C",
    })
    return env


def configure(p, tree, env, logfile):
    build = p["build"]
    os.makedirs(build, exist_ok=True)
    mk = ["make", "-C", tree, f"O={build}", f"LOCALVERSION={p['localversion']}"]
    run(mk + ["tinyconfig"], env=env, logfile=logfile, what="make tinyconfig")
    run([os.path.join(tree, "scripts/kconfig/merge_config.sh"), "-m", "-O",
         build, os.path.join(build, ".config")] + p["fragments"],
        cwd=tree, env=env, logfile=logfile, what="merge_config.sh")
    run(mk + ["olddefconfig"], env=env, logfile=logfile, what="make olddefconfig")
    verify_config(p, tree)


def compile_kernel(p, tree, env, logfile, jobs):
    cmd = ["make", "-C", tree, f"O={p['build']}", f"-j{jobs}",
           f"LOCALVERSION={p['localversion']}", "CC=ccache gcc", "bzImage"]
    with open(logfile, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        proc = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)
    t0 = time.time()
    last = t0
    while True:
        try:
            rc = proc.wait(timeout=1)
            break
        except subprocess.TimeoutExpired:
            pass
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        if time.time() - last >= 15:
            last = time.time()
            compiled = sum(1 for line in open(logfile, errors="replace")
                           if line.startswith("  CC "))
            log(f"{p['variant']}/{p['flavour']}: {compiled} objects compiled, "
                f"{last - t0:.0f} s")
    if rc != 0:
        tail = "\n".join(read(logfile).splitlines()[-30:])
        raise Failure(f"make bzImage failed (exit {rc}); full log: {logfile}\n"
                      f"{tail}")
    return time.time() - t0


def store(p, seconds):
    tmp = p["store"] + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    shutil.copy2(os.path.join(p["build"], "arch/x86/boot/bzImage"), tmp)
    shutil.copy2(os.path.join(p["build"], ".config"),
                 os.path.join(tmp, "config"))
    release = read(os.path.join(p["build"], "include/config/kernel.release"))
    info = {k: p[k] for k in ("variant", "patches", "patch_names", "flavour",
                              "series_hash", "config_hash", "localversion")}
    info.update({"source_package": p["source"]["package"],
                 "source_version": p["source"]["version"],
                 "kernel_release": release.strip(),
                 "build_seconds": round(seconds, 1),
                 "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    with open(os.path.join(tmp, "info.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    shutil.rmtree(p["store"], ignore_errors=True)
    os.rename(tmp, p["store"])


def build(p, jobs):
    image = os.path.join(p["store"], "bzImage")
    if os.path.isfile(image):
        return image
    os.makedirs(p["root"], exist_ok=True)
    with open(os.path.join(p["root"], "build.lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for another build-kernel to finish")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(image):
            return image
        unpack_pristine(p)
        prepare_tree(p)
        env = make_env(p)
        logfile = os.path.join(p["build"], "build.log")
        os.makedirs(p["build"], exist_ok=True)
        with open(logfile, "w"):
            pass
        log(f"building {p['variant']} ({p['patches']} patch(es)), flavour "
            f"{p['flavour']}; log: {logfile}")
        configure(p, p["tree"], env, logfile)
        seconds = compile_kernel(p, p["tree"], env, logfile, jobs)
        store(p, seconds)
        log(f"built {p['variant']}/{p['flavour']} in {seconds:.0f} s")
    return image


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variant", nargs="?", default="patched",
                    help="baseline, patched or series-K (default: patched)")
    ap.add_argument("--patches", type=int, metavar="K",
                    help="apply the first K patches (overrides the variant)")
    ap.add_argument("--flavour", choices=FLAVOURS, default="perf")
    ap.add_argument("--series-dir", default=SERIES_DIR, help=argparse.SUPPRESS)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--info", action="store_true",
                    help="print the variant's description as JSON, build nothing")
    ap.add_argument("--path-only", action="store_true",
                    help="print the bzImage path if built, fail if not")
    ap.add_argument("--list", action="store_true",
                    help="list the variant names of the current series")
    args = ap.parse_args()
    try:
        if args.list:
            series = read_series(os.path.abspath(args.series_dir))
            for k in range(len(series) + 1):
                print(variant_name(k, len(series)) + (
                      f"\t{series[k - 1]}" if k else "\tno patches"))
            return 0
        p = plan(args)
        image = os.path.join(p["store"], "bzImage")
        if args.info:
            info = {k: v for k, v in p.items() if k != "patch_paths"}
            info["image"] = image
            info["built"] = os.path.isfile(image)
            json.dump(info, sys.stdout, indent=2)
            print()
            return 0
        if args.path_only:
            if not os.path.isfile(image):
                raise Failure(f"kernel {p['variant']}/{p['flavour']} is not "
                              f"built: run kernel-series/build-kernel "
                              f"{p['variant']} --flavour {p['flavour']}")
            print(image)
            return 0
        print(build(p, args.jobs))
        return 0
    except Failure as e:
        print(f"build-kernel: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("build-kernel: interrupted", file=sys.stderr)
        return 130

