"""The one estimator: from Measurement records to a Verify-Unit estimate per suite.

Entry point: :func:`estimate` (records -> :class:`SuiteEstimate` per CPU, backend and
suite); :func:`qprof.consensus.verdict.evaluate` puts a profile's constants on top.
`qprof check`, the daemon's metrics, `qprof history`, the monitor, the engine's adaptive
stopping rule and the noise simulator all call these; nothing else works a statistic, an
estimate or its interval out.

Per CPU and backend one statistic (``median``, ``p10`` or ``paired``; ``auto`` picks
with :func:`qprof.consensus.statistic.choose_statistic`) gives the suite's time and the
unit suite's time, and the 95 % interval of their ratio.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from qprof.consensus.statistic import (
    STATISTICS,
    Statistic,
    choose_statistic,
    paired_for,
    paired_spread,
)
from qprof.consensus.vu import exact, vu_estimate
from qprof.measure.records import Measurement
from qprof.measure.reduce import (
    Key,
    Paired,
    Reduced,
    paired_ci,
    ratio_ci,
    reduce_measurements,
    unit_quiet,
    vu_by_round,
)

DEFAULT_UNIT_SUITE = "ML-DSA-44"
REPLICATES = 1000  # bootstrap replicates of an interval


@dataclass(frozen=True)
class SuiteEstimate:
    """One suite on one CPU, backend and operation, against the unit suite.

    ``suite_time_ns`` and ``unit_time_ns`` are both the ``statistic`` of their samples;
    the Verify-Unit estimate is ``ceil(unit_vu x suite_time_ns / unit_time_ns)`` and
    ``vu_ci`` its 95 % interval. Without the unit suite on the same CPU and backend,
    ``unit_time_ns``, ``vu_estimate`` and the intervals are None.
    """

    cpu: int
    suite: str
    backend: str
    operation: str
    unit_suite: str
    statistic: Statistic  # what suite_time_ns and unit_time_ns are
    statistic_asked: str  # "auto" or the statistic asked for
    statistic_why: str
    suite_time_ns: float
    unit_time_ns: float | None
    vu_estimate: int | None
    ratio_ci: tuple[float, float] | None  # 95 % interval of suite/unit time
    vu_ci: tuple[int, int] | None  # the same in Verify Units (ceil of unit_vu x ratio)
    n: int
    rounds: int
    rounds_used: int
    # The spread (bp) of what the estimate used: round medians, round 10th percentiles,
    # or (paired) the per-round ratios / the unit's quiet speed.
    round_spread_bp: float | None
    # The plain figures of all samples, whichever statistic the estimate used.
    median_ns: float
    p10_ns: float | None
    spread_bp: float
    p10_spread_bp: float | None
    round_medians_ns: tuple[float, ...]
    # Rounds (0-based) without enough quiet turns: for the unit, rounds where it rarely
    # ran at its quiet speed; for a suite, also where the suite did not.
    contended_rounds: tuple[int, ...] = ()
    quiet_turns: int | None = None
    turns: int | None = None
    vu_by_round: dict[int, float] | None = None
    # Every statistic's estimate side by side: a busy machine shows as them disagreeing,
    # a real change as all of them moving.
    vu_by_statistic: dict[Statistic, int | None] = field(default_factory=dict)
    capped: bool | None = None
    cap_factor: float | None = None

    @property
    def is_unit(self) -> bool:
        return self.suite == self.unit_suite


def _ci_vu(unit_vu: int, ci: tuple[float, float] | None) -> tuple[int, int] | None:
    if ci is None:
        return None
    return (math.ceil(unit_vu * exact(ci[0])), math.ceil(unit_vu * exact(ci[1])))


@dataclass
class _Group:
    """What every suite of one CPU, backend and operation shares."""

    reduced: dict[Key, Reduced]
    cpu: int
    backend: str
    operation: str
    unit_suite: str
    unit_vu: int
    statistic: Statistic
    why: str
    paired: dict[str, Paired]

    @property
    def unit(self) -> Reduced | None:
        return self.reduced.get((self.cpu, self.unit_suite, self.backend, self.operation))

    @property
    def any_paired(self) -> Paired | None:
        return next((p for p in self.paired.values() if p.by_round), None)


def _suite_statistic(g: _Group, suite: str) -> tuple[Statistic, str]:
    """The group's statistic, unless this suite cannot have it (no quiet rounds)."""
    pair = g.paired.get(suite)
    if g.statistic == "paired" and (g.any_paired is None or (
            suite != g.unit_suite and (pair is None or not pair.by_round))):
        return "p10", ("no round of this suite had enough quiet turns" if pair is not None
                       else "rounds not interleaved")
    return g.statistic, g.why


def _alternatives(g: _Group, red: Reduced) -> dict[Statistic, int | None]:
    unit, pair, is_unit = g.unit, g.paired.get(red.suite), red.suite == g.unit_suite
    if unit is None:
        return {}
    paired: int | None = None
    if pair is not None and pair.by_round:
        paired = vu_estimate(pair.ratio * pair.unit_quiet_ns, pair.unit_quiet_ns, g.unit_vu)
    elif is_unit and g.any_paired is not None:
        paired = g.unit_vu
    return {
        "median": vu_estimate(red.median_ns, unit.median_ns, g.unit_vu),
        "p10": (vu_estimate(red.p10_ns, unit.p10_ns, g.unit_vu)
                if red.p10_ns and unit.p10_ns else None),
        "paired": paired,
    }


