"""The one estimator: from Measurement records to a Verify-Unit estimate per suite.

:func:`estimate` (records -> :class:`SuiteEstimate` per CPU, backend and suite): one
statistic per CPU and backend gives the suite's and the unit's time and the 95 %
interval of their ratio. Every view (check, the daemon, history, the monitor, the
stopping rule) calls it; nothing else works an estimate or its interval out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from qprof.consensus.estimate.clock import steady_measurements
from qprof.consensus.estimate.poolmix import with_residual
from qprof.consensus.estimate.quiet import Paired, paired_ci, round_quiet, unit_quiet
from qprof.consensus.estimate.reduce import Key, Reduced, ratio_ci, reduce_measurements, vu_by_round
from qprof.consensus.estimate.statistic import (
    STATISTICS,
    STEADY_SPREAD_BP,
    Statistic,
    choose_statistic,
    paired_for,
    paired_spread,
    paired_usable,
)
from qprof.consensus.vu import exact, vu_estimate
from qprof.measure.records import Measurement
from qprof.measure.units import NO_PROFILE_UNIT

REPLICATES = 1000  # bootstrap replicates of an interval


@dataclass(frozen=True)
class SuiteEstimate:
    """One suite on one CPU, backend and operation, against the unit suite.

    ``suite_time_ns`` and ``unit_time_ns`` are both the ``statistic`` of their samples
    (a suite that cannot have its CPU's statistic falls back, with its unit, to the
    median, which estimates the same ratio); the Verify-Unit estimate is ``ceil(unit_vu x ratio)``
    and ``vu_ci`` its 95 % interval, which always holds it. Without the unit suite on the
    same CPU and backend, ``unit_time_ns``, ``vu_estimate`` and the intervals are None.
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
    ratio: float | None  # suite/unit by ``statistic`` (paired: median quiet-turn ratio)
    vu_estimate: int | None  # ceil(unit_vu x ratio), exact
    # 95 % interval of that very ratio, always holding it; and the same in Verify Units.
    ratio_ci: tuple[float, float] | None
    vu_ci: tuple[int, int] | None
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
    # Why this estimate cannot decide a verdict (the verdict's "no_estimate": "no reliable
    # estimate", with no figure): too few quiet data for the quiet ratio, so the figures
    # are the median's, whose bias under contention can exceed its interval. None: it can.
    undecided: str | None = None
    # Share of the unit's turns measured under contention (interleaved rounds only).
    contended_share: float | None = None
    # Signatures of the pool the suite's values verified (None: not recorded).
    pool_signatures: int | None = None
    # The pool's mix of costs was held to every signature's (poolmix): the interval holds
    # only what the hash count leaves of the pool's error.
    pool_held: bool = False
    # Runs the figures combine: 1 for a run's own estimate; more where the trend's
    # segment of comparable runs stands in for it (qprof.consensus.trend.verdict).
    runs: int = 1

    @property
    def is_unit(self) -> bool:
        return self.suite == self.unit_suite


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
        """A usable pairing: all share the unit's quiet speed (the unit's own row)."""
        return next((p for p in self.paired.values() if paired_usable(p)), None)


# What to do when the quiet data are too few (said with the contended share).
UNDECIDED_ADVICE = ("measure longer (a larger --time-limit) or at a quieter time (nothing "
                    "else running on that core or its SMT sibling)")


