"""What else changed across a change point: the known change points' fields (versions,
builds, kernel, microcode), caps and governor, load, steal and contention, which suites
moved, with what that pattern points at, and whose own time moved for a changed ratio (its
suite's, the unit's, both, or which cannot be told)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean, median

from qprof.consensus.trend.model import RunContext, RunPoint, known_fields
from qprof.consensus.trend.segmentation import differ

LABELS = {"liboqs": "liboqs", "liboqs_build": "liboqs build", "numba": "numba",
          "kernels": "qprof kernels", "kernel": "kernel", "microcode": "microcode"}
# A mean that moves by more than this is said (load in runnable tasks, steal and
# contention in percentage points).
LOAD_STEP = 0.5
PCT_STEP = 10.0
MOVED_P = 0.05  # a suite's own time moved when the runs either side differ at this level
# Whose time moved is named at a stricter level: own times drift between runs, which makes
# a rank test's p too small, and naming the wrong one is worse than saying it cannot be told.
WHOSE_P = 0.01
CLEAR = 2.0  # a time alone is named only for a step past this many times both times' sd


def moved_beyond_noise(before: Sequence[float], after: Sequence[float],
                       p: float = MOVED_P) -> bool:
    """Whether a suite's own (log) times differ across a change: the Mann-Whitney U test,
    two-sided, at ``p``. A run's own time is the median of all its rounds, contended ones
    included, so a few runs read 5-10 % slow; in a mean they hide a 1 % shift, in ranks
    they do not. bench/trend_explain.py on two Zen 3 series, a 1 % SLH-DSA step, 12 runs
    each side: "only SLH-DSA moved" in 247 and 312 of 400 (Welch: 72 and 64); on three Zen
    5 series alike (82/95, 51/52, 48/44). Sides too small for ranks to reach ``p`` (3 runs
    each side give 0.1 at best) use Welch's t test."""
    if 2.0 / math.comb(len(before) + len(after), len(before)) >= p:
        return differ(before, after, p)
    from scipy.stats import mannwhitneyu

    pvalue = float(mannwhitneyu(list(before), list(after), alternative="two-sided").pvalue)
    return math.isfinite(pvalue) and pvalue < p


@dataclass(frozen=True)
class OwnTime:
    """One own time (a suite's or the unit's) across a change of the ratio: its step (log,
    median after less median before), its run-to-run noise (robust sd of log time),
    whether it moved (differs from no step), and whether it differs from ``carry``, the
    full step the ratio took (the step this time would take had it alone moved)."""

    step: float
    noise: float
    moved: bool
    off_carry: bool  # differs from carrying the whole step
    carry: float

    @property
    def carries(self) -> bool:
        """Moved, not unlike the full step, and nearer it than no step."""
        return (self.moved and not self.off_carry
                and abs(self.step - self.carry) < abs(self.step))

    @property
    def steady(self) -> bool:
        """Did not move, unlike the full step, and nearer no step than it: ranks that
        lack the power to show a move (a few slow runs) do not make a time steady that
        took most of the step (docs/TREND.md, "No explanation contradicts")."""
        return (not self.moved and self.off_carry
                and abs(self.step) < abs(self.step - self.carry))


def own_time(before: Sequence[float], after: Sequence[float], carry: float,
             p: float = WHOSE_P) -> OwnTime | None:
    """The own (log) times either side of a change as an :class:`OwnTime`, ``carry`` the
    step (log) it would take alone, tested at ``p``; None under two runs a side."""
    if len(before) < 2 or len(after) < 2:
        return None
    mb, ma = median(before), median(after)
    # The plain sd about each side's mean: a few contended runs are what makes a time's
    # move unreadable, so they count here (the test itself is on ranks).
    fb, fa = fmean(before), fmean(after)
    sq = [(x - fb) ** 2 for x in before] + [(x - fa) ** 2 for x in after]
    return OwnTime(step=ma - mb, noise=math.sqrt(sum(sq) / (len(sq) - 2)),
                   moved=moved_beyond_noise(before, after, p),
                   off_carry=moved_beyond_noise(before, [x - carry for x in after], p),
                   carry=carry)


MIN_COMMON = 3  # own times a run needs before their common move can be taken out


def relative_times(rows: Sequence[dict[str, float]], split: int
                   ) -> dict[str, tuple[list[float], list[float]]]:
    """Each own time's (log) values before and after ``split`` with the core's speed taken
    out: every run's times less the median of their moves from their medians before the
    change. The host's speed moves every time alike (and no ratio); one suite's code, or
    the unit's, moves that time alone, and a median of three or more does not follow it.
    A run with fewer than MIN_COMMON times keeps its times as they are."""
    names = list(dict.fromkeys(n for row in rows for n in row))
    base = {n: median(vals) for n in names
            if (vals := [row[n] for row in rows[:split] if n in row])}
    out: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in base}
    for i, row in enumerate(rows):
        moves = [row[n] - base[n] for n in row if n in base]
        common = median(moves) if len(moves) >= MIN_COMMON else 0.0
        for n, y in row.items():
            if n in out:
                out[n][0 if i < split else 1].append(y - common)
    return out


def _pct_log(x: float) -> str:
    return f"{100 * math.expm1(x):+.1f} %"


def _noise(x: float) -> str:
    return f"run-to-run noise {100 * x:.1f} %"


