"""Clock changes during a run, found from its measurement records: pooling rounds timed
at two clocks mixes two speeds in every median, so the estimate keeps the largest set of
rounds timed at one clock (:func:`steady_measurements`). A change is a cap that came or
went (cpufreq) or, without cpufreq (a VM), a step of the unit suite's quiet speed
(``STEP_BP``, held longer than ``SPELL_S``). How: docs/ESTIMATOR.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from qprof.consensus.estimate import stats
from qprof.measure import stats as sample_stats
from qprof.measure.records import Measurement

MIN_STEADY_ROUNDS = 3
# Contention spells on a shared host last 0.1-2 s at +30-70 %; a slow stretch longer than
# this, at one level, is not one of them.
SPELL_S = 2.0
# A step of the unit's quiet speed smaller than this is drift or a different process's
# placement (rounds of one worker agree within ~30 bp, of two within ~100 bp).
STEP_BP = 500.0
# Rounds of one clock agree within this (quiet-speed 10th percentiles); a cap is one level.
LEVEL_BP = 300.0


@dataclass(frozen=True)
class ClockChange:
    """The clock of ``cpu`` changed during a run (per backend for the unit-suite clock)."""

    cpu: int
    backend: str | None  # None: seen by cpufreq, for every backend of the CPU
    source: str  # "cpufreq" | "unit_speed"
    factor: float  # slow clock / fast clock (the cap factor when cpufreq knows it)
    rounds: list[int]  # every round of the run (0-based)
    slow_rounds: list[int]  # rounds timed at the slower clock
    changed_rounds: list[int]  # rounds the change may have fallen in
    kept_rounds: list[int]  # rounds of one clock the estimate uses ([]: could not)

    @property
    def decided(self) -> bool:
        return bool(self.kept_rounds)

    @property
    def kind(self) -> str:
        return "cap_change" if self.source == "cpufreq" else "clock_change"

    def text(self) -> str:
        rounds = ", ".join(str(r + 1) for r in self.slow_rounds) or "none"
        what = (f"CPU {self.cpu}: the frequency cap changed during the run (capped rounds: "
                f"{rounds}; x{self.factor:.2f})" if self.source == "cpufreq" else
                f"CPU {self.cpu} {self.backend}: probable clock change: the unit suite's "
                f"quiet speed stepped x{self.factor:.2f} (slow rounds: {rounds}; no cpufreq "
                "here, so the unit suite is the clock)")
        if not self.decided:
            return (what + f"; fewer than {MIN_STEADY_ROUNDS} rounds at one clock: the "
                    "estimate could not leave the change out and uses every round")
        left = [r + 1 for r in self.rounds if r not in self.kept_rounds]
        return what + "; rounds " + ", ".join(map(str, left)) + " left out of the estimate"


def _split(cpu: int, backend: str | None, source: str, factor: float,
           slow: dict[int, bool]) -> ClockChange:
    """Rounds (in order) marked slow or not: the change falls in the two rounds around each
    boundary; keep the larger group of the rest (the faster clock on a tie)."""
    order = sorted(slow)
    changed = set()
    for a, b in zip(order, order[1:], strict=False):
        if slow[a] != slow[b]:
            changed |= {a, b}
    fast_rounds = [r for r in order if not slow[r] and r not in changed]
    slow_rounds = [r for r in order if slow[r] and r not in changed]
    kept = slow_rounds if len(slow_rounds) > len(fast_rounds) else fast_rounds
    return ClockChange(cpu, backend, source, factor, order, [r for r in order if slow[r]],
                       sorted(changed), kept if len(kept) >= MIN_STEADY_ROUNDS else [])


def cap_changes(measurements: Iterable[Measurement]) -> list[ClockChange]:
    """Per CPU: a cap seen by cpufreq in some rounds of a run and not in others."""
    rounds: dict[int, dict[int, bool]] = {}
    factors: dict[int, list[float]] = {}
    for m in measurements:
        if m.capped is None:
            continue
        state = rounds.setdefault(m.cpu, {})
        state[m.round] = state.get(m.round, False) or m.capped
        if m.capped and m.cap_factor:
            factors.setdefault(m.cpu, []).append(m.cap_factor)
    return [
        _split(cpu, None, "cpufreq", max(factors.get(cpu, [0.0]), default=0.0), state)
        for cpu, state in sorted(rounds.items()) if len(set(state.values())) > 1
    ]


def _unit_levels(unit: list[Measurement]) -> dict[int, float]:
    """Round -> the unit's quiet speed in it: 10th percentile of its turn medians (of its
    samples when the round was not timed in turns)."""
    out: dict[int, float] = {}
    for m in unit:
        if not m.samples_ns:
            continue
        k = m.turn_size or 1
        turns = [sample_stats.median(m.samples_ns[i:i + k]) for i in range(0, len(m.samples_ns), k)]
        out[m.round] = sample_stats.percentile(turns, 10)
    return out


def unit_speed_steps(measurements: Iterable[Measurement], unit_suite: str) -> list[ClockChange]:
    """Per CPU and backend without cpufreq: a sustained step of the unit's quiet speed."""
    groups: dict[tuple[int, str], list[Measurement]] = {}
    seen_by_cpufreq: set[int] = set()
    for m in measurements:
        if m.capped is not None:
            seen_by_cpufreq.add(m.cpu)
        if m.suite == unit_suite and m.operation == "verify":
            groups.setdefault((m.cpu, m.backend), []).append(m)
    out = []
    for (cpu, backend), unit in sorted(groups.items()):
        if cpu in seen_by_cpufreq:
            continue
        change = _step(cpu, backend, unit)
        if change is not None:
            out.append(change)
    return out


