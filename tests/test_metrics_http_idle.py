"""Issue 54: the metrics port answers scrapes while clients hold it idle or trickle.

A real `qprof daemon` (no measuring) on loopback, held by 400 idle connections and 50
sending their request head a byte a second, reopened as the daemon closes them, while a
scraper asks for /metrics every second; then the same opened as fast as the machine
allows. Beside them, the in-process server: the cap, slow readers, bad heads.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import resource
import selectors
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest
from faults import closed_by_peer, metrics_port
from test_service_daemon import NO_CYCLE, DaemonProc
from test_service_watch import make_root

from qprof.commands import daemon as daemon_cmd
from qprof.service.config import ConfigError, build_config
from qprof.service.metrics_http import MAX_CONNECTIONS, MetricsServer, ServerLimits

SLOW_HEAD = b"GET /metrics HTTP/1.1\r\nHost: qprof\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
OLD_THREAD_BOUND = 16 + 2  # before issue 54: 16 request threads at most, and the server's


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Callable[..., DaemonProc]]:
    started: list[DaemonProc] = []

    def start(*args: str) -> DaemonProc:
        started.append(DaemonProc(tmp_path, *args))
        return started[-1]

    yield start
    for d in started:
        d.stop()


def raise_file_limit() -> int:
    """This process's descriptor limit raised for the client sockets (up to 4096)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    return max(soft, want)


@dataclass(eq=False)
class _Held:
    sock: socket.socket
    slow: bool
    sent: int = 0


@dataclass
class Attacker:
    """Holds ``idle`` connections that never speak and ``slow`` ones sending SLOW_HEAD a
    byte a second; each one the daemon closes is opened again (at once when ``flood``)."""

    port: int
    idle: int
    slow: int
    flood: bool = False
    opened: int = 0
    refused: int = 0
    idle_cut: int = 0
    slow_cut_after: list[int] = field(default_factory=list)  # bytes sent when cut
    answered: int = 0  # slow heads the daemon answered as a request (it must not)

    def run(self, seconds: float) -> None:
        sel = selectors.DefaultSelector()
        slow: set[_Held] = set()
        for i in range(self.idle + self.slow):
            self._open(sel, slow, i < self.slow)
        end = time.monotonic() + seconds
        next_byte = time.monotonic()
        try:
            while time.monotonic() < end:
                for key, _ in sel.select(0.0 if self.flood else 0.1):
                    held = key.data
                    self._closed(sel, slow, held)
                    self._open(sel, slow, held.slow)
                if time.monotonic() >= next_byte:
                    next_byte += 1.0
                    for held in list(slow):
                        self._send_byte(sel, slow, held)
        finally:
            for key in list(sel.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
            sel.close()

    def _open(self, sel: selectors.BaseSelector, slow: set[_Held], is_slow: bool) -> None:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError:
            self.refused += 1
            return
        self.opened += 1
        sock.setblocking(False)
        held = _Held(sock, is_slow)
        sel.register(sock, selectors.EVENT_READ, held)
        if is_slow:
            slow.add(held)
            self._send_byte(sel, slow, held)

    def _send_byte(self, sel: selectors.BaseSelector, slow: set[_Held], held: _Held) -> None:
        try:
            held.sock.send(SLOW_HEAD[held.sent:held.sent + 1])
            held.sent += 1
        except OSError:
            pass  # closed by the daemon: the selector reports it

    def _closed(self, sel: selectors.BaseSelector, slow: set[_Held], held: _Held) -> None:
        try:
            said = held.sock.recv(100)
        except OSError:
            said = b""
        if said.startswith(b"HTTP/1.0 200"):
            self.answered += 1
        if held.slow:
            slow.discard(held)
            self.slow_cut_after.append(held.sent)
        else:
            self.idle_cut += 1
        sel.unregister(held.sock)
        held.sock.close()


class Scraper(threading.Thread):
    """Asks for /metrics every second (2 s to answer); counts the daemon's threads."""

    def __init__(self, url: str, pid: int) -> None:
        super().__init__(daemon=True)
        self.url, self.pid = url, pid
        self.stop = threading.Event()
        self.took: list[float] = []
        self.errors: list[str] = []
        self.threads: list[int] = []

    def run(self) -> None:
        tick = time.monotonic()
        while not self.stop.is_set():
            start = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=2) as resp:
                    if b"qprof_cpu_online" not in resp.read():
                        self.errors.append("no qprof_cpu_online in the answer")
            except Exception as exc:  # any failure is the finding
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.took.append(time.monotonic() - start)
            self.threads.append(threads_of(self.pid))
            tick += 1.0
            self.stop.wait(max(0.0, tick - time.monotonic()))


