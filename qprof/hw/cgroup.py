"""A cgroup's CPU limit: the CFS quota and period, its throttling counts, its cpuset.

CFS throttling is the container world's frequency cap: a cgroup over its quota is stopped
for the rest of each period, so wall-clock timing slows as under a capped clock. Read for
qprof's own cgroup (``/proc/self/cgroup``) or a node's (``--node-cgroup PATH``,
``--node-unit NAME.service``), cgroup v1 (``cpu.cfs_quota_us``, ``cpu.stat``,
``cpuset.effective_cpus``) or v2 (``cpu.max``, ``cpu.stat``, ``cpuset.cpus.effective``),
under ``--root``. The quota that binds is the tightest of the cgroup and its ancestors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from qprof.hw.sysfs import format_cpulist, parse_cpulist, read_text

CAUSE = "cgroup CPU quota"  # the cap cause a throttled run carries


@dataclass(frozen=True)
class Throttling:
    """``cpu.stat``'s counters (cumulative since the cgroup was made)."""

    periods: int
    throttled: int  # periods in which the cgroup was stopped
    throttled_us: int

    def since(self, before: Throttling) -> Throttling:
        return Throttling(self.periods - before.periods, self.throttled - before.throttled,
                          self.throttled_us - before.throttled_us)


@dataclass(frozen=True)
class CpuLimit:
    """One cgroup's CPU limit (``quota_us`` None: no quota)."""

    version: int  # 1 or 2
    path: str  # the cgroup's directory
    quota_us: int | None
    period_us: int | None
    limited_by: str | None  # the directory whose quota binds (itself or an ancestor)
    cpuset: tuple[int, ...] | None  # the effective cpuset (None: not readable)
    throttling: Throttling | None  # of ``limited_by`` (else of the cgroup)

    @property
    def cpus(self) -> float | None:
        """The quota in CPUs (0.5: half of one CPU's time each period)."""
        if self.quota_us is None or not self.period_us:
            return None
        return self.quota_us / self.period_us

    @property
    def factor(self) -> float | None:
        """How much slower one busy thread runs at most under the quota (>= 1)."""
        return max(1.0, 1.0 / self.cpus) if self.cpus else None

    def text(self) -> str:
        where = f"cgroup v{self.version} {self.path}"
        if self.cpus is None:
            head = f"{where}: no CPU quota"
        else:
            head = (f"{where}: CPU quota {self.cpus:.2f} CPU ({self.quota_us} us every "
                    f"{self.period_us} us)")
            if self.limited_by and self.limited_by != self.path:
                head += f", set on {self.limited_by}"
        if self.cpuset is not None:
            head += f", cpuset {format_cpulist(list(self.cpuset))}"
        t = self.throttling
        if self.cpus is not None and t is not None:
            head += f", throttled {t.throttled} of {t.periods} periods so far"
        return head


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().lstrip("-").isdigit() else None


def _first_line(path: Path) -> str | None:
    text, _ = read_text(str(path))
    return text.strip().splitlines()[0].strip() if text and text.strip() else None


def _quota(d: Path, version: int) -> tuple[int | None, int | None] | None:
    """(quota, period) of directory ``d`` (None: not a cgroup of this version)."""
    if version == 2:
        line = _first_line(d / "cpu.max")
        if line is None:
            return None
        words = line.split()
        period = _int(words[1]) if len(words) > 1 else 100_000
        return (None if words[0] == "max" else _int(words[0])), period
    quota = _int(_first_line(d / "cpu.cfs_quota_us"))
    period = _int(_first_line(d / "cpu.cfs_period_us"))
    if quota is None and period is None:
        return None
    return (quota if quota is not None and quota > 0 else None), period


def read_throttling(d: Path) -> Throttling | None:
    text, _ = read_text(str(d / "cpu.stat"))
    if text is None:
        return None
    f: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[1].isdigit():
            f[words[0]] = int(words[1])
    if "nr_periods" not in f:
        return None
    us = f["throttled_usec"] if "throttled_usec" in f else f.get("throttled_time", 0) // 1000
    return Throttling(f["nr_periods"], f.get("nr_throttled", 0), us)


def _cpuset(d: Path, top: Path, version: int) -> tuple[int, ...] | None:
    names = ("cpuset.cpus.effective",) if version == 2 else ("cpuset.effective_cpus",
                                                             "cpuset.cpus")
    while True:
        for name in names:
            line = _first_line(d / name)
            if line is not None:
                cpus, _ = parse_cpulist(line)
                if cpus is not None:
                    return tuple(sorted(cpus))
        if d == top or d.parent == d:
            return None
        d = d.parent


def _version(d: Path) -> int | None:
    if (d / "cpu.max").exists() or (d / "cgroup.controllers").exists():
        return 2
    if (d / "cpu.cfs_quota_us").exists():
        return 1
    return None


