"""What `qprof calibrate --headroom` says beside the proposal: which estimates the
adversary's factors raised, which suites were projected on the reference cores
(qprof.consensus.headroom), and which nodes lack a factor; lines within 100 columns."""

from __future__ import annotations

import textwrap

from qprof.consensus.headroom import HeadroomApplied

WORDS = {"median": "the median signature (no headroom)",
         "ground": "the worst valid signature (ground, qprof adversary)",
         "crafted": "the crafted invalid signature (qprof adversary)"}
WIDTH = 100


def headroom_json(applied: HeadroomApplied) -> dict[str, object]:
    return {"headroom": applied.headroom, "headroom_raised": applied.raised,
            "headroom_lacking": applied.lacking}


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent="  ", subsequent_indent="    ")


def headroom_lines(applied: HeadroomApplied, prometheus: bool, projected: int) -> list[str]:
    """The headroom asked for and what it moved (``projected``: suites proposed from the
    reference medians with a factor)."""
    if applied.headroom == "median":
        return [f"headroom: median: the proposal covers {WORDS['median']}"]
    moved = len(applied.raised) + projected
    head = (f"headroom: {applied.headroom}: asked to cover {WORDS[applied.headroom]}; "
            + (f"{len(applied.raised)} estimate(s) raised, {projected} suite(s) projected "
               "on the reference cores" if moved else "no factor recorded in these runs, "
               "no figure moved"))
    out = textwrap.wrap(head, WIDTH, subsequent_indent="    ")
    for line in applied.raised:
        out += _wrapped(line)
    if applied.lacking:
        out += _wrapped("no factor recorded (kept at the median; run `qprof adversary` on "
                        "the node, then measure again): " + "; ".join(applied.lacking))
    if prometheus:
        out += _wrapped("nodes read from Prometheus carry no adversary factors: kept at "
                        "the median")
    return out
