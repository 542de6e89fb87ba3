"""qprof.hw: hardware readers over a root directory (``/`` or a ``qprof snapshot``).

Public API (docs/ARCHITECTURE.md): :func:`read_topology`, :func:`read_frequencies`,
:class:`CapWatch`, :func:`take_env_snapshot`, :class:`NotLinuxRoot`.
"""

from qprof.hw.envsnap import take_env_snapshot
from qprof.hw.freq import (
    CapEvent,
    CapState,
    CapWatch,
    ClusterFreq,
    CpuFreq,
    FreqReading,
    cap_factor,
    read_frequencies,
)
from qprof.hw.model import ClusterTopo, CpuTopo, Topology
from qprof.hw.snapshot import take_snapshot
from qprof.hw.topology import NotLinuxRoot, read_topology

__all__ = [
    "CapEvent",
    "CapState",
    "CapWatch",
    "ClusterFreq",
    "ClusterTopo",
    "CpuFreq",
    "CpuTopo",
    "FreqReading",
    "NotLinuxRoot",
    "Topology",
    "cap_factor",
    "read_frequencies",
    "read_topology",
    "take_env_snapshot",
    "take_snapshot",
]
