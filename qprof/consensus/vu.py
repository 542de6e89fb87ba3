"""Verify-Unit arithmetic and worst-case blocks.

Estimate = ceil(100 x median(suite) / median(unit)) with both medians from the same CPU,
backend and run. The division is done on exact fractions of the medians' decimal values:
with floats, 100 x 166.6 / 59.0 or an exact 2.9 x 100 can land a hair above an integer
and ceil would add a unit that the measurement does not justify.
"""

from __future__ import annotations

import math
from fractions import Fraction

from qprof.consensus.profiles import Profile
from qprof.consensus.worst_block import BlockLimits, suite_block
from qprof.measure.units import NO_PROFILE_UNIT


def exact(x: float | int | Fraction) -> Fraction:
    """The decimal value a measurement printed, as an exact fraction."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    if not math.isfinite(x):
        raise ValueError(f"not a finite number: {x!r}")
    # repr gives the shortest decimal that round-trips: the value the measurement printed.
    return Fraction(repr(float(x)))


def vu_ratio(median_suite_ns: float, median_unit_ns: float,
             unit_vu: int = NO_PROFILE_UNIT.vu) -> Fraction:
    if median_unit_ns <= 0 or median_suite_ns <= 0:
        raise ValueError("medians must be positive")
    return Fraction(unit_vu) * exact(median_suite_ns) / exact(median_unit_ns)


def vu_estimate(median_suite_ns: float, median_unit_ns: float,
                unit_vu: int = NO_PROFILE_UNIT.vu) -> int:
    """ceil(unit_vu x suite / unit), exact."""
    return math.ceil(vu_ratio(median_suite_ns, median_unit_ns, unit_vu))


def vu_block_signatures(profile: Profile, suite: str) -> int:
    """How many signatures of one suite the VU budget alone allows: floor(MAX_VU /
    constant) (seed 2026-10-21's "worst-case block estimate", which leaves bytes out)."""
    return profile.max_block_verify_units // profile.verify_units[suite]


def block_signatures(profile: Profile, suite: str) -> int:
    """How many spends of one suite fit in a block under every limit the profile states
    (the VU budget and the auth bytes; ``qprof.consensus.worst_block``)."""
    return suite_block(BlockLimits.of(profile), suite).spends


def worst_block_ns(profile: Profile, suite: str, median_ns: float) -> float:
    return block_signatures(profile, suite) * float(median_ns)
