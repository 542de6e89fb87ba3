"""A run's working directory is gone after its run, however the run ended: a signal to
`qprof check` ends it as Ctrl-C does (what finished is kept, the directory removed), and a
run killed outright leaves one that the next run sweeps, never another run's, a link or
another user's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from backends import compiled_backend

from qprof.measure.jsonl import read_run
from qprof.measure.run_dir import LOCK, PREFIX, UNLOCKED_AGE_S, RunDir, sweep
from qprof.service.store import Store

HOLD = ("import sys, time; from pathlib import Path; from qprof.measure.run_dir import "
        "RunDir; d = RunDir(Path(sys.argv[1])); print(d.path, flush=True); time.sleep(600)")


def _holder(base: Path) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(base)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_a_live_run_s_directory_is_kept_and_a_killed_one_s_swept(tmp_path: Path) -> None:
    proc, held = _holder(tmp_path)
    try:
        mine = RunDir(tmp_path)
        (held / "cpu0-r0.job.json").write_text("{}")
        assert sweep(tmp_path) == []
        assert held.is_dir() and mine.path.is_dir()
        proc.kill()
        proc.wait()
        assert sweep(tmp_path) == [held]
        assert not held.exists() and mine.path.is_dir()
        mine.remove()
        assert not mine.path.exists()
        assert sweep(tmp_path) == []
    finally:
        proc.kill()
        proc.wait()


def test_links_unlocked_young_directories_and_other_names_are_left_alone(
        tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "precious").write_text("x")
    (tmp_path / f"{PREFIX}link").symlink_to(target)
    young = tmp_path / f"{PREFIX}young"  # a run between mkdtemp and its lock
    young.mkdir()
    old = tmp_path / f"{PREFIX}old"  # a qprof before the lock, killed long ago
    old.mkdir()
    (old / "fixtures.json").write_text("{}")
    then = time.time() - UNLOCKED_AGE_S - 60
    os.utime(old, (then, then))
    lock_link = tmp_path / f"{PREFIX}locklink"  # its lock a link: not judged
    lock_link.mkdir()
    (lock_link / LOCK).symlink_to(target / "precious")
    other = tmp_path / "qprof-monitor-x"
    other.mkdir()
    os.utime(other, (then, then))
    assert sweep(tmp_path) == [old]
    assert (target / "precious").read_text() == "x"
    assert young.is_dir() and lock_link.is_dir() and other.is_dir()
    assert (tmp_path / f"{PREFIX}link").is_symlink()


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_another_user_s_directory_is_left_alone(tmp_path: Path) -> None:
    proc, held = _holder(tmp_path)
    proc.kill()
    proc.wait()
    os.chown(held, 65534, 65534)
    assert sweep(tmp_path) == []
    assert held.is_dir()


def _lines(stream: object, seen: list[str], measured: threading.Event) -> None:
    buf = ""
    while chunk := stream.read(1):  # type: ignore[attr-defined]
        buf += chunk
        if "measured:" in buf:
            measured.set()
    seen.append(buf)


@pytest.mark.fresh
@pytest.mark.slow
def test_sigterm_ends_check_as_ctrl_c_does(tmp_path: Path) -> None:
    """`kill` (or a closed terminal) during `qprof check`: the engine stops, the run ends
    `aborted` with its finished measurements in -o and the store, the exit status says the
    signal, and no run directory is left."""
    backend = compiled_backend()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "run.jsonl"
    env = dict(os.environ, TMPDIR=str(tmp), QPROF_CACHE_DIR=str(tmp_path / "cache"))
    cpu = max(os.sched_getaffinity(0))
    comparison = [] if backend == "liboqs" else ["--comparison"]  # no verdict: figures
    proc = subprocess.Popen(
        [sys.executable, "-m", "qprof", "check", "--cpus", str(cpu), "--backend", backend,
         *comparison, "--time-limit", "240", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen: list[str] = []
    measured = threading.Event()
    reader = threading.Thread(target=_lines, args=(proc.stderr, seen, measured), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 240
        while not measured.wait(0.2):
            assert proc.poll() is None and time.monotonic() < deadline, \
                f"no round measured (exit {proc.poll()}): {''.join(seen)}"
        assert list(tmp.glob(f"{PREFIX}*")), "the run has no run directory"
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    stderr = "".join(seen)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr
    assert "interrupted" in stderr and "no verdict from part of a run" in stderr
    assert not list(tmp.glob(f"{PREFIX}*"))
    run = read_run(out)
    assert run.measurements and run.end is not None and run.end.status == "aborted"
    [path] = Path(os.environ["XDG_STATE_HOME"]).rglob("*.db")
    store = Store(path)
    try:
        kept = [(r.run_id, r.status, r.measurements) for r in store.runs()]
    finally:
        store.close()
    assert run.meta is not None
    assert kept == [(run.meta.run_id, "aborted", len(run.measurements))]
