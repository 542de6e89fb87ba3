"""The worst-case block: the costliest block a profile's limits allow, on a given core.

Who builds a block picks its spends, so the worst case is the mixture of suites that
takes longest to verify under every limit at once (VU budget, auth bytes): a small
integer linear program, solved exactly by branch and bound (each bound the linear
relaxation, computed over every suite and pair). The program and the seeds' example:
docs/ESTIMATOR.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qprof.consensus.profiles import Profile

LIMIT_VU = "verify_units"
LIMIT_BYTES = "auth_bytes"
LIMIT_TEXT = {LIMIT_VU: "the Verify-Unit budget", LIMIT_BYTES: "the auth bytes"}
# Relative tolerance when comparing block times (sums of floats): a tie within it is no
# improvement, so float noise never swaps one optimum for an equal one.
_REL = 1e-12


@dataclass(frozen=True)
class BlockLimits:
    """What bounds a block: the budgets and each suite's cost against them."""

    max_verify_units: int
    verify_units: Mapping[str, int]  # suite -> constant
    max_auth_bytes: int | None = None  # None: no byte limit
    auth_bytes: Mapping[str, int] | None = None  # suite -> bytes per spend
    per_block_bytes: int = 0

    @classmethod
    def of(cls, profile: Profile) -> BlockLimits:
        return cls(max_verify_units=profile.max_block_verify_units,
                   verify_units=dict(profile.verify_units),
                   max_auth_bytes=profile.max_block_auth_bytes,
                   auth_bytes=dict(profile.auth_bytes_per_spend),
                   per_block_bytes=profile.auth_bytes_per_block)

    def bytes_of(self, suite: str) -> int | None:
        """Bytes one spend adds, None when the profile gives no size (or no limit)."""
        if self.max_auth_bytes is None or self.auth_bytes is None:
            return None
        return self.auth_bytes.get(suite)

    @property
    def spend_bytes_budget(self) -> int | None:
        if self.max_auth_bytes is None:
            return None
        return max(0, self.max_auth_bytes - self.per_block_bytes)


@dataclass(frozen=True)
class WorstBlock:
    """A block's composition, what it uses of each limit and which limits bind."""

    composition: tuple[tuple[str, int], ...]  # (suite, spends), spends > 0
    time_ns: float  # on the core whose times chose it
    verify_units: int
    max_verify_units: int
    auth_bytes: int | None  # None: no byte limit (or a suite without a size)
    max_auth_bytes: int | None
    binding: tuple[str, ...]  # LIMIT_VU / LIMIT_BYTES: the limits holding it down
    unsized: tuple[str, ...] = ()  # suites in play without a byte size: bytes unbounded
    left_out: tuple[str, ...] = ()  # suites with a constant but no time here

    @property
    def spends(self) -> int:
        return sum(n for _, n in self.composition)

    def count(self, suite: str) -> int:
        return dict(self.composition).get(suite, 0)

    def time_on(self, times_ns: Mapping[str, float]) -> float | None:
        """The same block verified with other per-signature times (another core); None
        when one of its suites has no time there."""
        if any(s not in times_ns for s, _ in self.composition):
            return None
        return sum(n * float(times_ns[s]) for s, n in self.composition)

    def text(self) -> str:
        """"415 x ML-DSA-87" or "620 x ML-DSA-44 + 86 x SLH-DSA-SHAKE-128s"."""
        return " + ".join(f"{n} x {s}" for s, n in self.composition) or "empty"

    def binding_text(self) -> str:
        if not self.binding:
            return "no limit binds"
        return "bound by " + " and ".join(LIMIT_TEXT[b] for b in self.binding)


_Item = tuple[float, int, int]  # time, VU, bytes (0: unsized, no byte cost)


def _vertex_bound(items: Sequence[_Item], rem_vu: float | None,
                  rem_bytes: float | None) -> float:
    """The linear relaxation's optimum over ``items`` (inf: unbounded)."""
    best = 0.0
    for i, (t, v, b) in enumerate(items):
        if t <= 0:
            continue
        caps = [rem_vu / v if rem_vu is not None else math.inf,
                rem_bytes / b if rem_bytes is not None and b > 0 else math.inf]
        best = max(best, t * min(caps))
        if rem_vu is None or rem_bytes is None:
            continue
        for t2, v2, b2 in items[i + 1:]:
            det = v * b2 - v2 * b
            if det == 0:
                continue
            x = (rem_vu * b2 - v2 * rem_bytes) / det
            y = (v * rem_bytes - rem_vu * b) / det
            if x >= 0 and y >= 0:
                best = max(best, t * x + t2 * y)
    return best


