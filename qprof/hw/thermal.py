"""Thermal zones, cooling devices and x86 throttle counters under a root directory."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from qprof.hw.sysfs import SysRoot

THERMAL_DIR = "/sys/class/thermal"
HWMON_DIR = "/sys/class/hwmon"
_HWMON_TEMP = re.compile(r"^temp(\d+)_input$")
_ZONE = re.compile(r"^thermal_zone(\d+)$")
_COOLING = re.compile(r"^cooling_device(\d+)$")
_CPUFREQ_CPU = re.compile(r"cpufreq-cpu(\d+)$")
_THERMAL_CPUFREQ = re.compile(r"thermal-cpufreq-(\d+)$")


@dataclass
class ThermalZone:
    zone: int
    type: str | None
    temp_c: float | None
    problem: str | None = None


@dataclass
class CoolingDevice:
    device: int
    type: str | None
    cur_state: int | None
    max_state: int | None
    cpus: list[int] | None = None  # CPUs whose frequency this device limits, when known

    @property
    def active(self) -> bool:
        return bool(self.cur_state)


@dataclass
class HwmonTemp:
    """A hwmon temperature (x86 k10temp/coretemp often have no thermal zone)."""

    chip: str | None  # hwmon "name", e.g. "coretemp"
    label: str  # temp*_label, or "tempN"
    temp_c: float | None


@dataclass
class ThermalState:
    zones: list[ThermalZone] = field(default_factory=list)
    cooling: list[CoolingDevice] = field(default_factory=list)
    throttle: dict[int, dict[str, int]] = field(default_factory=dict)  # x86 counters
    hwmon: list[HwmonTemp] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hwmon": [asdict(h) for h in self.hwmon],
            "zones": [asdict(z) for z in self.zones],
            "cooling_devices": [asdict(c) for c in self.cooling],
            "throttle_counts": {str(k): v for k, v in self.throttle.items()},
        }

    def cpu_cooling(self, cpu: int) -> list[CoolingDevice]:
        return [c for c in self.cooling if c.cpus is not None and cpu in c.cpus]


def read_hwmon(sr: SysRoot) -> list[HwmonTemp]:
    out: list[HwmonTemp] = []
    for name in sr.listdir(HWMON_DIR):
        base = f"{HWMON_DIR}/{name}"
        chip, _ = sr.word(f"{base}/name")
        for entry in sr.listdir(base):
            m = _HWMON_TEMP.match(entry)
            if not m:
                continue
            value, _ = sr.int(f"{base}/{entry}")
            label, _ = sr.line(f"{base}/temp{m.group(1)}_label")
            out.append(HwmonTemp(chip, label or f"temp{m.group(1)}",
                                 None if value is None else value / 1000.0))
    return out


def read_thermal(sr: SysRoot, policies: list[list[int]], cpus: list[int],
                 hwmon: bool = False) -> ThermalState:
    """``policies``: CPU lists of the cpufreq policies in order (for thermal-cpufreq-N).
    ``hwmon``: also read /sys/class/hwmon temperatures (env snapshots; not the 1 s loop)."""
    state = ThermalState(hwmon=read_hwmon(sr) if hwmon else [])
    for name in sr.listdir(THERMAL_DIR):
        m = _ZONE.match(name)
        if m:
            base = f"{THERMAL_DIR}/{name}"
            ztype, _ = sr.word(f"{base}/type")
            temp, prob = sr.int(f"{base}/temp")
            # Most zones report millidegrees; a few old drivers report degrees.
            temp_c = None if temp is None else (temp / 1000.0 if abs(temp) >= 1000 else float(temp))
            state.zones.append(ThermalZone(int(m.group(1)), ztype, temp_c, prob))
            continue
        m = _COOLING.match(name)
        if m:
            base = f"{THERMAL_DIR}/{name}"
            ctype, _ = sr.word(f"{base}/type")
            cur, _ = sr.int(f"{base}/cur_state")
            mx, _ = sr.int(f"{base}/max_state")
            state.cooling.append(CoolingDevice(int(m.group(1)), ctype, cur, mx,
                                               _cooling_cpus(ctype, policies)))
    state.zones.sort(key=lambda z: z.zone)
    state.cooling.sort(key=lambda c: c.device)
    for cpu in cpus:
        base = f"/sys/devices/system/cpu/cpu{cpu}/thermal_throttle"
        counts: dict[str, int] = {}
        for key in ("core_throttle_count", "package_throttle_count"):
            value, _ = sr.int(f"{base}/{key}")
            if value is not None:
                counts[key] = value
        if counts:
            state.throttle[cpu] = counts
    return state


def _cooling_cpus(ctype: str | None, policies: list[list[int]]) -> list[int] | None:
    if not ctype:
        return None
    m = _CPUFREQ_CPU.search(ctype)
    if m:
        cpu = int(m.group(1))
        for pol in policies:
            if cpu in pol:
                return list(pol)
        return [cpu]
    m = _THERMAL_CPUFREQ.search(ctype)
    if m:
        index = int(m.group(1))
        return list(policies[index]) if index < len(policies) else None
    return None
