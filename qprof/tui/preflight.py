"""The monitor's lines on the newest run's preflight and on the adversary inside the
constants: each backend's known answers (PASS / MISMATCH), the memory per operation (the
resource table, in one line, with its caveat) and the constants with headroom (the 95 %
top at the worst valid and the crafted signature, and the costliest invalid block on the
profile's first reference core). Words from the same modules as check and the report."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from qprof.consensus import Profile
from qprof.consensus.adversarial import AdversaryFactor, load_factors, worst_signature_vu
from qprof.consensus.headroom import CRAFTED, factors_of_records, invalid_block
from qprof.consensus.verdict_types import CoverageResult
from qprof.measure.native_memory import stack_text
from qprof.measure.records import FunctionalCheck, Record, ResourceUse
from qprof.measure.units import fmt_ns


def functional_line(records: Sequence[Record]) -> str:
    checks = [r for r in records if isinstance(r, FunctionalCheck)]
    if not checks:
        return ""
    parts = []
    for backend in dict.fromkeys(c.backend for c in checks):
        mine = [c for c in checks if c.backend == backend]
        bad = [c for c in mine if c.status != "PASS"]
        parts.append(f"{backend} PASS {len(mine) - len(bad)} of {len(mine)} suites"
                     if not bad else f"{backend} MISMATCH " + ", ".join(
                         f"{c.suite} ({len(c.failed)} of {c.cases} wrong)" for c in bad)
                     + " (not timed, or never decided)")
    return "known answers before timing: " + " · ".join(parts)


def memory_line(records: Sequence[Record]) -> str:
    rows = [r for r in records if isinstance(r, ResourceUse) and r.operation == "verify"]
    if not rows:
        return ""
    parts = []
    for backend in dict.fromkeys(r.backend for r in rows):
        mine = [r for r in rows if r.backend == backend]
        code = max((r.code_bytes or 0) for r in mine)
        parts.append(f"{backend}: peak " + ", ".join(
            f"{r.suite} +{r.peak_increment_kib} KiB"
            + (f" (stack {stack_text(r.stack_bytes, r.stack_bound)})"
               if r.stack_bytes is not None else "") for r in mine)
            + f" over {mine[0].baseline_rss_kib / 1024:.0f} MiB RSS"
            + (f", code {code / 1024:.0f} KiB" if code else ""))
    return ("memory per verify (upper-bound proxies, whole process): "
            + " · ".join(parts))


def _factors(records: Sequence[Record], profile: Profile
             ) -> dict[str, dict[str, AdversaryFactor]]:
    recorded = factors_of_records(records)
    if recorded:
        return recorded
    here = {s: load_factors(s) for s in profile.suites if s.startswith("SLH-DSA")}
    return {s: k for s, k in here.items() if k}


def headroom_line(records: Sequence[Record], profile: Profile | None,
                  results: Iterable[CoverageResult]) -> str:
    if profile is None:
        return ""
    factors = _factors(records, profile)
    if not factors:
        return ""
    parts = []
    for r in results:
        kinds = factors.get(r.suite, {})
        if r.basis != "node" or not kinds or r.estimate.ratio is None:
            continue
        tops = []
        for kind in ("ground", CRAFTED):
            f = kinds.get(kind)
            tops.append(str(worst_signature_vu(r.suite, profile.unit_vu, r.estimate.ratio,
                                               r.estimate.ratio_ci, f).vu_ci[1])
                        if f is not None else "-")
        parts.append(f"CPU {r.cpu} {r.suite} {'/'.join(tops)} vs {r.vu_constant}")
    crafted = {s: k[CRAFTED] for s, k in factors.items() if CRAFTED in k}
    ref = profile.reference_core()
    block = (invalid_block(profile, ref.verify_median_ns, crafted, ref.name, projected=True)
             if ref is not None else None)
    if block is not None:
        share = (f" ({100 * block.interval_fraction:.2g} % of {block.interval_s:g} s)"
                 if block.interval_fraction is not None else "")
        parts.append(f"invalid block on {block.where} {fmt_ns(block.time_ns)}{share}, "
                     "not binding")
    return ("constants with headroom (ground/crafted 95 % top): " + " · ".join(parts)
            if parts else "")


def preflight_lines(records: Sequence[Record], profile: Profile | None,
                    results: Iterable[CoverageResult]) -> tuple[str, ...]:
    lines = (functional_line(records), memory_line(records),
             headroom_line(records, profile, results))
    return tuple(line for line in lines if line)
