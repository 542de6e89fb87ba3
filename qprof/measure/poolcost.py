"""What each signature of an SLH-DSA pool costs to verify, counted exactly.

A run's records carry, for a pool of SLH-DSA signatures, each one's Keccak-f
permutations (``verify.slhdsa_calls.walk``), so the estimator can hold the pool's mix of
costs to every signature's (``qprof.consensus.estimate.poolmix``). A count is made once
per signature and kept beside the pool's cache, keyed by the signature's digest (another
process growing the pool meanwhile loses nothing: a lost count is made again). A cached
count is used only if a verification of the suite can make it (``impossible_counts``,
the fixed part exact): a count beyond every signature's would scale each value down.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from qprof.atomicfile import OutputError, write_private
from qprof.measure.fixtures import CACHE_TAG, Fixture, Pool, cache_dir
from qprof.userfile import read_json
from qprof.verify.slhdsa_calls import fixed_permutations, impossible_counts, walk

COUNTS_MAX_BYTES = 4 << 20  # a file of counts larger than this is not ours


@dataclass(frozen=True)
class PoolCost:
    """Permutations per pool signature (pool order) and those every signature makes."""

    permutations: tuple[int, ...]
    fixed: int


def counted(suite: str) -> bool:
    """Does a pool of ``suite`` get counts? (SLH-DSA: its cost follows the signature.)"""
    return suite.startswith("SLH-DSA")


def counts_path(suite: str, directory: Path | None = None) -> Path:
    return (directory or cache_dir()) / f"{suite}.{CACHE_TAG}.counts.json"


def _key(fx: Fixture) -> str:
    return hashlib.sha256(fx.public_key + fx.message + fx.context + fx.signature).hexdigest()[:32]


def _read(path: Path) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    with contextlib.suppress(OSError, ValueError):
        raw = read_json(path, COUNTS_MAX_BYTES, "signature counts cache")
        if isinstance(raw, dict):
            for k, v in raw.items():
                if (isinstance(v, list) and len(v) == 2
                        and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                for x in v) and v[1] <= v[0]):
                    out[str(k)] = (v[0], v[1])
    return out


def _possible(suite: str, fx: Fixture, count: tuple[int, int]) -> bool:
    """Can verifying ``fx`` make ``count`` (permutations, chain steps)?"""
    perms, steps = count
    try:
        fixed = fixed_permutations(suite, len(fx.message), len(fx.context))
    except ValueError:
        return False
    return perms - steps == fixed and impossible_counts(suite, (perms,), fixed) is None


def pool_cost(suite: str, pool: Pool, directory: Path | None = None) -> PoolCost | None:
    """The pool's counts (cached ones reused, the rest counted and kept). None: not an
    SLH-DSA pool, or a signature the walk cannot take (then nothing is held to counts)."""
    if not counted(suite) or not pool:
        return None

    path = counts_path(suite, directory)
    known = _read(path) if path.is_file() else {}
    pairs: list[tuple[int, int]] = []
    new = False
    for fx in pool:
        key = _key(fx)
        if key not in known or not _possible(suite, fx, known[key]):
            try:
                w = walk(suite, fx.public_key, fx.message, fx.signature, fx.context)
            except ValueError:
                return None
            known[key] = (w.permutations.total, sum(w.layer_steps))
            new = True
        pairs.append(known[key])
    fixed = {perms - steps for perms, steps in pairs}
    if len(fixed) != 1:  # one message for the whole pool: one fixed part
        return None
    if new:  # a cache: a full disk or a read-only HOME only costs counting again
        with contextlib.suppress(OutputError, OSError):
            write_private(path.parent, path.name,
                          json.dumps({k: list(v) for k, v in known.items()}))
    return PoolCost(tuple(p for p, _ in pairs), fixed.pop())
