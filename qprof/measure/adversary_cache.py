"""The last ``qprof adversary SUITE`` run as it is kept on disk (``SUITE.last.json``,
written by :func:`qprof.measure.adversary.save_last`), read back into typed records.

The file is a cache anyone can edit or damage; the verdict, the daemon's /metrics and
``qprof block --adversarial`` read it. Every field is checked on the way in (a bounded
read, types, finite ratios above 0); anything wrong is one :class:`AdversaryCacheError`
naming the file and the field, and the callers go on without the cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qprof.measure.fields import FieldError, Fields
from qprof.userfile import UserFileError, read_json

# A run keeps a few dozen signatures of at most 50 kB each (hex: twice that).
MAX_BYTES = 64 << 20
# A ratio of a signature's time to the median one's: above 0, and no signature costs 100x.
MAX_RATIO = 100.0


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


def _worst(kind: str, f: Fields) -> WorstRatio:
    ratio, low, high = (f.number(k, above=0.0, at_most=MAX_RATIO)
                        for k in ("ratio", "low", "high"))
    return WorstRatio(kind, ratio, low, high, f.opt_integer("hash_calls", at_least=0))


def _summary(f: Fields) -> CachedSummary:
    worst = f.obj("worst")
    return CachedSummary(
        f.string("suite", 100), f.string("cpu_model"), f.number("measured_at", at_least=0.0),
        {kind: _worst(kind, worst.obj(kind)) for kind in worst.data
         if worst.data[kind]})


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
