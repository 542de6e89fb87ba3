"""Log lines journald understands: a ``<N>`` syslog-priority prefix under systemd.

systemd sets $JOURNAL_STREAM when stderr goes to the journal; journald then strips a
leading ``<N>`` and files the line at that priority (so `journalctl -p warning` works).
Elsewhere the lines carry a timestamp and level name instead.
"""

from __future__ import annotations

import logging
import os
import sys

_PRIORITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}


class JournalFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        prio = _PRIORITY.get(record.levelno, 6)
        return f"<{prio}>{record.getMessage()}"


def under_journal(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return bool(env.get("JOURNAL_STREAM"))


def setup_logging(level: int = logging.INFO) -> logging.Logger:
    """Configure the 'qprof' logger tree to stderr, journald-friendly under systemd."""
    handler = logging.StreamHandler(sys.stderr)
    if under_journal():
        handler.setFormatter(JournalFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s",
                                               "%Y-%m-%dT%H:%M:%S"))
    logger = logging.getLogger("qprof")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False
    return logger
