"""One HTTP request to the metrics app: its head parsed into a WSGI environ, the app's
answer as the bytes of an HTTP/1.0 response (``Connection: close``).

The server (``service.metrics_http``) reads and writes the sockets; this module does no
I/O. A head that is no HTTP request is a ``BadRequest`` (answered 400 or 431), a
collector's exception one log line and a 500, never a traceback.
"""

from __future__ import annotations

import io
import logging
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

log = logging.getLogger("qprof.daemon")

MAX_HEAD_BYTES = 16384  # request line and headers; a scrape sends a few hundred
MAX_HEADERS = 100
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VERSION = re.compile(r"HTTP/\d\.\d")

App = Callable[..., Iterable[bytes]]


class BadRequest(ValueError):
    """A head that is not an HTTP/1.x request: ``status`` is the answer's."""

    def __init__(self, status: str, why: str) -> None:
        super().__init__(why)
        self.status = status


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: str
    version: str
    headers: tuple[tuple[str, str], ...]


def head_end(buffer: bytes | bytearray, start: int = 0) -> int:
    """Where the head in ``buffer`` ends (after its blank line), or -1 while incomplete;
    ``start``: where the newest bytes begin (the search goes back 3 bytes for a split
    CRLFCRLF)."""
    ends = [at + len(mark) for mark in (b"\r\n\r\n", b"\n\n")
            if (at := buffer.find(mark, max(0, start - len(mark) + 1))) >= 0]
    return min(ends, default=-1)


def parse_head(head: bytes) -> Request:
    """The request line and headers; BadRequest when they are not HTTP/1.x."""
    lines = head.decode("latin-1").replace("\r\n", "\n").rstrip("\n").split("\n")
    parts = lines[0].split()
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]):
        raise BadRequest("400 Bad Request", "not an HTTP request line")
    if len(lines) - 1 > MAX_HEADERS:
        raise BadRequest("431 Request Header Fields Too Large", "too many headers")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.fullmatch(name):
            raise BadRequest("400 Bad Request", "a header line is not NAME: VALUE")
        headers.append((name, value.strip()))
    path, _, query = parts[1].partition("?")
    return Request(parts[0], unquote(path, "latin-1"), query, parts[2], tuple(headers))


def environ(request: Request, server: tuple[str, int], peer: str) -> dict[str, Any]:
    """The WSGI environ of ``request`` (no body: the app answers GET and OPTIONS)."""
    env: dict[str, Any] = {
        "REQUEST_METHOD": request.method, "SCRIPT_NAME": "", "PATH_INFO": request.path,
        "QUERY_STRING": request.query, "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1]), "SERVER_PROTOCOL": request.version,
        "REMOTE_ADDR": peer, "wsgi.version": (1, 0), "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""), "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False}
    for name, value in request.headers:
        key = name.upper().replace("-", "_")
        key = key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"
        env[key] = f"{env[key]},{value}" if key in env else value
    return env


def response(status: str, headers: Iterable[tuple[str, str]] = (), body: bytes = b"",
             ) -> bytes:
    """An HTTP/1.0 response closing the connection, with its length."""
    lines = [f"HTTP/1.0 {status}"]
    lines += [f"{k}: {v}" for k, v in headers
              if k.lower() not in ("content-length", "connection")]
    lines += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


def answer(app: App, env: dict[str, Any]) -> bytes:
    """Run the app on ``env``: the whole response."""
    started: list[tuple[str, list[tuple[str, str]]]] = []

    def start_response(status: str, headers: list[tuple[str, str]],
                       exc_info: Any = None) -> Callable[[bytes], None]:
        started[:] = [(status, headers)]
        return _no_write

    body = b"".join(app(env, start_response))
    if not started:
        log.error("metrics: the app gave no status")
        return response("500 Internal Server Error")
    return response(started[0][0], started[0][1], body)


def _no_write(data: bytes) -> None:
    raise NotImplementedError("the metrics app returns its body")


def one_line_errors(app: App) -> App:
    """The app, with a collector's exception logged as one line and answered 500 (not a
    traceback in the journal)."""

    def wrapped(env: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            return list(app(env, start_response))
        except Exception as exc:
            log.error("metrics: collecting failed: %s: %s", type(exc).__name__, exc)
            start_response("500 Internal Server Error",
                           [("Content-Type", "text/plain; charset=utf-8")], sys.exc_info())
            return [b"collecting the metrics failed; see the daemon's log\n"]

    return wrapped
