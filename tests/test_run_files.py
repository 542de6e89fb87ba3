"""Recorded runs read side by side (qprof.service.run_files): the same points in the
order given, a bad file named, progress said; and the workers leave with their command,
whether it ends, is interrupted (Ctrl-C) or is killed (SIGTERM), leaving nothing on disk."""

from __future__ import annotations

import io
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from qprof.commands import reading
from qprof.consensus import load_profile
from qprof.consensus.trend.from_jsonl import RunFileError
from qprof.report.judgement import report_judgement
from qprof.service.run_files import points_of_runs, read_run_files

REPO = Path(__file__).resolve().parents[1]
ZEN4 = sorted((REPO / "tests" / "data" / "trend" / "zen4").glob("check-*.jsonl.xz"))
LIVENESS_S = 20.0  # polled, never a figure asserted


def test_files_read_side_by_side_come_back_in_order() -> None:
    seen: list[tuple[int, int]] = []
    side = read_run_files(ZEN4[:3], jobs=2, on_read=lambda d, t: seen.append((d, t)))
    alone = read_run_files(ZEN4[:3], jobs=1)
    assert [f.path for f in side] == [str(p) for p in ZEN4[:3]]
    assert [f.points for f in side] == [f.points for f in alone]
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert not multiprocessing.active_children()


def test_a_report_judged_side_by_side_is_the_one_judged_alone() -> None:
    runs = [f.run for f in read_run_files(ZEN4[:3], with_run=True, jobs=1) if f.run]
    profile = load_profile("qanum")
    alone = report_judgement(runs, profile, (), partial(points_of_runs, jobs=1))
    side = report_judgement(runs, profile, (), partial(points_of_runs, jobs=2))
    assert side == alone and alone.suites


def test_a_bad_file_ends_the_read_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(RunFileError, match=f"^{bad}: "):
        read_run_files([ZEN4[0], bad, ZEN4[1]], jobs=2)
    assert not multiprocessing.active_children()


def test_progress_on_a_terminal_is_one_line_erased_at_the_end() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    with reading.ReadingRuns("trend", out) as progress:
        for done in range(3):
            progress(done, 2)
    text = out.getvalue()
    assert "\rqprof trend: 1 of 2 recorded runs read" in text and "\n" not in text
    assert text.endswith("\r" + " " * len(text.split("\r")[-3]) + "\r")


def test_progress_elsewhere_waits_then_says_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()
    with reading.ReadingRuns("history", log) as quick:
        for done in range(3):
            quick(done, 2)
    assert log.getvalue() == ""  # a quick read says nothing
    monkeypatch.setattr(reading, "FIRST_LINE_S", 0.0)
    with reading.ReadingRuns("history", log) as slow:
        for done in (0, 1, 20):
            slow(done, 20)
    assert log.getvalue().startswith("qprof history: 0 of 20 recorded runs read (")
    assert log.getvalue().count("\n") == 1  # the next line 10 s on; none at the end


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.name.isdigit() and stat[0] != "Z" and int(stat[1]) == pid:
            found.append(int(entry.name))
    return found


def _alive(pids: list[int]) -> list[int]:
    left = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            left.append(pid)
    return left


def _trend_reading(tmp_path: Path) -> tuple[subprocess.Popen[str], list[int]]:
    """`qprof trend --jobs 2` over twenty recorded runs, once both workers read."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "qprof", "trend", "--jobs", "2", *map(str, ZEN4)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(tmp)}, start_new_session=True,
        # as from a terminal: Ctrl-C's default (a shell's & would ignore it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + LIVENESS_S
    while len(workers := _children(proc.pid)) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "trend started no two workers"
        time.sleep(0.05)
    return proc, workers


def _gone(pids: list[int]) -> list[int]:
    deadline = time.monotonic() + LIVENESS_S
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _alive(pids)


def test_sigterm_leaves_no_worker_and_nothing_on_disk(tmp_path: Path) -> None:
    proc, workers = _trend_reading(tmp_path)
    try:
        time.sleep(1.0)  # the workers busy expanding and estimating
        proc.send_signal(signal.SIGTERM)  # the command alone, as `timeout` or kill does
        proc.communicate(timeout=LIVENESS_S)
        assert not _gone(workers), "workers go on after their command was killed"
        assert not list((tmp_path / "tmp").iterdir())
    finally:
        for pid in _alive(workers):
            os.kill(pid, signal.SIGKILL)


def test_ctrl_c_ends_trend_and_its_workers_without_a_traceback(tmp_path: Path) -> None:
    proc, workers = _trend_reading(tmp_path)
    try:
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole group
        out, err = proc.communicate(timeout=LIVENESS_S)
        assert proc.returncode == 130, err
        assert out == "" and "Traceback" not in err, err
        assert not _gone(workers)
    finally:
        for pid in _alive([proc.pid, *workers]):
            os.kill(pid, signal.SIGKILL)