def _suite_statistic(g: _Group, red: Reduced) -> tuple[Statistic, str, str | None]:
    """(statistic, why, undecided): the group's statistic, unless this suite cannot have
    it. Without enough quiet data for the quiet ratio the figures are the median's, with
    its unit's, and the estimate is undecided: the median's bias under contention can
    exceed its interval, so it decides nothing. The unit's figure is taken by the same
    fallback, so a suite and its unit always share one statistic."""
    used, why = g.statistic, g.why
    undecided: str | None = None
    is_unit = red.suite == g.unit_suite
    if used == "paired" and not (g.any_paired if is_unit else paired_usable(
            g.paired.get(red.suite))):
        pair = g.paired.get(red.suite)
        used = "median"
        why = ("rounds not interleaved" if not g.paired else
               "no suite had enough quiet turns" if pair is None else
               pair.why_not or "too few quiet turns")
        if g.paired and not is_unit:
            undecided = f"{why}: {UNDECIDED_ADVICE}"
    unit = g.unit
    if used == "p10" and not (red.p10_ns and (unit is None or unit.p10_ns)):
        used, why = "median", "no samples for a 10th percentile"
    return used, why, undecided


def _times(g: _Group, red: Reduced, used: Statistic) -> tuple[float, float | None]:
    """(suite time, unit time) by ``used``; paired: the suite's quiet ratio times the
    unit's quiet speed, and that quiet speed."""
    unit = g.unit
    if used == "paired":
        if red.suite == g.unit_suite:
            anyp = g.any_paired
            assert anyp is not None  # _suite_statistic fell back otherwise
            return anyp.unit_quiet_ns, anyp.unit_quiet_ns
        pair = g.paired[red.suite]
        return pair.ratio * pair.unit_quiet_ns, pair.unit_quiet_ns
    if used == "p10":
        assert red.p10_ns is not None
        return red.p10_ns, unit.p10_ns if unit is not None else None
    return red.median_ns, unit.median_ns if unit is not None else None


def _ratio(g: _Group, red: Reduced, used: Statistic, suite_ns: float, unit_ns: float
           ) -> Fraction:
    """suite/unit, exact (paired: the median of the quiet-turn ratios itself)."""
    if red.suite == g.unit_suite:
        return Fraction(1)
    if used == "paired":
        return exact(g.paired[red.suite].ratio)
    return exact(suite_ns) / exact(unit_ns)


def _interval(g: _Group, red: Reduced, used: Statistic, replicates: int,
              signatures: bool = True, ratio: float | None = None
              ) -> tuple[float, float] | None:
    """95 % interval of the suite/unit ratio by the statistic the estimate used."""
    unit = g.unit
    if unit is None or red.suite == g.unit_suite or replicates <= 0:
        return None
    # A pool held to every signature's mix (poolmix) has only its residual left: the
    # measurement's interval, widened by it; resampling its signatures would add their
    # whole spread again.
    matched = red.pool_matched
    if used == "paired":
        ci = paired_ci(g.paired[red.suite], replicates=replicates,
                       signatures=signatures and matched is None)
    else:
        ci = ratio_ci(red, unit, replicates=replicates,
                      quantile=0.5 if used == "median" else 0.1)
    if ci is None or matched is None or not signatures or ratio is None:
        return ci
    return with_residual(ci, ratio, matched)


def _rounds(g: _Group, red: Reduced, used: Statistic
            ) -> tuple[int, float | None, dict[int, float] | None]:
    """(rounds used, their spread in bp, VU per round) under ``used``."""
    unit, is_unit = g.unit, red.suite == g.unit_suite
    if used == "paired":
        spread = paired_spread(g.paired, red.suite, g.unit_suite)
        if is_unit:
            anyp = g.any_paired
            return (len(anyp.unit_by_round) if anyp else 0), spread, None
        pair = g.paired[red.suite]
        return len(pair.by_round), spread, {
            r: round(g.unit_vu * v, 1) for r, v in pair.by_round.items()}
    spread = (red.p10_spread_bp if used == "p10" and red.p10_spread_bp is not None
              else red.spread_bp)
    by_round = ({k: round(v, 1) for k, v in vu_by_round(red, unit, g.unit_vu, used).items()}
                if unit is not None and not is_unit else None)
    return len(red.round_medians), spread, by_round


