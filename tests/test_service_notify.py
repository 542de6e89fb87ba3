"""sd_notify against real AF_UNIX datagram sockets (path and abstract '@' names)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from qprof.service.notify import Notifier


def _receiver(address: str | bytes) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(address)
    s.settimeout(5)
    return s


def test_ready_status_watchdog_over_a_path_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "notify.sock")
    with _receiver(path) as rx:
        n = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "20000000"})
        assert n.enabled and n.watchdog_interval_s == 10.0
        assert n.ready("watching")
        assert rx.recv(4096) == b"READY=1\nSTATUS=watching"
        assert n.watchdog()
        assert rx.recv(4096) == b"WATCHDOG=1"
        assert n.stopping()
        assert rx.recv(4096) == b"STOPPING=1\nSTATUS=stopping"


def test_abstract_socket() -> None:
    name = f"qprof-test-{os.getpid()}"
    with _receiver(b"\0" + name.encode()) as rx:
        n = Notifier({"NOTIFY_SOCKET": "@" + name})
        assert n.status("measuring cpu 4")
        assert rx.recv(4096) == b"STATUS=measuring cpu 4"


def test_not_under_systemd_is_a_quiet_no_op(tmp_path: Path) -> None:
    n = Notifier({})
    assert not n.enabled and n.watchdog_interval_s is None
    assert n.ready("x") is False
    # A socket that went away: False, no exception.
    assert Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone.sock")}).ready("x") is False


def test_watchdog_meant_for_another_pid_is_ignored() -> None:
    env = {"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": str(os.getpid() + 1)}
    assert Notifier(env).watchdog_interval_s is None
    env["WATCHDOG_PID"] = str(os.getpid())
    assert Notifier(env).watchdog_interval_s == 0.5


def test_journal_stream_must_name_our_stderr(tmp_path: Path) -> None:
    from qprof.service.journal import under_journal

    with open(tmp_path / "log", "w") as fh:
        st = os.fstat(fh.fileno())
        env = {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
        assert under_journal(env, fd=fh.fileno())
        assert not under_journal({"JOURNAL_STREAM": "1:2"}, fd=fh.fileno())
        assert not under_journal({}, fd=fh.fileno())


def test_engine_lines_on_stderr_get_a_journal_priority() -> None:
    import io

    from qprof.service.journal import PriorityStream

    out = io.StringIO()
    s = PriorityStream(out)
    s.write("qprof: error: CPU 1 aborted: worker failed\nqprof: warn")
    s.write("ing: cap changed\n<4>already prefixed\nqprof: DISAGREEMENT on CPU 0\nplain\n")
    assert out.getvalue().splitlines() == [
        "<3>qprof: error: CPU 1 aborted: worker failed", "<4>qprof: warning: cap changed",
        "<4>already prefixed", "<2>qprof: DISAGREEMENT on CPU 0", "<6>plain"]
