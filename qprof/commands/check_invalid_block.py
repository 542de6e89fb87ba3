"""What `qprof check` says of the costliest invalid block (qprof.consensus.headroom): on
the profile's reference cores (their medians, e.g. the seeds' Silver, x this node's
crafted factors) and on each CPU measured, against the block interval. Never binding."""

from __future__ import annotations

from typing import TYPE_CHECKING

from qprof.consensus.headroom import (
    InvalidBlock,
    crafted_factors,
    invalid_block,
    reference_invalid_blocks,
)

if TYPE_CHECKING:
    from qprof.consensus import Profile
    from qprof.consensus.verdict import CoverageResult


def invalid_blocks(profile: Profile, results: list[CoverageResult]) -> list[InvalidBlock]:
    """The reference cores' first, then each CPU's (the node's verifier, its times)."""
    out = reference_invalid_blocks(profile)
    crafted = crafted_factors(profile)
    groups: dict[tuple[int, str], dict[str, float]] = {}
    for r in results:
        if r.basis == "node":
            groups.setdefault((r.cpu, r.backend), {})[r.suite] = r.suite_time_ns
    for (cpu, backend), times in sorted(groups.items()):
        found = invalid_block(profile, times, crafted, f"CPU {cpu} ({backend})")
        if found is not None:
            out.append(found)
    return out


def invalid_block_json(profile: Profile, results: list[CoverageResult]) -> dict[str, object]:
    return {"invalid_block": [b.to_dict() for b in invalid_blocks(profile, results)]}


def print_invalid_blocks(profile: Profile, results: list[CoverageResult]) -> None:
    for b in invalid_blocks(profile, results):
        print(b.text())
