# SPDX-License-Identifier: GPL-2.0
"""What several unit tests need: a bzImage that is only its boot header, and
a stand-in QEMU (data/fake-qemu) with a cache and a KVM device of its own."""

import json
import os

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
FAKE_QEMU = os.path.join(DATA, "fake-qemu")


def fake_bzimage(path, version):
    """The parts of the x86 boot header that name a kernel."""
    data = bytearray(0x1000)
    data[0x202:0x206] = b"HdrS"
    data[0x20E:0x210] = (0x400 - 0x200).to_bytes(2, "little")
    text = version.encode() + b"\0"
    data[0x400:0x400 + len(text)] = text
    with open(path, "wb") as f:
        f.write(data)


def fake_qemu_env(tmp, kvm="works", **more):
    """The environment of a program that boots guests with the stand-in
    QEMU: the cache (kernels, guest run directories, the KVM probe's
    answer) and the KVM device in TMP, and what the stand-in does on KVM."""
    device = os.path.join(tmp, "kvm")
    if not os.path.exists(device):
        open(device, "w").close()
    env = dict(os.environ, NUMA_MATRIX_QEMU=FAKE_QEMU,
               NUMA_MATRIX_CACHE=os.path.join(tmp, "cache"),
               NUMA_MATRIX_KVM=device, FAKE_QEMU_KVM=kvm,
               FAKE_QEMU_LOG=os.path.join(tmp, "qemu.log"))
    env.pop("NUMA_MATRIX_RUNS", None)
    env.update(more)
    return env


def fake_qemu_boots(tmp):
    """What the stand-in QEMU was asked, one dict per boot, in order."""
    try:
        with open(os.path.join(tmp, "qemu.log")) as f:
            return [json.loads(line) for line in f]
    except FileNotFoundError:
        return []


def kernel_plan(**fields):
    """A KernelPlan with placeholders for what a test does not set."""
    from numa_matrix.types import KernelPlan, Source
    values = dict(kind="package", label="k", spec_text="k", spec="k",
                  source=Source(kind="package", id="id", version="6.1.192-3",
                                package="linux-source-6.1",
                                tarball="/usr/src/linux-source-6.1.tar.xz"),
                  source_version="6.1.192-3", compiler="gcc 12.2.0",
                  series_hash="e3b0c44298fc", flavour="perf",
                  config_hash="c1")
    values.update(fields)
    return KernelPlan(**values)
