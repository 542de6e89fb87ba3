"""Real faults for the tests of what must fail cleanly: qprof in a subprocess, one clean
line of error, a small or full tmpfs.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from qprof.measure.records import Measurement, Meta
from qprof.measure.records_parts import CpuRow

if TYPE_CHECKING:
    from test_service_daemon import DaemonProc

QPROF = [sys.executable, "-m", "qprof"]


def qprof(*args: str, timeout: float = 60, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*QPROF, *args], capture_output=True, text=True, timeout=timeout,
                          **kw)  # type: ignore[call-overload]


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A small tmpfs mounted at ``where`` for the test (skips when mounting is refused)."""
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text[-2000:]
    assert "Traceback" not in text
    return lines[0]


# -- 2. qprof report on malformed lines --------------------------------------------------------

def meta_record() -> Meta:
    return Meta(run_id="r", started_at=1.0, qprof_version="0", command=["qprof", "bench"],
                cpus=[CpuRow(cpu=0)])


def measurement_line(**over: object) -> str:
    d = Measurement(run_id="r", cpu=0, suite="ML-DSA-44", backend="numba",
                    operation="verify", round=0, n=3, median_ns=10.0, p95_ns=12.0,
                    samples_ns=[9.0, 10.0, 11.0]).to_dict()
    d.update(over)
    return json.dumps(d)


BAD_LINES = [
    '{"type": []}',
    '{"type": {}}',
    measurement_line(median_ns=int("9" * 400)),
    "[" * 100_000 + "]" * 100_000,
    measurement_line(cpu="0"),
    measurement_line(n="3"),
    measurement_line(samples_ns="many"),
    measurement_line(samples_ns=[1.0, -2.0, 3.0]),
    measurement_line(cap_factor="2"),
    measurement_line(round=-1),
    json.dumps({**meta_record().to_dict(), "cpus": [1, 2]}),
    json.dumps({**meta_record().to_dict(), "cpus": "0-3"}),
]


# -- 6. untrusted --root snapshots -----------------------------------------------------------

SEEDS_HW = Path(__file__).resolve().parent / "fixtures" / "hw" / "seeds-arm"


CPU_DIR = "sys/devices/system/cpu"


# -- 6. Markdown injection -------------------------------------------------------------------

EVIL = "<script>alert(1)</script> | x\n## forged <img src=x onerror=alert(2)> [l](javascript:3)"


def _assert_inert(md: str) -> None:
    """No raw HTML, link or forged line; every table row has its header's cell count."""
    text = re.sub(r"(`+).+?(?<!`)\1(?!`)", "CODE", md)  # code spans show HTML as text
    assert re.search(r"(?<!\\)[<>]", text) is None, text
    assert re.search(r"(?<!\\)\[", text) is None, text
    assert "\x1b" not in md
    for line in md.splitlines():
        assert not line.startswith(("## forged", "| forged")), line
    cells = None
    for line in md.splitlines():
        if not line.startswith("|"):
            cells = None
            continue
        n = len(re.findall(r"(?<!\\)\|", line))
        cells = n if cells is None else cells
        assert n == cells, line


# -- 11, 13. writing output: devices, FIFOs and symlinks in place; a full disk: one line -----

@contextlib.contextmanager
def full_tmpfs(where: Path) -> Iterator[Path]:
    """A 16 KiB tmpfs, filled: every write to it fails with ENOSPC (skips when mounting is
    refused)."""
    with tmpfs(where, "16k"):
        with open(where / "filler", "wb") as fh, contextlib.suppress(OSError):
            fh.write(b"\0" * 65536)
        yield where


def metrics_port(d: DaemonProc) -> int:
    return int(d.metrics_url.rsplit(":", 1)[1].split("/")[0])


def closed_by_peer(sock: socket.socket, timeout: float) -> bool:
    """True once the other end closed (anything it sent first is read and dropped)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        pass
    return True
