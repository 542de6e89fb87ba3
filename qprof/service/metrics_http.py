"""The metrics HTTP server: prometheus_client's app behind one idle clients cannot block.

One thread holds every connection (``selectors``: an idle socket costs a descriptor, no
thread) and at most ``WORKERS`` threads run the app. A connection must send its whole
request head within ``deadline_s`` of being accepted (a client trickling a byte at a time
is cut too) and take its whole answer within ``deadline_s`` of it being ready; writes never
block, so a slow reader delays no one. At ``max_connections`` held (or out of descriptors)
the longest idle is closed for the newcomer, else the slowest reader. Failed requests are
one log line each (rate-limited), never a traceback.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import heapq
import itertools
import logging
import queue
import resource
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import make_wsgi_app
from prometheus_client.registry import CollectorRegistry

from qprof.service.metrics_wsgi import (
    MAX_HEAD_BYTES,
    App,
    BadRequest,
    answer,
    environ,
    head_end,
    one_line_errors,
    parse_head,
    response,
)

log = logging.getLogger("qprof.daemon")

MAX_CONNECTIONS = 512  # held at once; past it the longest idle is closed for a newcomer
DEADLINE_S = 5.0  # to send the request head; again to take the answer once it is ready
WORKERS = 2  # threads running the app (a scrape takes milliseconds)
FD_RESERVE = 128  # descriptors left to the rest of the daemon (store, workers, /proc)
BACKLOG = 4096  # a burst of connects waits in the kernel, not dropped (somaxconn caps it)
ACCEPT_BATCH = 256  # accepts per wake-up, so held connections get their turn
ERROR_LINES_PER_MINUTE = 10  # failed-request lines; beyond, one line counts the rest
_TIMED_OUT = response("408 Request Timeout")
_BUSY = response("503 Service Unavailable", [("Retry-After", "5")])
_OUT_OF_FILES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


@dataclass(frozen=True)
class ServerLimits:
    """The daemon's settings ``metrics_max_connections`` and ``metrics_deadline``."""

    max_connections: int = MAX_CONNECTIONS
    deadline_s: float = DEADLINE_S


DEFAULT_LIMITS = ServerLimits()


def format_address(host: str, port: int) -> str:
    """HOST:PORT as a URL writes it: an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _peer(client_address: Any) -> str:
    if isinstance(client_address, tuple) and len(client_address) >= 2:
        return format_address(str(client_address[0]), int(client_address[1]))
    return str(client_address)


class _ErrorLines:
    """At most ``per_minute`` lines a minute; past that, one line says how many more."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._lock = threading.Lock()
        self._window = time.monotonic()
        self._lines = 0
        self._dropped = 0

    def warning(self, message: str) -> None:
        with self._lock:
            now = time.monotonic()
            if now - self._window >= 60.0:
                if self._dropped:
                    log.warning("metrics: %d more failed requests in the last minute were "
                                "not logged", self._dropped)
                self._window, self._lines, self._dropped = now, 0, 0
            if self._lines >= self.per_minute:
                self._dropped += 1
                return
            self._lines += 1
        log.warning("metrics: %s", message)


_HEAD, _WORKING, _ANSWER = "head", "working", "answer"


@dataclass(eq=False)
class _Conn:
    sock: socket.socket
    peer: str
    seq: int
    deadline: float
    state: str = _HEAD
    head: bytearray = field(default_factory=bytearray)
    out: memoryview | None = None
    watched: bool = False  # registered with the selector
    closed: bool = False


