"""`qprof adversary`'s progress on stderr: a bar with the count, the rate and the ETA
while signatures are signed, and one by the clock while it grinds (its length is its
budget). On a terminal the bar is redrawn in place; elsewhere a line at the start, at
each quarter and at the end, so a log stays short."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

WIDTH = 24  # the bar's cells
TICK_S = 0.5  # the clock bar's redraw interval


def bar_line(label: str, done: float, total: float, elapsed: float, unit: str) -> str:
    """"signing SLH-DSA-SHAKE-256s  [######------]  12/64  0.4/s  ETA 2m10s"."""
    share = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
    cells = round(WIDTH * share)
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else None
    count = (f"{done:.0f}/{total:.0f} s" if unit == "s" else
             f"{done:.0f}/{total:.0f}  {rate:.2g}/s")
    left = "ETA -" if eta is None else f"ETA {_clock(eta)}"
    return f"{label}  [{'#' * cells}{'-' * (WIDTH - cells)}]  {count}  {left}"


def _clock(seconds: float) -> str:
    s = max(0, round(seconds))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Bar:
    """A count bar: ``step()`` per item done; ``close()`` ends its line."""

    def __init__(self, label: str, total: float, stream: TextIO | None = None,
                 unit: str = "", now: Callable[[], float] = time.monotonic) -> None:
        self.label, self.total, self.unit, self.now = label, total, unit, now
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.t0, self.done, self._quarter, self._shown = now(), 0.0, -1, -1.0
        self._lock = threading.Lock()
        self._draw()

    def step(self, n: float = 1) -> None:
        self.set(self.done + n)

    def set(self, done: float) -> None:
        with self._lock:
            self.done = min(done, self.total)
            self._draw()

    def _draw(self) -> None:
        line = bar_line(self.label, self.done, self.total, self.now() - self.t0, self.unit)
        quarter = int(4 * self.done / self.total) if self.total > 0 else 4
        if self.tty:
            self.stream.write("\r\x1b[K" + line)
        elif quarter != self._quarter:
            self.stream.write(line + "\n")
            self._shown = self.done
        self._quarter = quarter
        self.stream.flush()

    def close(self) -> None:
        """End the bar: its line ended on a terminal; elsewhere its last state, when the
        last line written shows another (a count stopped short of its total)."""
        with self._lock:
            if self.tty:
                self.stream.write("\n")
            elif self._shown != self.done:
                self.stream.write(bar_line(self.label, self.done, self.total,
                                           self.now() - self.t0, self.unit) + "\n")
            self.stream.flush()


class ClockBar:
    """A bar filled by the clock over ``seconds`` (grinding has a time budget, not a
    count), redrawn from a thread; use as a context manager around the work."""

    def __init__(self, label: str, seconds: float, stream: TextIO | None = None) -> None:
        self.bar = Bar(label, max(seconds, 0.0), stream, unit="s")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(TICK_S):
            self.bar.set(self.bar.now() - self.bar.t0)

    def __enter__(self) -> ClockBar:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.bar.set(self.bar.total)
        self.bar.close()
