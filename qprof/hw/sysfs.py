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
# A sysfs attribute is at most one page (4 KiB; 64 KiB on arm64 kernels with 64K pages):
# a longer "attribute" (/dev/zero or a huge file in a --root snapshot) is not one, and
# read whole it became a 4 MiB governor name, printed, stored and sent with every alert.
SYSFS_MAX_BYTES = 64 * 1024
# Control characters (ANSI escapes, carriage returns, NULs; tab and newline are
# structure) never belong in /proc or /sys text; passed on, a governor name with ESC[2J
# or a newline cleared terminals and forged log lines. They become spaces at the read.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
MAX_KHZ = 100_000_000  # 100 GHz


CpuSet = set[int]  # (named outside SysRoot, whose method `int` shadows the type there)
Khz = int  # (likewise)
Chars = int  # (likewise)


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

    def text(self, rel: str, max_bytes: Chars = MAX_READ_BYTES) -> tuple[str | None, str | None]:
        return read_text(self.path(rel), rel, max_bytes)

    def attribute(self, rel: str) -> tuple[str | None, str | None]:
        """A sysfs attribute (or /proc/sys value): at most SYSFS_MAX_BYTES."""
        return self.text(rel, SYSFS_MAX_BYTES)

    def int(self, rel: str) -> tuple[int | None, str | None]:
        text, problem = self.attribute(rel)
        if text is None:
            return None, problem
        return parse_int(text, rel)

    def khz(self, rel: str) -> tuple[Khz | None, str | None]:
        """A frequency file: a positive kHz value a CPU can have, else a problem (a bad
        value must not pass as a maximum and hide, or fake, a cap)."""
        value, problem = self.int(rel)
        if value is not None and not 0 < value <= MAX_KHZ:
            return None, f"{rel}: {value} kHz is not a CPU frequency (1..{MAX_KHZ}): ignored"
        return value, problem

    def cpulist(self, rel: str) -> tuple[CpuSet | None, str | None]:
        text, problem = self.attribute(rel)
        if text is None:
            return None, problem
        return parse_cpulist(text, rel)

    def words(self, rel: str, max_chars: Chars | None = None) -> tuple[list[str] | None,
                                                                     str | None]:
        """The whitespace-separated names of an attribute; ``max_chars``: the longest a
        name may be (a longer one is left out, and said)."""
        text, problem = self.attribute(rel)
        if text is None:
            return None, problem
        words = text.split()
        if not words:
            return None, f"{rel}: empty"
        kept = [w for w in words if max_chars is None or len(w) <= max_chars]
        if len(kept) < len(words):
            long = next(w for w in words if w not in kept)
            return kept or None, f"{rel}: {_shown(long)} is not a name (over {max_chars} chars)"
        return kept, None

    def word(self, rel: str, max_chars: Chars | None = None) -> tuple[str | None, str | None]:
        """A one-word attribute (a governor, a driver, a type): its first token, so a
        newline cannot carry a second line into a log; ``max_chars``: the longest the
        kernel makes it (a longer one is None, and said)."""
        text, problem = self.attribute(rel)
        if text is None:
            return None, problem
        words = text.split()
        if not words:
            return None, f"{rel}: empty"
        if max_chars is not None and len(words[0]) > max_chars:
            return None, f"{rel}: {_shown(words[0])} is not a name (over {max_chars} chars)"
        return words[0], None

    def line(self, rel: str) -> tuple[str | None, str | None]:
        """A one-line attribute that may hold spaces (a sensor label): its first line."""
        text, problem = self.attribute(rel)
        if text is None:
            return None, problem
        value = next((x.strip() for x in text.splitlines() if x.strip()), "")
        if not value:
            return None, f"{rel}: empty"
        return value, None


def kernel_text(path: str | Path, max_bytes: int = MAX_READ_BYTES) -> str:
    """The text of a kernel file (/proc/cpuinfo, /proc/stat under a root) as
    :func:`read_text` reads it, or OSError saying why: the one reader for callers that
    handle OSError."""
    text, problem = read_text(str(path), None, max_bytes)
    if text is None:
        raise OSError(problem)
    return text


def read_text(path: str, label: str | None = None,
              max_bytes: int = MAX_READ_BYTES) -> tuple[str | None, str | None]:
    """Whole text of a small file (control characters but tab and newline made spaces),
    or None and why; a file longer than ``max_bytes`` is not read.

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
        while total <= max_bytes:
            want = min(65536, max_bytes + 1 - total)  # one byte past the limit tells
            try:
                chunk = os.read(fd, want)
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
            if whole_on_short_read and len(chunk) < want:
                break
        if total > max_bytes:
            return None, f"{label}: longer than {max_bytes} bytes, not a file of its kind: not read"
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
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return _CONTROL.sub(" ", text), None


# Linux's NR_CPUS is at most 8192 today; anything past this is not a real CPU list.
MAX_CPUS = 65536


def _shown(token: str) -> str:
    """A bad token for a problem message: never the whole of a huge one."""
    return repr(token) if len(token) <= 20 else repr(token[:20]) + f"... ({len(token)} chars)"


def parse_int(text: str, label: str = "value") -> tuple[int | None, str | None]:
    value = text.strip()
    if not value:
        return None, f"{label}: empty"
    if len(value) > 40:  # no sysfs number is this long; int() of it would be costly
        return None, f"{label}: not a number ({_shown(value)})"
    try:
        return int(value, 0) if value.lower().startswith("0x") else int(value), None
    except ValueError:
        return None, f"{label}: not a number ({_shown(value)})"


def _decimal(text: str) -> bool:
    return text.isascii() and text.isdigit()


def parse_cpulist(text: str, label: str = "cpulist") -> tuple[set[int] | None, str | None]:
    """Parse ``0-3,6`` (sysfs lists) or ``0 1 2 3`` (cpufreq related_cpus).

    An empty list (``/sys/devices/system/cpu/offline`` with nothing offline) is the
    empty set, not a problem. CPU numbers must be below MAX_CPUS.
    """
    cpus: set[int] = set()
    for token in text.replace(",", " ").split():
        first, dash, last = token.partition("-")
        if not _decimal(first) or (dash and not _decimal(last)) or len(token) > 20:
            return None, f"{label}: not a CPU list ({_shown(token)})"
        lo, hi = int(first), int(last) if dash else int(first)
        if hi < lo:
            return None, f"{label}: bad range {_shown(token)}"
        if hi >= MAX_CPUS:
            return None, f"{label}: CPU {hi} is beyond {MAX_CPUS} CPUs, not a real CPU list"
        cpus.update(range(lo, hi + 1))
    return cpus, None


def parse_hexmask(text: str, label: str = "cpumask") -> tuple[set[int] | None, str | None]:
    """Parse a sysfs CPU mask such as ``0f`` or ``00000000,000000ff`` (in linear time)."""
    digits = text.strip().replace(",", "")
    if not digits:
        return None, f"{label}: empty"
    if len(digits) > MAX_CPUS // 4:
        return None, f"{label}: a mask of {len(digits) * 4} bits is beyond {MAX_CPUS} CPUs"
    cpus: set[int] = set()
    for i, ch in enumerate(reversed(digits)):
        try:
            nibble = int(ch, 16)
        except ValueError:
            return None, f"{label}: not a CPU mask ({_shown(digits)})"
        cpus.update(4 * i + b for b in range(4) if nibble >> b & 1)
    return cpus, None


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
