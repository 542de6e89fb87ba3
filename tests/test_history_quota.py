"""Issue 50: `qprof history` prices the worst-case block at the cgroup CPU quota the run
recorded (its Throttled record), as `qprof check --from` prices the same run; a run
without a quota shows none. A real recorded run in a real store."""

from __future__ import annotations

import json
import lzma
import os
import subprocess
import sys
from pathlib import Path

from qprof.measure.jsonl import read_run
from qprof.measure.records import End, Record, Throttled
from qprof.service.store import Store

RUN = Path(__file__).parent / "data" / "runs" / "check-cpu1-2026-12-02-1.jsonl.xz"
UNDER = "under the node's CPU quota of 0.50 CPU (x2.00)"


def _records(tmp_path: Path, quota: bool) -> list[Record]:
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(lzma.decompress(RUN.read_bytes()))
    records = list(read_run(plain).records)
    if quota:
        run_id = records[0].run_id  # type: ignore[attr-defined]
        end = next(i for i, r in enumerate(records) if isinstance(r, End))
        records.insert(end, Throttled(run_id, "/system.slice/qprof.service", 1, 0.5, 2.0,
                                      600, 240, 30_000_000))
    return records


def _qprof(*args: str) -> dict:  # type: ignore[type-arg]
    r = subprocess.run([sys.executable, "-m", "qprof", *args], capture_output=True,
                       text=True, timeout=300,
                       env={**os.environ, "QPROF_ADVERSARY_DIR": "/nonexistent"})
    assert "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def _bounds(tmp_path: Path, quota: bool) -> tuple[set[str], set[str]]:
    """The time bound's words per CPU: history's (from the store), check's (the file)."""
    records = _records(tmp_path, quota)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    store = Store(state / "qprof.db")
    for r in records:
        store.add(r)
    store.finish_run(records[0].run_id, "finished")  # type: ignore[attr-defined]
    store.close()
    run = tmp_path / "run.jsonl"
    run.write_text("".join(r.to_json() + "\n" for r in records))
    history = _qprof("history", "--state-dir", str(state), "--json")
    check = _qprof("check", "--from", str(run), "--profile", "qanum", "--json")
    told = {c["worst_block"]["why"] for c in history["coverage"]
            if c["basis"] == "node" and c.get("worst_block")}
    checked = {r["worst_block"]["why"] for r in check["results"] if r.get("worst_block")}
    return told, checked


def test_history_prices_the_block_at_the_recorded_quota(tmp_path: Path) -> None:
    told, checked = _bounds(tmp_path, quota=True)
    assert told and all(UNDER in why for why in told), told
    assert told == checked  # the same words, the same block, the same times


def test_without_a_quota_history_names_none(tmp_path: Path) -> None:
    told, checked = _bounds(tmp_path, quota=False)
    assert told and not any("CPU quota" in why for why in told), told
    assert told == checked
