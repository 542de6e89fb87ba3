"""Hostile inputs and faults against the daemon, round 2 (issue 22: findings 1, 2, 4, 5, 10,
13's daemon messages, 14): real daemons, sockets, files, filesystems and task limits."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_hostile_inputs import tmpfs
from test_service_daemon import FAST_CYCLE, NO_CYCLE, DaemonProc, _slow_cycle, wait_for
from test_service_watch import make_root

QPROF = [sys.executable, "-m", "qprof"]


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Callable[..., DaemonProc]]:
    started: list[DaemonProc] = []

    def start(*args: str, **kw: object) -> DaemonProc:
        d = DaemonProc(tmp_path, *args, **kw)  # type: ignore[arg-type]
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


@pytest.fixture(scope="module")
def kernels() -> None:
    """The numba kernels the cycles use, compiled (or loaded) once, before any wait."""
    from qprof.verify import warm_up

    warm_up("numba", "ML-DSA-44")


def threads_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    m = re.search(r"^Threads:\s+(\d+)", status, re.M)
    assert m
    return int(m.group(1))


def metrics_port(d: DaemonProc) -> int:
    return int(d.metrics_url.rsplit(":", 1)[1].split("/")[0])


def closed_by_peer(sock: socket.socket, timeout: float) -> bool:
    """True once the other end closed (anything it sent first is read and dropped)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        pass
    return True


def reset(sock: socket.socket) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a client that crashed."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# -- 1. the metrics port: connection cap, request deadline, a thread that cannot start ------

def test_idle_connections_neither_pile_up_threads_nor_stay(
        tmp_path: Path, daemons: Callable[..., DaemonProc]) -> None:
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE)
    port = metrics_port(d)
    before = threads_of(d.proc.pid)
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(200)]
    try:
        time.sleep(1.0)  # let the daemon accept them all
        # Before: a thread per connection (203 for 200). Now one loop and WORKERS.
        assert threads_of(d.proc.pid) <= before + 16 + 2
        # Each is closed after the request deadline (5 s).
        assert all(closed_by_peer(s, 15) for s in idle)
    finally:
        for s in idle:
            s.close()
    assert "qprof_cpu_online" in d.scrape()
    assert d.proc.poll() is None
    assert "Traceback" not in d.log
    assert "failed: no complete request within 5 s" in d.log


