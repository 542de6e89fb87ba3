"""The daemon's SQLite store: records in, the same records out; results; alerts; history."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faults import meta_record, one_line, qprof, tmpfs

from qprof.measure.records import (
    Disagreement,
    End,
    FreqSample,
    Measurement,
    Meta,
    Note,
)
from qprof.measure.records_parts import CpuRow
from qprof.service.alerts import Alert
from qprof.service.run_locks import CUT_SHORT
from qprof.service.schema import SCHEMA_VERSION
from qprof.service.store import Store
from qprof.service.store_file import StoreError, default_state_dir


def meta(run_id: str, t: float = 1000.0) -> Meta:
    return Meta(run_id=run_id, started_at=t, qprof_version="test", command=["qprof", "daemon"],
                cpus=[CpuRow(cpu=0), CpuRow(cpu=4)], profile="qanum")


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
        reader.alerts.add(Alert(ts=1.0, kind="degraded", severity="info", message="x"))
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
    # A run another writer still holds is left to it.
    assert store.mark_unfinished_runs_aborted() == []
    # A crash leaves "running" (its lock let go); start-up closes it as aborted, with an
    # End for export.
    store.run_locks.let_go()
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
        kept += store.freq.add([(0, t0 + i, 1800000, 1800000, 1800000, False)])
    kept += store.freq.add([(0, t0 + 10, 1000000, 1000000, 1800000, True)])  # cap edge
    assert kept == 2
    hist = store.freq.history(0, since=t0)
    assert [(h[1], h[2]) for h in hist] == [(1800000, 1800000), (1000000, 1000000)]
    assert store.freq.history(1) == []


def test_alerts_round_trip_newest_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "qprof.db")
    a1 = Alert(ts=1.0, kind="cap_started", severity="warning", message="cluster 1 capped",
               cluster=1, details={"factor": 2.24, "cause": "thermal"})
    a2 = Alert(ts=2.0, kind="cap_ended", severity="info", message="ended", cluster=1)
    store.alerts.add(a1)
    store.alerts.add(a2)
    assert store.alerts.recent() == [a2, a1]
    assert store.alerts.recent(limit=1) == [a2]
    assert store.alerts.counts() == {"cap_started": 1, "cap_ended": 1}


@pytest.mark.fresh
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


def _run(store: Store, run_id: str, t: float, suites: dict[str, float], cpu: int = 0,
         samples: bool = True) -> None:
    store.add(meta(run_id, t))
    for rnd in range(3):
        for suite, ns in suites.items():
            m = meas(run_id, cpu, suite, ns, rnd, t=t + 1)
            if samples:
                m.samples_ns = [ns] * 200
            store.add(m)
    store.add(End(run_id=run_id, finished_at=t + 10, status="finished"))


def test_retention_bounds_runs_samples_and_alerts(tmp_path: Path) -> None:
    from qprof.service.retention import DAY_S, Retention

    store = Store(tmp_path / "qprof.db")
    now = 1000 * DAY_S
    _run(store, "ancient", now - 400 * DAY_S, {"ML-DSA-44": 100.0, "ML-DSA-87": 290.0})
    _run(store, "old", now - 30 * DAY_S, {"ML-DSA-44": 110.0, "ML-DSA-87": 300.0})
    # Only ever measured long ago: the newest result of its key, so it must survive.
    _run(store, "only-44-cpu4", now - 400 * DAY_S, {"ML-DSA-44": 120.0}, cpu=4)
    _run(store, "new", now - 1 * DAY_S, {"ML-DSA-44": 100.0, "ML-DSA-87": 290.0})
    for i, age in enumerate((400, 300, 2)):
        store.alerts.add(Alert(ts=now - age * DAY_S, kind="cap_started", severity="warning",
                              message=f"a{i}"))
    before = sorted((m.run_id, m.cpu, m.suite) for m in store.newest_run_measurements())
    size_before = sum(len(r.to_json()) for r in store.run_records("old"))

    removed = store.maintain(Retention(keep_s=180 * DAY_S, keep_samples_s=7 * DAY_S), now=now)

    assert removed["runs"] == 1 and removed["alerts"] == 2
    assert {r.run_id for r in store.runs(50)} == {"old", "only-44-cpu4", "new"}
    # Results (and so the metrics after a restart) are unchanged.
    assert sorted((m.run_id, m.cpu, m.suite) for m in store.newest_run_measurements()) == before
    # The 30-day-old run lost its per-sample timings, not its round statistics...
    old = [r for r in store.run_records("old") if isinstance(r, Measurement)]
    assert len(old) == 6 and all(m.samples_ns is None and m.median_ns for m in old)
    assert sum(len(r.to_json()) for r in store.run_records("old")) < size_before / 3
    # ...while the runs behind the newest results keep theirs.
    assert all(m.samples_ns for m in store.run_records("new") if isinstance(m, Measurement))
    assert all(m.samples_ns for m in store.run_records("only-44-cpu4")
               if isinstance(m, Measurement))
    # qprof_alerts_total is a counter: pruned alerts still count.
    assert [a.message for a in store.alerts.recent()] == ["a2"]
    assert store.alerts.counts() == {"cap_started": 3}
    # Idempotent, and the store stays sound.
    assert not any(store.maintain(Retention(keep_s=180 * DAY_S), now=now).values())
    assert store.integrity_check() == "ok"


def test_retention_zero_keeps_for_ever(tmp_path: Path) -> None:
    from qprof.service.retention import DAY_S, Retention

    store = Store(tmp_path / "qprof.db")
    now = 1000 * DAY_S
    _run(store, "a", now - 900 * DAY_S, {"ML-DSA-44": 100.0})
    _run(store, "b", now - 1 * DAY_S, {"ML-DSA-44": 100.0})
    removed = store.maintain(Retention(keep_s=0, keep_samples_s=0, keep_freq_s=0), now=now)
    assert removed["runs"] == removed["stripped_runs"] == 0
    assert len(store.runs(10)) == 2


def test_freq_history_is_thinned_with_age_but_keeps_cap_edges(tmp_path: Path) -> None:
    from qprof.service.retention import DAY_S, Retention

    store = Store(tmp_path / "qprof.db")
    now = 100 * DAY_S
    t0 = now - 3 * DAY_S
    hw = 1800000
    # Two days at full resolution (one every 30 s), a cap from hour 5 to hour 5:02.
    for i in range(2 * 2880):
        ts = t0 + 30 * i
        capped = 5 * 3600 <= ts - t0 < 5 * 3600 + 120
        store.freq.add([(0, ts, hw // 2 if capped else hw, hw // 2 if capped else hw,
                                 hw, capped)])
    store.freq.add([(0, now - 40 * DAY_S, hw, hw, hw, False)])  # past keep_freq_s
    for i in range(120):  # the last hour: full resolution stays
        store.freq.add([(0, now - 3600 + 30 * i, hw, hw, hw, False)])
    full = len(store.freq.history(0, since=0))
    removed = store.maintain(Retention(keep_freq_s=30 * DAY_S, freq_full_s=1 * DAY_S,
                                       freq_bucket_s=600), now=now)
    hist = store.freq.history(0, since=0)
    assert removed["freq_samples"] == full - len(hist)
    thinned = [h for h in hist if h[0] < now - DAY_S]
    assert len([h for h in hist if h[0] >= now - 3600]) == 120
    assert 140 <= len(thinned) <= 2 * 144 + 4  # ~one per 10 minutes, plus the edges
    # The cap's start and end survive exactly.
    edges = [(h[0] - t0, h[2]) for h in hist if 5 * 3600 - 600 <= h[0] - t0 <= 5 * 3600 + 600]
    assert (5 * 3600, hw // 2) in edges and (5 * 3600 + 120, hw) in edges
    assert all(h[0] >= now - 30 * DAY_S for h in hist)
    # A second pass finds nothing new to thin.
    assert store.maintain(Retention(keep_freq_s=30 * DAY_S), now=now)["freq_samples"] == 0


def test_no_cpufreq_samples_are_not_stored(tmp_path: Path) -> None:
    store = Store(tmp_path / "qprof.db")
    assert store.freq.add([(0, 1.0, None, None, None, None)]) == 0
    assert store.freq.history(0) == []


def test_version_1_store_is_migrated_and_readable_before(tmp_path: Path) -> None:
    from qprof.service.schema import MIGRATIONS as _MIGRATIONS

    path = tmp_path / "qprof.db"
    con = sqlite3.connect(path)
    con.executescript("BEGIN;" + _MIGRATIONS[0] + "PRAGMA user_version=1; COMMIT;")
    con.execute("INSERT INTO runs(run_id, started_at, status) VALUES ('v1', 1.0, 'finished')")
    con.execute("INSERT INTO alerts(ts, kind, severity, message) VALUES (1, 'cap_ended', "
                "'info', 'x')")
    con.commit()
    con.close()
    # An older daemon's store is readable by a newer `qprof history` as it is.
    reader = Store(path, readonly=True)
    assert reader.schema_version() == 1 and [r.run_id for r in reader.runs()] == ["v1"]
    assert reader.alerts.counts() == {"cap_ended": 1}
    reader.close()
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION
    assert [r.run_id for r in store.runs()] == ["v1"]
    assert store.alerts.counts() == {"cap_ended": 1}
    assert store.integrity_check() == "ok"


def test_retention_works_off_a_backlog_a_bounded_step_at_a_time(tmp_path: Path) -> None:
    from qprof.service.retention import DAY_S, Retention

    store = Store(tmp_path / "qprof.db")
    now = 1000 * DAY_S
    for i in range(3):
        _run(store, f"old{i}", now - (400 + i) * DAY_S, {"ML-DSA-44": 100.0})
    _run(store, "new", now - DAY_S, {"ML-DSA-44": 100.0})
    step = Retention(max_runs=2)
    assert store.maintain(step, now=now)["runs"] == 2
    assert store.maintain(step, now=now)["runs"] == 1  # the next hourly call
    assert [r.run_id for r in store.runs()] == ["new"]


# -- 8. damaged store, read-only filesystem, odd profile paths, interrupted bench ------------

def _store_with_a_run(path: Path) -> str:
    from qprof.measure.records import End
    from qprof.service.store import Store

    store = Store(path)
    meta = meta_record()
    store.add(meta)
    for rnd in range(40):
        store.add(Measurement(run_id="r", cpu=0, suite="ML-DSA-44", backend="numba",
                              operation="verify", round=rnd, n=3, median_ns=10.0 + rnd,
                              p95_ns=12.0 + rnd, samples_ns=[float(i) for i in range(500)]))
    store.add(End(run_id="r", finished_at=2.0, status="finished"))
    store.close()
    return meta.run_id


def test_history_and_export_on_damaged_pages_exit_2_with_one_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _store_with_a_run(state / "qprof.db")
    db = state / "qprof.db"
    data = bytearray(db.read_bytes())
    assert len(data) > 8 * 4096
    for page in range(1, len(data) // 4096):  # keep the header page, damage the rest
        data[page * 4096: page * 4096 + 400] = b"\xa5" * 400  # its b-tree header too
    db.write_bytes(bytes(data))
    for args in (["history"], ["history", "--json"], ["export", "latest"]):
        r = qprof(*args, "--state-dir", str(state))
        assert r.returncode == 2, (args, r.stdout[-500:], r.stderr[-2000:])
        assert "damaged" in one_line(r.stderr) or "malformed" in one_line(r.stderr)
    assert db.read_bytes() == bytes(data)  # left as it was


def test_wal_store_on_a_read_only_filesystem_is_read(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "8m") as mnt:
        _store_with_a_run(mnt / "qprof.db")
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        r = qprof("history", "--json", "--state-dir", str(mnt))
        assert r.returncode == 0, r.stderr
        assert [run["run_id"] for run in json.loads(r.stdout)["runs"]] == ["r"]
        assert "read-only" in r.stderr
        r = qprof("export", "r", "--state-dir", str(mnt))
        assert r.returncode == 0, r.stderr
        assert r.stdout.count('"type": "measurement"') == 40


WRITER = """
import sys, time
from qprof.measure.records import Meta
from qprof.measure.records_parts import CpuRow
from qprof.service.store import Store
store = Store(sys.argv[1])
for run_id in sys.argv[2:]:
    store.add(Meta(run_id=run_id, started_at=time.time(), qprof_version="test",
                   command=["qprof", "check"], cpus=[CpuRow(cpu=0)], profile="qanum"))
