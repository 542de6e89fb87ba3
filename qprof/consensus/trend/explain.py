"""What else changed across a change point: the known change points' fields (versions,
builds, kernel, microcode), caps and governor, load, steal and contention, and which
suites moved, with what that pattern points at."""

from __future__ import annotations

import math
from collections.abc import Sequence

from qprof.consensus.trend.model import RunContext, RunPoint, known_fields
from qprof.consensus.trend.segmentation import differ

LABELS = {"liboqs": "liboqs", "liboqs_build": "liboqs build", "numba": "numba",
          "kernels": "qprof kernels", "kernel": "kernel", "microcode": "microcode"}
# A mean that moves by more than this is said (load in runnable tasks, steal and
# contention in percentage points).
LOAD_STEP = 0.5
PCT_STEP = 10.0
MOVED_P = 0.05  # a suite's own time moved when the runs either side differ at this level


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


def suites_pattern(moved: Sequence[str], steady: Sequence[str], suite: str | None = None,
                   unit: str | None = None) -> str:
    """What the set of suites that moved points at. For the change of ``suite``'s ratio
    (over ``unit``), it is also said when neither of the two times it divides moved while
    others did: the pattern then describes the others, not that ratio."""
    if not moved:
        return "no suite's own time moved beyond its noise (the ratio alone moved)"
    names = ", ".join(moved)
    if not steady:
        return (f"every suite moved ({names}): a change of the core's speed for all code "
                "(frequency, microcode, the host)")
    if all(s.startswith("SLH-DSA") for s in moved):
        pattern = f"only SLH-DSA moved ({names}): the hash (Keccak) or library code"
    elif all(s.startswith("ML-DSA") for s in moved):
        pattern = f"only ML-DSA moved ({names}): the lattice (NTT, sampling) or library code"
    else:
        pattern = f"moved: {names}; steady: {', '.join(steady)}"
    if suite in steady and unit in steady:  # both tested, neither moved
        pattern += (f"; neither {suite}'s own time nor the unit's ({unit}) moved beyond its "
                    "noise (this ratio alone moved)")
    return pattern