def _held_through(d: DaemonProc, attacker: Attacker, seconds: float) -> Scraper:
    """Runs the attacker in a process of its own (as a real one would be: it does not
    take this one's interpreter lock from the scraper) and reads its counts back."""
    scraper = Scraper(d.metrics_url, d.proc.pid)
    scraper.start()
    try:
        out = subprocess.run([sys.executable, __file__, json.dumps(asdict(attacker)),
                              str(seconds)], capture_output=True, text=True,
                             timeout=seconds + 60, check=True).stdout
    finally:
        scraper.stop.set()
        scraper.join(10)
    for key, value in json.loads(out).items():
        setattr(attacker, key, value)
    return scraper


def _check(d: DaemonProc, scraper: Scraper, before: int, seconds: float) -> None:
    assert scraper.errors == []
    assert len(scraper.took) >= seconds - 2
    assert max(scraper.took) < 2.0, scraper.took  # the bound, not a speed goal
    assert max(scraper.threads) <= before + OLD_THREAD_BOUND, scraper.threads
    assert d.proc.poll() is None
    assert "Traceback" not in d.log


@pytest.mark.slow
def test_scrapes_answer_while_400_idle_and_50_slow_clients_hold_the_port(
        tmp_path: Path, daemons: Callable[..., DaemonProc]) -> None:
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE)
    before = threads_of(d.proc.pid)
    attacker = Attacker(metrics_port(d), idle=400, slow=50)
    scraper = _held_through(d, attacker, 30.0)
    _check(d, scraper, before, 30.0)
    # Held at the deadline (5 s), not for ever: every one was cut and opened again, and
    # no slow head got through (200 bytes at a byte a second would take 200 s).
    assert attacker.idle_cut >= 400 and len(attacker.slow_cut_after) >= 50
    assert attacker.answered == 0 and max(attacker.slow_cut_after) < 30
    assert "failed: no complete request within 5 s" in d.log


@pytest.mark.slow
def test_scrapes_answer_through_a_flood_of_connections(
        tmp_path: Path, daemons: Callable[..., DaemonProc]) -> None:
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE)
    before = threads_of(d.proc.pid)
    # Over the daemon's cap, so that each new connection closes the longest idle.
    idle = min(3 * MAX_CONNECTIONS, raise_file_limit() - 200)  # as the attacker's
    attacker = Attacker(metrics_port(d), idle=idle, slow=50, flood=True)
    scraper = _held_through(d, attacker, 10.0)
    _check(d, scraper, before, 10.0)
    assert attacker.opened > idle + 50 and attacker.answered == 0
    assert "the most: closed the longest idle" in d.log


# -- the server in this process ---------------------------------------------------------

def _app(body: bytes) -> Callable[..., Iterable[bytes]]:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [body]
    return app


@pytest.fixture
def server() -> Iterator[Callable[..., MetricsServer]]:
    started: list[MetricsServer] = []

    def start(body: bytes, limits: ServerLimits) -> MetricsServer:
        s = MetricsServer("127.0.0.1", 0, _app(body), limits)
        threading.Thread(target=s.serve_forever, daemon=True).start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.shutdown()
        s.server_close()


