"""The daemon's SQLite store: records in, the same records out; results; alerts; history."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from qprof.measure.records import (
    Disagreement,
    End,
    FreqSample,
    Measurement,
    Meta,
    Note,
)
from qprof.service.alerts import Alert
from qprof.service.store import SCHEMA_VERSION, Store, StoreError, default_state_dir


def meta(run_id: str, t: float = 1000.0) -> Meta:
    return Meta(run_id=run_id, started_at=t, qprof_version="test", command=["qprof", "daemon"],
                cpus=[{"cpu": 0}, {"cpu": 4}], profile="qanum")


def meas(run_id: str, cpu: int, suite: str, median: float, rnd: int = 0,
         backend: str = "numba", t: float = 1001.0) -> Measurement:
    return Measurement(run_id=run_id, cpu=cpu, suite=suite, backend=backend,
                       operation="verify", round=rnd, n=10, median_ns=median,
                       p95_ns=median * 1.1, finished_at=t + rnd, capped=False)


def test_records_round_trip_in_order(tmp_path: Path) -> None:
    store = Store(tmp_path / "qprof.db")
    records = [
        meta("r1"),
        FreqSample(run_id="r1", taken_at=1000.5, cpu=0, cur_khz=1800000, max_khz=1800000,
                   hw_max_khz=1800000, capped=False),
        meas("r1", 0, "ML-DSA-44", 190_000.0),
        Note(run_id="r1", level="warning", text="cap on cluster 1", cpu=4, kind="cap"),
        Disagreement(run_id="r1", cpu=0, suite="ML-DSA-44", backends={"a": True, "b": False},
                     public_key_hex="00", message_hex="01", signature_hex="02"),
        End(run_id="r1", finished_at=1002.0, status="finished", checks=5, disagreements=1),
    ]
    for rec in records:
        store.add(rec)
    assert [r.to_dict() for r in store.run_records("r1")] == [r.to_dict() for r in records]
    [info] = store.runs(10)
    assert (info.run_id, info.status, info.measurements, info.checks) == ("r1", "finished", 1, 5)
    assert info.cpus == [0, 4]
    assert store.schema_version() == SCHEMA_VERSION
    assert store.integrity_check() == "ok"
    with pytest.raises(KeyError):
        list(store.run_records("nope"))


def test_wal_mode_and_readonly_reader(tmp_path: Path) -> None:
    path = tmp_path / "qprof.db"
    store = Store(path)
    store.add(meta("r1"))
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    reader = Store(path, readonly=True)
    assert [r.run_id for r in reader.runs(5)] == ["r1"]
    with pytest.raises(sqlite3.OperationalError):
        reader.add_alert(Alert(ts=1.0, kind="degraded", severity="info", message="x"))
    with pytest.raises(StoreError, match="no such store"):
        Store(tmp_path / "missing.db", readonly=True)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "qprof.db"
    Store(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="newer than this qprof"):
        Store(path)


def test_latest_measurements_skip_running_and_aborted_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "qprof.db")
    store.add(meta("old", 1000.0))
    store.add(meas("old", 0, "ML-DSA-44", 200_000.0, t=1000.0))
    store.finish_run("old", "finished")
    store.add(meta("aborted", 2000.0))
    store.add(meas("aborted", 0, "ML-DSA-44", 999_000.0, t=2000.0))
    store.finish_run("aborted", "aborted", "stop")
    store.add(meta("running", 3000.0))
    store.add(meas("running", 0, "ML-DSA-44", 888_000.0, t=3000.0))
    [latest] = store.latest_measurements()
    assert (latest.run_id, latest.median_ns) == ("old", 200_000.0)
    assert store.latest_measurements(cpu=4) == []
    assert store.latest_measurements(backend="liboqs") == []
    # A crash leaves "running"; start-up closes it as aborted, with an End for export.
    assert store.mark_unfinished_runs_aborted() == ["running"]
    assert store.run_status("running") == "aborted"
    last = list(store.run_records("running"))[-1]
    assert isinstance(last, End) and last.status == "aborted"
    # finish_run on an already-closed run leaves it alone.
    store.finish_run("old", "aborted")
    assert store.run_status("old") == "finished"
    with pytest.raises(ValueError):
        store.finish_run("old", "running")


def test_newest_run_measurements_keep_every_round(tmp_path: Path) -> None:
    store = Store(tmp_path / "qprof.db")
    store.add(meta("a", 1000.0))
    for rnd, ns in enumerate((100.0, 110.0, 120.0)):
        store.add(meas("a", 0, "ML-DSA-44", ns, rnd))
    store.finish_run("a", "finished")
    store.add(meta("b", 2000.0))
    for rnd, ns in enumerate((200.0, 210.0)):
        store.add(meas("b", 0, "ML-DSA-44", ns, rnd))
    store.add(meas("b", 4, "ML-DSA-87", 500.0))
    store.finish_run("b", "partial", "cpu 5 went offline")
    rows = store.newest_run_measurements()
    assert sorted((m.run_id, m.cpu, m.median_ns) for m in rows) == [
        ("b", 0, 200.0), ("b", 0, 210.0), ("b", 4, 500.0)]
    assert store.last_finished_at() is not None


def test_freq_history_is_downsampled_but_keeps_cap_edges(tmp_path: Path) -> None:
    store = Store(tmp_path / "qprof.db")
    t0 = time.time()
    kept = 0
    for i in range(10):  # ten samples a second apart, uncapped: one kept
        kept += store.add_freq_samples([(0, t0 + i, 1800000, 1800000, 1800000, False)])
    kept += store.add_freq_samples([(0, t0 + 10, 1000000, 1000000, 1800000, True)])  # cap edge
    assert kept == 2
    hist = store.freq_history(0, since=t0)
    assert [(h[1], h[2]) for h in hist] == [(1800000, 1800000), (1000000, 1000000)]
    assert store.freq_history(1) == []


def test_alerts_round_trip_newest_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "qprof.db")
    a1 = Alert(ts=1.0, kind="cap_started", severity="warning", message="cluster 1 capped",
               cluster=1, details={"factor": 2.24, "cause": "thermal"})
    a2 = Alert(ts=2.0, kind="cap_ended", severity="info", message="ended", cluster=1)
    store.add_alert(a1)
    store.add_alert(a2)
    assert store.recent_alerts() == [a2, a1]
    assert store.recent_alerts(limit=1) == [a2]
    assert store.alert_counts() == {"cap_started": 1, "cap_ended": 1}


def test_default_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STATE_DIRECTORY", f"{tmp_path}/a:{tmp_path}/b")
    assert default_state_dir() == tmp_path / "a"
    monkeypatch.delenv("STATE_DIRECTORY")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_dir() == tmp_path / "xdg" / "qprof"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_state_dir() == tmp_path / ".local" / "state" / "qprof"


def test_unwritable_location_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    with pytest.raises(StoreError, match="cannot open store"):
        Store(blocker / "qprof.db")
