"""GEN as JSON lines (a meta line, 5 rounds on CPU 0, an end line), for the tests of the
commands that read runs, and the shape of a clean failure: exit 2, one line, no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from qprof.consensus import load_profile

SHIPPED = load_profile("qanum")


def qprof_env(*args: str, env: dict[str, str] | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "qprof", *args], capture_output=True,
                          text=True, timeout=timeout, check=False,
                          env={**os.environ, **(env or {})})


def assert_clean(r: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """Exit ``code``, no traceback, and (for an error) one line on stderr; the stderr."""
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == code, (r.returncode, r.stdout[-1000:], r.stderr[-2000:])
    if code == 2:
        lines = [x for x in r.stderr.splitlines() if x.strip()]
        assert len(lines) == 1, r.stderr[-2000:]
        assert len(lines[0]) < 600, lines[0][:600]
    return r.stderr


def gen_lines(path: Path, suites: tuple[tuple[str, float], ...] = (
              ("ML-DSA-44", 17000.0), ("ML-DSA-87", 39000.0)), end: bool = True,
              profile: str | None = None) -> Path:
    """The issue's GEN: a small valid run (samples [t, 1.01t, 0.99t], 5 rounds, CPU 0)."""
    lines: list[dict[str, object]] = [
        {"type": "meta", "run_id": "r1", "started_at": 1.7e9, "qprof_version": "0",
         "command": ["qprof", "check"], "profile": profile, "settings": {"mode": "check"}}]
    for rnd in range(5):
        for suite, t in suites:
            lines.append({"type": "measurement", "run_id": "r1", "cpu": 0, "suite": suite,
                          "backend": "liboqs", "operation": "verify", "round": rnd, "n": 3,
                          "median_ns": t, "p95_ns": 1.01 * t,
                          "samples_ns": [t, 1.01 * t, 0.99 * t]})
    if end:
        lines.append({"type": "end", "run_id": "r1", "finished_at": 1.7e9 + 60,
                      "status": "finished"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


ALL_SUITES = (("ML-DSA-44", 17000.0), ("ML-DSA-87", 39000.0),
              ("SLH-DSA-SHAKE-128s", 250000.0), ("SLH-DSA-SHAKE-256s", 560000.0))


def huge_qanum(directory: Path) -> Path:
    """A file called qanum.toml whose constants cover anything."""
    directory.mkdir(parents=True, exist_ok=True)
    text = SHIPPED.path.read_text()
    for suite, vu in SHIPPED.verify_units.items():
        if suite != SHIPPED.unit_suite:
            text = text.replace(f"= {vu}\n", "= 99999\n")
    path = directory / "qanum.toml"
    path.write_text(text)
    assert load_profile(path).verify_units["ML-DSA-87"] == 99999
    return path


# -- 9, 11, 14. one atomic writer; the output path checked before any work ---------------

def _bad_outputs(tmp_path: Path) -> list[str]:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    return [str(tmp_path / "dir"), str(tmp_path / "file" / "sub.jsonl"), "/proc/version",
            str(tmp_path / "missing" / "out.jsonl")]


# -- 10. a damaged adversary cache ----------------------------------------------------------

CACHE_128S = "SLH-DSA-SHAKE-128s.last.json"


_SUMMARY = {"suite": "SLH-DSA-SHAKE-128s", "cpu_model": "x", "measured_at": 1.7e9,
            "worst": {"ground": {"ratio": 1.1, "low": 1.05, "high": 1.2}}}


# -- 13. report --block reads what it is given with bounds ---------------------------------

BAD_BLOCK_FILES = {
    "results_int": ('{"results": [1]}', "results[0]"),
    "string_signatures": (None, "results[0].signatures"),
    "string_speedup": (None, "results[0].speedup"),
    "nan_wall": (None, "NaN"),
    "zero_wall": (None, "results[0].wall_s"),
    "deep": ("[" * 100000 + "]" * 100000, "nested"),
    "not_json": ("{", "not a qprof block"),
}


def _block_row() -> dict[str, object]:
    from qprof.measure.block import BlockResult

    return BlockResult("ML-DSA-44", "numba", "single", None, 60, 60, "all", [0], 0.01, 0.01,
                       1.0, 10.0, 0.001, True, 60, 0, [], 0).to_dict()


def _block_file(tmp_path: Path, name: str) -> Path:
    text, _ = BAD_BLOCK_FILES[name]
    if text is None:
        row = _block_row()
        row.update({"string_signatures": {"signatures": "60"},
                    "string_speedup": {"speedup": "fast"},
                    "nan_wall": {"wall_s": float("nan")},
                    "zero_wall": {"wall_s": 0.0}}[name])
        text = json.dumps({"results": [row]})
    path = tmp_path / f"{name}.json"
    path.write_text(text)
    return path
