"""``qprof snapshot DIR``: copy the /proc and /sys files qprof reads into a directory.

The copy is a plain-file tree (symlinks resolved) that any qprof reader accepts as
``--root DIR`` on another machine, so a machine can be inspected without access to it.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from qprof.atomicfile import private_dir, write_private
from qprof.hw.cpudir import CPU_DIR
from qprof.hw.sysfs import SysRoot

MANIFEST = "qprof-snapshot.json"

_SINGLE_FILES = (
    "/proc/cpuinfo", "/proc/loadavg", "/proc/uptime", "/proc/stat",
    "/proc/sys/kernel/osrelease",
    f"{CPU_DIR}/online", f"{CPU_DIR}/possible", f"{CPU_DIR}/present", f"{CPU_DIR}/offline",
    f"{CPU_DIR}/kernel_max", f"{CPU_DIR}/modalias", f"{CPU_DIR}/isolated",
    f"{CPU_DIR}/smt/active", f"{CPU_DIR}/smt/control", f"{CPU_DIR}/cpufreq/boost",
    "/sys/devices/cpu_core/cpus", "/sys/devices/cpu_atom/cpus",
)
# Directories copied file by file (one level), relative to each match.
_CPU_SUBDIRS = ("topology", "cpufreq", "thermal_throttle", "acpi_cppc")
_CACHE_FILES = ("level", "type", "size", "shared_cpu_list")
_THERMAL_ZONE_FILES = ("type", "temp", "policy", "mode")
_COOLING_FILES = ("type", "cur_state", "max_state")
_SKIP = re.compile(r"(trans_table|scaling_setspeed)$")


@dataclass
class SnapshotResult:
    dest: str
    copied: int = 0
    failed: list[str] = field(default_factory=list)


def _copy(sr: SysRoot, rel: str, dest: Path, result: SnapshotResult) -> None:
    src = sr.path(rel)
    if not os.path.exists(src) or os.path.isdir(src) or _SKIP.search(rel):
        return
    text, problem = sr.text(rel)
    if text is None:
        if problem and not problem.endswith(": empty"):
            result.failed.append(problem)
        text = ""  # empty files are facts too (e.g. "offline" with nothing offline)
    target = dest / rel.lstrip("/")
    write_private(private_dir(target.parent), target.name, text)
    result.copied += 1


def _copy_dir_files(sr: SysRoot, rel_dir: str, dest: Path, result: SnapshotResult,
                    names: tuple[str, ...] | None = None) -> None:
    for name in names or tuple(sr.listdir(rel_dir)):
        _copy(sr, f"{rel_dir}/{name}", dest, result)


def take_snapshot(dest: str | Path, root: str | Path = "/") -> SnapshotResult:
    sr = SysRoot(root)
    dest = private_dir(dest)
    result = SnapshotResult(dest=str(dest))
    for rel in _SINGLE_FILES:
        _copy(sr, rel, dest, result)
    for name in sr.listdir(CPU_DIR):
        if re.fullmatch(r"cpu\d+", name):
            base = f"{CPU_DIR}/{name}"
            _copy(sr, f"{base}/online", dest, result)
            _copy(sr, f"{base}/cpu_capacity", dest, result)
            for sub in _CPU_SUBDIRS:
                _copy_dir_files(sr, f"{base}/{sub}", dest, result)
            for index in sr.listdir(f"{base}/cache"):
                if index.startswith("index"):
                    _copy_dir_files(sr, f"{base}/cache/{index}", dest, result, _CACHE_FILES)
        elif name in ("intel_pstate", "amd_pstate"):
            _copy_dir_files(sr, f"{CPU_DIR}/{name}", dest, result)
    for name in sr.listdir(f"{CPU_DIR}/cpufreq"):
        if name.startswith("policy"):
            _copy_dir_files(sr, f"{CPU_DIR}/cpufreq/{name}", dest, result)
    thermal = "/sys/class/thermal"
    for name in sr.listdir(thermal):
        if name.startswith("thermal_zone"):
            _copy_dir_files(sr, f"{thermal}/{name}", dest, result, _THERMAL_ZONE_FILES)
            for trip in sr.listdir(f"{thermal}/{name}"):
                if trip.startswith("trip_point_") and trip.endswith(("_temp", "_type")):
                    _copy(sr, f"{thermal}/{name}/{trip}", dest, result)
        elif name.startswith("cooling_device"):
            _copy_dir_files(sr, f"{thermal}/{name}", dest, result, _COOLING_FILES)
    hwmon = "/sys/class/hwmon"
    for name in sr.listdir(hwmon):
        for entry in sr.listdir(f"{hwmon}/{name}"):
            if entry == "name" or re.fullmatch(r"temp\d+_(input|label)", entry):
                _copy(sr, f"{hwmon}/{name}/{entry}", dest, result)
    manifest = {
        "taken_at": time.time(),
        "source_root": str(root),
        "files": result.copied,
        "failed": result.failed,
        "note": "plain-file copy of /proc and /sys CPU files; read with qprof --root DIR",
    }
    write_private(dest, MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return result
