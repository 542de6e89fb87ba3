"""The report's section on the chain's rule (``qprof.consensus.policy``): per measured
CPU, whether the ratio binds there and why, and its time bound (the worst-case block
here against the same block on the slowest reference core), as `qprof check` decides
them for the same records."""

from __future__ import annotations

from qprof.consensus import Profile
from qprof.consensus.verdict_types import CoverageResult
from qprof.measure.markdown import md_table, md_text
from qprof.report.columns import Column, backends_of, unit_of
from qprof.report.figures import column_estimates, column_verdicts


def policy_section(cols: list[Column], profile: Profile | None) -> list[str]:
    if profile is None or profile.verifier not in backends_of(cols, "verify"):
        return []
    unit = unit_of(profile, cols)
    per_col = column_estimates(cols, profile, unit, profile.verifier, "verify")
    verdicts = column_verdicts(profile, per_col, cols)
    by_col: dict[int, list[CoverageResult]] = {}
    for v in verdicts:
        if v.basis == "node":
            by_col.setdefault(v.cpu, []).append(v)
    rows = []
    for i, c in enumerate(cols):
        mine = by_col.get(i, [])
        if not mine:
            continue
        first = mine[0]
        bt = first.block_time
        over = [v.suite for v in mine if v.covered is False]
        ratio = ("binds" if first.ratio_binds else "not binding") + (
            f" ({', '.join(over)} above the constant)" if over else "")
        mark = {"covered": "✓ within", "not_covered": "✗ EXCEEDED", "unsure": "? unsure"}
        rows.append([
            c.label, ratio, first.ratio_binding_why,
            bt.worst.text() if bt else "-",
            mark.get(bt.decision, "no bound") if bt else "-",
            bt.why if bt else "-",
        ])
    if not rows:
        return []
    head = [f"## The chain's rule ({md_text(profile.name)})", "",
            f"The ratio binds where the profile says (`ratio_binds = \"{profile.ratio_binds}\"`"
            + (": its reference cores, matched by design or part" if
               profile.ratio_binds == "reference" else ": on every core")
            + "); every core is held to the time bound: its worst-case block (the costliest "
            "mixture under the VU budget and the auth bytes, from its own verify times) "
            "against the same block on the slowest reference core.", ""]
    return head + md_table(["CPU", "Ratio", "Why", "Worst-case block here", "Time bound",
                            "Block times"], rows) + [""]
