"""The CPUs over their time bound (``qprof.consensus.policy``), for `qprof check`'s verdict
line (``qprof.commands.check_text`` words the rest; the JSON's policy keys:
``qprof.consensus.judgement_codec``). The decisions are consensus's."""

from __future__ import annotations

from qprof.consensus.verdict_types import CoverageResult
from qprof.measure.units import fmt_ns


def over_time(results: list[CoverageResult]) -> str:
    seen = {}
    for r in results:
        if r.block_time_covered is False and r.block_time is not None:
            seen[(r.cpu, r.backend)] = r.block_time
    return ", ".join(f"CPU {cpu} ({fmt_ns(bt.time_ns)} > {fmt_ns(bt.reference_ns or 0)} on "
                     f"{bt.reference_core})" for (cpu, _), bt in sorted(seen.items()))
