"""Log lines journald understands: a ``<N>`` syslog-priority prefix under systemd.

systemd sets $JOURNAL_STREAM ("device:inode" of the stream) when stderr goes to the
journal; journald then strips a leading ``<N>`` and files the line at that priority (so
`journalctl -p warning` works). The variable is inherited by children whose stderr may
go elsewhere, so it counts only when it names our actual stderr (as sd_journal docs
advise). Elsewhere the lines carry a timestamp and level name instead.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any, TextIO

from qprof.untrusted import one_line, without_controls

# A log record's message is one line of at most this many characters: a hostname, a note
# or an exception's text from a hostile run can neither forge a journal line (a newline
# and "<2>") nor carry a terminal escape into `journalctl`.
MAX_LOG_LINE = 2000

_PRIORITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}


class LineFormatter(logging.Formatter):
    """Each record's message one line (``qprof.untrusted``); a traceback after it keeps
    its lines, without control characters."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        record.message = one_line(record.message, MAX_LOG_LINE)
        return super().formatMessage(record)

    def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
        return without_controls(super().formatException(ei))


class JournalFormatter(LineFormatter):
    def format(self, record: logging.LogRecord) -> str:
        prio = _PRIORITY.get(record.levelno, 6)
        return f"<{prio}>{one_line(record.getMessage(), MAX_LOG_LINE)}"


# What the measurement engine (in-process, in the cycle thread) prints to stderr itself,
# by line prefix -> syslog priority: without one, journald files "qprof: error: ..." at
# the unit's default (info) and `journalctl -p warning` would miss it.
_PRINTED = (("qprof: DISAGREEMENT", 2), ("qprof: error:", 3), ("qprof: warning:", 4))


class PriorityStream:
    """A text stream that gives each line without a ``<N>`` prefix one (by _PRINTED,
    else info), for the journal. Lines are buffered until their newline."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._partial = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            data = self._partial + text
            *lines, self._partial = data.split("\n")
            for line in lines:
                if not (line.startswith("<") and line[1:2].isdigit()):
                    prio = next((p for prefix, p in _PRINTED if line.startswith(prefix)), 6)
                    line = f"<{prio}>{line}"
                self.stream.write(line + "\n")
            if lines:
                self.stream.flush()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding...
        return getattr(self.stream, name)


def under_journal(environ: dict[str, str] | None = None, fd: int = 2) -> bool:
    env = os.environ if environ is None else environ
    dev, sep, ino = env.get("JOURNAL_STREAM", "").partition(":")
    if not sep or not dev.isdigit() or not ino.isdigit():
        return False
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (int(dev), int(ino))


def setup_logging(level: int = logging.INFO) -> logging.Logger:
    """Configure the 'qprof' logger tree to stderr, journald-friendly under systemd."""
    handler = logging.StreamHandler(sys.stderr)
    if under_journal():
        handler.setFormatter(JournalFormatter())
        if not isinstance(sys.stderr, PriorityStream):
            sys.stderr = PriorityStream(sys.stderr)
    else:
        handler.setFormatter(LineFormatter("%(asctime)s %(levelname)s %(message)s",
                                           "%Y-%m-%dT%H:%M:%S"))
    logger = logging.getLogger("qprof")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False
    return logger
