"""qprof.consensus: chain profiles, Verify Units and the verdict on a run's records.

- ``profiles`` (``load_profile`` -> ``Profile``), ``vu`` (exact VU arithmetic),
  ``worst_block`` (the costliest block under every limit), ``basis`` (which figures may
  carry a verdict);
- ``estimate/``: the one estimator (records -> ``SuiteEstimate``, interval, statistic);
- ``verdict`` (``evaluate`` -> ``CoverageResult``, typed in ``verdict_types``),
  ``policy`` (where the ratio binds, the block-time bound), ``judgement`` (a run's whole
  verdict); ``adversarial``, ``headroom``, ``calibrate`` and ``trend/`` on top.
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