def limit_of(d: Path, top: Path | None = None, cpuset_dir: Path | None = None,
             cpuset_top: Path | None = None) -> CpuLimit | None:
    """The CPU limit of cgroup directory ``d``; ancestors up to ``top`` (the hierarchy's
    mount) count. None: not a cgroup directory."""
    version = _version(d)
    if version is None:
        return None
    top = top or d
    best: tuple[float, Path, int, int] | None = None
    walk = d
    while True:
        q = _quota(walk, version)
        if q is not None and q[0] is not None and q[1]:
            share = q[0] / q[1]
            if best is None or share < best[0]:
                best = (share, walk, q[0], q[1])
        if walk == top or walk.parent == walk or top not in walk.parents:
            break
        walk = walk.parent
    own = _quota(d, version) or (None, None)
    limited = best[1] if best else None
    cpuset = _cpuset(cpuset_dir or d, cpuset_top or top, version) if (
        cpuset_dir or version == 2) else None
    return CpuLimit(version, str(d), best[2] if best else None,
                    best[3] if best else own[1], str(limited) if limited else None,
                    cpuset, read_throttling(limited or d))


def _mounts(root: Path) -> dict[str, tuple[Path, str]]:
    """"2", "cpu", "cpuset" -> (mount directory, the mount's root in the hierarchy)."""
    out: dict[str, tuple[Path, str]] = {}
    text, _ = read_text(str(root / "proc/self/mountinfo"))
    for line in (text or "").splitlines():
        left, _, right = line.partition(" - ")
        a, b = left.split(), right.split()
        if len(a) < 5 or len(b) < 3:
            continue
        where = root / a[4].lstrip("/")
        if b[0] == "cgroup2":
            out.setdefault("2", (where, a[3]))
        elif b[0] == "cgroup":
            opts = b[2].split(",")
            for c in ("cpu", "cpuset"):
                if c in opts:
                    out.setdefault(c, (where, a[3]))
    if not out:  # a snapshot without mountinfo: the usual places
        base = root / "sys/fs/cgroup"
        if (base / "cgroup.controllers").exists():
            out["2"] = (base, "/")
        for c, names in (("cpu", ("cpu", "cpu,cpuacct")), ("cpuset", ("cpuset",))):
            for n in names:
                if (base / n).is_dir():
                    out[c] = (base / n, "/")
                    break
    return out


def _inside(mount: tuple[Path, str], cgroup: str) -> Path:
    where, mount_root = mount
    rel = cgroup
    if mount_root != "/" and (rel == mount_root or rel.startswith(mount_root + "/")):
        rel = rel[len(mount_root):]
    return where / rel.lstrip("/")


def own_limit(root: str | Path = "/", pid: str = "self") -> CpuLimit | None:
    """The CPU limit of process ``pid``'s cgroup (None: no cgroup files here)."""
    root = Path(root)
    text, _ = read_text(str(root / f"proc/{pid}/cgroup"))
    if text is None:
        return None
    paths: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) == 3:
            for c in (parts[1].split(",") if parts[1] else ["2"]):
                paths.setdefault(c, parts[2])
    mounts = _mounts(root)
    if "cpu" in mounts and "cpu" in paths:  # v1's cpu controller (a hybrid may have v2)
        cs = mounts.get("cpuset")
        return limit_of(_inside(mounts["cpu"], paths["cpu"]), mounts["cpu"][0],
                        _inside(cs, paths.get("cpuset", "/")) if cs else None,
                        cs[0] if cs else None)
    if "2" in mounts and "2" in paths:
        return limit_of(_inside(mounts["2"], paths["2"]), mounts["2"][0])
    return None


def node_limit(root: str | Path = "/", cgroup: str | None = None,
               unit: str | None = None) -> CpuLimit | None:
    """A node's limit: its cgroup directory (``--node-cgroup``) or its systemd unit
    (``--node-unit NAME.service``: ``system.slice/NAME.service``)."""
    root = Path(root)
    mounts = _mounts(root)
    if cgroup:
        d = Path(cgroup) if os.path.isabs(cgroup) and Path(cgroup).is_dir() else (
            root / cgroup.lstrip("/"))
        top = next((m for m, _ in mounts.values() if m in d.parents), None)
        return limit_of(d, top)
    if unit:
        for key in ("2", "cpu"):
            if key in mounts:
                d = mounts[key][0] / "system.slice" / unit
                if d.is_dir():
                    return limit_of(d, mounts[key][0])
    return None


class NodeCgroupError(ValueError):
    """``--node-cgroup``/``--node-unit`` names no cgroup here (one line, says which)."""


def node_of(root: str | Path, cgroup: str | None, unit: str | None) -> CpuLimit | None:
    """The node's limit as the options name it (None: neither given)."""
    if not cgroup and not unit:
        return None
    if unit and not unit.endswith(".service"):
        raise NodeCgroupError(f"--node-unit {unit[:100]!r}: expected NAME.service")
    limit = node_limit(root, cgroup, unit)
    if limit is None:
        what = f"--node-cgroup {cgroup[:200]!r}" if cgroup else f"--node-unit {unit!r}"
        raise NodeCgroupError(f"{what}: not a cgroup directory here (cgroup v1 or v2)")
    return limit


def limit_lines(own: CpuLimit | None, node: CpuLimit | None) -> list[str]:
    """The views' lines (topology, the monitor's header): qprof's own when it has a quota,
    and the node's when one is named."""
    lines = [f"this process: {own.text()}"] if own is not None and own.cpus else []
    return lines + ([f"the node: {node.text()}"] if node is not None else [])
