"""The adaptive rounds' seams: the stopping rule the engine is handed, and the time limit.

The engine measures; whether (and about how many) more rounds a CPU needs is the
estimator's question, so the caller (``qprof check``, ``qprof bench``, the daemon's
cycle, the monitor) builds the rule from :mod:`qprof.consensus.estimate.stopping` and
passes it to :func:`qprof.measure.engine.run_bench`. This package imports nothing from
consensus.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from qprof.measure.plan import NoteText
from qprof.measure.records import Measurement

# The engine asks the rule again after at most this many of the pairs it said it needs.
# An answer costs 0.4-0.65 s (the estimate's bootstrap, AMD EPYC guest, 10-41 rounds)
# during which the measured CPU idles: asked after every pair, a tenth to a fifth of a
# 60 s check run went to waiting, and the check mode's 41 rounds ended it at 49 s.
MAX_PAIRS_UNASKED = 4


class StoppingRule(Protocol):
    """What the engine asks when a CPU's rounds are done (again after the pairs it said
    it needs), and once when the CPU is finished."""

    def pairs_needed(self, measurements: Sequence[Measurement], cpu: int) -> int:
        """How many more B/A pairs ``cpu`` needs before its estimate is sure, as far as
        the rule can tell (0: sure now; at least 1 otherwise). The engine adds
        ``min(answer, MAX_PAIRS_UNASKED)`` before it asks again."""
        ...

    def cpu_notes(self, measurements: Sequence[Measurement], cpu: int) -> list[NoteText]:
        """(level, kind, text) notes on a measured CPU: drift, clock changes."""
        ...


@dataclass
class PairCredit:
    """The pairs the rule last said a CPU needs, still to measure before it is asked
    again (at most MAX_PAIRS_UNASKED at a time), and the seconds the CPU is measured
    before the rule is asked at all (:func:`floor_s`)."""

    floor_s: float = 0.0
    left: int = 0
    # The pairs the rule last said the CPU needs, less those taken since (None: not asked
    # yet): what the progress ETA counts, rather than a guess from the rounds allowed.
    needed: int | None = None
    # The rule asked once half-way to the floor, for the ETA only (else the ETA would fall
    # to 0 at the floor and jump when the rule first answers); the pairs taken since.
    preview: int | None = None
    since_preview: int = 0

    def take(self, rule: StoppingRule, measurements: Sequence[Measurement], cpu: int,
             measured_s: float) -> bool:
        """Another B/A pair for ``cpu``, measured for ``measured_s`` so far? Asks
        ``rule`` only past the floor and when no credit is left."""
        if measured_s < self.floor_s:
            if self.preview is None and measured_s >= self.floor_s / 2:
                self.preview = rule.pairs_needed(measurements, cpu)
            elif self.preview is not None:
                self.since_preview += 1
            return True
        if self.left > 0:
            self.left -= 1
            self.needed = max((self.needed or 1) - 1, 0)
            return True
        need = rule.pairs_needed(measurements, cpu)
        self.left = max(min(need, MAX_PAIRS_UNASKED) - 1, 0)
        self.needed = max(need - 1, 0)
        return need > 0

    def expected(self) -> int | None:
        """The pairs still likely for the ETA: the rule's last answer less those taken;
        before it was asked, its half-way answer less the pairs since (None: neither)."""
        if self.needed is not None:
            return self.needed
        if self.preview is not None:
            return max(self.preview - self.since_preview, 0)
        return None


def floor_s(min_cpu_s: float, limit_s: float | None, cpus: int) -> float:
    """Seconds a CPU is measured before the rule's "sure" may end its rounds:
    ``min_cpu_s``, or the CPU's share of the time limit when that is shorter (the
    CPUs are measured one after another within one limit)."""
    if limit_s is None:
        return min_cpu_s
    return min(min_cpu_s, limit_s / max(cpus, 1))


def pair_fits(elapsed_s: float, limit_s: float | None, pair_budget_s: float,
              worker_seconds: Sequence[float], worker_budgets: Sequence[float],
              spawn_cost_s: float) -> bool:
    """Would one more B/A pair end within the time limit? (from the workers so far)"""
    if limit_s is None:
        return True
    need = pair_budget_s * 1.5 + spawn_cost_s
    if worker_seconds and worker_budgets:
        # How much longer than planned the workers took so far (a busy machine).
        stretch = sum(worker_seconds) / max(sum(worker_budgets), 1e-9)
        need = pair_budget_s * max(stretch, 1.0)
    return elapsed_s + need <= limit_s
