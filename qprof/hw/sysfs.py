"""Safe readers for /proc and /sys files under a root directory.

Every reader returns ``(value, problem)``: the value or ``None``, and ``None`` or a
one-line reason naming the file. Nothing here raises for bad hardware data: files go
missing when CPUs go offline between reads, kernels leave them empty or write garbage,
and snapshots copied from other machines may be truncated.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

# sysfs files are tiny; /proc/cpuinfo on a 256-CPU machine is ~300 KB.
MAX_READ_BYTES = 4 * 1024 * 1024


CpuSet = set[int]  # (named outside SysRoot, whose method `int` shadows the type there)


class SysRoot:
    """A root directory (``/`` or a snapshot) that reads files and collects problems."""

    def __init__(self, root: str | Path = "/") -> None:
        self.root = str(root)
        self._prefix = os.path.abspath(self.root)
        if self._prefix == "/":
            self._prefix = ""
        self.problems: list[str] = []

    def path(self, rel: str) -> str:
        """Absolute path of ``rel`` (a Linux path such as ``/proc/cpuinfo``) under root."""
        return self._prefix + "/" + rel.lstrip("/")

    def exists(self, rel: str) -> bool:
        return os.path.exists(self.path(rel))

    def listdir(self, rel: str) -> list[str]:
        try:
            return sorted(os.listdir(self.path(rel)))
        except OSError:
            return []

    def note(self, problem: str | None) -> None:
        if problem and problem not in self.problems:
            self.problems.append(problem)

    # -- readers returning (value, problem) -------------------------------------------

    def text(self, rel: str) -> tuple[str | None, str | None]:
        return read_text(self.path(rel), rel)

    def int(self, rel: str) -> tuple[int | None, str | None]:
        text, problem = self.text(rel)
        if text is None:
            return None, problem
        return parse_int(text, rel)

    def cpulist(self, rel: str) -> tuple[CpuSet | None, str | None]:
        text, problem = self.text(rel)
        if text is None:
            return None, problem
        return parse_cpulist(text, rel)

    def words(self, rel: str) -> tuple[list[str] | None, str | None]:
        text, problem = self.text(rel)
        if text is None:
            return None, problem
        words = text.split()
        if not words:
            return None, f"{rel}: empty"
        return words, None

    def word(self, rel: str) -> tuple[str | None, str | None]:
        text, problem = self.text(rel)
        if text is None:
            return None, problem
        value = text.strip()
        if not value:
            return None, f"{rel}: empty"
        return value, None


def read_text(path: str, label: str | None = None) -> tuple[str | None, str | None]:
    """Whole text of a small file, or None and why.

    Opened non-blocking so a FIFO where a file should be cannot hang the reader.
    """
    label = label or path
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if os.path.islink(path):
            return None, f"{label}: dangling symlink"
        return None, f"{label}: missing"
    except PermissionError:
        return None, f"{label}: permission denied"
    except IsADirectoryError:
        return None, f"{label}: is a directory, expected a file"
    except OSError as exc:
        return None, f"{label}: {exc.strerror or exc}"
    # sysfs attributes and files on disk come whole in one short read; /proc seq_files
    # may not, so those are read to EOF.
    whole_on_short_read = not label.startswith("/proc/")
    chunks: list[bytes] = []
    try:
        total = 0
        while total < MAX_READ_BYTES:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return None, f"{label}: not a regular file (would block)"
            except OSError as exc:
                if exc.errno == errno.EISDIR:
                    return None, f"{label}: is a directory, expected a file"
                # sysfs answers some reads with EIO/ENODEV/EAGAIN (offline CPU, no driver)
                return None, f"{label}: read failed ({exc.strerror or exc})"
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if whole_on_short_read and len(chunk) < 65536:
                break
        if not chunks:
            # Nothing read: an empty file, or a FIFO/socket where a file should be.
            try:
                mode = os.fstat(fd).st_mode
            except OSError as exc:
                return None, f"{label}: {exc.strerror or exc}"
            if stat.S_ISDIR(mode):
                return None, f"{label}: is a directory, expected a file"
            if not stat.S_ISREG(mode):
                return None, f"{label}: not a regular file"
            return None, f"{label}: empty"
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return data.decode("latin-1"), None


def parse_int(text: str, label: str = "value") -> tuple[int | None, str | None]:
    value = text.strip()
    if not value:
        return None, f"{label}: empty"
    try:
        return int(value, 0) if value.lower().startswith("0x") else int(value), None
    except ValueError:
        shown = value if len(value) <= 20 else value[:20] + "..."
        return None, f"{label}: not a number ({shown!r})"


def parse_cpulist(text: str, label: str = "cpulist") -> tuple[set[int] | None, str | None]:
    """Parse ``0-3,6`` (sysfs lists) or ``0 1 2 3`` (cpufreq related_cpus).

    An empty list (``/sys/devices/system/cpu/offline`` with nothing offline) is the
    empty set, not a problem.
    """
    cpus: set[int] = set()
    for token in text.replace(",", " ").split():
        try:
            if "-" in token:
                first, last = token.split("-", 1)
                lo, hi = int(first), int(last)
                if hi < lo or hi - lo > 65536:
                    return None, f"{label}: bad range {token!r}"
                cpus.update(range(lo, hi + 1))
            else:
                cpus.add(int(token))
        except ValueError:
            return None, f"{label}: not a CPU list ({token!r})"
    return cpus, None


def parse_hexmask(text: str, label: str = "cpumask") -> tuple[set[int] | None, str | None]:
    """Parse a sysfs CPU mask such as ``0f`` or ``00000000,000000ff``."""
    digits = text.strip().replace(",", "")
    if not digits:
        return None, f"{label}: empty"
    try:
        mask = int(digits, 16)
    except ValueError:
        return None, f"{label}: not a CPU mask ({digits[:20]!r})"
    return {bit for bit in range(mask.bit_length()) if mask >> bit & 1}, None


def format_cpulist(cpus: set[int] | list[int]) -> str:
    """``[0, 1, 2, 3, 6]`` -> ``"0-3,6"``."""
    values = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(parts)


_CPU_IN_PROBLEM = re.compile(r"\bcpu(\d+)\b")
_CPUS_IN_PROBLEM = re.compile(r"\bCPUs ([0-9,\-]+)")
_POLICY_IN_PROBLEM = re.compile(r"/cpufreq/policy(\d+)/")


def problems_by_cpu(problems: list[str], domains: dict[int, list[int]] | None = None
                    ) -> dict[int, list[str]]:
    """Attribute each problem to the CPUs it names (``cpu6/...``, ``cpu6:``, ``CPUs 6-7``,
    or a cpufreq ``policyN`` directory, which covers ``domains[N]``), so that every CPU
    row of ``--json`` carries the reasons its null fields are null."""
    out: dict[int, list[str]] = {}
    for problem in problems:
        cpus = {int(m) for m in _CPU_IN_PROBLEM.findall(problem)}
        for listed in _CPUS_IN_PROBLEM.findall(problem):
            parsed, _ = parse_cpulist(listed.rstrip(",-"))
            cpus |= parsed or set()
        for policy in _POLICY_IN_PROBLEM.findall(problem):
            cpus |= set((domains or {}).get(int(policy), [int(policy)]))
        for cpu in cpus:
            out.setdefault(cpu, []).append(problem)
    return out


def parse_cpu_arg(text: str) -> list[int]:
    """A CPU list a user typed (``0,2-3``), through :func:`parse_cpulist`: the sorted CPUs.
    ValueError saying what is wrong (not a list, a backwards range, nothing in it)."""
    cpus, problem = parse_cpulist(text, "CPU list")
    if problem:
        raise ValueError(problem)
    if not cpus:
        raise ValueError(f"no CPUs in {text!r}")
    return sorted(cpus)
