"""`qprof export` and `qprof history` in-process over a real store file."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from faults import QPROF, full_tmpfs, one_line, qprof

from qprof.commands import export as export_cmd
from qprof.commands import history as history_cmd
from qprof.measure.records import End, Measurement, Meta
from qprof.measure.records_parts import CpuRow
from qprof.service.config import DaemonConfig
from qprof.service.daemon import Daemon
from qprof.service.store import Store


def _args(module: object, *argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    module.add_parser(p)  # type: ignore[attr-defined]
    return p.parse_args(list(argv))


def _store(state: Path) -> Store:
    store = Store(state / "qprof.db")
    for run_id, t, status in (("done", 1000.0, "finished"), ("cut", 2000.0, None)):
        store.add(Meta(run_id=run_id, started_at=t, qprof_version="t", command=[],
                       cpus=[CpuRow(cpu=0)], profile="qanum"))
        if status:
            for rnd in range(3):
                for suite, ns in (("ML-DSA-44", 100_000.0), ("ML-DSA-87", 300_000.0)):
                    store.add(Measurement(run_id=run_id, cpu=0, suite=suite, backend="liboqs",
                                          operation="verify", round=rnd, n=10,
                                          median_ns=ns, p95_ns=ns, finished_at=t + 1))
            store.add(End(run_id=run_id, finished_at=t + 5, status=status))
    store.run_locks.let_go()  # as a crash would
    store.mark_unfinished_runs_aborted()  # "cut": the newest run, aborted and empty
    return store


def test_export_latest_is_the_newest_run_with_results(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    _store(tmp_path)
    assert export_cmd.run(_args(export_cmd, "latest", "--state-dir", str(tmp_path))) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {x["run_id"] for x in lines} == {"done"}
    assert export_cmd.run(_args(export_cmd, "cut", "--state-dir", str(tmp_path))) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == "aborted"


def test_history_shows_results_and_coverage(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _store(tmp_path)
    assert history_cmd.run(_args(history_cmd, "--json", "--state-dir", str(tmp_path))) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["profile"] == "qanum"
    assert [(r["suite"], r["statistic"]) for r in data["results"]] == [
        ("ML-DSA-44", "median"), ("ML-DSA-87", "median")]
    assert [(c["suite"], c["vu_estimate"], c["covered"]) for c in data["coverage"]] == [
        ("ML-DSA-44", 100, True), ("ML-DSA-87", 300, False)]
    assert history_cmd.run(_args(history_cmd, "--state-dir", str(tmp_path))) == 0
    text = capsys.readouterr().out
    assert "ML-DSA-87            liboqs   NOT covered: 300, constant 290" in text


class _OneCycle:
    current_cpu = None

    def run_cycle(self, cpus: list[int], stop: object) -> str:
        time.sleep(0.2)  # a cycle that takes a while
        return "finished"

    def burst_cpus(self) -> set[int]:
        return set()  # no change detector's alarm pending


def test_interval_is_rest_after_a_cycle_not_start_to_start(tmp_path: Path) -> None:
    d = Daemon(DaemonConfig(interval=30.0, state_dir=tmp_path))
    d.cycles = _OneCycle()  # type: ignore[assignment]
    d._cycle([0])
    # The next cycle is an interval after this one *ended*, so a cycle longer than the
    # interval is never followed by another at once.
    assert d.next_cycle >= time.time() + 30.0 - 1.0


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A daemon state dir whose store holds one finished run."""
    from qprof.service.store import Store

    state = tmp_path / "state"
    state.mkdir()
    store = Store(state / "qprof.db")
    store.add(Meta(run_id="r1", started_at=1000.0, qprof_version="t", command=[],
                   cpus=[CpuRow(cpu=0)], profile="qanum"))
    for rnd in range(3):
        store.add(Measurement(run_id="r1", cpu=0, suite="ML-DSA-44", backend="liboqs",
                              operation="verify", round=rnd, n=10, median_ns=1e5, p95_ns=1e5,
                              finished_at=1001.0))
    store.add(End(run_id="r1", finished_at=1005.0, status="finished"))
    store.close()
    return state


def _export(state: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return qprof("export", "latest", "--state-dir", str(state), *args, **kw)


def test_11_export_to_a_device_writes_into_it(state: Path, tmp_path: Path) -> None:
    """A char device like /dev/full (made here: the test must not risk the real one) stays
    a device: written in place, ENOSPC is one line, exit 2, no "wrote"."""
    import stat as st

    dev = tmp_path / "full"
    try:
        os.mknod(dev, st.S_IFCHR | 0o666, os.makedev(1, 7))
    except OSError as exc:
        pytest.skip(f"cannot make a device node: {exc}")
    r = _export(state, "-o", str(dev))
    assert r.returncode == 2
    assert str(dev) in one_line(r.stderr) and "No space left" in r.stderr
    assert st.S_ISCHR(os.lstat(dev).st_mode)
    assert not list(tmp_path.glob("full*.tmp"))


def test_11_export_to_a_fifo_and_a_symlink_keeps_them(state: Path, tmp_path: Path) -> None:
    import stat as st

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    r = _export(state, "-o", str(fifo))
    reader.join(30)
    assert r.returncode == 0, r.stderr
    assert st.S_ISFIFO(os.lstat(fifo).st_mode)
    assert b'"run_id": "r1"' in got[0] or b'"run_id":"r1"' in got[0]
    # A symlink to a regular file: the target is replaced, the link stays.
    target, link = tmp_path / "target.jsonl", tmp_path / "link.jsonl"
    target.write_text("old\n")
    link.symlink_to(target)
    r = _export(state, "-o", str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and "r1" in target.read_text() and "old" not in target.read_text()
    # A symlink to stdout (what /dev/stdout is): written through, not replaced.
    out = tmp_path / "stdout"
    out.symlink_to("/proc/self/fd/1")
    r = _export(state, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.is_symlink() and "r1" in r.stdout


def test_11_a_full_disk_is_one_line_and_no_partial_file(state: Path, tmp_path: Path) -> None:
    with full_tmpfs(tmp_path / "mnt") as mnt:
        r = _export(state, "-o", str(mnt / "run.jsonl"))
        assert r.returncode == 2
        assert str(mnt / "run.jsonl") in one_line(r.stderr)
        assert sorted(p.name for p in mnt.iterdir()) == ["filler"]
        for args in (["export", "latest", "--state-dir", str(state)], ["topology", "--json"],
                     ["freq", "--json"], ["env"]):
            with open(mnt / "stdout", "w") as fh:
                r = subprocess.run([*QPROF, *args], stdout=fh, stderr=subprocess.PIPE,
                                   text=True, timeout=60)
            assert r.returncode == 2, (args, r.stderr)
            assert "cannot write to stdout: No space left" in one_line(r.stderr), args
            assert (mnt / "stdout").stat().st_size == 0, args  # nothing partial
