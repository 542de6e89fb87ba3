"""Issue 30, the first minutes: while a new HOME's first SLH-DSA pools are signed, one
worker times the ML-DSA pools' verify on the measured CPU, and its medians reach the
progress line as a first look (qprof.measure.first_look); it ends when the rounds start.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest
from backends import compiled_backend
from procs import processes_with

from qprof.measure.config import BenchConfig, ProgressEvent
from qprof.measure.first_look import MESSAGE, FirstLook, LookSetup
from qprof.measure.fixtures import cached_pool
from qprof.measure.plan import Plan
from qprof.measure.warmup import Warmup
from qprof.tui.sources.measure import progress_of

SUITES = ["ML-DSA-44", "ML-DSA-87"]
CPU = max(os.sched_getaffinity(0))


def _look(tmp_path: Path, told: list[tuple[int, dict[str, float]]]) -> tuple[FirstLook, dict]:
    backend = compiled_backend()
    plan = Plan(BenchConfig(cpus=[CPU], suites=SUITES, backends=[backend], mode="check",
                            command=["pytest"]))
    pools = {s: cached_pool(s, (backend,), tmp_path / "pools", checker=backend)
             for s in SUITES}
    warmup = Warmup([backend], SUITES, tmp_path / "pools")
    setup = LookSetup(plan, CPU, sys.executable, "wall", tmp_path, warmup)
    return FirstLook(setup, lambda cpu, medians: told.append((cpu, medians))), pools


@pytest.mark.fresh
def test_the_ml_dsa_pools_are_timed_once_and_said(tmp_path: Path) -> None:
    told: list[tuple[int, dict[str, float]]] = []
    look, pools = _look(tmp_path, told)
    look.start(pools)
    look.start(pools)  # once per run
    deadline = time.monotonic() + 120
    while not told and time.monotonic() < deadline:
        time.sleep(0.1)
    look.close()
    assert len(told) == 1, told
    cpu, medians = told[0]
    assert cpu == CPU and set(medians) == set(SUITES)
    assert 0 < medians["ML-DSA-44"] < medians["ML-DSA-87"]  # ns, the larger suite slower
    look.start(pools)  # closed: never again
    assert len(told) == 1


@pytest.mark.fresh
def test_close_ends_its_worker_at_once(tmp_path: Path) -> None:
    told: list[tuple[int, dict[str, float]]] = []
    look, pools = _look(tmp_path, told)
    look.start(pools)
    deadline = time.monotonic() + 30
    while not processes_with("qprof.measure.worker", str(tmp_path)) and \
            time.monotonic() < deadline:
        time.sleep(0.02)
    closing = threading.Thread(target=look.close)
    started = time.monotonic()
    closing.start()
    closing.join(30)
    assert not closing.is_alive(), time.monotonic() - started
    assert processes_with("qprof.measure.worker", str(tmp_path)) == []
    assert told == []  # ended before its figures: nothing said


def test_the_progress_line_says_first_look_and_what_the_run_does_meanwhile() -> None:
    figures = {"ML-DSA-44": 16_800.0, "ML-DSA-87": 37_100.0}
    looked = progress_of(ProgressEvent(fraction=0.1, eta_s=20.0, elapsed_s=3.0, cpu=1,
                                       message=MESSAGE, medians=figures), figures, True)
    assert looked.item.startswith("CPU 1 · first look: ML-DSA-44 16.8 µs")
    assert MESSAGE not in looked.item
    signing = progress_of(ProgressEvent(
        fraction=0.2, eta_s=15.0, elapsed_s=5.0,
        message="signing 8 SLH-DSA-SHAKE-128s signatures (2 helpers, once; cached): 3/8"),
        figures, True)
    assert signing.item.startswith("· first look: ML-DSA-44 16.8 µs")
    assert signing.item.endswith("· signing 8 SLH-DSA-SHAKE-128s signatures (2 helpers, "
                                 "once; cached): 3/8")
    # a round's figures: as before
    rounds = progress_of(ProgressEvent(fraction=0.5, eta_s=30.0, elapsed_s=25.0, cpu=1,
                                       round=0, message="done"), figures, False)
    assert rounds.item.startswith("CPU 1 round 1 · last round: ML-DSA-44 16.8 µs")
