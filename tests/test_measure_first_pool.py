"""Issue 30, the first minutes: a first signature pool signed in helpers that stream a
rate, stop at once and die with their parent (issue 31 finding 17); the rest of the pool
grown after the run by one idle grower that never signs beside a measurement.

SLH-DSA-SHAKE-128f stands for the slow suites here: it is an SLH-DSA suite (signed in
helpers, grown in the background) whose signing takes milliseconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from procs import (
    STARVED_S,
    gone_within,
    grower_report,
    processes_with,
    started,
    stat_fields,
    unstarved,
)

from qprof.measure import fixtures, poolgrow
from qprof.measure.fixtures import Signing, SigningStopped, cached_pool, read_cached

FAST = "SLH-DSA-SHAKE-128f"  # SLH-DSA, fast to sign
SLOW = "SLH-DSA-SHAKE-256s"  # 1.5-5 s a signature: the helpers are still busy when killed


def _signer_or_skip(suite: str) -> None:
    found, reasons = fixtures.candidate_signers(suite)
    if not found:
        pytest.skip(f"nothing here signs {suite}: {'; '.join(reasons)}")


def test_signing_helpers_die_with_a_killed_parent(tmp_path: Path) -> None:
    """Finding 17: `kill -9` of the process that started the signing helpers leaves none
    (PR_SET_PDEATHSIG, as the timing workers)."""
    _signer_or_skip(SLOW)
    code = ("import sys; from qprof.measure.fixtures import _sign_many; "
            f"_sign_many({SLOW!r}, (), 16)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    marker = f"qprof.measure.fixtures --parent {parent.pid} "
    try:
        deadline = time.monotonic() + 30
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(marker), "no signing helper started"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        left, took = gone_within(marker, 10.0)
        assert not left, f"signing helpers left after kill -9 of their parent: {left}"
        print(f"helpers gone {took:.2f} s after kill -9 of their parent")
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_stop_ends_the_signing_at_once_and_keeps_what_was_signed(tmp_path: Path) -> None:
    _signer_or_skip(SLOW)
    stop = threading.Event()
    seen: list[Signing] = []

    def on_signing(s: Signing) -> None:
        seen.append(s)
        if s.signed >= 1:
            stop.set()

    started = time.monotonic()
    with pytest.raises(SigningStopped):
        cached_pool(SLOW, directory=tmp_path, checker=None, size=16, first=16,
                    on_signing=on_signing, stop=stop)
    took = time.monotonic() - started
    signed = seen[-1].signed
    assert signed >= 1 and len(read_cached(SLOW, tmp_path)) == signed  # kept
    assert not processes_with(f"qprof.measure.fixtures --parent {os.getpid()} ")
    print(f"stopped after {signed} signatures, {took:.1f} s")


def test_a_first_pool_is_signed_with_a_rate_then_reused(tmp_path: Path) -> None:
    _signer_or_skip(FAST)
    seen: list[Signing] = []
    pool = cached_pool(FAST, directory=tmp_path, checker=None, size=8, first=3,
                       on_signing=seen.append)
    assert len(pool) == 3
    assert [s.signed for s in seen] == [0, 1, 2, 3]
    assert seen[0].seconds_each is None and seen[-1].seconds_each is not None
    assert seen[-1].seconds_each > 0 and seen[-1].left_s == 0.0
    text = seen[1].text()
    assert text.startswith(f"signing 3 {FAST} signatures (") and "1/3, " in text
    assert text.endswith(" s per signature")
    # Cached: the next run signs nothing (a few are checked with a verifier).
    again = cached_pool(FAST, directory=tmp_path, checker="numba", size=8, first=3,
                        on_signing=seen.append)
    assert again == pool and len(seen) == 4


def test_the_grower_fills_the_pool_and_stops_for_a_measurement(tmp_path: Path,
                                                               monkeypatch) -> None:  # noqa: ANN001
    _signer_or_skip(FAST)
    monkeypatch.setenv("QPROF_POOL_SIZE", "12")  # the full pool, here
    cached_pool(FAST, directory=tmp_path, checker=None, first=3)
    assert poolgrow.short_suites([FAST, "ML-DSA-44"], tmp_path) == [FAST]
    # A run holds the lock: the grower signs nothing.
    with poolgrow.measuring(tmp_path):
        assert poolgrow.grow([FAST], (), tmp_path) == 0
    assert poolgrow.grow([FAST], (), tmp_path) == 9
    assert len(read_cached(FAST, tmp_path)) == 12
    assert poolgrow.short_suites([FAST], tmp_path) == []
    assert not poolgrow.start_growth([FAST], (), tmp_path)  # full: nothing to grow


def test_a_run_ends_a_running_grower(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    _signer_or_skip(SLOW)
    monkeypatch.setenv("QPROF_POOL_SIZE", "64")
    assert poolgrow.start_growth([SLOW], (), tmp_path)
    marker = f"{poolgrow.MODULE} --dir {tmp_path} "
    try:
        (pid,) = started(marker, STARVED_S)
        # Idle priority: it only takes a CPU nobody else wants.
        assert os.sched_getscheduler(pid) == os.SCHED_IDLE
        assert int(stat_fields(pid)[16]) == 19
        # ... so while CI's other worker keeps both CPUs busy it may get no CPU for
        # minutes: lifted for what follows.
        unstarved(marker, STARVED_S)
        deadline = time.monotonic() + STARVED_S
        while poolgrow.grower_pid(tmp_path) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert poolgrow.grower_pid(tmp_path) == pid, grower_report(marker, tmp_path)
        assert not poolgrow.start_growth([SLOW], (), tmp_path)  # one at a time
        with poolgrow.measuring(tmp_path):
            left, took = gone_within(marker, 5.0)
            assert not left, "the grower signs beside a measurement"
            print(f"grower ended {took:.2f} s after a run started")
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_the_progress_line_shows_the_last_rounds_figures() -> None:
    """The first measured figures show while the run goes on (the table and the verdict
    come from the finished run); no "round 9/9" that reads as the end."""
    from qprof.measure.config import ProgressEvent
    from qprof.tui.sources.measure import progress_of

    event = ProgressEvent(0.19, 40.0, 10.0, cpu=1, round=8, rounds=9, suite="ML-DSA-44",
                          operation="verify", message="done")
    assert progress_of(event).item == "CPU 1 round 9 ML-DSA-44 verify done"
    shown = progress_of(event, {"ML-DSA-44": 16_800.0, "SLH-DSA-SHAKE-256s": 1_410_000.0})
    assert shown.item == "CPU 1 round 9 · last round: ML-DSA-44 16.8 µs · " \
        "SLH-DSA-SHAKE-256s 1.41 ms"


@pytest.mark.fresh
def test_a_workers_figures_come_before_its_records(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """The progress line gets each worker's medians as soon as it ends: the records
    wait for the pools' counts on a first run (the walk's kernel compiles), the first
    figures on screen do not. They are the figures the records then carry."""
    from qprof.measure.config import BenchConfig, ProgressEvent
    from qprof.measure.engine import run_bench
    from qprof.measure.records import Measurement, Record
    from qprof.verify import available_backends

    backend = next((b for b in ("liboqs", "rustcrypto")
                    if available_backends()[b].available), None)
    if backend is None:
        pytest.skip("neither liboqs nor rustcrypto is available here")
    monkeypatch.setenv("QPROF_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[tuple[str, dict[str, float]]] = []

    def sink(record: Record) -> None:
        if isinstance(record, Measurement):
            seen.append(("record", {record.suite: record.median_ns}))

    def progress(event: ProgressEvent) -> None:
        if event.medians:
            seen.append(("progress", dict(event.medians)))

    run_bench(BenchConfig(cpus=[max(os.sched_getaffinity(0))],
                          suites=["ML-DSA-44", "ML-DSA-87"], backends=[backend],
                          mode="check", budget_s=0.03, rounds=3, max_rounds=3,
                          min_cpu_s=0.0, adaptive=False, command=["pytest"]),
              sink, progress)
    assert seen and seen[0][0] == "progress", seen
    shown = seen[0][1]
    assert set(shown) == {"ML-DSA-44", "ML-DSA-87"}
    first_records = {k: v for kind, d in seen[1:3] if kind == "record" for k, v in d.items()}
    assert first_records == shown