def _alternatives(g: _Group, red: Reduced) -> dict[Statistic, int | None]:
    """Every statistic's estimate, each with the unit by the same statistic."""
    unit, pair, is_unit = g.unit, g.paired.get(red.suite), red.suite == g.unit_suite
    if unit is None:
        return {}
    paired: int | None = None
    if is_unit:
        paired = g.unit_vu if g.any_paired is not None else None
    elif paired_usable(pair):
        assert pair is not None
        paired = math.ceil(g.unit_vu * exact(pair.ratio))
    return {
        "median": vu_estimate(red.median_ns, unit.median_ns, g.unit_vu),
        "p10": (vu_estimate(red.p10_ns, unit.p10_ns, g.unit_vu)
                if red.p10_ns and unit.p10_ns else None),
        "paired": paired,
    }


def _estimate_suite(g: _Group, red: Reduced, asked: str, replicates: int,
                    signatures: bool) -> SuiteEstimate:
    used, why, undecided = _suite_statistic(g, red)
    is_unit = red.suite == g.unit_suite
    suite_ns, unit_ns = _times(g, red, used)
    estimate: int | None = None
    ratio: float | None = None
    ci = vu_ci = None
    if unit_ns is not None:
        exact_ratio = _ratio(g, red, used, suite_ns, unit_ns)
        ratio = float(exact_ratio)
        estimate = math.ceil(g.unit_vu * exact_ratio)
        ci = _interval(g, red, used, replicates, signatures, ratio)
        if is_unit:
            vu_ci = (g.unit_vu, g.unit_vu)
        elif ci is not None:
            # The interval is of this very estimate; a bootstrap's percentiles can still
            # fall beside it (a skewed resampling distribution): it then reaches to the
            # estimate, so no view ever prints an estimate outside its own interval.
            ci = (min(ci[0], ratio), max(ci[1], ratio))
            vu_ci = (min(math.ceil(g.unit_vu * exact(ci[0])), estimate),
                     max(math.ceil(g.unit_vu * exact(ci[1])), estimate))
    rounds_used, spread, by_round = _rounds(g, red, used)
    pair, anyp = g.paired.get(red.suite), g.any_paired
    ref = pair if pair is not None else anyp
    unit = g.unit
    contended: tuple[int, ...] = ()
    if is_unit and unit is not None:
        run = round_quiet(unit)
        contended = tuple(unit_quiet(run)[2]) if run is not None else ()
    elif ref is not None:
        contended = tuple(ref.contended)
    return SuiteEstimate(
        cpu=g.cpu, suite=red.suite, backend=g.backend, operation=g.operation,
        unit_suite=g.unit_suite, statistic=used, statistic_asked=asked, statistic_why=why,
        suite_time_ns=suite_ns, unit_time_ns=unit_ns, ratio=ratio, vu_estimate=estimate,
        ratio_ci=ci, vu_ci=vu_ci, n=red.n, rounds=len(red.round_medians),
        rounds_used=rounds_used, round_spread_bp=spread, median_ns=red.median_ns,
        p10_ns=red.p10_ns, spread_bp=red.spread_bp, p10_spread_bp=red.p10_spread_bp,
        round_medians_ns=tuple(red.round_medians[r] for r in sorted(red.round_medians)),
        contended_rounds=contended,
        quiet_turns=ref.quiet_turns if ref is not None and not is_unit else None,
        turns=ref.turns if ref is not None and not is_unit else None,
        vu_by_round=by_round, vu_by_statistic=_alternatives(g, red),
        capped=red.capped, cap_factor=red.cap_factor, undecided=undecided,
        contended_share=ref.contended_share if ref is not None else None,
        pool_signatures=max(red.pool_sizes.values()) if red.pool_sizes else None,
        pool_held=red.pool_matched is not None,
    )


