"""Progress and ETA of a run, counting the adaptive rounds still likely to come.

Work is counted in *planned seconds* (time budgets plus worker start-ups); the ETA scales
what remains by how fast the work went so far. The adaptive rule may add up to
``max_pairs`` B/A pairs per CPU after its base rounds; they are expected from the start
(:func:`expected_pairs`), so the bar does not reach the end of the base rounds at ~100 %
and then sit there while pairs are added; when a CPU stops early the bar jumps forward.
The bar never goes back.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from qprof.measure.config import ProgressEvent

Callback = Callable[[ProgressEvent], None]


def expected_pairs(done_pairs: int, max_pairs: int, prior: float, open_: bool) -> float:
    """Extra pairs still likely on one CPU that has added ``done_pairs`` so far.

    Before a CPU needed any, ``prior`` (the pairs other CPUs of the run needed on average,
    else half the allowed ones: the rule's stopping point is unknown, and half is the
    guess that is least wrong either way). A CPU that needed k pairs is expected to need
    k more (the CI narrows as the square root of the rounds), never past ``max_pairs``.
    """
    if not open_ or max_pairs <= 0:
        return 0.0
    k = done_pairs
    return max(0.0, min(max(2.0 * k, prior) - k, float(max_pairs - k)))


@dataclass
class Progress:
    """The run's progress: planned work, work done, adaptive pairs; reports events."""

    callback: Callback | None
    time_limit_s: float | None = None
    now: Callable[[], float] = time.monotonic
    work_total: float = 0.0  # planned seconds, extra pairs added as they are decided
    work_done: float = 0.0
    pair_work: float = 0.0  # planned seconds of one extra pair
    max_pairs: int = 0  # extra pairs a CPU may add
    cpus_pending: int = 0  # CPUs not started yet
    cur_pairs: int = 0  # pairs added on the CPU being measured
    cur_open: bool = False  # that CPU may still add pairs
    pairs_done: list[int] = field(default_factory=list)  # pairs each finished CPU added
    fraction: float = 0.0
    _last_done: float = 0.0
    t0: float = field(init=False)

    def __post_init__(self) -> None:
        self.t0 = self.now()

    # -- the plan
    def plan(self, cpu_work: float, ncpus: int, pair_work: float, max_pairs: int) -> None:
        self.work_total = cpu_work * ncpus
        self.pair_work, self.max_pairs, self.cpus_pending = pair_work, max_pairs, ncpus

    def start_cpu(self, adaptive: bool) -> None:
        self.cpus_pending -= 1
        self.cur_pairs, self.cur_open = 0, adaptive and self.max_pairs > 0

    def add_pair(self) -> None:
        self.work_total += self.pair_work
        self.cur_pairs += 1

    def end_cpu(self) -> None:
        self.pairs_done.append(self.cur_pairs)
        self.cur_open = False

    # -- estimates
    def prior(self) -> float:
        if self.pairs_done:
            return sum(self.pairs_done) / len(self.pairs_done)
        return self.max_pairs / 2

    def expected_extra(self, elapsed: float, speed: float, planned_left: float) -> float:
        """Planned seconds of the adaptive pairs likely still to come (not yet in the
        plan): this CPU's, and as many per CPU not started as :meth:`prior`; all of it
        within the time limit, past which no round starts."""
        if self.max_pairs <= 0:
            return 0.0
        prior = self.prior()
        pairs = expected_pairs(self.cur_pairs, self.max_pairs, prior, self.cur_open)
        pairs += self.cpus_pending * min(prior, float(self.max_pairs))
        extra = pairs * self.pair_work
        if self.time_limit_s is not None:
            extra = min(extra, max(0.0, (self.time_limit_s - elapsed) / speed - planned_left))
        return extra

    def elapsed(self) -> float:
        return self.now() - self.t0

    def report(self, *, final: bool = False, cpu: int | None = None, round: int | None = None,
               rounds: int | None = None, suite: str | None = None, backend: str | None = None,
               operation: str | None = None, message: str = "") -> None:
        if self.callback is None:
            return
        elapsed = self.elapsed()
        frac, eta = self.fraction, None
        if final:
            frac, eta = 1.0, 0.0
        elif self.work_total:
            # Scale the plan by how fast the work actually went so far.
            speed = max(elapsed / self.work_done if self.work_done > 0 else 1.0, 0.5)
            remaining = max(0.0, self.work_total - self.work_done)
            remaining += self.expected_extra(elapsed, speed, remaining)
            eta = remaining * speed
            # The part of the bar still to go is shared between the work done since the
            # last event and what remains now: with a fixed plan this is done / total;
            # when rounds are added (or expected) the bar slows down, never goes back.
            step = max(0.0, self.work_done - self._last_done)
            if step + remaining > 0:
                frac += (1.0 - frac) * step / (step + remaining)
            self.fraction, self._last_done = min(frac, 1.0), self.work_done
        event = ProgressEvent(fraction=frac, eta_s=eta, elapsed_s=elapsed, cpu=cpu,
                              suite=suite, backend=backend, operation=operation,
                              round=round, rounds=rounds, message=message)
        # A broken progress bar must not break a measurement.
        with contextlib.suppress(Exception):
            self.callback(event)
