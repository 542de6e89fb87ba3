"""The metrics HTTP server: prometheus_client's WSGI app behind a server a local client
cannot exhaust.

The standard server (``prometheus_client.start_http_server``) starts a thread per
connection and waits for ever on an idle one: 400 idle loopback connections made 400
threads, and under a task limit (systemd's ``TasksMax=``) the daemon's next measurement
thread could not start. Here a connection must deliver its request within
``request_timeout_s`` in all (not per read: a client trickling a byte at a time is cut off
too); at most ``max_connections`` are served at once, and the rest are answered 503 and
closed at once from the accepting thread. A thread that cannot start costs that one
request. Failed requests are one log line each (at most ``ERROR_LINES_PER_MINUTE``, then a
count), never a traceback.
"""

from __future__ import annotations

import io
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import make_wsgi_app
from prometheus_client.registry import CollectorRegistry

log = logging.getLogger("qprof.daemon")

MAX_CONNECTIONS = 16  # served at once; a scraper, a second Prometheus, a curl fit easily
REQUEST_TIMEOUT_S = 5.0  # to send the whole request; also each write of the answer
ERROR_LINES_PER_MINUTE = 10  # failed-request lines; beyond, one line counts the rest
_BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Length: 0\r\n"
         b"Connection: close\r\n\r\n")


def format_address(host: str, port: int) -> str:
    """HOST:PORT as a URL writes it: an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _DeadlineReader(io.RawIOBase):
    """Reads a socket until a fixed deadline: each read waits only for the time left."""

    def __init__(self, sock: socket.socket, timeout_s: float) -> None:
        self._sock = sock
        self._timeout_s = timeout_s
        self._deadline = time.monotonic() + timeout_s

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        if left > 0:
            self._sock.settimeout(left)
            try:
                return self._sock.recv_into(buffer)
            except TimeoutError:
                pass
        raise TimeoutError(f"no complete request within {self._timeout_s:g} s")


class _Handler(WSGIRequestHandler):
    server: MetricsServer

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the plain makefile(): replaced by one with a deadline
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection,
                                                       self.server.request_timeout_s))

    def parse_request(self) -> bool:
        ok = super().parse_request()
        # The request is in: writing the answer gets the timeout afresh, per write.
        self.connection.settimeout(self.server.request_timeout_s)
        return ok

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        """Requests are not logged (a scrape every 15 s would flood the journal)."""


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


def _peer(client_address: Any) -> str:
    if isinstance(client_address, tuple) and len(client_address) >= 2:
        return format_address(str(client_address[0]), int(client_address[1]))
    return str(client_address)


class MetricsServer(WSGIServer):
    """A thread per request, at most ``max_connections`` at once, each with a deadline."""

    request_queue_size = 64  # the listen backlog: a burst of connects is not dropped

    def __init__(self, host: str, port: int, app: Callable[..., Iterable[bytes]],
                 max_connections: int = MAX_CONNECTIONS,
                 request_timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        family, _, _, _, sockaddr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        self.address_family = family
        self.max_connections = max_connections
        self.request_timeout_s = request_timeout_s
        self._slots = threading.BoundedSemaphore(max_connections)
        self.errors = _ErrorLines(ERROR_LINES_PER_MINUTE)
        super().__init__((str(sockaddr[0]), int(sockaddr[1])), _Handler)
        self.set_app(_one_line_errors(app))

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._refuse(request, client_address)
            return
        try:
            threading.Thread(target=self._serve, args=(request, client_address),
                             name="metrics-request", daemon=True).start()
        except RuntimeError as exc:  # "can't start new thread": a task limit reached
            self._slots.release()
            self.errors.warning(f"request from {_peer(client_address)} dropped: cannot "
                                f"start a thread for it ({exc})")
            self.shutdown_request(request)

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self._slots.release()

    def _refuse(self, request: Any, client_address: Any) -> None:
        """Over the cap: a 503 if the socket takes it at once, and closed."""
        try:
            request.setblocking(False)
            request.send(_BUSY)
        except OSError:
            pass
        self.errors.warning(f"{self.max_connections} connections open, the most served at "
                            f"once: refused {_peer(client_address)}")
        self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        what = f"{type(exc).__name__}: {exc}" if exc is not None else "unknown error"
        self.errors.warning(f"request from {_peer(client_address)} failed: {what}")


def _one_line_errors(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """The app, with a collector's exception logged as one line and answered 500 (wsgiref
    would print the traceback to stderr, i.e. the journal)."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            return app(environ, start_response)
        except Exception as exc:
            log.error("metrics: collecting failed: %s: %s", type(exc).__name__, exc)
            start_response("500 Internal Server Error",
                           [("Content-Type", "text/plain; charset=utf-8")], sys.exc_info())
            return [b"collecting the metrics failed; see the daemon's log\n"]

    return wrapped


def serve(registry: CollectorRegistry, host: str, port: int,
          max_connections: int = MAX_CONNECTIONS,
          request_timeout_s: float = REQUEST_TIMEOUT_S
          ) -> tuple[MetricsServer, threading.Thread]:
    """Start serving ``registry`` on HOST:PORT; returns (server, thread). OSError when the
    address cannot be bound, RuntimeError when the serving thread cannot start."""
    server = MetricsServer(host, port, make_wsgi_app(registry), max_connections,
                           request_timeout_s)
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    try:
        thread.start()
    except RuntimeError:
        server.server_close()
        raise
    return server, thread
