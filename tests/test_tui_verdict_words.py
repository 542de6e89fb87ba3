"""Issue 30 on the monitor's main screen (the Textual pilot, real stores and fixture
roots): why there is no verdict with numba alone, and what to run, in one line; lines
that wrap instead of being cut, and the selected row's whole verdict below the table;
`e` writes to the state directory and names both files it wrote.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from test_tui_helpers import BIG_LITTLE, fixture_root, frozen_config, seed_store
from textual.widgets import DataTable, Static

from qprof.tui.app import MonitorApp
from qprof.verify.liboqs_build import qprof_command


async def _settle(pilot) -> None:  # noqa: ANN001 - a textual Pilot
    app = pilot.app
    for _ in range(600):
        await pilot.pause(0.05)
        if app.first_frame_at is not None and app._evaluating is None:
            break
    await pilot.pause()


def _text(app: MonitorApp, name: str) -> str:
    widget = app.query_one(f"#coverage-{name}", Static)
    return str(widget.render()) if widget.has_class("-shown") else ""


def test_the_setup_command_runs_from_the_shell(tmp_path: Path) -> None:
    """qprof_command() is what a shell runs: `qprof` only when PATH finds this one."""
    import os
    import subprocess

    command = qprof_command()
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(f"{command} --help", shell=True, capture_output=True, text=True,
                          env=env, timeout=60)
    if command == "qprof":  # this qprof is on PATH (an activated venv, an install)
        return
    assert done.returncode == 0 and "setup" in done.stdout, done.stderr[-2000:]


def test_numba_alone_says_why_there_is_no_verdict_and_what_to_run(tmp_path: Path) -> None:
    db = seed_store(tmp_path / "q.db", cpu=2, backend="numba")

    async def scenario() -> None:
        app = MonitorApp(frozen_config(fixture_root(BIG_LITTLE), store=db, backend="numba",
                                       profile="qanum", state_dir=tmp_path / "state"))
        async with app.run_test(size=(120, 36)) as pilot:
            await _settle(pilot)
            note = app.frame.verdict_note if app.frame else None
            # A command that runs from the user's shell (issue 52: `qprof` outside the
            # venv was "command not found").
            assert note == ("No verdict: numba alone is comparison only: run "
                            f"`{qprof_command()} setup liboqs`, restart")
            assert _text(app, "verdict").replace("\n", " ") == note
        # With liboqs (the verifier qanum is held to) there is nothing to say.
        app = MonitorApp(frozen_config(fixture_root(BIG_LITTLE), store=db, backend="liboqs",
                                       profile="qanum", state_dir=tmp_path / "state"))
        async with app.run_test(size=(120, 36)) as pilot:
            await _settle(pilot)
            assert app.frame is not None and app.frame.verdict_note is None
            assert _text(app, "verdict") == ""

    asyncio.run(scenario())


def test_lines_wrap_and_the_selected_rows_verdict_is_shown_whole(tmp_path: Path) -> None:
    db = seed_store(tmp_path / "q.db", cpu=2)
    state = tmp_path / "state"

    async def scenario() -> None:
        app = MonitorApp(frozen_config(fixture_root(BIG_LITTLE), store=db, state_dir=state))
        async with app.run_test(size=(80, 40)) as pilot:
            await _settle(pilot)
            # The time bound's line is longer than the screen: wrapped, not cut.
            time_line = _text(app, "time")
            assert len(time_line) > 80 and time_line.endswith("budget))")
            assert app.query_one("#coverage-time", Static).size.height >= 2
            table = app.query_one("#coverage-table", DataTable)
            table.focus()
            first = _text(app, "detail")
            assert first.startswith("ML-DSA-44 on CPU 2: estimate 100: the unit suite")
            await pilot.press("down", "down")
            await pilot.pause()
            detail = _text(app, "detail").replace("\n", " ")
            assert detail.startswith("ML-DSA-87 on CPU 2: covered: estimate ")
            # e: to the state directory's exports/, both files named in full.
            await pilot.press("e")
            md = app.last_export
            assert md is not None and md.parent == (state / "exports").resolve()
            assert md.with_suffix(".html").is_file()
            assert any(f"report written: {md} and {md.with_suffix('.html')}" == a.message
                       for a in app.frame.alerts)

    asyncio.run(scenario())
