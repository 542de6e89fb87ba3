"""A backend that failed its functional check is never decided: its suites' estimates
are undecided with the reason, in every view alike (a wrong answer of the unit suite
leaves every suite of that CPU and backend undecided: each ratio divides by it).
What is checked and when: docs/FUNCTIONAL.md and docs/ESTIMATOR.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from qprof.consensus.estimate.estimator import SuiteEstimate
from qprof.measure.records import Measurement

NEVER_DECIDED = "timed under --allow-mismatch, so never decided"
WRONG_VERDICTS = ("timed verifies gave a wrong verdict: their times are not a "
                  "verification's, so never decided")


def mismatch_reasons(measurements: Iterable[Measurement]) -> dict[tuple[int, str, str], str]:
    """(cpu, backend, suite) -> why its backend is not trusted there."""
    out: dict[tuple[int, str, str], str] = {}
    wrong: dict[tuple[int, str, str], int] = {}
    for m in measurements:
        key = (m.cpu, m.backend, m.suite)
        if m.functional_mismatch:
            out[key] = f"{m.functional_mismatch}; {NEVER_DECIDED}"
        if m.wrong_verdicts:
            wrong[key] = wrong.get(key, 0) + m.wrong_verdicts
    for key, n in wrong.items():
        out.setdefault(key, f"{n} {WRONG_VERDICTS}")
    return out


def undecided_where_mismatched(estimates: Sequence[SuiteEstimate],
                               measurements: Iterable[Measurement],
                               unit_suite: str) -> list[SuiteEstimate]:
    """``estimates`` with every mismatched one undecided, saying why."""
    reasons = mismatch_reasons(measurements)
    if not reasons:
        return list(estimates)
    out = []
    for e in estimates:
        why = reasons.get((e.cpu, e.backend, e.suite)) or reasons.get(
            (e.cpu, e.backend, unit_suite))
        if why is None:
            out.append(e)
            continue
        if (e.cpu, e.backend, e.suite) not in reasons:
            why = f"the unit suite {unit_suite}: {why}"
        # statistic_why too: every view's few words on a missing estimate (contended_text)
        out.append(dataclasses.replace(e, undecided=why, statistic_why=why,
                                       contended_share=None))
    return out
