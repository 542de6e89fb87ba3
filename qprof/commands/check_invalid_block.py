"""What `qprof check` says of the costliest invalid block (qprof.consensus.headroom): on
the profile's reference cores (their medians, e.g. the seeds' Silver, x this node's
crafted factors) and on each CPU measured, against the block interval. Never binding."""

from __future__ import annotations

from qprof.consensus import Profile
from qprof.consensus.headroom import invalid_blocks
from qprof.consensus.verdict_types import CoverageResult


def invalid_block_json(profile: Profile, results: list[CoverageResult]) -> dict[str, object]:
    return {"invalid_block": [b.to_dict() for b in invalid_blocks(profile, results)]}


def print_invalid_blocks(profile: Profile, results: list[CoverageResult]) -> None:
    for b in invalid_blocks(profile, results):
        print(b.text())
