"""A cached pool of many SLH-DSA (or ML-DSA) signatures, each with its exact hash calls
and Keccak-f permutations.

The measurement pool (``fixtures``, 8 per suite) spreads the cost of a signature over
the estimate; this one is large enough (64-256) for the tail to show: its costliest
signatures are what a block builder keeps when it picks among honest ones.  Keys and
signatures are made by liboqs (one key per ``PER_KEY`` signatures; qprof's message) and
cached beside the fixtures; a cached signature is used only if liboqs still accepts it.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from qprof.atomicfile import OutputError, write_private
from qprof.measure.fixtures import CACHE_MAX_BYTES, CONTEXT, MESSAGE, cache_dir
from qprof.measure.sigtime import SigItem
from qprof.userfile import read_json
from qprof.verify import get_signer, get_verifier
from qprof.verify.slhdsa_calls import walk

PER_KEY = 16
DEFAULT_SIZE = 64


@dataclass(frozen=True)
class SigCounts:
    """What verifying one SLH-DSA signature hashes, exactly (``verify.slhdsa_calls.walk``)."""

    hash_calls: int  # calls of F, H, T and H_msg
    permutations: int  # Keccak-f[1600] permutations those calls make: one price each


@dataclass(frozen=True)
class PoolSignature:
    item: SigItem
    # None for ML-DSA (its cost barely depends on the signature)
    hash_calls: int | None
    permutations: int | None = None


def sig_counts(item: SigItem) -> SigCounts | None:
    """None for a suite that is not SLH-DSA."""
    if not item.suite.startswith("SLH-DSA"):
        return None

    w = walk(item.suite, item.public_key, item.message, item.signature, item.context)
    return SigCounts(w.calls.total, w.permutations.total)


def pool_signature(item: SigItem) -> PoolSignature:
    counts = sig_counts(item)
    if counts is None:
        return PoolSignature(item, None)
    return PoolSignature(item, counts.hash_calls, counts.permutations)


def pool_path(suite: str, directory: Path | None = None) -> Path:
    return (directory or cache_dir().parent / "adversary") / f"{suite}.pool.json"


def _load(path: Path, suite: str) -> list[SigItem]:
    items: list[SigItem] = []
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        raw = read_json(path, CACHE_MAX_BYTES, "signature pool cache")  # bounded
        verifier = get_verifier("liboqs", suite)
        for d in raw:
            item = SigItem.from_dict(d)
            if item.suite == suite and verifier.verify(item.public_key, item.message,
                                                       item.signature, item.context):
                items.append(item)
    return items


def signature_pool(suite: str, size: int = DEFAULT_SIZE,
                   directory: Path | None = None, deadline: float | None = None,
                   on_signed: Callable[[int, int], None] | None = None
                   ) -> list[PoolSignature]:
    """``size`` liboqs signatures of ``suite`` (cached ones first, topped up; no new one
    begun after ``deadline``, time.monotonic; ``on_signed(count, size)`` after each)."""
    path = pool_path(suite, directory)
    items = _load(path, suite)[:size] if path.is_file() else []
    if len(items) < size:
        signer = get_signer("liboqs", suite)
        missing = size - len(items)
        for _ in range(math.ceil(missing / PER_KEY)):
            pk, sk = signer.keypair()
            for _ in range(min(PER_KEY, size - len(items))):
                if deadline is not None and time.monotonic() >= deadline:
                    break
                items.append(SigItem(suite, pk, MESSAGE, signer.sign(sk, MESSAGE, CONTEXT),
                                     CONTEXT))
                if on_signed is not None:
                    on_signed(len(items), size)
        with contextlib.suppress(OutputError, OSError):
            write_private(path.parent, path.name, json.dumps([i.to_dict() for i in items]))
    return [pool_signature(i) for i in items]
