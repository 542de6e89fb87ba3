"""Issue 30, the first minutes: what a new HOME makes once (the known answers' second
signatures, numba's kernels, the SLH-DSA walk) is made by helpers beside the signing of
the first pools (qprof.measure.warmup), which end with the run."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from procs import processes_with

from qprof.measure.config import QANUM_SUITES
from qprof.measure.warmup import ANSWERS, WALK, Warmup, WarmupJob, kernel_step, plan_steps
from qprof.verify.functional import second_signer


def test_a_new_home_plans_what_its_backends_and_suites_need() -> None:
    assert plan_steps(["liboqs"], QANUM_SUITES) == [[ANSWERS, WALK]]
    slh = [s for s in QANUM_SUITES if s.startswith("SLH-DSA")]
    mldsa = [s for s in QANUM_SUITES if s not in slh]
    # numba: its SLH-DSA kernels before the walk (they share their Keccak code), the
    # ML-DSA kernels in a second helper beside them
    assert plan_steps(["numba"], QANUM_SUITES) == [
        [ANSWERS, *map(kernel_step, slh), WALK], list(map(kernel_step, mldsa))]
    assert plan_steps(["liboqs"], mldsa) == []  # nothing slow to sign: nothing to make


def test_nothing_started_nothing_waited_for(tmp_path: Path) -> None:
    warm = Warmup(["liboqs"], QANUM_SUITES, tmp_path)
    started = time.monotonic()
    warm.wait([ANSWERS, WALK], threading.Event())
    assert time.monotonic() - started < 1.0
    assert warm.pending([ANSWERS, WALK]) == [] and warm.before_timing() == []
    warm.close()


def test_the_helper_keeps_the_second_signature_and_says_so(tmp_path: Path) -> None:
    suite = "SLH-DSA-SHAKE-128f"  # an SLH-DSA suite that signs in milliseconds
    signer = second_signer("numba", suite)
    if signer is None:
        pytest.skip(f"no second implementation here signs {suite}")
    job = WarmupJob(os.getpid(), str(tmp_path), ("numba",), (suite,), (ANSWERS,))
    done = subprocess.run(job.to_argv(), capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == ANSWERS
    assert (tmp_path / f"second-{signer}-{suite}.json").is_file()


def test_close_ends_every_helper_and_what_waited_goes_on(tmp_path: Path) -> None:
    warm = Warmup(["numba"], QANUM_SUITES, tmp_path)
    warm.start()
    assert len(warm.procs) == 2 and warm.pending(warm.before_timing())
    waiting = threading.Thread(target=warm.wait, args=([WALK], threading.Event()))
    waiting.start()
    started = time.monotonic()
    warm.close()
    waiting.join(5)
    left = processes_with("qprof.measure.warmup", str(tmp_path))
    assert not left and not waiting.is_alive(), (left, time.monotonic() - started)
    assert warm.pending([ANSWERS, WALK, *warm.before_timing()]) == []


def test_stop_ends_a_wait_at_once(tmp_path: Path) -> None:
    warm = Warmup(["numba"], QANUM_SUITES, tmp_path)
    warm.start()
    stop = threading.Event()
    stop.set()
    told: list[list[str]] = []
    try:
        warm.wait([WALK], stop, lambda left, _waited: told.append(left))
        assert told == []  # stopped before it waited: nothing to say
    finally:
        warm.close()


def _nice(pid: int) -> int:
    import os

    return os.getpriority(os.PRIO_PROCESS, pid)


def test_what_the_first_figure_waits_for_goes_first(tmp_path: Path) -> None:
    """numba: the ML-DSA kernels' helper keeps the user's priority, the other helper and
    the signing helpers yield until those kernels are compiled; liboqs: nobody yields."""
    from qprof.measure.warmup import YIELD_NICE, first_figure_steps

    assert first_figure_steps(["liboqs"], QANUM_SUITES) == []
    warm = Warmup(["numba"], QANUM_SUITES, tmp_path)
    signer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        warm.start()
        first = set(first_figure_steps(["numba"], QANUM_SUITES))
        by_steps = dict(zip(map(tuple, plan_steps(["numba"], QANUM_SUITES)), warm.procs,
                            strict=True))
        for steps, proc in by_steps.items():
            assert _nice(proc.pid) == (_nice(0) if first & set(steps) else YIELD_NICE)
        warm.make_way([signer.pid])
        assert _nice(signer.pid) == YIELD_NICE
    finally:
        warm.close()
        signer.kill()
        signer.wait()
    quiet = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        after = Warmup(["numba"], QANUM_SUITES, tmp_path)  # nothing started: nothing waits
        after.make_way([quiet.pid])
        assert _nice(quiet.pid) == _nice(0)
    finally:
        quiet.kill()
        quiet.wait()
