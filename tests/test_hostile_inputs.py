"""Hostile but fair inputs (issue 14, "Seen" 1-8): each gets a clear one-line error or a
clean degraded state, and nothing recorded is lost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from qprof.consensus import ProfileError, load_profile
from qprof.measure.jsonl import read_run
from qprof.measure.records import Measurement, Meta
from qprof.service.config import ConfigError, load_config_file

QPROF = [sys.executable, "-m", "qprof"]


def qprof(*args: str, timeout: float = 60, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*QPROF, *args], capture_output=True, text=True, timeout=timeout,
                          **kw)  # type: ignore[call-overload]


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text[-2000:]
    assert "Traceback" not in text
    return lines[0]


# -- 1. profiles and --config: not UTF-8, deeply nested, nan/inf -----------------------------

NOT_UTF8 = b'name = "x\xff\xfe"\n'
DEEP = b"x = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"


@pytest.mark.parametrize("content,words", [(NOT_UTF8, "not UTF-8"), (DEEP, "nested")],
                         ids=["not-utf8", "deep"])
def test_profile_not_utf8_or_deep_is_a_profile_error(tmp_path: Path, content: bytes,
                                                     words: str) -> None:
    path = tmp_path / "p.toml"
    path.write_bytes(content)
    with pytest.raises(ProfileError, match=words):
        load_profile(path)
    with pytest.raises(ConfigError, match=words):
        load_config_file(path)


@pytest.mark.parametrize("content", [NOT_UTF8, DEEP], ids=["not-utf8", "deep"])
def test_check_and_daemon_exit_2_on_a_bad_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "p.toml"
    path.write_bytes(content)
    r = qprof("check", "--profile", str(path), "--quiet")
    assert r.returncode == 2
    assert str(path) in one_line(r.stderr)
    r = qprof("daemon", "--config", str(path), "--state-dir", str(tmp_path / "s"))
    assert r.returncode == 2
    assert "config error" in one_line(r.stderr)


def test_profile_nan_inf_directly(tmp_path: Path) -> None:
    base = ('name = "t"\nunit_suite = "ML-DSA-44"\nmax_block_verify_units = 200000\n'
            '[verify_units]\n"ML-DSA-44" = 100\n')
    for extra in ("target_block_interval_s = nan\n", "target_block_interval_s = inf\n"):
        path = tmp_path / "p.toml"
        path.write_text(extra + base)
        with pytest.raises(ProfileError, match="target_block_interval_s"):
            load_profile(path)
    path = tmp_path / "p.toml"
    path.write_text(base + '[[reference_cores]]\nname = "c"\n'
                    '[reference_cores.verify_median_ns]\n"ML-DSA-44" = inf\n')
    with pytest.raises(ProfileError, match="verify_median_ns"):
        load_profile(path)


# -- 2. qprof report on malformed lines --------------------------------------------------------

def _meta() -> Meta:
    return Meta(run_id="r", started_at=1.0, qprof_version="0", command=["qprof", "bench"],
                cpus=[{"cpu": 0}])


def _m(**over: object) -> str:
    d = Measurement(run_id="r", cpu=0, suite="ML-DSA-44", backend="numba",
                    operation="verify", round=0, n=3, median_ns=10.0, p95_ns=12.0,
                    samples_ns=[9.0, 10.0, 11.0]).to_dict()
    d.update(over)
    return json.dumps(d)


BAD_LINES = [
    '{"type": []}',
    '{"type": {}}',
    _m(median_ns=int("9" * 400)),
    "[" * 100_000 + "]" * 100_000,
    _m(cpu="0"),
    _m(n="3"),
    _m(samples_ns="many"),
    _m(samples_ns=[1.0, -2.0, 3.0]),
    _m(cap_factor="2"),
    _m(round=-1),
    json.dumps({**_meta().to_dict(), "cpus": [1, 2]}),
    json.dumps({**_meta().to_dict(), "cpus": "0-3"}),
]


def test_read_run_reports_each_malformed_line_and_keeps_the_good(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    good = _m()
    path.write_text("\n".join([_meta().to_json(), good, *BAD_LINES, good]) + "\n")
    run = read_run(path)
    assert run.bad_lines == len(BAD_LINES)
    where = {p.split(": ", 1)[0] for p in run.problems}
    for i in range(len(BAD_LINES)):
        assert f"{path}:{i + 3}" in where
    assert len(run.measurements) == 2
    assert all(len(p) < 400 for p in run.problems)


def test_report_cli_skips_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join([_meta().to_json(), _m(), *BAD_LINES]) + "\n")
    r = qprof("report", str(path))
    assert "Traceback" not in r.stderr
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stderr.count(f"{path}:") >= len(BAD_LINES)
    assert "ML-DSA-44" in r.stdout


def test_report_on_dev_zero_is_bounded() -> None:
    r = qprof("report", "/dev/zero", timeout=120)
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr
    assert "longer than" in r.stderr
    assert r.returncode == 2


# -- found by the real systemd (scripts/test-systemd) ------------------------------------------

def test_liboqs_search_without_a_home_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DynamicUser= service has no $HOME and no passwd entry: Path.home() raises."""
    from qprof.verify.availability import find_liboqs

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    found = find_liboqs({"OQS_INSTALL_PATH": "/nonexistent"})
    assert isinstance(found, str) or found.source == "system"


