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
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s",
                                               "%Y-%m-%dT%H:%M:%S"))
    logger = logging.getLogger("qprof")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False
    return logger
