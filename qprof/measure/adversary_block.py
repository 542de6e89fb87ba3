"""Blocks for ``qprof block --adversarial``: ground signatures against median ones.

Both come from the last ``qprof adversary SUITE`` run (its signatures are kept beside the
pool): the ground block repeats the ground valid signatures, the median block the same
number of random signatures of that run nearest its median liboqs time, so the two
blocks differ only by what the block builder chose.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from qprof.measure.adversary import summary_path
from qprof.measure.block import Block, BlockError, BlockItem


def _items(rows: list[dict[str, object]]) -> list[BlockItem]:
    return [BlockItem(bytes.fromhex(str(r["pk"])), bytes.fromhex(str(r["msg"])),
                      bytes.fromhex(str(r["sig"])), bytes.fromhex(str(r["ctx"])),
                      bool(r["valid"]), str(r["suite"])) for r in rows]


def adversarial_blocks(suite: str, signatures: int, path: Path | None = None
                       ) -> tuple[Block, Block]:
    """(ground block, median block) of ``signatures`` each; BlockError when there is no
    adversary run of ``suite`` with ground signatures."""
    source = path or summary_path(suite)
    try:
        data = json.loads(source.read_text())
        rows = [r for r in data["signatures"] if r["suite"] == suite]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BlockError(f"no adversary run of {suite} at {source} ({exc}); run "
                         f"`qprof adversary {suite}` first") from exc
    ground = [r for r in rows if r["kind"] == "ground" and r["valid"]]
    randoms = [r for r in rows if r["kind"] == "random" and r["valid"]]
    if not ground or not randoms:
        raise BlockError(f"{source}: no ground or random signatures of {suite}")
    median = statistics.median(float(r["verify_ns"]) for r in randoms)
    nearest = sorted(randoms, key=lambda r: abs(float(r["verify_ns"]) - median))[:len(ground)]

    def block(chosen: list[dict[str, object]]) -> Block:
        items = _items(chosen)
        return Block(suite, tuple(items[i % len(items)] for i in range(signatures)),
                     "liboqs (qprof adversary)", len(items))

    return block(ground), block(nearest)