def test_request_deadline_covers_the_whole_request_and_the_cap_drops_the_idle() -> None:
    """A client trickling a byte at a time is cut off at the deadline; past the cap the
    longest-idle connection is closed (408), not the newcomer; a real scrape works."""
    from prometheus_client import CollectorRegistry

    from qprof.service.metrics_http import ServerLimits, serve

    server, _thread = serve(CollectorRegistry(), "127.0.0.1", 0, ServerLimits(2, 1.0))
    port = server.server_address[1]
    try:
        dropped = socket.create_connection(("127.0.0.1", port), timeout=5)
        time.sleep(0.1)
        trickle = socket.create_connection(("127.0.0.1", port), timeout=5)
        time.sleep(0.1)
        idle = socket.create_connection(("127.0.0.1", port), timeout=5)  # the cap: 2
        assert dropped.recv(100).startswith(b"HTTP/1.0 408")
        dropped.close()
        cut_off = False
        for byte in b"GET /metrics HTTP/1.0\r\nX-Slow: " + b"a" * 200:
            try:
                trickle.send(bytes([byte]))
            except OSError:
                cut_off = True
                break
            trickle.settimeout(0.1)
            try:
                trickle.recv(1)  # the 408, or the end
                cut_off = True
                break
            except TimeoutError:
                pass
            except OSError:
                cut_off = True
                break
        assert cut_off  # 200 bytes at 0.1 s each outlast the 1 s deadline
        assert closed_by_peer(idle, 5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            assert resp.status == 200
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def pids_cgroup(name: str) -> Iterator[Path]:
    """A cgroup of the pids controller (what systemd's TasksMax= sets), v1 or v2."""
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if (base / "cgroup.procs").exists() and not (base / "pids.max").exists():
            group = base / name
            try:
                group.mkdir()
            except OSError:
                continue
            if (group / "pids.max").exists():
                break
            group.rmdir()
    else:
        pytest.skip("no pids cgroup can be made here (needs root and the pids controller)")
    try:
        yield group
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def test_a_thread_that_cannot_start_costs_a_request_or_a_cycle_not_the_daemon(
        tmp_path: Path, daemons: Callable[..., DaemonProc], kernels: None) -> None:
    with pids_cgroup(f"qprof-test-{os.getpid()}-{time.monotonic_ns()}") as group:
        d = daemons("--root", str(make_root(tmp_path)), *FAST_CYCLE, "--first-cycle-delay",
                    "4", "--retry", "1")
        port = metrics_port(d)
        (group / "cgroup.procs").write_text(str(d.proc.pid))
        try:
            (group / "pids.max").write_text((group / "pids.current").read_text().strip())
            # No thread can start: a scrape is dropped (one line), the cycle is skipped.
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
                assert closed_by_peer(s, 10)
            d.wait_log("cannot start a thread for it")
            d.wait_log("cannot start the measurement thread")
            time.sleep(2.5)  # two more watch ticks and a retried cycle
            assert d.proc.poll() is None, d.log
            assert "Traceback" not in d.log
        finally:
            (group / "pids.max").write_text("max")
        # Room again: the next retry runs the cycle, and scrapes work.
        d.wait_log("cycle finished", timeout=90)
        assert "qprof_cpu_online" in d.scrape()
        [run] = [r for r in d.store().runs(5) if r.status == "finished"]
        assert run.measurements >= 1
        skipped = [a for a in d.store().alerts.recent() if a.kind == "cycle_skipped"]
        assert len(skipped) == 1 and "TasksMax" in skipped[0].message
        d.signal(signal.SIGTERM)
        assert d.wait_exit(10) == 0


# -- 2. the store replaced under a running daemon --------------------------------------------

def _integrity(path: Path) -> str:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        return str(exc)


def test_store_replaced_under_the_daemon_is_noticed_and_put_back(
        tmp_path: Path, daemons: Callable[..., DaemonProc], kernels: None) -> None:
    from qprof.service.alerts import Alert
    from qprof.service.store import Store

    state = tmp_path / "state"
    store = Store(state / "qprof.db")  # a store with history, as after weeks of running
    for i in range(3000):
        store.alerts.add(Alert(ts=time.time(), kind="cap_started", severity="info",
                               message=f"old alert {i}"))
    store.close()
    d = daemons("--root", str(make_root(tmp_path)), *FAST_CYCLE, "--first-cycle-delay", "4",
                state_dir=state)
    db = state / "qprof.db"
    copy = state / "t"
    copy.write_bytes(db.read_bytes())  # cp qprof.db t; truncate -s 1000 t; mv t qprof.db
    os.truncate(copy, 1000)
    os.rename(copy, db)
    d.wait_log("was replaced by another file while the daemon had it open")
    d.wait_log("cycle finished", timeout=90)
    assert _integrity(db) == "ok"
    [aside] = state.glob("qprof.db.replaced-*")
    assert aside.stat().st_size == 1000  # the file found there, kept as it was
    s = d.store()
    assert len([a for a in s.alerts.recent(5000) if a.kind == "cap_started"]) == 3000
    [run] = s.runs(5)
    assert run.status == "finished" and run.measurements >= 1  # written after the swap
    [alert] = [a for a in s.alerts.recent() if a.kind == "degraded"
               and a.details.get("what") == "store"]
    assert str(aside) in alert.message
    d.signal(signal.SIGTERM)
    assert d.wait_exit(10) == 0
    assert _integrity(db) == "ok"
    assert "Traceback" not in d.log


# -- 4. a full disk, then space again -------------------------------------------------------

def _fill(directory: Path) -> Path:
    filler = directory / "filler"
    with open(filler, "wb") as fh, contextlib.suppress(OSError):
        while True:
            fh.write(b"\0" * 65536)
            fh.flush()
    return filler


def test_full_disk_then_space_again_alerts_holds_and_writes_the_results(
        tmp_path: Path, daemons: Callable[..., DaemonProc], kernels: None) -> None:
    with tmpfs(tmp_path / "state", "2m") as state:
        d = daemons("--root", str(make_root(tmp_path)), *FAST_CYCLE, "--first-cycle-delay",
                    "3", state_dir=state)
        filler = _fill(state)
        d.wait_log("alert degraded: degraded: store: writing failed", timeout=90)
        d.wait_log("cycle finished", timeout=90)
        assert 'qprof_degraded{reason="store_write_failed",what="store"} 1.0' in d.scrape()
        assert not [r for r in d.runs_with("finished")]  # nothing of it on disk yet
        filler.unlink()
        d.wait_log("store: writing works again; no longer degraded", timeout=30)
        assert 'what="store"' not in d.scrape()
        s = d.store()
        [run] = s.runs(5)
        assert run.status == "finished" and run.measurements >= 1  # closed, results in
        assert [a for a in s.alerts.recent() if a.kind == "degraded"
                and a.details.get("what") == "store"]  # the alert too, once it fitted
        assert re.search(r'qprof_verify_seconds\{backend="numba",cpu="0",'
                         r'suite="ML-DSA-44"\}', d.scrape())
        d.signal(signal.SIGTERM)
        assert d.wait_exit(10) == 0
        assert _integrity(state / "qprof.db") == "ok"
        assert "Traceback" not in d.log


# -- 5. two daemons on one store through a symlink ------------------------------------------

def test_second_daemon_on_a_symlinked_store_exits_2_and_aborts_nothing(
        tmp_path: Path, daemons: Callable[..., DaemonProc], kernels: None) -> None:
    root = make_root(tmp_path)
    first = daemons(*_slow_cycle(root), state_dir=tmp_path / "one")
    running = wait_for("a running run", lambda: first.runs_with("running"), timeout=120)
    other = tmp_path / "two"
    other.mkdir()
    (other / "qprof.db").symlink_to(tmp_path / "one" / "qprof.db")
    second = daemons(*_slow_cycle(root), state_dir=other, wait_started=False)
    assert second.wait_exit(30) == 2
    lines = second.log.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in second.log, second.log
    assert f"pid {first.proc.pid}" in lines[0] and "is in use by another qprof daemon" \
        in lines[0] and str(other / "qprof.db") in lines[0]
    assert first.proc.poll() is None
    assert running[0] in first.runs_with("running") + first.runs_with("finished")
    assert not first.runs_with("aborted")
    assert "cycle_aborted" not in [a.kind for a in first.store().alerts.recent()]


# -- 10. an alert command that cannot be split ----------------------------------------------

def test_unterminated_alert_command_is_one_line_and_exit_2(tmp_path: Path) -> None:
    r = subprocess.run([*QPROF, "daemon", "--alert-command", '"unterminated', "--state-dir",
                        str(tmp_path / "s"), "--listen", "none"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert "alert-command" in lines[0] and "No closing quotation" in lines[0]
    conf = tmp_path / "qprof.toml"
    conf.write_text("[daemon]\nalert_command = 'notify \"oops'\n")
    r = subprocess.run([*QPROF, "daemon", "--config", str(conf), "--state-dir",
                        str(tmp_path / "s"), "--listen", "none"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert str(conf) in r.stderr and "alert_command" in r.stderr
    assert not (tmp_path / "s").exists()  # refused before anything was created


# -- 13. messages: an IPv6 metrics URL, --interval 0 and -5 ---------------------------------

def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_ipv6_listen_logs_a_url_that_works(tmp_path: Path,
                                          daemons: Callable[..., DaemonProc]) -> None:
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE, listen="[::1]:0")
    assert d.metrics_url.startswith("http://[::1]:")
    assert "qprof_cpu_online" in d.scrape()


@pytest.mark.parametrize("value", ["0", "-5"])
def test_interval_zero_and_negative_say_the_same(tmp_path: Path, value: str) -> None:
    r = subprocess.run([*QPROF, "daemon", "--interval", value, "--state-dir",
                        str(tmp_path / "s")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    [line] = r.stderr.strip().splitlines()
    assert line.endswith(f"config error: --interval: interval must be a number above 0, got "
                         f"{value}")


# -- 14. a failed request is one line in the log, never a traceback -------------------------

def test_failed_requests_are_one_line_each(tmp_path: Path,
                                           daemons: Callable[..., DaemonProc]) -> None:
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE)
    port = metrics_port(d)
    for payload in (b"GET /metrics HTTP/1.1\r\nHost: x\r\n", b""):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(payload)
        time.sleep(0.3)  # the daemon is reading the request now
        reset(s)
    d.wait_log("failed: ConnectionResetError")
    time.sleep(0.5)
    assert "Traceback" not in d.log and "Exception occurred" not in d.log
    failed = [line for line in d.log.splitlines() if "metrics: request from" in line]
    assert len(failed) == 2 and all("ConnectionResetError" in line for line in failed)
    assert "qprof_cpu_online" in d.scrape()
