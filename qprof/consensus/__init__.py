"""qprof.consensus: chain profiles (TOML), the estimator, the coverage verdict.

- ``profiles``: ``load_profile`` -> ``Profile`` (constants, unit, the verifier they are
  held to);
- ``basis``: which figures may carry a verdict (the profile's verifier) and which are
  comparison only;
- ``statistic``: the statistic a CPU's estimates use (``auto``: median or paired; p10
  only when asked for);
- ``estimator``: ``estimate(measurements, ...) -> list[SuiteEstimate]``, the one
  estimator (estimate, interval, statistic);
- ``verdict``: ``evaluate(profile, measurements, ...) -> list[CoverageResult]``;
- ``vu``: exact Verify-Unit arithmetic, blocks of one suite;
- ``worst_block``: the costliest block under every limit (an exact small integer program);
- ``policy``: the chain's rule: where the ratio binds, the block-time bound everywhere,
  the decision that counts (``policy_decision``);
- ``calibrate``: constants proposed from a fleet's runs.
"""

from qprof.consensus.profiles import (
    Profile,
    ProfileError,
    ReferenceCore,
    available_profiles,
    load_profile,
)
from qprof.consensus.vu import (
    block_signatures,
    vu_block_signatures,
    vu_estimate,
    vu_ratio,
    worst_block_ns,
)

__all__ = [
    "Profile",
    "ProfileError",
    "ReferenceCore",
    "available_profiles",
    "block_signatures",
    "load_profile",
    "vu_block_signatures",
    "vu_estimate",
    "vu_ratio",
    "worst_block_ns",
]
