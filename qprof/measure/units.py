"""The one formatter of durations (records hold nanoseconds), and the unit suite."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    """The suite every other is timed against, and the Verify Units it is worth."""

    suite: str
    vu: int


# Where no profile says (qprof.consensus.profiles.profile_unit).
NO_PROFILE_UNIT = Unit("ML-DSA-44", 100)


def fmt_ns(ns: float | None, unit: str | None = None, missing: str = "-") -> str:
    """A duration for people.

    ``unit=None``: the seeds' style, 866 ns, 59.0 µs, 3.00 ms, 18.18 ms, 116 ms, 3,095 ms.
    ``unit="µs"``: a bare number of microseconds for a column whose header names the unit
    (59.0, 190.6, 3,095).
    """
    if ns is None or not math.isfinite(ns):
        return missing
    if unit == "µs":
        us = ns / 1e3
        return f"{us:.1f}" if us < 1000 else f"{us:,.0f}"
    if unit is not None:
        raise ValueError(f"unknown unit {unit!r}")
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.1f} µs"
    if ns < 100_000_000:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e6:,.0f} ms"


def medians_text(medians: Mapping[str, float]) -> str:
    """Each suite's median, "ML-DSA-44 16.8 µs · ML-DSA-87 36.0 µs": the figures a run
    shows while it goes on (its progress line, the monitor's)."""
    return " · ".join(f"{suite} {fmt_ns(ns)}" for suite, ns in medians.items())
