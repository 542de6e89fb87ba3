"""Parser for /proc/cpuinfo (ARM and x86, old and new kernel formats).

Old ARM kernels print ``processor : N`` lines for every CPU and then one block of
``CPU implementer``/``CPU part`` lines that belongs to whichever CPU read the file, or
list several designs at once (``CPU part : 0xc07 & 0xc0f``). Such a block cannot be
attributed to a CPU; it is kept apart as ``shared_midrs`` for the topology reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qprof.hw.parts import midr_value

# Fields that describe the machine, not one processor.
_GLOBAL_KEYS = {"Hardware", "Revision", "Serial", "Processor"}


@dataclass
class MidrParts:
    """MIDR fields as far as the kernel printed them (None = not printed/garbled)."""

    implementer: int | None = None
    variant: int | None = None
    part: int | None = None
    revision: int | None = None
    architecture: str | None = None

    @property
    def complete(self) -> bool:
        return None not in (self.implementer, self.variant, self.part, self.revision)

    @property
    def has_part(self) -> bool:
        return self.implementer is not None and self.part is not None

    @property
    def midr(self) -> int | None:
        if not self.complete:
            return None
        return midr_value(self.implementer, self.variant, self.part, self.revision)  # type: ignore[arg-type]


@dataclass
class CpuinfoData:
    processors: dict[int, dict[str, str]] = field(default_factory=dict)  # in file order
    globals: dict[str, str] = field(default_factory=dict)
    midrs: dict[int, MidrParts] = field(default_factory=dict)  # attributed per CPU
    shared_midrs: list[MidrParts] = field(default_factory=list)  # unattributable block
    problems: list[str] = field(default_factory=list)

    @property
    def hardware(self) -> str | None:
        return self.globals.get("Hardware") or None


def _int(value: str | None, base: int = 0) -> int | None:
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        return int(value, base)
    except ValueError:
        return None


def _midr_list(fields: dict[str, str]) -> list[MidrParts]:
    """One MidrParts per design listed (``&``-separated on some big.LITTLE kernels)."""

    def split(key: str) -> list[str]:
        raw = fields.get(key)
        return [v.strip() for v in raw.split("&")] if raw is not None else []

    impls, variants, parts, revs = (split(k) for k in (
        "CPU implementer", "CPU variant", "CPU part", "CPU revision"))
    count = max(len(impls), len(variants), len(parts), len(revs))
    if count == 0:
        return []
    arch = fields.get("CPU architecture")
    out = []
    for i in range(count):
        def pick(values: list[str], i: int = i) -> str | None:
            if not values:
                return None
            return values[i] if i < len(values) else values[-1]

        out.append(MidrParts(
            implementer=_int(pick(impls), 16),
            variant=_int(pick(variants), 16),
            part=_int(pick(parts), 16),
            revision=_int(pick(revs), 10),
            architecture=arch.strip() if arch else None,
        ))
    return out


def parse_cpuinfo(text: str) -> CpuinfoData:
    data = CpuinfoData()
    current: dict[str, str] | None = None
    last_cpu: int | None = None
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        # The kernel ends every line with a newline: this file was cut short (copied
        # while truncated, disk full). A cut value ("CPU part : 0x8") would be misread.
        data.problems.append(f"/proc/cpuinfo: truncated (last line {lines[-1][:40]!r} "
                             "incomplete, ignored)")
        lines.pop()
    for raw in lines:
        key, sep, value = raw.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if not key:
            continue
        if key == "processor":
            cpu = _int(value, 10)
            if cpu is None:
                data.problems.append(f"/proc/cpuinfo: bad processor line {raw.strip()!r}")
                continue
            current = data.processors.setdefault(cpu, {})
            last_cpu = cpu
            continue
        if key in _GLOBAL_KEYS:
            data.globals.setdefault(key, value)
            continue
        if current is not None:
            current.setdefault(key, value)
        else:
            data.globals.setdefault(key, value)

    with_midr = [cpu for cpu, fields in data.processors.items() if "CPU implementer" in fields
                 or "CPU part" in fields or "CPU variant" in fields]
    multi = any("&" in data.processors[c].get("CPU part", "") for c in with_midr)
    if (len(with_midr) == 1 and with_midr[0] == last_cpu and len(data.processors) > 1) or multi:
        # One block after all processor lines: it describes some CPU, we cannot tell which.
        data.shared_midrs = _midr_list(data.processors[with_midr[0]])
        for cpu in with_midr:
            for key in ("CPU implementer", "CPU variant", "CPU part", "CPU revision"):
                data.processors[cpu].pop(key, None)
    else:
        for cpu in with_midr:
            midrs = _midr_list(data.processors[cpu])
            if midrs:
                data.midrs[cpu] = midrs[0]
    if not data.processors and ("CPU implementer" in data.globals or "CPU part" in data.globals):
        data.shared_midrs = _midr_list(data.globals)
    return data
