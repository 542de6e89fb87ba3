"""Issue 50: one measurement per machine. Every qprof that measures takes one lock for
the whole machine (not one per HOME); a second waits and says for whom; a link, a FIFO or
another user's non-qprof holder is never trusted. Real processes, real flock(2)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from qprof.measure import machine_lock
from qprof.measure.machine_lock import LOCK_NAME, holder, lock_dir

DEADLINE_S = 60.0


@pytest.fixture
def lockdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A lock directory as /run/lock is (root's, sticky, anyone may write), that other
    users can reach: not under pytest's 0700 tmp_path."""
    d = Path(tempfile.mkdtemp(prefix="qprof-lock-", dir="/tmp"))
    d.chmod(0o1777)
    monkeypatch.setenv(machine_lock.DIR_ENV, str(d))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _flock_holder(path: Path, *prefix: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([*prefix, "flock", "-x", str(path), "sleep", "30"],
                            start_new_session=True)
    deadline = time.monotonic() + 10
    while holder(path) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def test_the_holder_is_named_from_the_kernel(lockdir: Path) -> None:
    path = lockdir / LOCK_NAME
    path.touch()
    proc = _flock_holder(path)
    try:
        h = holder()
        assert h is not None and h.pid == proc.pid and h.user == "root"
        assert h.command.startswith("flock -x ") and h.ends_at is None
        assert f"pid {proc.pid} (root: flock -x" in h.text()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # flock and its sleep, which holds it too
        proc.wait()
    # The orphaned sleep lets the lock go when it has exited, not when flock is reaped.
    deadline = time.monotonic() + 30
    while holder() is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert holder() is None


def test_a_link_or_a_fifo_is_never_the_lock(lockdir: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    (lockdir / LOCK_NAME).symlink_to(target)
    with machine_lock.machine_lock(10.0) as waited:
        assert waited is None
    assert not target.exists(), "the lock followed a link"
    (lockdir / LOCK_NAME).unlink()
    os.mkfifo(lockdir / LOCK_NAME)
    with machine_lock.machine_lock(10.0) as waited:  # no hang on a FIFO
        assert waited is None


def test_an_unsafe_directory_is_not_used(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(0o777)  # anyone may write, not sticky: anyone could swap the lock
    monkeypatch.setenv(machine_lock.DIR_ENV, str(d))
    assert lock_dir() is None
    d.chmod(0o1777)
    assert lock_dir() == d


def test_another_users_foreign_holder_does_not_hold_a_run_back(lockdir: Path) -> None:
    path = lockdir / LOCK_NAME
    path.touch()
    if os.geteuid() != 0:
        pytest.skip("needs root to start a process as another user")
    proc = _flock_holder(path, "setpriv", "--reuid=65534", "--regid=65534",
                         "--clear-groups")
    try:
        h = holder()
        assert h is not None and h.user == "nobody"
        started = time.monotonic()
        with machine_lock.machine_lock(10.0) as waited:
            assert waited is None
        assert time.monotonic() - started < 25  # did not wait for its sleep 30
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # flock and its sleep, which holds it too
        proc.wait()


def _check(home: Path, lockdir: Path, out: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, HOME=str(home), QPROF_CACHE_DIR=str(home / "cache"),
               XDG_STATE_HOME=str(home / "state"), QPROF_POOL_SIZE="2",
               QPROF_LOCK_DIR=str(lockdir))
    cpu = str(max(os.sched_getaffinity(0)))
    return subprocess.Popen([sys.executable, "-m", "qprof", "check", "--profile", "qanum",
                             "--cpus", cpu, "--budget", "0.05", "--max-rounds", "5",
                             "--time-limit", "15", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _needs_liboqs() -> None:
    """`qprof check` gives a verdict with the profile's verifier only (else exit 2)."""
    from qprof.verify import available_backends

    status = available_backends().get("liboqs")
    if status is None or not status.available:
        pytest.skip(f"liboqs not available: {status.reason if status else 'unknown'}")


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.fresh
def test_two_homes_two_checks_one_waits_for_the_other(lockdir: Path, tmp_path: Path) -> None:
    from qprof.measure.fixtures import candidate_signers

    if not candidate_signers("SLH-DSA-SHAKE-256s")[0]:
        pytest.skip("nothing here signs SLH-DSA")
    _needs_liboqs()
    first = _check(tmp_path / "a", lockdir, tmp_path / "a.jsonl")
    try:
        deadline = time.monotonic() + DEADLINE_S
        while holder() is None and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(5)  # the second check starts 5 s after the first
        second = _check(tmp_path / "b", lockdir, tmp_path / "b.jsonl")
        out_a, err_a = first.communicate(timeout=240)
        out_b, err_b = second.communicate(timeout=240)
    finally:
        for p in (first,):
            if p.poll() is None:
                p.kill()
    assert first.returncode in (0, 1, 3), err_a
    assert second.returncode in (0, 1, 3), err_b
    said = f"waiting for another qprof measurement to finish: pid {first.pid} (root: "
    assert said in err_b and "qprof check" in err_b and "s left" in err_b, err_b
    assert "waiting for" not in err_a
    a, b = _records(tmp_path / "a.jsonl"), _records(tmp_path / "b.jsonl")
    a_end = max(r["finished_at"] for r in a if r["type"] == "end")
    b_times = [r["finished_at"] for r in b if r["type"] == "measurement"]
    assert b_times and min(b_times) > a_end, "the second measured beside the first"
    notes = [r["text"] for r in b if r["type"] == "note" and r.get("kind") == "machine_lock"]
    assert notes and f"pid {first.pid}" in notes[0]
    print(f"the second check waited for pid {first.pid}: {notes[0]}")


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.fresh
def test_a_daemon_cycle_and_a_users_check_one_waits_for_the_other(lockdir: Path,
                                                                    tmp_path: Path) -> None:
    """A real daemon (its own state dir and cache) measures a CPU; a user's check of the
    same CPU, in another HOME, starts while it does: the check waits, names the daemon,
    and measures only after the daemon's run ended."""
    from qprof.measure.fixtures import candidate_signers
    from qprof.measure.records import End, Measurement
    from qprof.service.store import Store

    if not candidate_signers("SLH-DSA-SHAKE-256s")[0]:
        pytest.skip("nothing here signs SLH-DSA")
    _needs_liboqs()
    cpu = str(max(os.sched_getaffinity(0)))
    home = tmp_path / "daemon"
    from qprof.verify.nb import cache_dir as numba_cache

    env = dict(os.environ, HOME=str(home), QPROF_CACHE_DIR=str(home / "cache"),
               QPROF_LOCK_DIR=str(lockdir),  # this test's kernels lent: no compile
               NUMBA_CACHE_DIR=str(numba_cache().parent))
    with open(tmp_path / "daemon.log", "w") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "qprof", "daemon", "--state-dir", str(home / "state"),
             "--listen", "none", "--cpus", cpu, "--suites", "ML-DSA-44,ML-DSA-87",
             "--backend", "numba", "--quick", "--no-dual", "--max-load", "1000",
             "--max-busy", "100", "--first-cycle-delay", "0", "--interval", "3600"],
            stdout=log, stderr=subprocess.STDOUT, env=env)
    check = None
    try:
        deadline = time.monotonic() + 180  # numba's kernels may compile first
        while time.monotonic() < deadline and daemon.poll() is None:
            h = holder()
            if h is not None and h.pid == daemon.pid:
                break
            time.sleep(0.1)
        assert daemon.poll() is None, (tmp_path / "daemon.log").read_text()
        time.sleep(2)  # the check starts while the daemon's cycle measures
        check = _check(tmp_path / "user", lockdir, tmp_path / "user.jsonl")
        _, err = check.communicate(timeout=300)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
        if check is not None and check.poll() is None:
            check.kill()
    assert check.returncode in (0, 1, 3), err
    said = f"waiting for another qprof measurement to finish: pid {daemon.pid} (root: "
    assert said in err and "qprof daemon" in err, err
    store = Store(home / "state" / "qprof.db", readonly=True)
    [run] = store.runs(5)
    records = list(store.run_records(run.run_id))
    store.close()
    assert any(isinstance(r, Measurement) for r in records), run
    daemon_end = max(r.finished_at or 0.0 for r in records
                     if isinstance(r, End | Measurement))
    user = _records(tmp_path / "user.jsonl")
    user_times = [r["finished_at"] for r in user if r["type"] == "measurement"]
    assert user_times and min(user_times) > daemon_end, "the check measured beside the daemon"
    notes = [r["text"] for r in user if r["type"] == "note" and r.get("kind") == "machine_lock"]
    assert notes and f"pid {daemon.pid}" in notes[0], notes
    log = (tmp_path / "daemon.log").read_text()
    assert "waiting for" not in log, log
    print(f"the check waited for the daemon's cycle: {notes[0]}")
