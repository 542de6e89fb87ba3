"""systemd/qprof.service: `systemd-analyze verify` passes and `security` rates it <= 2.5."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[1] / "systemd" / "qprof.service"


def analyze() -> str:
    binary = shutil.which("systemd-analyze")
    if binary is None:
        pytest.skip("systemd-analyze not installed (Debian package 'systemd')")
    return binary


def local_unit(tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at this venv's qprof (verify wants it to exist)."""
    qprof = Path(sys.executable).with_name("qprof")
    assert qprof.exists(), f"{qprof} missing: is qprof installed in this venv?"
    text = re.sub(r"^ExecStart=(\S+)", f"ExecStart={qprof}", UNIT.read_text(), flags=re.M)
    unit = tmp_path / "qprof.service"
    unit.write_text(text)
    return unit


def test_unit_has_what_the_daemon_relies_on() -> None:
    text = UNIT.read_text()
    for line in ("Type=notify", "WatchdogSec=", "Restart=on-failure", "DynamicUser=yes",
                 "StateDirectory=qprof", "CacheDirectory=qprof",
                 "Environment=NUMBA_CACHE_DIR=%C/qprof",
                 "Environment=QPROF_CACHE_DIR=%C/qprof", "Nice=10", "ProtectSystem=strict",
                 "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service",
                 "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "RestartPreventExitStatus=2"):
        assert line in text, line
    assert "MemoryDenyWriteExecute=yes" not in text  # numba's JIT needs W+X memory


def test_systemd_analyze_verify(tmp_path: Path) -> None:
    binary = analyze()
    r = subprocess.run([binary, "verify", str(local_unit(tmp_path))], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "qprof.service" not in r.stderr, r.stderr  # no warnings about our unit


def test_systemd_analyze_security_score(tmp_path: Path) -> None:
    binary = analyze()
    r = subprocess.run([binary, "security", "--offline=yes", str(local_unit(tmp_path))],
                       capture_output=True, text=True, timeout=60)
    if "--offline" in r.stderr and "unrecognized" in r.stderr:
        pytest.skip("systemd-analyze too old for --offline (needs systemd >= 250)")
    m = re.search(r"Overall exposure level for qprof\.service: ([0-9.]+)", r.stdout)
    assert m, r.stdout + r.stderr
    score = float(m.group(1))
    print(f"systemd-analyze security: {score}")
    assert score <= 2.5, r.stdout
