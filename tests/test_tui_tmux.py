"""`qprof monitor` in a real terminal (tmux): it draws, shows the rows, and `q` exits cleanly.

Bounded waits only; the tmux session is always killed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from test_tui_helpers import BIG_LITTLE, THIS_VM, fixture_root

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed "
                       "(Debian package tmux)"),
]


def tmux(*args: str) -> str:
    """A tmux command on the shared server. A command that reaches the server as its last
    session ends (another xdist worker's test) gets "server exited unexpectedly": tried
    again, on a new server."""
    for _ in range(3):
        done = subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=10)
        if "server exited unexpectedly" not in done.stderr:
            break
        time.sleep(0.2)
    done.check_returncode()
    return done.stdout


def wait_for(predicate, timeout: float, what: str, screen=None) -> str:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.2)
    shown = f"; the screen:\n{screen()}" if screen else ""
    raise AssertionError(f"timed out after {timeout} s waiting for {what}{shown}")


class Session:
    def __init__(self, root: Path, size: tuple[int, int], tmp_path: Path) -> None:
        self.name = f"qprof-tui-{uuid.uuid4().hex[:8]}"
        env = {"XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color"}
        env_args = [f"{k}={v}" for k, v in env.items()]
        # COLUMNS/LINES (set by some test runners) would override the pane's real size.
        command = ["env", "-u", "COLUMNS", "-u", "LINES", *env_args, sys.executable, "-X",
                   "faulthandler", "-m",
                   "qprof", "monitor", "--root", str(root), "--measure-every", "0"]
        tmux("new-session", "-d", "-s", self.name, "-x", str(size[0]), "-y", str(size[1]),
             "-c", str(Path(__file__).resolve().parents[1]), " ".join(command))
        tmux("set-option", "-t", self.name, "remain-on-exit", "on")

    def screen(self) -> str:
        return tmux("capture-pane", "-p", "-t", self.name)

    def pane(self, fmt: str) -> str:
        return tmux("list-panes", "-t", self.name, "-F", fmt).strip()

    def exit_status(self, timeout: float) -> str:
        """Wait for the program to end; its exit status ('?' when tmux did not get it)."""
        try:
            wait_for(lambda: self.pane("#{pane_dead}") == "1" and "dead", timeout,
                     "qprof to exit", self.screen)
        except AssertionError:
            # Still running: make it dump every thread's stack (faulthandler) for the report.
            pid = self.pane("#{pane_pid}")
            children = subprocess.run(["pgrep", "-P", pid], capture_output=True, text=True,
                                      timeout=5).stdout.split()
            subprocess.run(["kill", "-ABRT", *(children or [pid])], capture_output=True,
                           timeout=5)
            time.sleep(1)
            dump = tmux("capture-pane", "-p", "-S", "-300", "-t", self.name)
            raise AssertionError(f"qprof did not exit after q; its threads:\n{dump}") from None
        # tmux sometimes marks the pane dead (pty closed) before it has reaped the process;
        # the status follows shortly, or never on some versions.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            state = self.pane("#{pane_dead_status}|#{pane_dead_signal}")
            status, _, signal = state.partition("|")
            if signal:
                return f"signal {signal}"
            if status:
                return status
            time.sleep(0.1)
        return "?"

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True,
                       timeout=10)


@pytest.fixture
def session_factory(tmp_path: Path):  # noqa: ANN201
    sessions: list[Session] = []

    def start(root: Path, size: tuple[int, int]) -> Session:
        s = Session(root, size, tmp_path)
        sessions.append(s)
        return s

    yield start
    for s in sessions:
        s.kill()


def _unmeasured_rows(screen: str) -> list[str]:
    """Coverage rows saying "not measured here" (the Covered column; at 80 columns it is
    the last one shown, so it may end the line)."""
    return [ln for ln in screen.splitlines()
            if "  not measured here  " in ln or ln.rstrip().endswith("  not measured here")]


def _drawn(session: Session) -> str:
    text = session.screen()
    return text if "Verify-Unit coverage" in text and "Quit" in text else ""


def test_big_little_snapshot_in_tmux(session_factory) -> None:  # noqa: ANN001
    session = session_factory(fixture_root(BIG_LITTLE), (110, 32))
    screen = wait_for(lambda: _drawn(session), 30, "the first frame")
    lines = screen.splitlines()
    rows = [ln.split() for ln in lines if ln[:6].strip().isdigit()]
    cpus = [r[0] for r in rows if len(r) > 3 and r[2].startswith("Cortex")]
    assert cpus == [str(i) for i in range(8)], screen
    assert [r[2] for r in rows if len(r) > 3].count("Cortex-A55") == 6
    assert sum("⚠ cap ×2.24 policy" in ln for ln in lines) == 2  # the capped Gold cores
    assert "1.08/2.42" in screen
    coverage = _unmeasured_rows(screen)
    assert len(coverage) == 8, screen  # 4 suites × 2 clusters, present though unmeasured
    assert "snapshot --root" in screen
    tmux("send-keys", "-t", session.name, "q")
    assert session.exit_status(30) in ("0", "?")
    # The terminal was restored: the alternate screen is gone, the UI is not left over.
    assert "Verify-Unit coverage" not in session.screen()


def test_vm_at_80x24_in_tmux(session_factory) -> None:  # noqa: ANN001
    session = session_factory(fixture_root(THIS_VM), (80, 24))
    screen = wait_for(lambda: _drawn(session), 30, "the first frame")
    assert "AMD EPYC" in screen and "Zen 3" in screen
    assert len(_unmeasured_rows(screen)) == 4
    assert len(screen.splitlines()) <= 24 and max(map(len, screen.splitlines())) <= 80
    tmux("send-keys", "-t", session.name, "q")
    assert session.exit_status(30) in ("0", "?")


