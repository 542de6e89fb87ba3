"""What `qprof calibrate --headroom` says beside the proposal: which estimates the
adversary's factors raised (qprof.consensus.headroom), and which nodes lack them."""

from __future__ import annotations

from qprof.consensus.headroom import HeadroomApplied

WORDS = {"median": "the median signature (no headroom)",
         "ground": "the worst valid signature (ground, qprof adversary)",
         "crafted": "the crafted invalid signature (qprof adversary)"}


def headroom_json(applied: HeadroomApplied) -> dict[str, object]:
    return {"headroom": applied.headroom, "headroom_raised": applied.raised,
            "headroom_lacking": applied.lacking}


def headroom_lines(applied: HeadroomApplied, prometheus: bool) -> list[str]:
    out = [f"headroom: {applied.headroom}: SLH-DSA constants cover {WORDS[applied.headroom]}"]
    out += [f"  {line}" for line in applied.raised]
    if applied.lacking:
        out.append("  no factor recorded (kept at the median; run qprof adversary SUITE on "
                   "the node, then measure again): " + "; ".join(applied.lacking))
    if prometheus and applied.headroom != "median":
        out.append("  nodes read from Prometheus carry no adversary factors: kept at the "
                   "median")
    return out
