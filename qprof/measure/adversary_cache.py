"""The last ``qprof adversary SUITE`` run as it is kept on disk (``SUITE.last.json``,
written by :func:`qprof.measure.adversary.save_last`), read back into typed records.

The file is a cache anyone can edit or damage; the verdict, the daemon's /metrics and
``qprof block --adversarial`` read it. Every field is checked on the way in (a bounded
read, types, each factor against what a signature can cost: :func:`usable_factor`, the
rule the run's ``AdversaryFactors`` records pass too); anything wrong is one
:class:`AdversaryCacheError` naming the file and the field, and the callers go on
without the cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from qprof.measure.fields import FieldError, Fields
from qprof.userfile import UserFileError, read_json
from qprof.verify.slhdsa_calls import fixed_permutations, median_chain_steps, most_chain_steps

# A run keeps a few dozen signatures of at most 50 kB each (hex: twice that).
MAX_BYTES = 64 << 20
# A ratio of a signature's time to the median one's: above 0, and no signature costs 100x.
MAX_RATIO = 100.0
# An SLH-DSA factor's room above what the most chain steps can cost (time follows the
# Keccak-f permutations within a few %, docs/ADVERSARY.md; its interval's top, noise too).
FACTOR_SLACK, HIGH_SLACK = 1.1, 1.5
# How far under the median a floor factor's interval may end and still be noise: the
# timing wander of a loaded host's short run (issue 49's 0.5 stays refused).
FLOOR_SLACK = 0.05


class AdversaryCacheError(ValueError):
    """The cache cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class WorstRatio:
    """The costliest signature of one kind over the median random one, and its 95 %
    interval."""

    kind: str
    ratio: float
    low: float
    high: float
    hash_calls: int | None


@dataclass(frozen=True)
class CachedSummary:
    suite: str
    cpu_model: str
    measured_at: float
    worst: dict[str, WorstRatio]
    # Kinds whose factor no verdict may use (usable_factor), each with why: left out of
    # ``worst`` alone, so one noisy kind costs the run none of the others.
    refused: tuple[str, ...] = ()


@dataclass(frozen=True)
class CachedSignature:
    kind: str
    suite: str
    public_key: bytes
    message: bytes
    signature: bytes
    context: bytes
    valid: bool
    verify_ns: float


@dataclass(frozen=True)
class AdversaryCache:
    path: Path
    summary: CachedSummary
    signatures: tuple[CachedSignature, ...]


def most_factor(suite: str) -> float:
    """What the costliest signature of ``suite`` can cost over the median one: for
    SLH-DSA-SHAKE the permutations of every chain step over the median's; else
    :data:`MAX_RATIO`."""
    try:
        fixed = fixed_permutations(suite, 0, 0)
        return (fixed + most_chain_steps(suite)) / (fixed + median_chain_steps(suite))
    except ValueError:
        return MAX_RATIO


def usable_factor(suite: str, kind: str, factor: float, low: float, high: float
                  ) -> tuple[float, float, float]:
    """(factor, low, high) as a verdict may use them; ValueError saying why not. The
    factor lies in its own interval, above 0 and below what any signature can cost; one
    a valid block can hold (and every SLH-DSA one) is at least 1, the median signature's
    cost: taken as 1 where its interval reaches 1 - FLOOR_SLACK (a pool's costliest of a
    few read a little under its median on a loaded host), refused below that. ML-DSA's
    crafted rejections may fail early, below 1."""
    values = (factor, low, high)
    floor = kind != "crafted_invalid" or suite.startswith("SLH-DSA")
    # A factor taken as 1 holds 1 in its interval; records from before that was so (1
    # over an interval under it) read the same.
    top = max(high, 1.0) if floor and factor == 1.0 else high
    if not all(math.isfinite(v) for v in values) or not 0 < low <= factor <= top:
        raise ValueError(f"factor {factor:g} must lie in its 95 % interval {low:g}-{high:g}, "
                         "above 0")
    if floor and high < 1 - FLOOR_SLACK:
        raise ValueError(f"factor {factor:g} (up to {high:g}) is below 1: no {kind} signature "
                         "costs less than the median one")
    most = most_factor(suite)
    if factor > most * FACTOR_SLACK or high > most * HIGH_SLACK:
        raise ValueError(f"factor {factor:g} (up to {high:g}) is beyond what any {suite} "
                         f"signature can cost (x{most:.2f} the median)")
    return (max(factor, 1.0), low, max(high, 1.0)) if floor else values


def _worst(kind: str, suite: str, f: Fields) -> WorstRatio:
    ratio, low, high = (f.number(k, above=0.0, at_most=MAX_RATIO)
                        for k in ("ratio", "low", "high"))
    try:
        ratio, low, high = usable_factor(suite, kind, ratio, low, high)
    except ValueError as exc:
        raise FieldError(f"{f.name('ratio')}: {exc}") from None
    return WorstRatio(kind, ratio, low, high, f.opt_integer("hash_calls", at_least=0))


def _summary(f: Fields) -> CachedSummary:
    worst, suite = f.obj("worst"), f.string("suite", 100)
    usable: dict[str, WorstRatio] = {}
    refused: list[str] = []
    for kind in worst.data:
        if worst.data[kind]:
            try:
                usable[kind] = _worst(kind, suite, worst.obj(kind))
            except FieldError as exc:
                refused.append(str(exc))
    return CachedSummary(suite, f.string("cpu_model"), f.number("measured_at", at_least=0.0),
                         usable, tuple(refused))


def _signature(f: Fields) -> CachedSignature:
    return CachedSignature(
        f.string("kind", 100), f.string("suite", 100), f.hex_bytes("pk"), f.hex_bytes("msg"),
        f.hex_bytes("sig"), f.hex_bytes("ctx", 255), f.boolean("valid"),
        f.number("verify_ns", above=0.0))


def read_cache(path: Path, signatures: bool = True) -> AdversaryCache:
    """The cache at ``path`` (its signatures too unless ``signatures`` is False)."""
    try:
        top = Fields(read_json(path, MAX_BYTES, "qprof adversary cache"), "")
        return AdversaryCache(
            path, _summary(top.obj("summary")),
            tuple(_signature(s) for s in top.objects("signatures")) if signatures else ())
    except UserFileError as exc:
        raise AdversaryCacheError(str(exc)) from None
    except FieldError as exc:
        raise AdversaryCacheError(f"{path}: {exc}") from None
