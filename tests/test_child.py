"""Helper processes: one typed job per kind, one launch, one entry
(``python -m qprof.measure.child KIND --field value ...``). Jobs round-trip through their
argv, a bad job ends with exit code 2 and one line, ``stop`` and a time limit kill the
child (checked in /proc), and a grower ends with the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from procs import gone_within, processes_with, unstarved

from qprof.measure import fixtures, machine_lock, poolgrow
from qprof.measure.child.__main__ import EXIT_BAD_JOB, KINDS, entry_of
from qprof.measure.child.job import ChildJob, JobError
from qprof.measure.child.launch import ChildStopped, ChildTimeout, run
from qprof.measure.fixtures import SignJob
from qprof.measure.poolgrow import GrowJob
from qprof.measure.protocol import WorkerRun
from qprof.measure.sigtime import SigTimeRun
from qprof.measure.warmup import WarmupJob
from qprof.tui.sources.consensus import EvaluateJob
from qprof.tui.sources.hardware import ClockJob
from qprof.tui.sources.trend import TrendJob

SLOW = "SLH-DSA-SHAKE-256s"  # keeps a grower busy
EXAMPLES: tuple[ChildJob, ...] = (
    WorkerRun("/tmp/w 1/job.json"),
    WorkerRun("/tmp/p.json", preflight=True),
    SigTimeRun("/tmp/job.json", "/tmp/out.json"),
    SignJob(123, "SLH-DSA-SHAKE-128s", 4, ("liboqs", "pqcrypto")),
    GrowJob("/tmp/cache", 77, (), ("SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")),
    WarmupJob(5, "/tmp/c", ("numba",), ("ML-DSA-44",), ("answers", "kernels ML-DSA-44")),
    ClockJob((0, 1, 15)),
    TrendJob("/var/lib/qprof/store.db", "qanum", ""),
    EvaluateJob("/tmp/s.db", "/etc/qprof/chain.toml", "liboqs", "/snap"),
)


@pytest.mark.parametrize("job", EXAMPLES, ids=lambda j: type(j).__name__)
def test_every_job_round_trips_through_its_command_line(job: ChildJob) -> None:
    argv = job.to_argv()
    assert argv[:4] == [sys.executable, "-m", "qprof.measure.child", job.KIND]
    assert entry_of(argv[3]).job.from_argv(argv[4:]) == job


def test_every_kind_has_a_job_and_an_entry() -> None:
    assert {j.KIND for j in EXAMPLES} == set(KINDS)
    for kind in KINDS:
        entry = entry_of(kind)
        assert kind == entry.job.KIND and callable(entry.main)


@pytest.mark.parametrize(("args", "why"), [
    (["qprof.measure.fixtures", "--parent", "x", "--suite", "S", "--count", "1",
      "--backends", ""], "--parent: invalid literal"),
    (["qprof.measure.fixtures", "--parent", "1"], "missing --suite"),
    (["qprof.measure.sigtime", "--job", "j", "--out", "o", "--evil", "1"],
     "unexpected argument '--evil'"),
    (["qprof.measure.worker", "--job", "j", "--preflight", "yes"], "not 0 or 1"),
    (["qprof.measure.worker", "--job"], "'--job' has no value"),
    (["os", "--path", "/"], "unknown kind 'os'"),
    ([], "unknown kind ''"),
])
def test_a_bad_job_exits_2_with_one_line(args: list[str], why: str) -> None:
    done = subprocess.run([sys.executable, "-m", "qprof.measure.child", *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == EXIT_BAD_JOB and done.stdout == ""
    assert done.stderr.count("\n") == 1 and why in done.stderr, done.stderr
    assert done.stderr.startswith("qprof child: bad job: ")


def test_a_comma_cannot_hide_in_a_list_field() -> None:
    with pytest.raises(JobError, match="--suites"):
        GrowJob("/tmp", 1, (), ("a,b",)).to_argv()


def test_a_child_that_fails_says_why_in_one_line(tmp_path: Path) -> None:
    done = run(TrendJob(str(tmp_path / "none.db"), str(tmp_path / "no-such.toml"), ""))
    assert done.returncode == 1 and done.stdout == ""
    assert done.failure().startswith("profile: ") and "\n" not in done.failure()


def _long_job(tag: int) -> tuple[ClockJob, str]:
    """A child busy for many seconds: the clock estimate of CPU 0, ``tag`` + 300 times."""
    job = ClockJob((0,) * (300 + tag))
    return job, f"{job.KIND} --cpus {','.join(['0'] * (300 + tag))}"


def test_stop_kills_the_child(tmp_path: Path) -> None:
    job, marker = _long_job(os.getpid() % 97)
    stop = threading.Event()
    raised: list[BaseException] = []

    def call() -> None:
        try:
            run(job, stop)
        except BaseException as exc:  # noqa: BLE001 - what run raised, for the test
            raised.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    try:
        deadline = time.monotonic() + 60
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(marker), "the child did not start"
        stop.set()
        caller.join(30)
        assert not caller.is_alive()
        assert len(raised) == 1 and isinstance(raised[0], ChildStopped)
        assert processes_with(marker) == []  # killed and reaped, not waited out
    finally:
        stop.set()
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_child_over_its_time_limit_is_killed() -> None:
    job, marker = _long_job(os.getpid() % 89 + 100)
    with pytest.raises(ChildTimeout):
        run(job, timeout_s=0.5)
    assert processes_with(marker) == []


def test_a_grower_ends_when_its_parent_dies(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``qprof pool grow`` starts the grower in the foreground; ``kill -9`` of that command
    ends the grower too (it polls its parent: a thread may have started it)."""
    if not fixtures.candidate_signers(SLOW)[0]:
        pytest.skip(f"nothing here signs {SLOW}")
    env = {**os.environ, "QPROF_CACHE_DIR": str(tmp_path / "cache"),
           "QPROF_POOL_SIZE": "64", machine_lock.DIR_ENV: str(tmp_path)}
    parent = subprocess.Popen([sys.executable, "-m", "qprof", "pool", "grow", "--suites",
                               SLOW], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    marker = f"{poolgrow.MODULE} --dir {tmp_path / 'cache' / 'fixtures'} --parent {parent.pid} "
    try:
        assert unstarved(marker, 60), "no grower started"
        parent.kill()
        parent.wait()
        assert gone_within(marker, 20.0)[0] == [], "the grower outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
