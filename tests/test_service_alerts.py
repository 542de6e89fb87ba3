"""Alert hysteresis (a flickering cap does not flood) and the alert command sink."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from qprof.hw.caps import Hysteresis
from qprof.service.alerts import Alert, AlertCommand, AlertDispatcher


def feed(h: Hysteresis, seq: list[bool], step: float = 1.0) -> list[tuple[int, bool]]:
    """Feed one sample per `step` seconds; the (index, change) pairs reported."""
    out = []
    for i, capped in enumerate(seq):
        change = h.update("cluster1", capped, now=i * step)
        if change is not None:
            out.append((i, change))
    return out


def test_flickering_cap_never_starts() -> None:
    h = Hysteresis(min_samples=3, hold_s=5.0)
    flicker = [True, False] * 30 + [True, True, False] * 10
    assert feed(h, flicker) == []
    assert not h.active("cluster1")


def test_cap_starts_after_holding_and_ends_after_being_gone_as_long() -> None:
    h = Hysteresis(min_samples=3, hold_s=5.0)
    seq = [False] * 3 + [True] * 10 + [False, True] + [False] * 10
    changes = feed(h, seq)
    # Starts when the cap has held 5 s (samples 3..8), ignores the one-sample gap at 13,
    # ends 5 s after it is gone for good (samples 15..20).
    assert changes == [(8, True), (20, False)]


def test_samples_and_seconds_both_needed() -> None:
    # Many samples within a short time are not enough...
    h = Hysteresis(min_samples=3, hold_s=5.0)
    assert feed(h, [True] * 20, step=0.1) == []
    # ...nor is a long time with too few samples.
    h = Hysteresis(min_samples=3, hold_s=5.0)
    assert feed(h, [True, True], step=10.0) == []
    assert h.update("cluster1", True, now=20.0) is True  # third sample, 20 s: starts
    assert h.active("cluster1")


def test_seeded_state_does_not_alert() -> None:
    h = Hysteresis(min_samples=1, hold_s=0.0)
    h.set_active("k", True)
    assert h.update("k", True, 0.0) is None
    assert h.update("k", False, 1.0) is False


def test_dispatcher_survives_a_failing_sink_and_counts() -> None:
    got: list[Alert] = []

    def broken(_alert: Alert) -> None:
        raise RuntimeError("sink down")

    d = AlertDispatcher([broken, got.append])
    d.emit("cap_started", "warning", "cluster 1 capped", cluster=1, factor=2.24)
    assert [a.kind for a in got] == ["cap_started"]
    assert got[0].details == {"factor": 2.24}
    assert d.counts == {"cap_started": 1}


def test_alert_command_gets_json_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "alert.json"
    script = tmp_path / "hook.py"
    script.write_text(f"import sys; open({str(out)!r}, 'w').write(sys.stdin.read())\n")
    cmd = AlertCommand(f"{sys.executable} {script}", timeout_s=20)
    alert = Alert(ts=1.5, kind="governor_changed", severity="warning", message="m",
                  cluster=0, details={"old": "schedutil", "new": "powersave"})
    assert cmd.run_one(alert)
    assert json.loads(out.read_text()) == alert.to_dict()


def test_alert_command_failures_are_logged_not_raised(tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    alert = Alert(ts=1.0, kind="cap_ended", severity="info", message="m")
    assert not AlertCommand(f"{sys.executable} -c 'import sys; sys.exit(3)'").run_one(alert)
    assert not AlertCommand(str(tmp_path / "missing-hook")).run_one(alert)
    slow = AlertCommand(f"{sys.executable} -c 'import time; time.sleep(30)'", timeout_s=0.5)
    assert not slow.run_one(alert)
    text = caplog.text
    assert "exited 3" in text and "failed to start" in text and "timed out" in text


def test_alert_command_queue_does_not_block_the_caller(tmp_path: Path) -> None:
    marker = tmp_path / "done"
    script = tmp_path / "slow_hook.py"
    script.write_text(
        f"import pathlib, time\ntime.sleep(0.3)\npathlib.Path({str(marker)!r}).touch()\n")
    cmd = AlertCommand(f"{sys.executable} {script}", timeout_s=20)
    cmd(Alert(ts=1.0, kind="cap_ended", severity="info", message="m"))
    assert not marker.exists()  # returned before the command finished
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    cmd.close()
    assert marker.exists()


def test_alert_command_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    import time

    from qprof.service.alerts import Alert, AlertCommand

    pids = tmp_path / "pids"
    script = tmp_path / "hang.sh"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $! >> {pids}\n"
                      f"(sleep 300; true) &\necho $! >> {pids}\nsleep 300\n")
    script.chmod(0o755)
    cmd = AlertCommand(str(script), timeout_s=1.0)
    try:
        start = time.monotonic()
        assert cmd.run_one(Alert(ts=0.0, kind="test", severity="info", message="m")) is False
        assert time.monotonic() - start < 10
        children = [int(p) for p in pids.read_text().split()]
        assert len(children) == 2
        deadline = time.monotonic() + 5
        alive = children
        while alive and time.monotonic() < deadline:
            alive = [p for p in children if _alive(p)]
            time.sleep(0.1)
        assert not alive, f"orphans left: {alive}"
    finally:
        cmd.close(wait_s=0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie waiting for init is gone for us
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