# -- 6. untrusted --root snapshots -----------------------------------------------------------

SEEDS_HW = Path(__file__).resolve().parent / "fixtures" / "hw" / "seeds-arm"
CPU_DIR = "sys/devices/system/cpu"


def test_cpulist_bounded() -> None:
    from qprof.hw.sysfs import parse_cpulist

    huge = ",".join(f"{i * 65536}-{i * 65536 + 65535}" for i in range(1500))
    cpus, problem = parse_cpulist(huge, "online")
    assert cpus is None and problem is not None and "65536" in problem
    assert len(problem) < 200
    cpus, problem = parse_cpulist("0-3,99999999", "online")
    assert cpus is None and problem is not None
    assert parse_cpulist("0-3,6", "online") == ({0, 1, 2, 3, 6}, None)


def test_hexmask_linear_and_bounded() -> None:
    from qprof.hw.sysfs import parse_hexmask

    cpus, problem = parse_hexmask("f" * (1 << 20), "core_siblings")  # 4 M bits: too many
    assert cpus is None and problem is not None and len(problem) < 200
    cpus, problem = parse_hexmask("ff," * 2000 + "ff", "core_siblings")  # 16 k bits: linear
    assert problem is None and cpus is not None and len(cpus) == 8 * 2001
    assert parse_hexmask("00000000,000000f0") == ({4, 5, 6, 7}, None)


def test_problem_messages_truncate_the_bad_token() -> None:
    from qprof.hw.sysfs import parse_cpulist, parse_int

    _, problem = parse_cpulist("x" * 20_000_000, "online")
    assert problem is not None and len(problem) < 200
    _, problem = parse_int("9" * 100_000, "scaling_max_freq")
    assert problem is not None and len(problem) < 200


@pytest.mark.parametrize("value", ["-1000", "0", "999999999999"])
def test_bad_frequencies_rejected_with_a_reason(tmp_path: Path, value: str) -> None:
    import shutil

    from qprof.hw import read_frequencies, read_topology

    root = tmp_path / "root"
    shutil.copytree(SEEDS_HW, root)
    (root / CPU_DIR / "cpu6/cpufreq/scaling_max_freq").write_text(value + "\n")
    freq = read_frequencies(root, read_topology(root)).to_dict()
    cpu6 = freq["cpus"][6]
    assert cpu6["max_khz"] is None and cpu6["capped"] is None
    assert any("scaling_max_freq" in p and "kHz" in p for p in freq["problems"])


def test_env_json_stays_small_on_a_huge_token(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "root"
    shutil.copytree(SEEDS_HW, root)
    (root / CPU_DIR / "online").write_text("0-" + "7" * 3_000_000 + "\n")
    r = qprof("env", "--root", str(root))
    assert "Traceback" not in r.stderr
    assert len(r.stdout) < 200_000
