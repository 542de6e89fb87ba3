"""Issue 30: `q` (or Ctrl-C) at any moment of the monitor's first run, the signing of the
first pool included, ends the monitor and every process it started (signing helpers,
timing workers, the evaluation child) within 2 s, without a traceback.

The monitor measures this machine in a real terminal (tmux), from an empty state and an
empty signature cache. The liveness deadline polled here is 10 s (slack for a loaded CI
host); the figure measured is printed (`pytest -s`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_tui_tmux import tmux, wait_for

from qprof.measure import fixtures

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed "
                       "(Debian package tmux)"),
]

DEADLINE_S = 10.0  # polled; the goal (2 s) is reported, not asserted


def _descendants(root: int) -> dict[int, str]:
    """pid -> start time (from /proc/PID/stat) of every live process under ``root``."""
    parent: dict[int, int] = {}
    started: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            parent[int(entry.name)], started[int(entry.name)] = int(fields[1]), fields[19]
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        for child, ppid in parent.items():
            if ppid == pid and child not in found:
                found[child] = started[child]
                todo.append(child)
    return found


def _alive(pids: dict[int, str]) -> list[int]:
    left = []
    for pid, start in pids.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and fields[19] == start:
            left.append(pid)
    return left


class FirstRun:
    """``qprof monitor`` on this machine with nothing stored and nothing cached."""

    def __init__(self, tmp_path: Path, pool_size: str = "4") -> None:
        self.name = f"qprof-first-{uuid.uuid4().hex[:8]}"
        (tmp_path / "tmp").mkdir()
        (tmp_path / "lock").mkdir(mode=0o700)
        env = {"XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color",
               "QPROF_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp_path / "tmp"),
               # a small full pool: the first run signs 4 per SLH-DSA suite
               "QPROF_POOL_SIZE": pool_size, "QPROF_ADVERSARY_DIR": str(tmp_path / "adv"),
               # its own machine lock: other qprof runs on a shared CI host neither
               # delay this first run nor stop its grower (test_machine_lock tests it)
               "QPROF_LOCK_DIR": str(tmp_path / "lock")}
        # The tmux server keeps the environment of whoever started it: this test's own
        # liboqs (or none) is passed on, not another run's.
        env.update({k: os.environ[k] for k in ("HOME", "OQS_INSTALL_PATH",
                                               "QPROF_LIBOQS_SETUP") if k in os.environ})
        command = ["env", "-u", "COLUMNS", "-u", "LINES",
                   *(f"{k}={v}" for k, v in env.items()),
                   sys.executable, "-m", "qprof", "monitor", "--measure-every", "0"]
        tmux("new-session", "-d", "-s", self.name, "-x", "220", "-y", "50",
             "-c", str(Path(__file__).resolve().parents[1]), " ".join(command))
        tmux("set-option", "-t", self.name, "remain-on-exit", "on")
        self.pid = int(self.pane("#{pane_pid}"))
        self.seen: dict[int, str] = {}

    def pane(self, fmt: str) -> str:
        return tmux("list-panes", "-t", self.name, "-F", fmt).strip()

    def screen(self) -> str:
        self.seen.update(_descendants(self.pid))  # every process it started, as they come
        return tmux("capture-pane", "-p", "-t", self.name)

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True,
                       timeout=10, check=False)


MOMENTS = {
    # the first pool being signed: helpers busy
    "signing": re.compile(r"signing 4 SLH-DSA-SHAKE-\d+s signatures"),
    # a round being timed: a pinned worker busy
    "measuring": re.compile(r"CPU \d+ round \d+"),
}


@pytest.mark.fresh
@pytest.mark.parametrize(("moment", "key"), [("signing", "q"), ("measuring", "q"),
                                             ("signing", "C-c")])
def test_quit_at_a_moment_of_the_first_run_leaves_nothing(tmp_path: Path, moment: str,
                                                          key: str) -> None:
    for suite in ("SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s"):
        if not fixtures.candidate_signers(suite)[0]:
            pytest.skip(f"nothing here signs {suite}: the monitor cannot measure")
    run = FirstRun(tmp_path)
    try:
        wait_for(lambda: MOMENTS[moment].search(run.screen()) is not None and "yes", 150,
                 f"the first run's {moment}", run.screen)
        run.screen()
        started_procs = dict(run.seen)
        assert started_procs, "the monitor started no helper process"
        pressed = time.monotonic()
        tmux("send-keys", "-t", run.name, key)
        while time.monotonic() - pressed < DEADLINE_S:
            if run.pane("#{pane_dead}") == "1" and not _alive(started_procs):
                break
            time.sleep(0.05)
        took = time.monotonic() - pressed
        left = _alive(started_procs)
        assert run.pane("#{pane_dead}") == "1", f"still running {DEADLINE_S} s after {key}"
        assert not left, f"processes left after {key}: {left}"
        shown = tmux("capture-pane", "-p", "-S", "-100", "-t", run.name)
        assert "Traceback" not in shown and "KeyboardInterrupt" not in shown, shown
        print(f"{key} during {moment}: the monitor and its {len(started_procs)} helper "
              f"processes gone in {took:.2f} s")
    finally:
        run.kill()


def _ours(token: str) -> list[str]:
    """`ps` lines (pid and command) of every live process whose environment holds
    ``token``: what this test's monitor started, reparented ones included (not the
    tmux server, whose command line holds it)."""
    out = subprocess.run(["ps", "axeww", "-o", "pid=,stat=,args="], capture_output=True,
                         text=True, timeout=10, check=True).stdout
    return [line.split(" ", 2)[0] + " " + line.split(None, 2)[2][:120]
            for line in out.splitlines()
            if token in line and not line.split()[1].startswith("Z")
            and line.split()[2] != "tmux"]


VERDICT = re.compile(r"@\d+.*(✓ yes|✗ NO|\? unsure|no reliable estimate|not binding here)")
ISSUE_50_MOMENTS = ("5 s", "30 s", "60 s", "120 s", "verdict")
FIRST_VERDICT_S = 330  # polled: a liveness bound, never a figure asserted


@dataclass
class Quit:
    """One moment's monitor: when to press q, and what was seen once it was."""

    moment: str
    run: FirstRun
    token: str  # in the environment of every process it started
    verdict_at: float | None = None
    pressed: float | None = None
    running: list[str] = field(default_factory=list)
    exited: float | None = None
    said: str | None = None

    def due(self, since_start: float, now: float) -> bool:
        if self.moment != "verdict":
            return since_start >= float(self.moment.split()[0])
        if self.verdict_at is None and VERDICT.search(self.run.screen()) is not None:
            self.verdict_at = now
        # the grower starts with the verdict
        return self.verdict_at is not None and now - self.verdict_at >= 2.0

    def press(self, now: float) -> None:
        self.running = _ours(self.token)
        if self.moment == "verdict":
            assert any("qprof.measure.poolgrow" in p for p in self.running), \
                "the monitor grows no pool after its verdict"
        self.pressed = now
        tmux("send-keys", "-t", self.run.name, "q")

    def settled(self, now: float) -> bool:
        """Once pressed: the monitor has exited and 3 s have passed (or the deadline)."""
        assert self.pressed is not None
        if self.exited is None and self.run.pane("#{pane_dead}") == "1":
            self.exited = now - self.pressed
        waited = now - self.pressed
        return (self.exited is not None and waited >= max(3.0, self.exited)) \
            or waited >= DEADLINE_S

    def judge(self) -> None:
        assert self.exited is not None, f"still running {DEADLINE_S} s after q at {self.moment}"
        # The goal: nothing 3 s after q. The monitor's own exit is polled (a numba-only
        # first run stops its measurement in ~4 s, as main did); what it started must be
        # gone 3 s after q, or at once when the monitor took longer.
        left = _ours(self.token)
        assert not left, (f"qprof processes {max(3.0, self.exited):.1f} s after q at "
                          f"{self.moment}: {left}")
        self.said = (f"q at {self.moment}: {len(self.running)} processes before; the "
                     f"monitor exited in {self.exited:.2f} s; none left "
                     f"{max(3.0, self.exited):.1f} s after q")


