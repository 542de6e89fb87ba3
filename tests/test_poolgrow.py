"""Issue 50 and issue 49 finding 12: the pool grower leaves nothing behind. It exits when
its writes fail, when the process that started it is gone, and when any qprof on the
machine measures (another HOME's included).

SLH-DSA-SHAKE-128f stands for the slow suites (signed in milliseconds); -256s keeps a
grower busy. Deadlines polled here are liveness bounds (a loaded host); the figures
measured are printed (``pytest -s``).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hostile_exit import clean_exit
from procs import STARVED_S, gone_within, grower_report, processes_with, unstarved

from qprof.measure import fixtures, machine_lock, poolgrow
from qprof.measure.fixtures import cache_path, cached_pool, read_cached

FAST = "SLH-DSA-SHAKE-128f"
SLOW = "SLH-DSA-SHAKE-256s"
DEADLINE_S = 10.0  # polled; the goal (2 s) is printed, not asserted


def _signer_or_skip(suite: str) -> None:
    found, reasons = fixtures.candidate_signers(suite)
    if not found:
        pytest.skip(f"nothing here signs {suite}: {'; '.join(reasons)}")


def _exit_within(proc: subprocess.Popen[bytes], deadline_s: float) -> float | None:
    started = time.monotonic()
    try:
        proc.wait(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
    return time.monotonic() - started


def _small_files() -> None:  # in the child: a "full disk" for anything over 4 kB
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_finding_12_a_grower_whose_writes_fail_exits(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write past 4 kB fails (EFBIG, as a full disk): the grower signed one
    signature, could not keep it, and exits (it used to sign on for ever)."""
    _signer_or_skip(FAST)
    monkeypatch.setenv("QPROF_POOL_SIZE", "64")
    monkeypatch.setenv(machine_lock.DIR_ENV, str(tmp_path))
    job = poolgrow.GrowJob(str(tmp_path / "c"), os.getpid(), (), (FAST,))
    proc = subprocess.Popen(job.to_argv(), preexec_fn=_small_files, stderr=subprocess.PIPE)
    took = _exit_within(proc, DEADLINE_S)
    assert took is not None, f"the grower still signs {DEADLINE_S} s after its writes failed"
    assert proc.stderr is not None
    clean_exit(proc.returncode, proc.stderr.read(), codes=(0, 1))
    assert read_cached(FAST, tmp_path / "c") == []
    print(f"a grower whose writes fail exited in {took:.2f} s (python start included)")


def test_a_grower_stops_when_its_pool_file_becomes_unwritable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writable at first, then not (the pool's path became a directory): one more
    signature is made, not kept, and the grower returns."""
    _signer_or_skip(FAST)
    monkeypatch.setenv("QPROF_POOL_SIZE", "12")
    monkeypatch.setenv(machine_lock.DIR_ENV, str(tmp_path))
    cached_pool(FAST, directory=tmp_path, checker=None, first=3)

    def block(suite: str, now: int, full: int) -> None:
        path = cache_path(suite, tmp_path)
        path.unlink()
        path.mkdir()

    assert poolgrow.grow([FAST], (), tmp_path, on_signed=block) == 1


def test_a_grower_whose_pool_path_is_a_directory_signs_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _signer_or_skip(FAST)
    monkeypatch.setenv(machine_lock.DIR_ENV, str(tmp_path))
    cache_path(FAST, tmp_path).mkdir(parents=True)
    assert poolgrow.grow([FAST], (), tmp_path) == 0


def test_a_grower_ends_with_the_process_that_started_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``kill -9`` of the monitor or the daemon that started a grower: it exits too."""
    _signer_or_skip(SLOW)
    monkeypatch.setenv("QPROF_POOL_SIZE", "64")
    monkeypatch.setenv(machine_lock.DIR_ENV, str(tmp_path))
    code = ("import time; from pathlib import Path; from qprof.measure.poolgrow import "
            f"start_growth; assert start_growth([{SLOW!r}], (), Path({str(tmp_path)!r})); "
            "time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", code])
    marker = f"{poolgrow.MODULE} --dir {tmp_path} --parent {parent.pid} "
    try:
        assert unstarved(marker, STARVED_S), "no grower started"
        parent.kill()
        parent.wait()
        left, took = gone_within(marker, STARVED_S)
        assert not left, "the grower outlived the process that started it"
        print(f"the grower ended {took:.2f} s after its parent was killed")
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_grower_yields_to_a_measurement_of_another_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another HOME's run holds only the machine lock: the grower exits at once."""
    _signer_or_skip(SLOW)
    monkeypatch.setenv("QPROF_POOL_SIZE", "64")
    monkeypatch.setenv(machine_lock.DIR_ENV, str(tmp_path))
    mine = tmp_path / "home-a"
    assert poolgrow.start_growth([SLOW], (), mine)
    marker = f"{poolgrow.MODULE} --dir {mine} "
    try:
        assert unstarved(marker, STARVED_S), "no grower started"
        deadline = time.monotonic() + STARVED_S
        while poolgrow.grower_pid(mine) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert poolgrow.grower_pid(mine) is not None, grower_report(marker, mine)
        with poolgrow.measuring(tmp_path / "home-b"):
            left, took = gone_within(marker, STARVED_S)
            assert not left, "the grower signs beside another HOME's measurement"
        print(f"the grower yielded {took:.2f} s after another HOME's run started")
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_grower_s_two_threads_never_take_each_other_for_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The grower's watch thread and its signing loop both probe ``measuring.lock``; each
    probe took LOCK_EX on its own descriptor, so one saw the other as a run and the grower
    quit (92 of 6,000 probes here; the CI failures of the two tests above)."""
    monkeypatch.setenv(machine_lock.DIR_ENV, str(tmp_path))
    seen: list[bool] = []

    def probe() -> None:
        seen.extend(poolgrow._measurement_running(tmp_path / "c") for _ in range(3000))

    threads = [threading.Thread(target=probe) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 6000 and not any(seen)
    with poolgrow.measuring(tmp_path / "c"):  # a run's lock is still seen
        assert poolgrow._measurement_running(tmp_path / "c")