def _groups(measurements: Iterable[Measurement], unit_suite: str, unit_vu: int,
            operation: str, statistic: str, steady_spread_bp: float
            ) -> dict[tuple[int, str], _Group]:
    """Per CPU and backend of the run: its reductions, statistic and quiet pairs, what
    every interval of one run starts from, whichever signatures it resamples."""
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose from {', '.join(STATISTICS)}")
    # Rounds timed at one clock: a cap that came or went mid-run is left out (when enough
    # rounds remain; the run's note says which, or that it could not).
    steady, _changes = steady_measurements(measurements, unit_suite)
    reduced = reduce_measurements(m for m in steady if m.operation == operation)
    # Each (cpu, backend) sees its own reductions only: linear in the CPUs of a run.
    by_group: dict[tuple[int, str], dict[Key, Reduced]] = {}
    for key, red in reduced.items():
        by_group.setdefault((key[0], key[2]), {})[key] = red
    groups: dict[tuple[int, str], _Group] = {}
    for (cpu, backend), mine in by_group.items():
        paired = paired_for(mine, cpu, backend, operation, unit_suite)
        if statistic == "auto":
            used, why = choose_statistic(mine, cpu, backend, paired, operation,
                                         steady_spread_bp, unit_suite)
        else:
            used, why = statistic, "asked for"  # type: ignore[assignment]
        groups[(cpu, backend)] = _Group(mine, cpu, backend, operation, unit_suite,
                                        unit_vu, used, why, paired)
    return groups


def _estimates(groups: dict[tuple[int, str], _Group], statistic: str, replicates: int,
               signatures: bool) -> list[SuiteEstimate]:
    out: list[SuiteEstimate] = []
    for _cpu_and_backend, g in sorted(groups.items()):
        # The unit suite first, then the others by name.
        for _key, red in sorted(g.reduced.items(),
                                key=lambda kv: (kv[0][1] != g.unit_suite, kv[0][1])):
            out.append(_estimate_suite(g, red, statistic, replicates, signatures))
    return out


def estimate(
    measurements: Iterable[Measurement],
    *,
    unit_suite: str = NO_PROFILE_UNIT.suite,
    unit_vu: int = NO_PROFILE_UNIT.vu,
    operation: str = "verify",
    statistic: str = "auto",
    replicates: int = REPLICATES,
    steady_spread_bp: float = STEADY_SPREAD_BP,
    signatures: bool = True,
) -> list[SuiteEstimate]:
    """One :class:`SuiteEstimate` per (cpu, backend, suite) of ``operation`` in
    ``measurements``, sorted by cpu, backend, then the unit suite first.

    ``statistic``: ``"median"`` (the seeds' rule), ``"p10"``, ``"paired"`` (quiet-turn
    pairs, interleaved rounds with enough quiet turns only) or ``"auto"`` (per CPU and backend, see
    :func:`~qprof.consensus.estimate.statistic.choose_statistic`). ``replicates``: of each
    bootstrap interval (fewer: faster, coarser; the adaptive rule uses 400; 0: none).
    ``steady_spread_bp``: ``auto`` keeps the median while ML-DSA rounds agree within it.
    ``signatures``: the interval resamples the pool's signatures too (False: the
    measurement's share alone, what the stopping rule asks about: more rounds cannot
    narrow the pool's share). Deterministic: the same records give the same figures.
    """
    groups = _groups(measurements, unit_suite, unit_vu, operation, statistic,
                     steady_spread_bp)
    return _estimates(groups, statistic, replicates, signatures)


def estimate_both(
    measurements: Iterable[Measurement],
    *, unit_suite: str, operation: str, replicates: int,
) -> tuple[list[SuiteEstimate], list[SuiteEstimate]]:
    """:func:`estimate` (``auto``, no profile's unit VU) with the pool's signatures
    resampled, and with them held: the same figures as two calls, from one reduction and
    one fit of the quiet pairs (a run's point needs both: the pool's share is their
    difference)."""
    groups = _groups(measurements, unit_suite, NO_PROFILE_UNIT.vu, operation, "auto",
                     STEADY_SPREAD_BP)
    return (_estimates(groups, "auto", replicates, True),
            _estimates(groups, "auto", replicates, False))