print("begun", flush=True)
time.sleep(600)
"""


def _writer(path: Path, *run_ids: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), *run_ids],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "begun\n"
    return proc


def test_a_run_whose_writer_was_killed_reads_cut_short_and_a_live_one_running(
        tmp_path: Path) -> None:
    """kill -9 of a check (or the monitor, the OOM killer) leaves its run 'running' in the
    store; every reader then sees it cut short, by its lock, while a run another process
    still writes stays running; the daemon's start closes only the dead one."""
    path = tmp_path / "qprof.db"
    Store(path).close()
    killed, live = _writer(path, "killed"), _writer(path, "live")
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        reader = Store(path, readonly=True)
        runs = {r.run_id: (r.status, r.reason) for r in reader.runs()}
        assert runs == {"killed": ("aborted", CUT_SHORT), "live": ("running", None)}
        reader.close()
        daemon = Store(path)
        assert daemon.mark_unfinished_runs_aborted() == ["killed"]
        assert daemon.run_status("live") == "running"
        daemon.close()
        assert not (tmp_path / "qprof.db.running" / "killed").exists()
    finally:
        for proc in (killed, live):
            proc.kill()
            proc.wait()
    after = Store(path, readonly=True)
    assert {r.run_id: r.status for r in after.runs()} == {"killed": "aborted",
                                                         "live": "aborted"}
    after.close()
