"""The adaptive rounds' seams: the stopping rule the engine is handed, and the time limit.

The engine measures; whether a CPU needs more rounds is the estimator's question, so the
caller (``qprof check``, ``qprof bench``, the daemon's cycle, the monitor) builds the rule
from :mod:`qprof.consensus.estimate.stopping` and passes it to
:func:`qprof.measure.engine.run_bench`. This package imports nothing from consensus.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from qprof.measure.plan import NoteText
from qprof.measure.records import Measurement


class StoppingRule(Protocol):
    """What the engine asks after each round of a CPU, and once when the CPU is done."""

    def needs_more(self, measurements: Sequence[Measurement], cpu: int) -> bool:
        """Does ``cpu`` need another B/A pair (its estimate is not sure yet)?"""
        ...

    def cpu_notes(self, measurements: Sequence[Measurement], cpu: int) -> list[NoteText]:
        """(level, kind, text) notes on a measured CPU: drift, clock changes."""
        ...


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
