"""Instruction-set features that move post-quantum verification costs.

liboqs' ML-DSA verify has AVX2 code paths and its SLH-DSA does not (the seeds' ratios
change with AVX2), SHAKE/SHA-2 costs change with SHA-NI / ARMv8.2 SHA3 and with SVE.
So the topology reports, per CPU and per cluster, which of these features the kernel
lists (x86 ``flags``, ARM ``Features`` in /proc/cpuinfo) and which it does not.
"""

from __future__ import annotations

import os
from typing import Any

from qprof.hw.cpuinfo import CpuinfoData
from qprof.hw.model import CpuTopo
from qprof.hw.sysfs import SysRoot

# In display order. Only features that some verifier or hash backend uses.
X86_FEATURES = ("avx2", "bmi2", "adx", "avx512f", "avx512bw", "avx512vl", "sha_ni", "aes",
                "vaes")
ARM_FEATURES = ("asimd", "neon", "aes", "pmull", "sha2", "sha3", "sha512", "asimddp", "sve",
                "sve2")

# Source labels (JSON ``isa_source``).
FROM_CPUINFO = "/proc/cpuinfo"
FROM_SHARED_BLOCK = "/proc/cpuinfo (one block for all CPUs)"
FROM_CLUSTER = "cluster"
FROM_SYSTEM_WIDE = "/proc/cpuinfo of another CPU (arm64 hwcaps are system-wide)"
FROM_PY_CPUINFO = "py-cpuinfo (CPUID)"

_py_cpuinfo_flags: list[str] | None = None
_py_cpuinfo_done = False


def relevant(x86: bool) -> tuple[str, ...]:
    return X86_FEATURES if x86 else ARM_FEATURES


def pick(words: str | list[str] | None, x86: bool) -> list[str] | None:
    """The relevant features present in a flags/Features line, in display order."""
    if words is None:
        return None
    have = set(words.split() if isinstance(words, str) else words)
    if not x86 and "asimd" in have:
        have.discard("neon")  # arm64 kernels say asimd; arm32 kernels say neon
    return [f for f in relevant(x86) if f in have]


def missing(present: list[str] | None, x86: bool, arch: str | None) -> list[str] | None:
    """Relevant features the CPU does not list (None when the feature list is unknown)."""
    if present is None:
        return None
    names = relevant(x86)
    if not x86:
        # Say "no sve" on arm64, not "no neon"; on arm32 the arm64-only names mean nothing.
        names = tuple(n for n in names if n != "neon") if arch == "arm64" else (
            "neon", "aes", "pmull", "sha2")
    return [f for f in names if f not in present]


def py_cpuinfo_flags() -> list[str] | None:
    """Flags from py-cpuinfo (CPUID on x86), for the live machine when /proc/cpuinfo
    lists none (sandboxes and some containers synthesise a cpuinfo without flags).

    Slow (~1 s: py-cpuinfo runs a subprocess), so asked once per process and only then.
    """
    global _py_cpuinfo_flags, _py_cpuinfo_done
    if not _py_cpuinfo_done:
        _py_cpuinfo_done = True
        try:
            import cpuinfo  # py-cpuinfo

            info: dict[str, Any] = cpuinfo.get_cpu_info()
            flags = info.get("flags")
            _py_cpuinfo_flags = [str(f) for f in flags] if flags else None
        except Exception:  # py-cpuinfo failing must never break a topology read
            _py_cpuinfo_flags = None
    return _py_cpuinfo_flags


def short(present: list[str] | None, absent: list[str] | None, x86: bool) -> str:
    """Table cell: ``avx2 bmi2 sha_ni`` plus ``no avx512f`` for the features that decide
    which code path runs; ``unknown`` when the kernel lists no features."""
    if present is None:
        return "unknown"
    shown = [f for f in present if f in (("avx2", "avx512f", "sha_ni", "bmi2") if x86
                                         else ("asimd", "neon", "sha3", "sve", "sve2"))]
    key_absent = [f for f in (absent or []) if f in (("avx2", "avx512f") if x86
                                                    else ("asimd", "sha3", "sve"))]
    parts = shown + [f"no {f}" for f in key_absent]
    return " ".join(parts) if parts else "none of interest"


def fill_isa(cpus: list[CpuTopo], groups: list[list[int]], info: CpuinfoData, x86: bool,
             arch: str | None, sr: SysRoot) -> None:
    """Per-CPU feature lists from /proc/cpuinfo; CPUs it leaves out (offline, old ARM
    kernels printing one block) take their cluster's; py-cpuinfo on the live machine
    when the kernel lists no features at all."""
    key = "flags" if x86 else "Features"
    blocks = [c for c, fields in info.processors.items() if key in fields]
    shared: str | None = info.globals.get(key)
    one_block = len(blocks) == 1 and len(info.processors) > 1
    if one_block:
        # Old ARM kernels: one Features line after all processor lines, for every CPU.
        shared = info.processors[blocks[0]][key]
    by_cpu = {c.cpu: c for c in cpus}
    for t in cpus:
        own = None if one_block else info.processors.get(t.cpu, {}).get(key)
        if own is not None:
            t.isa, t.isa_source = pick(own, x86), FROM_CPUINFO
        elif shared is not None and t.present:
            t.isa, t.isa_source = pick(shared, x86), FROM_SHARED_BLOCK
    for g in groups:
        known = [by_cpu[c] for c in g if by_cpu[c].isa is not None]
        for c in g:
            t = by_cpu[c]
            if t.isa is None and known and t.present:
                t.isa, t.isa_source = list(known[0].isa or []), FROM_CLUSTER
    if arch == "arm64":
        # arm64 kernels print the system-wide hwcaps on every CPU: one line holds for all.
        known_any = next((t.isa for t in cpus if t.isa is not None), None)
        for t in cpus:
            if t.isa is None and known_any is not None and t.present:
                t.isa, t.isa_source = list(known_any), FROM_SYSTEM_WIDE
    if not any(t.isa is not None for t in cpus) and info.processors:
        flags = py_cpuinfo_flags() if os.path.abspath(sr.root) == "/" else None
        if flags:
            for t in cpus:
                if t.present:
                    t.isa, t.isa_source = pick(flags, x86), FROM_PY_CPUINFO
        else:
            sr.note(f"/proc/cpuinfo: no {key} line: instruction-set features unknown")
    for t in cpus:
        t.isa_missing = missing(t.isa, x86, arch)
