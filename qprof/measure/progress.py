"""Progress and ETA of a run: the pool being signed, the rounds, and the B/A pairs the
stopping rule said it still needs.

The ETA (wall seconds) scales the planned work by how fast measuring went since the
first round. A CPU's adaptive pairs are those the rule last said it needs
(:meth:`Progress.rule_says`); before it is asked, the CPU is expected to run to its
floor and no longer, so the ETA moves only when the rule answers and never past the time
limit. The bar is elapsed / (elapsed + ETA) and never goes back.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from qprof.measure.config import ProgressEvent

Callback = Callable[[ProgressEvent], None]
MIN_SPEED = 0.5  # planned seconds never run faster than twice their plan


@dataclass
class Progress:
    """The run's progress: planned work, work done, the rule's answers; reports events."""

    callback: Callback | None
    time_limit_s: float | None = None
    now: Callable[[], float] = time.monotonic
    work_done: float = 0.0  # planned seconds of the work finished
    cpu_work: float = 0.0  # planned seconds of one CPU's base rounds
    pair_work: float = 0.0  # planned seconds of one extra pair
    floor_s: float = 0.0  # wall seconds a CPU runs before the rule may end it
    cpus_pending: int = 0  # CPUs not started yet
    cur_planned: float = 0.0  # planned seconds of the current CPU (base + pairs added)
    cur_done_from: float = 0.0  # work_done when the current CPU began
    cur_started: float | None = None  # elapsed seconds when the current CPU began
    rule_pairs: int | None = None  # pairs the rule last said the current CPU still needs
    preview_pairs: int | None = None  # its half-way answer (before the floor), less since
    max_pairs: int = 0  # pairs a CPU may add at most (0: no cap known)
    cur_pairs: int = 0  # pairs added on the current CPU
    measuring_from: float | None = None  # elapsed seconds when the first round began
    signing_left_s: float | None = None  # the pool being signed: its seconds still to go
    fraction: float = 0.0
    t0: float = field(init=False)

    def __post_init__(self) -> None:
        self.t0 = self.now()

    # -- the plan
    def plan(self, cpu_work: float, ncpus: int, pair_work: float, floor_s: float = 0.0,
             max_pairs: int = 0) -> None:
        self.cpu_work, self.pair_work, self.floor_s = cpu_work, pair_work, floor_s
        self.cpus_pending, self.max_pairs = ncpus, max_pairs

    def signing(self, left_s: float | None) -> None:
        """A pool is being signed, ``left_s`` to go (None: not known yet)."""
        self.signing_left_s = left_s

    def start_cpu(self, adaptive: bool) -> None:
        now = self.elapsed()
        self.signing_left_s = None
        if self.measuring_from is None:
            self.measuring_from = now
        self.cpus_pending = max(self.cpus_pending - 1, 0)
        self.cur_started, self.cur_done_from = now, self.work_done
        self.cur_planned = self.cpu_work
        self.rule_pairs = None if adaptive else 0
        self.preview_pairs, self.cur_pairs = None, 0

    def add_pair(self) -> None:
        self.cur_planned += self.pair_work
        self.cur_pairs += 1

    def rule_says(self, pairs: int, *, preview: bool = False) -> None:
        """The stopping rule's answer for the current CPU: ``pairs`` more it needs beyond
        the pairs added so far (``PairCredit.expected``; ``preview``: asked before the
        floor, for the ETA only); never more than the CPU may still add."""
        if self.max_pairs:
            pairs = min(pairs, max(self.max_pairs - self.cur_pairs, 0))
        if preview:
            self.preview_pairs = max(pairs, 0)
        else:
            self.rule_pairs = max(pairs, 0)

    def end_cpu(self) -> None:
        self.cur_started, self.rule_pairs, self.cur_planned = None, 0, 0.0
        self.cur_done_from = self.work_done

    # -- estimates
    def elapsed(self) -> float:
        return self.now() - self.t0

    def speed(self) -> float:
        """Wall seconds per planned second of the measurement so far (1 before any)."""
        if self.measuring_from is None or self.work_done <= 0:
            return 1.0
        return max((self.elapsed() - self.measuring_from) / self.work_done, MIN_SPEED)

    def cpu_left_s(self, speed: float) -> float:
        """Wall seconds the current CPU still needs, as far as the rule said."""
        if self.cur_started is None:
            return 0.0
        planned = max(0.0, self.cur_planned - (self.work_done - self.cur_done_from)) * speed
        if self.rule_pairs is not None:  # asked (or not adaptive: 0)
            return planned + self.rule_pairs * self.pair_work * speed
        to_floor = self.floor_s - (self.elapsed() - self.cur_started)
        return max(planned, to_floor, (self.preview_pairs or 0) * self.pair_work * speed)

    def eta_s(self) -> float | None:
        speed = self.speed()
        pending = self.cpus_pending * max(self.cpu_work * speed, self.floor_s)
        left = self.cpu_left_s(speed) + pending
        before = 0.0
        if self.measuring_from is None:  # still preparing: the signing, then everything
            if self.signing_left_s is None:
                return None
            before = self.signing_left_s
        if self.time_limit_s is not None:  # no round starts past it (the signing goes on)
            left = min(left, max(0.0, self.time_limit_s - self.elapsed() - before))
        return before + left

    def report(self, *, final: bool = False, cpu: int | None = None, round: int | None = None,
               rounds: int | None = None, suite: str | None = None, backend: str | None = None,
               operation: str | None = None, message: str = "",
               medians: dict[str, float] | None = None) -> None:
        if self.callback is None:
            return
        elapsed = self.elapsed()
        eta: float | None = 0.0
        if final:
            frac = 1.0
        else:
            eta = self.eta_s()
            if eta is not None and elapsed + eta > 0:
                self.fraction = max(self.fraction, min(elapsed / (elapsed + eta), 0.99))
            frac = self.fraction
        if rounds is not None:  # the rule's own total: its pairs still needed counted
            rounds += 2 * (self.rule_pairs if self.rule_pairs is not None
                           else self.preview_pairs or 0)
        event = ProgressEvent(fraction=frac, eta_s=eta, elapsed_s=elapsed, cpu=cpu,
                              suite=suite, backend=backend, operation=operation,
                              round=round, rounds=rounds, message=message, medians=medians)
        # A broken progress bar must not break a measurement.
        with contextlib.suppress(Exception):
            self.callback(event)