def _time(g: _Group, red: Reduced, used: Statistic) -> float:
    """The suite's time by ``used`` (paired: its quiet ratio times the unit's quiet speed)."""
    if used == "paired":
        anyp = g.any_paired
        assert anyp is not None  # _suite_statistic fell back to p10 otherwise
        if red.suite == g.unit_suite:
            return anyp.unit_quiet_ns
        pair = g.paired[red.suite]
        return pair.ratio * pair.unit_quiet_ns
    return red.median_ns if used == "median" else (red.p10_ns or red.median_ns)


def _estimate_suite(g: _Group, red: Reduced, unit_time_ns: float | None,
                    asked: str, replicates: int) -> SuiteEstimate:
    used, why = _suite_statistic(g, red.suite)
    unit, is_unit = g.unit, red.suite == g.unit_suite
    pair, anyp = g.paired.get(red.suite), g.any_paired
    ci: tuple[float, float] | None = None
    spread: float | None
    if used == "paired":
        assert anyp is not None
        if not is_unit:
            assert pair is not None
            ci = paired_ci(pair, replicates=replicates)
        spread = paired_spread(g.paired, red.suite, g.unit_suite)
        kept = anyp.unit_by_round if is_unit else g.paired[red.suite].by_round
        rounds_used = len(kept)
        by_round = None if is_unit else {
            r: round(g.unit_vu * v, 1) for r, v in g.paired[red.suite].by_round.items()}
    else:
        if unit is not None and not is_unit:
            ci = ratio_ci(red, unit, replicates=replicates,
                          quantile=0.5 if used == "median" else 0.1)
        spread = (red.p10_spread_bp if used == "p10" and red.p10_spread_bp is not None
                  else red.spread_bp)
        rounds_used = len(red.round_medians)
        by_round = ({k: round(v, 1) for k, v in
                     vu_by_round(red, unit, g.unit_vu, used).items()}
                    if unit is not None and not is_unit else None)
    suite_time = _time(g, red, used)
    estimate: int | None = None
    vu_ci: tuple[int, int] | None = None
    if unit_time_ns is not None:
        estimate = g.unit_vu if is_unit else vu_estimate(suite_time, unit_time_ns, g.unit_vu)
        vu_ci = (g.unit_vu, g.unit_vu) if is_unit else _ci_vu(g.unit_vu, ci)
    ref = pair if pair is not None else anyp
    contended: tuple[int, ...] = ()
    if is_unit and unit is not None:
        contended = tuple(unit_quiet(unit)[2])
    elif ref is not None:
        contended = tuple(ref.contended)
    return SuiteEstimate(
        cpu=g.cpu, suite=red.suite, backend=g.backend, operation=g.operation,
        unit_suite=g.unit_suite, statistic=used, statistic_asked=asked, statistic_why=why,
        suite_time_ns=suite_time, unit_time_ns=unit_time_ns, vu_estimate=estimate,
        ratio_ci=ci, vu_ci=vu_ci, n=red.n, rounds=len(red.round_medians),
        rounds_used=rounds_used, round_spread_bp=spread, median_ns=red.median_ns,
        p10_ns=red.p10_ns, spread_bp=red.spread_bp, p10_spread_bp=red.p10_spread_bp,
        round_medians_ns=tuple(red.round_medians[r] for r in sorted(red.round_medians)),
        contended_rounds=contended,
        quiet_turns=ref.quiet_turns if ref is not None and not is_unit else None,
        turns=ref.turns if ref is not None and not is_unit else None,
        vu_by_round=by_round, vu_by_statistic=_alternatives(g, red),
        capped=red.capped, cap_factor=red.cap_factor,
    )


def estimate(
    measurements: Iterable[Measurement],
    *,
    unit_suite: str = DEFAULT_UNIT_SUITE,
    unit_vu: int = 100,
    operation: str = "verify",
    statistic: str = "auto",
    replicates: int = REPLICATES,
) -> list[SuiteEstimate]:
    """One :class:`SuiteEstimate` per (cpu, backend, suite) of ``operation`` in
    ``measurements``, sorted by cpu, backend, then the unit suite first.

    ``statistic``: ``"median"`` (the seeds' rule), ``"p10"``, ``"paired"`` (quiet-turn
    pairs, interleaved rounds only) or ``"auto"`` (per CPU and backend, see
    :func:`~qprof.consensus.statistic.choose_statistic`). ``replicates``: of each
    bootstrap interval (fewer: faster, coarser; the adaptive rule uses 400).
    Deterministic: the same records give the same figures.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose from {', '.join(STATISTICS)}")
    reduced = reduce_measurements(m for m in measurements if m.operation == operation)
    groups: dict[tuple[int, str], _Group] = {}
    for cpu, _suite, backend, _op in reduced:
        if (cpu, backend) in groups:
            continue
        if statistic == "auto":
            used, why = choose_statistic(reduced, cpu, backend, operation,
                                         unit_suite=unit_suite)
        else:
            used, why = statistic, "asked for"  # type: ignore[assignment]
        groups[(cpu, backend)] = _Group(
            reduced, cpu, backend, operation, unit_suite, unit_vu, used, why,
            paired_for(reduced, cpu, backend, operation, unit_suite))
    out: list[SuiteEstimate] = []
    for (cpu, backend), g in sorted(groups.items()):
        unit = g.unit
        unit_time = _time(g, unit, _suite_statistic(g, unit_suite)[0]) if unit else None
        suites = sorted((s for c, s, b, _o in reduced if (c, b) == (cpu, backend)),
                        key=lambda s: (s != unit_suite, s))
        for suite in suites:
            red = reduced[(cpu, suite, backend, operation)]
            out.append(_estimate_suite(g, red, unit_time, statistic, replicates))
    return out


def ratio_of(e: SuiteEstimate) -> Fraction | None:
    """suite/unit time, exact (None without the unit)."""
    if e.unit_time_ns is None:
        return None
    return exact(e.suite_time_ns) / exact(e.unit_time_ns)
