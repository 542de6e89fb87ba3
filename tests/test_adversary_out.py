"""`qprof adversary --out`: the path checked before any grinding; a write that fails
still leaves the run in the cache, and says where."""

from __future__ import annotations

import json
from pathlib import Path

from gen_run_json import _bad_outputs, assert_clean, qprof_env


def test_11_adversary_out_is_checked_before_grinding(tmp_path: Path) -> None:
    for bad in _bad_outputs(tmp_path):
        r = qprof_env("adversary", "ML-DSA-44", "--minutes", "0", "--out", bad,
                      env={"QPROF_ADVERSARY_DIR": str(tmp_path / "adv")}, timeout=30)
        assert "--out" in assert_clean(r)
        assert not (tmp_path / "adv").exists()  # nothing ran


def test_11_the_cache_is_kept_when_out_fails(tmp_path: Path, liboqs_available: None) -> None:
    """--out /dev/full passes the check (a writable device) and fails at the write:
    the run is still in the cache, and the line says where."""
    adv = tmp_path / "adv"
    r = qprof_env("adversary", "ML-DSA-44", "--minutes", "0", "--rounds", "3", "--pool", "1",
                  "--no-dual", "--cpu", "0", "--out", "/dev/full",
                  env={"QPROF_ADVERSARY_DIR": str(adv)}, timeout=300)
    assert "Traceback" not in r.stderr and r.returncode == 2, r.stderr[-2000:]
    cache = adv / "ML-DSA-44.last.json"
    assert cache.is_file() and f"the run is kept in {cache}" in r.stderr
    assert json.loads(cache.read_text())["summary"]["suite"] == "ML-DSA-44"
