"""How far a command is in reading recorded runs or computing their points (a few
seconds of the estimator each), said on stderr: one updating line on a terminal, erased
when the reading ends; elsewhere (a log, a pipe) a line once the reading has taken 5 s,
then every 10 s, so a quick read says nothing and a long one is never silent."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

FIRST_LINE_S = 5.0  # not on a terminal: the first line after this long
EVERY_S = 10.0  # then one line this often
READ = "recorded runs read"
COMPUTED = "runs' points computed"  # report and calibrate: the runs are read already


class ReadingRuns:
    """The progress callback of :mod:`qprof.service.run_files`, as a context."""

    def __init__(self, command: str, stream: TextIO | None = None,
                 done: str = READ) -> None:
        self.command = command
        self.done = done
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.next_line = self.started + FIRST_LINE_S
        self.width = 0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        text = f"qprof {self.command}: {done} of {total} {self.done} ({now - self.started:.0f} s)"
        if self.tty:
            self.stream.write("\r" + text.ljust(self.width))
            self.width = len(text)
        elif now >= self.next_line and done < total:
            self.stream.write(text + "\n")
            self.next_line = now + EVERY_S
        else:
            return
        self.stream.flush()

    def __enter__(self) -> ReadingRuns:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.width:  # the terminal's line goes: what follows starts on a clean line
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