@pytest.mark.fresh
@pytest.mark.timeout(450)
def test_issue_50_q_in_the_first_run_leaves_no_qprof_process(tmp_path: Path) -> None:
    """Issue 50: `q` at 5, 30, 60 and 120 s and after the first verdict (the pool grower
    then signs: a full pool of 16, a first of 8) leaves no process of qprof 3 s later
    (`ps`, by each run's environment). The five first runs go side by side, each with its
    own state, caches and machine lock (CI time: one after another they took 300 s); the
    host's load moves what a moment's run has reached, not what q must leave."""
    for suite in ("SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s"):
        if not fixtures.candidate_signers(suite)[0]:
            pytest.skip(f"nothing here signs {suite}: the monitor cannot measure")
    from qprof.verify import available_backends

    status = available_backends().get("liboqs")
    # no verdict without liboqs (numba alone is comparison only)
    moments = [m for m in ISSUE_50_MOMENTS
               if m != "verdict" or (status is not None and status.available)]
    quits: list[Quit] = []
    try:
        for moment in moments:
            home = tmp_path / moment.replace(" ", "")
            home.mkdir()
            quits.append(Quit(moment, FirstRun(home, pool_size="16"), str(home / "cache")))
        started = time.monotonic()
        while not all(q.said for q in quits):
            now = time.monotonic()
            for q in quits:
                if q.pressed is None and q.due(now - started, now):
                    q.press(now)
                elif q.pressed is not None and q.said is None and q.settled(now):
                    q.judge()
            waiting = [q for q in quits if q.pressed is None]
            assert now - started < FIRST_VERDICT_S or not waiting, \
                f"no first verdict in {FIRST_VERDICT_S} s:\n{waiting[0].run.screen()}"
            time.sleep(0.2)
        for q in quits:
            print(q.said)
    finally:
        for q in quits:
            q.run.kill()
            for line in _ours(q.token):
                subprocess.run(["kill", "-9", line.split()[0]], check=False)
