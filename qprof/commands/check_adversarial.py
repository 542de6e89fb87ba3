"""`qprof check`: the worst-signature figure beside the median one (text and JSON).

By default one line per SLH-DSA suite in the verdict's words (report/headroom.py's
``worst_lines``). With --verbose, per measured SLH-DSA suite, the VU at each kind of
costliest signature the last `qprof adversary` run found (ground valid, crafted invalid)
with its interval; and per reference core of the profile (qanum: the seeds' Silver
medians), the same factor applied there, a projection. Which figure decides is the
profile's ``constants_held_to``.
"""

from __future__ import annotations

from typing import Any

from qprof.commands.check_say import say
from qprof.consensus import Profile
from qprof.consensus.adversarial import describe, each_kind, reference_worst
from qprof.consensus.verdict_types import CoverageResult
from qprof.report.headroom import worst_lines


def worst_json(r: CoverageResult) -> dict[str, Any]:
    w = r.worst_signature
    return {"vu_worst_signature": w.vu if w else None,
            "worst_signature": w.to_dict() if w else None,
            "constants_held_to": r.held_to}


def reference_json(profile: Profile) -> list[dict[str, Any]]:
    return [{"core": core, "vu_constant": profile.verify_units[w.suite], **w.to_dict()}
            for core, w in reference_worst(profile)]


def print_worst_lines(profile: Profile, results: list[CoverageResult]) -> None:
    """The default output's lines: one per SLH-DSA suite, or what to run for them."""
    lines = worst_lines(profile, results)
    for line in lines:
        say(line)
    if not lines and any(r.suite.startswith("SLH-DSA") for r in results):
        say("worst signature: not measured here (run `qprof adversary SUITE` for the "
            "SLH-DSA suites)")


def print_worst(profile: Profile, results: list[CoverageResult]) -> None:
    """--verbose: each kind's figure (ground valid, crafted invalid) per CPU and suite."""
    binds = profile.constants_held_to == "worst_signature"
    for r in results:
        if r.worst_signature is None or r.decision in ("comparison", "no_estimate"):
            continue
        e = r.estimate
        for w in each_kind(r.suite, profile.unit_vu, e.ratio, e.ratio_ci) or [
                r.worst_signature]:
            say(f"CPU {r.cpu} {r.suite} median {r.vu_estimate} VU; "
                + describe(w, r.vu_constant, binds))
    for core, w in reference_worst(profile):
        say(f"{core} (reference, the profile's medians) {w.suite} median "
            f"{w.median_vu} VU; " + describe(w, profile.verify_units[w.suite], binds))
