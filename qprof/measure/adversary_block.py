"""Blocks for ``qprof block --adversarial``: ground signatures against median ones.

Both come from the last ``qprof adversary SUITE`` run (its signatures are kept beside the
pool): the ground block repeats the ground valid signatures, the median block the same
number of random signatures of that run nearest its median liboqs time, so the two
blocks differ only by what the block builder chose.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from qprof.measure.adversary import summary_path
from qprof.measure.adversary_cache import AdversaryCacheError, CachedSignature, read_cache
from qprof.measure.block import Block, BlockError, BlockItem


def adversarial_blocks(suite: str, signatures: int, path: Path | None = None
                       ) -> tuple[Block, Block]:
    """(ground block, median block) of ``signatures`` each; BlockError when there is no
    usable adversary run of ``suite`` with ground signatures."""
    source = path or summary_path(suite)
    if not source.exists():
        raise BlockError(f"no adversary run of {suite} at {source}; run "
                         f"`qprof adversary {suite}` first")
    try:
        rows = [r for r in read_cache(source).signatures if r.suite == suite]
    except AdversaryCacheError as exc:
        raise BlockError(f"{exc}; run `qprof adversary {suite}` again") from None
    ground = [r for r in rows if r.kind == "ground" and r.valid]
    randoms = [r for r in rows if r.kind == "random" and r.valid]
    if not ground or not randoms:
        raise BlockError(f"{source}: no ground or random signatures of {suite}")
    median = statistics.median(r.verify_ns for r in randoms)
    nearest = sorted(randoms, key=lambda r: abs(r.verify_ns - median))[:len(ground)]

    def block(chosen: list[CachedSignature]) -> Block:
        items = [BlockItem(r.public_key, r.message, r.signature, r.context, r.valid, r.suite)
                 for r in chosen]
        return Block(suite, tuple(items[i % len(items)] for i in range(signatures)),
                     "liboqs (qprof adversary)", len(items))

    return block(ground), block(nearest)