def _solve(items: Sequence[_Item], cap_vu: int | None, cap_bytes: int | None
           ) -> tuple[float, list[int]]:
    """Exact integer optimum: (time, count per item). time inf: unbounded."""
    if _vertex_bound(items, cap_vu, cap_bytes) == math.inf:
        return math.inf, [0] * len(items)
    # Most time per VU first: a good block is found early, and bounds prune the rest.
    order = sorted(range(len(items)), key=lambda i: -items[i][0] / items[i][1])
    ordered = [items[i] for i in order]
    best_time = -1.0
    best: list[int] = [0] * len(items)
    counts = [0] * len(items)

    def most(k: int, rem_vu: int | None, rem_bytes: int | None) -> int:
        t, v, b = ordered[k]
        caps = [rem_vu // v if rem_vu is not None else None,
                rem_bytes // b if rem_bytes is not None and b > 0 else None]
        known = [c for c in caps if c is not None]
        return max(0, min(known)) if known else 0

    def walk(k: int, rem_vu: int | None, rem_bytes: int | None, time: float) -> None:
        nonlocal best_time, best
        if k == len(ordered) - 1:
            n = most(k, rem_vu, rem_bytes) if ordered[k][0] > 0 else 0
            counts[k] = n
            total = time + n * ordered[k][0]
            if total > best_time * (1 + _REL) or best_time < 0:
                best_time = total
                best = list(counts)
            counts[k] = 0
            return
        t, v, b = ordered[k]
        rest = ordered[k + 1:]

        def left(n: int) -> tuple[int | None, int | None]:
            return (None if rem_vu is None else rem_vu - n * v,
                    None if rem_bytes is None else rem_bytes - n * b)

        def bound(n: int) -> float:
            return time + n * t + _vertex_bound(rest, *left(n))

        top = most(k, rem_vu, rem_bytes) if t > 0 else 0
        # The bound is concave in n (a linear term plus the value of a linear program
        # in its right-hand side): find its peak, then walk down and up from it while
        # a branch can still beat the best block found.
        lo, hi = 0, top
        while lo < hi:
            mid = (lo + hi) // 2
            if bound(mid) < bound(mid + 1):
                lo = mid + 1
            else:
                hi = mid
        for step, start, stop in ((-1, lo, -1), (1, lo + 1, top + 1)):
            for n in range(start, stop, step):
                if best_time >= 0 and bound(n) <= best_time * (1 + _REL):
                    break  # concave: every n further from the peak is lower still
                counts[k] = n
                walk(k + 1, *left(n), time + n * t)
        counts[k] = 0

    if ordered:
        walk(0, cap_vu, cap_bytes, 0.0)
    result = [0] * len(items)
    for pos, i in enumerate(order):
        result[i] = best[pos]
    return max(best_time, 0.0), result


def worst_block(limits: BlockLimits, times_ns: Mapping[str, float],
                suites: Sequence[str] | None = None) -> WorstBlock:
    """The costliest block of ``suites`` (default: every suite with a constant and a
    time) under all of ``limits``, from per-signature ``times_ns`` on one core."""
    priced = [s for s in (suites if suites is not None else limits.verify_units)
              if s in limits.verify_units]
    used = [s for s in priced if s in times_ns]
    items: list[_Item] = [(float(times_ns[s]), limits.verify_units[s],
                           limits.bytes_of(s) or 0) for s in used]
    unsized = tuple(s for s in used if limits.max_auth_bytes is not None
                    and limits.bytes_of(s) is None)
    cap_bytes = limits.spend_bytes_budget
    time_ns, counts = _solve(items, limits.max_verify_units, cap_bytes)
    binding = []
    for limit, caps in ((LIMIT_VU, (None, cap_bytes)),
                        (LIMIT_BYTES, (limits.max_verify_units, None))):
        if limit == LIMIT_BYTES and cap_bytes is None:
            continue
        relaxed, _ = _solve(items, *caps)
        if relaxed > time_ns * (1 + _REL):
            binding.append(limit)
    composition = tuple((s, n) for s, n in zip(used, counts, strict=True) if n > 0)
    vu = sum(limits.verify_units[s] * n for s, n in composition)
    auth: int | None = None
    if limits.max_auth_bytes is not None and not unsized:
        auth = limits.per_block_bytes + sum((limits.bytes_of(s) or 0) * n
                                            for s, n in composition)
    return WorstBlock(composition=composition, time_ns=time_ns, verify_units=vu,
                      max_verify_units=limits.max_verify_units, auth_bytes=auth,
                      max_auth_bytes=limits.max_auth_bytes, binding=tuple(binding),
                      unsized=unsized,
                      left_out=tuple(s for s in priced if s not in times_ns))


def suite_block(limits: BlockLimits, suite: str, time_ns: float = 1.0) -> WorstBlock:
    """The block of one suite alone: as many spends as every limit allows."""
    return worst_block(limits, {suite: time_ns}, [suite])