def _step(cpu: int, backend: str, unit: list[Measurement]) -> ClockChange | None:
    levels = _unit_levels(unit)
    if len(levels) < MIN_STEADY_ROUNDS + 1:
        return None
    ends = {m.round: m.finished_at for m in unit if m.finished_at is not None}
    floor = min(levels.values())
    slow = {r: v > floor * (1 + STEP_BP / 1e4) for r, v in sorted(levels.items())}
    order = sorted(levels)
    # The longest stretch of consecutive slow rounds, and how long it lasted.
    best: list[int] = []
    cur: list[int] = []
    for r in order:
        cur = cur + [r] if slow[r] else []
        if len(cur) > len(best):
            best = cur
    if len(best) < 2:
        return None
    before = [r for r in order if r < best[0]]
    start = ends.get(before[-1]) if before else None
    end = ends.get(best[-1])
    if start is None or end is None:  # the stretch opens the run: time it from its rounds
        first = ends.get(best[0])
        start = first if first is not None else end
    if start is None or end is None or end - start < SPELL_S:
        return None
    inner = [levels[r] for r in best[1:-1]] or [levels[r] for r in best]
    level = sample_stats.median(inner)
    if stats.bp((max(inner) - min(inner)) / min(inner)) > LEVEL_BP:
        return None  # a chain of spells at different slowdowns, not one clock
    others = [levels[r] for r in order if not slow[r]]
    factor = level / sample_stats.median(others) if others else level / floor
    marks = {r: r in best for r in order}
    return _split(cpu, backend, "unit_speed", factor, marks)


def clock_changes(measurements: Iterable[Measurement], unit_suite: str) -> list[ClockChange]:
    ms = list(measurements)
    return cap_changes(ms) + unit_speed_steps(ms, unit_suite)


def steady_measurements(
    measurements: Iterable[Measurement], unit_suite: str,
) -> tuple[list[Measurement], list[ClockChange]]:
    """The measurements of one clock per CPU (and backend), and the changes found.

    A change that could not be decided (too few rounds at one clock) keeps every round:
    the note says so, and the run's spread and interval show the mix.
    """
    ms = list(measurements)
    changes = clock_changes(ms, unit_suite)
    keep: dict[tuple[int, str | None], set[int]] = {
        (c.cpu, c.backend): set(c.kept_rounds) for c in changes if c.decided}
    if not keep:
        return ms, changes

    def kept(m: Measurement) -> bool:
        for key in ((m.cpu, None), (m.cpu, m.backend)):
            if key in keep and m.round not in keep[key]:
                return False
        return True

    return [m for m in ms if kept(m)], changes