def _get(port: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return bytes(resp.read())


def test_past_the_cap_the_longest_idle_goes_not_the_newcomer(
        server: Callable[..., MetricsServer]) -> None:
    port = server(b"ok\n", ServerLimits(3, 5.0)).server_address[1]
    first, spoke, third = (socket.create_connection(("127.0.0.1", port)) for _ in range(3))
    time.sleep(0.2)
    spoke.send(b"GET")  # the most recent to speak of the three
    time.sleep(0.2)
    fourth = socket.create_connection(("127.0.0.1", port))
    assert first.recv(100).startswith(b"HTTP/1.0 408")
    assert _get(port) == b"ok\n"  # the scrape closes the next longest idle: the third
    assert third.recv(100).startswith(b"HTTP/1.0 408")
    for sock in (spoke, fourth):
        sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            sock.recv(100)  # still held
    for sock in (first, spoke, third, fourth):
        sock.close()


def test_a_slow_reader_holds_up_no_scrape_and_is_cut_at_the_deadline(
        server: Callable[..., MetricsServer]) -> None:
    """An answer of 8 MB (more than the kernel buffers hold) read 1 kB at a time."""
    body = b"x" * (8 << 20)
    port = server(body, ServerLimits(8, 1.0)).server_address[1]
    slow = _slow_reader(port)
    assert _get(port) == body  # meanwhile, a scrape is answered whole
    got, ended = 1024, False
    slow.settimeout(5)
    while got < len(body) and not ended:
        time.sleep(0.05)
        try:
            chunk = slow.recv(1024)
        except OSError:
            chunk = b""
        got += len(chunk)
        ended = not chunk
    assert ended and got < len(body)  # cut at the answer's deadline
    slow.close()


def _slow_reader(port: int) -> socket.socket:
    """A client that asks for the answer and reads only its first kB."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    sock.recv(1024)
    return sock


def _read_to_the_end(sock: socket.socket) -> tuple[int, bool]:
    """(bytes read, whether the connection ended with a reset)."""
    got = 0
    sock.settimeout(10)
    try:
        while chunk := sock.recv(1 << 20):
            got += len(chunk)
    except ConnectionResetError:
        return got, True
    finally:
        sock.close()
    return got, False


def test_past_the_cap_with_every_one_answered_the_slowest_reader_goes(
        server: Callable[..., MetricsServer]) -> None:
    body = b"x" * (8 << 20)
    port = server(body, ServerLimits(2, 30.0)).server_address[1]
    first, second = _slow_reader(port), _slow_reader(port)
    assert _get(port) == body
    got, reset = _read_to_the_end(first)
    assert reset and got < len(body)  # closed for the scrape
    got, reset = _read_to_the_end(second)
    assert not reset and got > len(body) - 1024  # still held: its whole answer


_FEW_FILES = """
import os, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (200, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from qprof.service.metrics_http import MetricsServer, ServerLimits
def app(environ, start_response):
    start_response("200 OK", [])
    return [b"ok\\n"]
server = MetricsServer("127.0.0.1", 0, app, ServerLimits(512, 30.0))
hog = []
try:
    while True:
        hog.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
for fd in hog[-20:]:
    os.close(fd)  # room for 20 connections, under the cap
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def test_out_of_descriptors_the_longest_idle_goes(tmp_path: Path) -> None:
    """The file limit lowers the cap (said once), and a process that runs out of
    descriptors anyway closes its longest idle for the newcomer."""
    log = tmp_path / "server.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-c", _FEW_FILES], stdout=subprocess.PIPE,
                                stderr=err, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
        assert _get(port) == b"ok\n"
        assert idle[0].recv(100).startswith(b"HTTP/1.0 408")
        for sock in idle:
            sock.close()
    finally:
        proc.kill()
        proc.wait(10)
    text = log.read_text()
    assert "at most 72 connections held, not 512" in text
    assert "out of descriptors: closed the longest idle" in text
    assert "Traceback" not in text


@pytest.mark.parametrize(("head", "status"), [
    (b"hello\r\n\r\n", b"400"),
    (b"GET / HTTP/1.0\r\nno colon here\r\n\r\n", b"400"),
    (b"GET / HTTP/1.0\r\n" + b"X-A: b\r\n" * 101 + b"\r\n", b"431"),
    (b"GET / HTTP/1.0\r\nX-Long: " + b"a" * 20000, b"431"),
])
def test_a_bad_head_is_answered_and_one_line(server: Callable[..., MetricsServer],
                                             caplog: pytest.LogCaptureFixture,
                                             head: bytes, status: bytes) -> None:
    port = server(b"ok\n", ServerLimits(4, 2.0)).server_address[1]
    with caplog.at_level(logging.WARNING, logger="qprof.daemon"):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(head)
        assert sock.recv(100).startswith(b"HTTP/1.0 " + status)
        assert closed_by_peer(sock, 5)
        sock.close()
        assert _get(port) == b"ok\n"
    [record] = caplog.records
    assert "failed:" in record.getMessage() and record.exc_info is None


def _parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    daemon_cmd.add_parser(p)
    return p.parse_args(list(argv))


def test_the_limits_are_settings(tmp_path: Path) -> None:
    assert build_config(_parse()).metrics_limits() == ServerLimits(MAX_CONNECTIONS, 5.0)
    conf = tmp_path / "qprof.toml"
    conf.write_text("[daemon]\nmetrics-deadline = 2.5\nmetrics_max_connections = 64\n")
    cfg = build_config(_parse("--config", str(conf), "--metrics-max-connections", "32"))
    assert cfg.metrics_limits() == ServerLimits(32, 2.5)
    for bad in (("--metrics-deadline", "0"), ("--metrics-max-connections", "0"),
                ("--metrics-deadline", "1e9")):
        with pytest.raises(ConfigError, match="metrics-"):
            build_config(_parse(*bad))


if __name__ == "__main__":  # the attacker's process: its settings in, its counts out
    raise_file_limit()
    attacker = Attacker(**json.loads(sys.argv[1]))
    attacker.run(float(sys.argv[2]))
    print(json.dumps(asdict(attacker)))


def threads_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    m = re.search(r"^Threads:\s+(\d+)", status, re.M)
    assert m
    return int(m.group(1))


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
