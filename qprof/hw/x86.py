"""x86 core designs: what each CPU is, from its /proc/cpuinfo block (vendor, family,
model), with Intel hybrid P/E cores told apart and, under a hypervisor, the design
labelled as the hypervisor reports it (or as the flags suggest, when they contradict it).
"""

from __future__ import annotations

from qprof.hw import parts
from qprof.hw.cpuinfo import CpuinfoData
from qprof.hw.model import CpuTopo
from qprof.hw.sysfs import SysRoot

Fields = dict[str, str]  # one /proc/cpuinfo processor block


def blocks_by_cpu(info: CpuinfoData, cpus: list[int]) -> dict[int, Fields]:
    """Each CPU's block; CPUs /proc/cpuinfo leaves out (offline) take any CPU's."""
    any_block = next(iter(info.processors.values()), {})
    return {c: info.processors.get(c, any_block) for c in cpus}


def design(blocks: dict[int, Fields]) -> str | None:
    """The core design the first block names (module clustering depends on it)."""
    first = next(iter(blocks.values()), None)
    if first is None:
        return None
    return parts.x86_part(first.get("vendor_id"), _int_field(first, "cpu family"),
                          _int_field(first, "model")).uarch


def fill_x86(t: CpuTopo, fields: Fields, hybrid: bool, sr: SysRoot) -> None:
    t.vendor_id = fields.get("vendor_id")
    t.family = _int_field(fields, "cpu family")
    t.model = _int_field(fields, "model")
    t.stepping = _int_field(fields, "stepping")
    t.model_name = fields.get("model name")
    decoded = parts.x86_part(t.vendor_id, t.family, t.model)
    t.vendor, t.uarch, t.part_name = decoded.vendor, decoded.uarch, t.model_name
    t.uarch_source = "cpuid" if decoded.uarch else None
    if decoded.problem:
        sr.note(f"cpu{t.cpu}: {decoded.problem}")
    flags = set(fields.get("flags", "").split())
    if "hypervisor" in flags and decoded.uarch:
        _label_vm_design(t, decoded.uarch, flags, sr)
        return
    if hybrid and t.core_type:
        designs = parts.intel_hybrid_designs(decoded.uarch)
        if designs:
            t.uarch = designs[0] if t.core_type == "cpu_core" else designs[1]
        else:
            kind = "P-core" if t.core_type == "cpu_core" else "E-core"
            t.uarch = f"{decoded.uarch or 'unknown'} {kind}"


def _label_vm_design(t: CpuTopo, reported: str, flags: set[str], sr: SysRoot) -> None:
    """Under a hypervisor, family/model are the hypervisor's CPU model, not necessarily the
    host's design: label it as reported, and where the flags show a feature that design
    never had, say what the flags suggest instead of naming it."""
    ident = f"family {t.family} model {t.model}"
    hint = parts.x86_flag_contradiction(t.vendor, reported, flags)
    if hint is None:
        t.uarch, t.uarch_source = f"{reported}, VM-reported", "hypervisor cpu model"
        sr.note(f"under a hypervisor: core design {reported} is the hypervisor's CPU model "
                f"({ident}), as reported; the host's design may differ")
        return
    t.uarch, t.uarch_source = f"{hint.label}, by flags", "flags"
    sr.note(f"under a hypervisor: its CPU model ({ident}) says {reported}, but the flags "
            f"show {hint.flag}, which {reported} never had: by the flags, {hint.suggests}")


def _int_field(fields: Fields, key: str) -> int | None:
    try:
        return int(fields[key].strip())
    except (KeyError, ValueError):
        return None
