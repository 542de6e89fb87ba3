"""qprof.consensus: chain profiles (TOML), Verify Units, coverage, worst-case blocks."""

from qprof.consensus.profiles import (
    Profile,
    ProfileError,
    ReferenceCore,
    available_profiles,
    load_profile,
)
from qprof.consensus.vu import (
    CoverageResult,
    SuiteMedian,
    block_signatures,
    coverage,
    vu_estimate,
    vu_ratio,
    worst_block_ns,
)

__all__ = [
    "CoverageResult",
    "Profile",
    "ProfileError",
    "ReferenceCore",
    "SuiteMedian",
    "available_profiles",
    "block_signatures",
    "coverage",
    "load_profile",
    "vu_estimate",
    "vu_ratio",
    "worst_block_ns",
]