def connection_cap(wanted: int) -> int:
    """``wanted``, or fewer when the file limit would leave the daemon under FD_RESERVE."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - FD_RESERVE))


class MetricsServer:
    """Serves ``app`` on HOST:PORT from ``serve_forever`` (one thread) until ``shutdown``."""

    def __init__(self, host: str, port: int, app: App,
                 limits: ServerLimits = DEFAULT_LIMITS) -> None:
        family, _, _, _, sockaddr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind(sockaddr)
            self._listener.listen(BACKLOG)
        except OSError:
            self._listener.close()
            raise
        self._listener.setblocking(False)
        self.server_address: tuple[str, int] = self._listener.getsockname()[:2]
        self.deadline_s = limits.deadline_s
        self.max_connections = connection_cap(limits.max_connections)
        if self.max_connections < limits.max_connections:
            log.warning("metrics: at most %d connections held, not %d: the file limit "
                        "(ulimit -n) keeps %d descriptors for the rest of the daemon",
                        self.max_connections, limits.max_connections, FD_RESERVE)
        self.errors = _ErrorLines(ERROR_LINES_PER_MINUTE)
        self._app = one_line_errors(app)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._conns: set[_Conn] = set()
        self._idle: collections.OrderedDict[_Conn, None] = collections.OrderedDict()
        self._answering: collections.OrderedDict[_Conn, None] = collections.OrderedDict()
        self._deadlines: list[tuple[float, int, _Conn]] = []
        self._seq = itertools.count()
        self._jobs: queue.SimpleQueue[tuple[_Conn, dict[str, Any]] | None] = \
            queue.SimpleQueue()
        self._answers: collections.deque[tuple[_Conn, bytes]] = collections.deque()
        self._workers: list[threading.Thread] = []
        self._listening_again = 0.0  # out of descriptors: accepting paused until then
        self._stop = threading.Event()
        self._running = threading.Event()
        self._stopped = threading.Event()

    # -- the loop ---------------------------------------------------------------------

    def serve_forever(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ, self._listener)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._wake_r)
        self._running.set()
        try:
            while not self._stop.is_set():
                for key, events in self._selector.select(self._timeout()):
                    if key.data is self._listener:
                        self._accept()
                    elif key.data is self._wake_r:
                        self._drain_wake()
                    elif not key.data.closed:
                        self._on_event(key.data, events)
                self._take_answers()
                self._expire(time.monotonic())
        finally:
            self._stopped.set()

    def _timeout(self) -> float:
        now = time.monotonic()
        until = min(self._deadlines[0][0] if self._deadlines else now + 1.0, now + 1.0)
        if self._listening_again:
            if now >= self._listening_again:
                self._listening_again = 0.0
                self._selector.register(self._listener, selectors.EVENT_READ,
                                        self._listener)
            else:
                until = min(until, self._listening_again)
        return max(0.0, until - now)

    def _on_event(self, conn: _Conn, events: int) -> None:
        if conn.state == _HEAD and events & selectors.EVENT_READ:
            self._read(conn)
        elif conn.state == _ANSWER and events & selectors.EVENT_WRITE:
            self._write(conn)

    # -- accepting ----------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, ConnectionAbortedError):
                return
            except OSError as exc:
                if exc.errno in _OUT_OF_FILES and self._evict("the process is out of "
                                                              "descriptors"):
                    continue
                self.errors.warning(f"cannot accept a connection ({exc.strerror or exc}); "
                                    "pausing for 0.5 s")
                self._selector.unregister(self._listener)
                self._listening_again = time.monotonic() + 0.5
                return
            self._open(sock, _peer(address))

    def _open(self, sock: socket.socket, peer: str) -> None:
        if len(self._conns) >= self.max_connections and not self._evict(
                f"{len(self._conns)} connections held, the most"):
            self.errors.warning(f"{len(self._conns)} connections being answered, the most "
                                f"held: refused {peer}")
            _farewell(sock, _BUSY)
            return
        sock.setblocking(False)
        conn = _Conn(sock, peer, next(self._seq), time.monotonic() + self.deadline_s)
        self._conns.add(conn)
        self._idle[conn] = None
        self._watch(conn, selectors.EVENT_READ)
        self._push_deadline(conn)
        self._read(conn)  # a scraper's request is usually here already

    def _evict(self, why: str) -> bool:
        """Close the connection idle the longest (still sending its head), else the one
        whose answer waits longest to be read; False when every one is being answered."""
        if self._idle:
            conn = next(iter(self._idle))
            self.errors.warning(f"{why}: closed the longest idle, from {conn.peer}")
            self._close(conn, _TIMED_OUT)
            return True
        if self._answering:
            conn = next(iter(self._answering))
            self.errors.warning(f"{why}: closed the slowest reader, {conn.peer}")
            _reset_on_close(conn.sock)
            self._close(conn)
            return True
        return False

    # -- reading the head, answering ------------------------------------------------------

    def _read(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(4096)
        except BlockingIOError:
            return
        except OSError as exc:  # reset by the client
            self._failed(conn, exc)
            return
        if not data:  # the client closed before asking anything
            self._close(conn)
            return
        start = len(conn.head)
        conn.head += data
        end = head_end(conn.head, start)
        if end < 0 and len(conn.head) <= MAX_HEAD_BYTES:
            self._idle.move_to_end(conn)
            return
        del self._idle[conn]
        self._unwatch(conn)
        try:
            if end < 0 or end > MAX_HEAD_BYTES:
                raise BadRequest("431 Request Header Fields Too Large",
                                 f"a head over {MAX_HEAD_BYTES} bytes")
            request = parse_head(bytes(conn.head[:end]))
        except BadRequest as exc:
            self.errors.warning(f"request from {conn.peer} failed: {exc}")
            self._answer(conn, response(exc.status))
            return
        conn.state = _WORKING
        conn.deadline = time.monotonic() + self.deadline_s
        self._push_deadline(conn)
        self._jobs.put((conn, environ(request, self.server_address, conn.peer)))
        self._start_worker()

    def _answer(self, conn: _Conn, out: bytes) -> None:
        conn.state, conn.out = _ANSWER, memoryview(out)
        self._answering[conn] = None
        conn.deadline = time.monotonic() + self.deadline_s
        self._push_deadline(conn)
        self._watch(conn, selectors.EVENT_WRITE)
        self._write(conn)

    def _write(self, conn: _Conn) -> None:
        assert conn.out is not None
        try:
            sent = conn.sock.send(conn.out)
        except BlockingIOError:
            return
        except OSError as exc:  # the client went away
            self._failed(conn, exc)
            return
        conn.out = conn.out[sent:]
        if not conn.out:
            self._close(conn)

    def _failed(self, conn: _Conn, exc: OSError) -> None:
        self.errors.warning(f"request from {conn.peer} failed: {type(exc).__name__}: {exc}")
        self._close(conn)

    def _take_answers(self) -> None:
        while self._answers:
            conn, out = self._answers.popleft()
            if not conn.closed:
                self._answer(conn, out)

    def _expire(self, now: float) -> None:
        if len(self._deadlines) > 4 * len(self._conns) + 64:  # mostly stale entries
            self._deadlines = [(c.deadline, c.seq, c) for c in self._conns]
            heapq.heapify(self._deadlines)
        while self._deadlines and self._deadlines[0][0] <= now:
            deadline, _, conn = heapq.heappop(self._deadlines)
            if conn.closed or conn.deadline != deadline:
                continue
            what = {_HEAD: "no complete request", _WORKING: "no answer ready",
                    _ANSWER: "the answer not taken"}[conn.state]
            self.errors.warning(f"request from {conn.peer} failed: {what} within "
                                f"{self.deadline_s:g} s")
            if conn.state == _ANSWER:
                _reset_on_close(conn.sock)
            self._close(conn, _BUSY if conn.state == _WORKING else
                        _TIMED_OUT if conn.state == _HEAD else None)

    # -- the app's threads ----------------------------------------------------------------

    def _start_worker(self) -> None:
        if len(self._workers) >= WORKERS:
            return
        thread = threading.Thread(target=self._work, name="metrics-app", daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:  # "can't start new thread": a task limit reached
            self.errors.warning(f"a request waits: cannot start a thread for it ({exc})")
            return
        self._workers.append(thread)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            conn, env = job
            if not conn.closed:
                self._answers.append((conn, answer(self._app, env)))
                self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # its buffer full: the loop is woken already
            self._wake_w.send(b"x")

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass

    # -- bookkeeping ----------------------------------------------------------------------

    def _push_deadline(self, conn: _Conn) -> None:
        heapq.heappush(self._deadlines, (conn.deadline, conn.seq, conn))

    def _watch(self, conn: _Conn, events: int) -> None:
        self._unwatch(conn)
        self._selector.register(conn.sock, events, conn)
        conn.watched = True

    def _unwatch(self, conn: _Conn) -> None:
        if conn.watched:
            self._selector.unregister(conn.sock)
            conn.watched = False

    def _close(self, conn: _Conn, farewell: bytes | None = None) -> None:
        self._unwatch(conn)
        self._conns.discard(conn)
        self._idle.pop(conn, None)
        self._answering.pop(conn, None)
        conn.closed = True
        _farewell(conn.sock, farewell)

    # -- stopping -------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop the loop (and wait for it, when it runs) and the app's threads."""
        self._stop.set()
        self._wake()
        if self._running.is_set():
            self._stopped.wait(10.0)
        for _ in self._workers:
            self._jobs.put(None)

    def server_close(self) -> None:
        for conn in list(self._conns):
            self._close(conn)
        self._selector.close()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()


def _reset_on_close(sock: socket.socket) -> None:
    """Close with a reset: the answer the kernel still holds for a reader cut off goes
    too, instead of trickling out after the deadline."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _farewell(sock: socket.socket, data: bytes | None) -> None:
    """Send ``data`` if the socket takes it at once, and close."""
    if data is not None:
        try:
            sock.setblocking(False)
            sock.send(data)
        except OSError:
            pass
    sock.close()


def serve(registry: CollectorRegistry, host: str, port: int,
          limits: ServerLimits = DEFAULT_LIMITS) -> tuple[MetricsServer, threading.Thread]:
    """Start serving ``registry`` on HOST:PORT; returns (server, thread). OSError when the
    address cannot be bound, RuntimeError when the serving thread cannot start."""
    server = MetricsServer(host, port, make_wsgi_app(registry), limits)
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    try:
        thread.start()
    except RuntimeError:
        server.server_close()
        raise
    return server, thread