def whose_time(suite: str, unit: str, mine: OwnTime | None, units: OwnTime | None,
               step: float) -> str:
    """Whose own time moved for a change of ``suite``'s ratio (over ``unit``) by ``step``
    (log): the suite's alone (it moved with the step, the unit's held), the unit's alone,
    or both, each with its run-to-run noise. "The ratio alone moved" only when both times
    are shown steadier than the step (neither moved, neither could have carried it); one
    time alone or neither only where both times' sd is under 1 / CLEAR of the step;
    otherwise which time moved cannot be told."""
    if mine is None or units is None:
        return "which own time moved cannot be told (too few runs with own times)"
    s = f"{suite}'s"
    u = f"the unit's ({unit})"
    # A time whose run-to-run sd is half the step or more can carry it, or hide it, in a
    # few runs: one time alone (or neither) is named only past that.
    clear = CLEAR * max(mine.noise, units.noise) < abs(step)
    if clear and mine.carries and units.steady:
        return (f"{s} own time moved {_pct_log(mine.step)} ({_noise(mine.noise)}); "
                f"{u} did not ({_noise(units.noise)})")
    if clear and units.carries and mine.steady:
        return (f"{u} own time moved {_pct_log(units.step)} ({_noise(units.noise)}); "
                f"{s} did not ({_noise(mine.noise)})")
    if mine.moved and units.moved:
        return (f"both own times moved: {s} {_pct_log(mine.step)} ({_noise(mine.noise)}), "
                f"{u} {_pct_log(units.step)} ({_noise(units.noise)})")
    if clear and mine.steady and units.steady:
        return (f"neither {s} own time ({_noise(mine.noise)}) nor {u} "
                f"({_noise(units.noise)}) moved: the ratio alone moved")
    return (f"which own time moved cannot be told: {s} wanders {100 * mine.noise:.1f} % and "
            f"{u} {100 * units.noise:.1f} % run to run, against a step of "
            f"{_pct_log(step)}")


def known_differences(before: RunContext, after: RunContext, backend: str) -> tuple[str, ...]:
    """The known change points between two runs' contexts, e.g. "liboqs 0.16.0 -> 0.17.0"
    (a build of the same version: "liboqs build 1a2b3c -> 4d5e6f")."""
    out = []
    for name in known_fields(backend):
        a, b = getattr(before, name), getattr(after, name)
        if a is not None and b is not None and a != b:
            out.append(f"{LABELS[name]} {a} -> {b}")
    return tuple(out)


def _mean(values: Sequence[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def _moved(name: str, a: float | None, b: float | None, step: float, unit: str) -> str | None:
    """Said when the mean moved by ``step`` and by a quarter of itself (a busy host's load
    of 10 moves by 1 from minute to minute)."""
    if a is None or b is None or abs(b - a) < max(step, 0.25 * abs(a)):
        return None
    return f"{name} {a:.1f}{unit} -> {b:.1f}{unit}"


def conditions(before: Sequence[RunPoint], after: Sequence[RunPoint]) -> tuple[str, ...]:
    """Caps, governor, load, steal and contention on either side, where they differ."""
    out: list[str] = []
    caps_a = [r.context.capped for r in before if r.context.capped is not None]
    caps_b = [r.context.capped for r in after if r.context.capped is not None]
    if caps_a and caps_b:
        share_a, share_b = sum(caps_a) / len(caps_a), sum(caps_b) / len(caps_b)
        if abs(share_b - share_a) >= 0.5:
            out.append(f"capped in {share_a:.0%} of runs -> {share_b:.0%}")
    gov_a = {r.context.governor for r in before if r.context.governor}
    gov_b = {r.context.governor for r in after if r.context.governor}
    if gov_a and gov_b and gov_a != gov_b:
        out.append(f"governor {'/'.join(sorted(gov_a))} -> {'/'.join(sorted(gov_b))}")
    for text in (
        _moved("load", _mean([r.context.load for r in before]),
               _mean([r.context.load for r in after]), LOAD_STEP, ""),
        _moved("steal", _mean([r.context.steal_pct for r in before]),
               _mean([r.context.steal_pct for r in after]), PCT_STEP, " %"),
        _moved("contended", _pct(_mean([r.context.contended_share for r in before])),
               _pct(_mean([r.context.contended_share for r in after])), PCT_STEP, " %"),
    ):
        if text:
            out.append(text)
    return tuple(out)


def _pct(share: float | None) -> float | None:
    return None if share is None else 100 * share


def suites_pattern(moved: Sequence[str], steady: Sequence[str]) -> str | None:
    """What the set of suites whose own times moved points at (None when none moved: the
    change's own-times clause, :func:`whose_time`, says what that means)."""
    if not moved:
        return None
    names = ", ".join(moved)
    if not steady:
        return (f"every suite moved ({names}): a change of the core's speed for all code "
                "(frequency, microcode, the host)")
    if all(s.startswith("SLH-DSA") for s in moved):
        return f"only SLH-DSA moved ({names}): the hash (Keccak) or library code"
    if all(s.startswith("ML-DSA") for s in moved):
        return f"only ML-DSA moved ({names}): the lattice (NTT, sampling) or library code"
    return f"moved: {names}; steady: {', '.join(steady)}"
