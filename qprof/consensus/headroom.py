"""The adversary inside the constants: headroom for `qprof calibrate`, and the cost to
reject the costliest invalid block.

:func:`apply_headroom` raises each node's SLH-DSA estimate to the worst signature's
figure before the proposal (``calibrate --headroom ground|crafted``);
:func:`invalid_blocks` prices the costliest block of crafted invalid signatures against
the block interval, shown and never binding. Details: docs/ADVERSARY.md.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from qprof.consensus.adversarial import (
    KIND_WORDS,
    AdversaryFactor,
    load_factors,
    worst_signature_vu,
)
from qprof.consensus.calibrate import NodeEstimate, Projection, reference_median_vu
from qprof.consensus.profiles import Profile
from qprof.consensus.verdict_types import CoverageResult
from qprof.consensus.worst_block import BlockLimits, WorstBlock, worst_block
from qprof.measure.records import AdversaryFactors
from qprof.measure.units import fmt_ns

Headroom = Literal["median", "ground", "crafted"]
HEADROOMS: tuple[Headroom, ...] = ("median", "ground", "crafted")
KIND_OF: dict[str, str] = {"ground": "ground", "crafted": "crafted_invalid"}
CRAFTED = "crafted_invalid"
# suite -> kind -> factor: one node's last `qprof adversary` runs.
Factors = Mapping[str, Mapping[str, AdversaryFactor]]


def default_headroom(profile: Profile) -> Headroom:
    """What the profile's ``constants_held_to`` says: the worst valid (ground) signature,
    or the median."""
    return "ground" if profile.constants_held_to == "worst_signature" else "median"


def factors_of_records(records: Iterable[object]) -> dict[str, dict[str, AdversaryFactor]]:
    """The adversary factors a run recorded (its node's last ``qprof adversary`` runs)."""
    out: dict[str, dict[str, AdversaryFactor]] = {}
    for r in records:
        if isinstance(r, AdversaryFactors):
            out.setdefault(r.suite, {})[r.kind] = AdversaryFactor(
                r.suite, r.kind, r.factor, r.low, r.high, r.hash_calls, r.cpu_model,
                r.measured_at)
    return out


@dataclass(frozen=True)
class HeadroomApplied:
    """The estimates a proposal covers, and what the headroom did to them."""

    headroom: Headroom
    estimates: list[NodeEstimate]
    raised: list[str]  # "node cpu N SUITE: 1576 -> 1879 (ground x1.190 ...)"
    lacking: list[str]  # "node: SUITE" where no factor of that kind was recorded


def apply_headroom(profile: Profile, estimates: Sequence[NodeEstimate],
                   factors: Mapping[str, Factors], headroom: Headroom) -> HeadroomApplied:
    """Each node's SLH-DSA estimates at the worst signature of ``headroom``'s kind, from
    that node's factors (``factors``: node -> suite -> kind -> factor)."""
    if headroom == "median":
        return HeadroomApplied(headroom, list(estimates), [], [])
    kind = KIND_OF[headroom]
    unit_vu = profile.unit_vu
    out, raised, lacking = [], [], []
    for e in estimates:
        if not e.suite.startswith("SLH-DSA") or e.suite == profile.unit_suite:
            out.append(e)
            continue
        f = factors.get(e.node, {}).get(e.suite, {}).get(kind)
        if f is None:
            out.append(e)
            lacking.append(f"{e.node}: {e.suite}")
            continue
        ratio = e.ratio if e.ratio is not None else e.vu_estimate / unit_vu
        high = e.ratio_high if e.ratio_high is not None else e.vu_high / unit_vu
        w = worst_signature_vu(e.suite, unit_vu, ratio, (min(ratio, high), high), f)
        out.append(dataclasses.replace(e, vu_estimate=w.vu, vu_high=w.vu_ci[1]))
        raised.append(f"{e.node} cpu {e.cpu} {e.suite}: 95 % upper bound {e.vu_high} -> "
                      f"{w.vu_ci[1]} ({kind} x{f.factor:.3f}, up to x{f.high:.3f}, "
                      f"measured on {f.cpu_model})")
    return HeadroomApplied(headroom, out, raised, sorted(set(lacking)))


def reference_projections(profile: Profile, factors: Mapping[str, Factors],
                          headroom: Headroom) -> dict[str, Projection]:
    """Per SLH-DSA suite, the worst signature of ``headroom``'s kind on the profile's
    slowest reference core: its recorded medians x the largest factor the nodes measured
    (its 95 % top), what a proposal takes where no CPU that binds measured the suite."""
    if headroom == "median":
        return {}
    kind = KIND_OF[headroom]
    out = {}
    for suite in profile.suites:
        ref = reference_median_vu(profile, suite)
        found = [f[suite][kind] for f in factors.values() if kind in f.get(suite, {})]
        if (ref is None or not found or suite == profile.unit_suite
                or not suite.startswith("SLH-DSA")):
            continue
        core, ratio = ref
        f = max(found, key=lambda f: f.high)
        w = worst_signature_vu(suite, profile.unit_vu, ratio, None, f, projected=True)
        nodes = f"{len(found)} node{'s' * (len(found) != 1)}"
        out[suite] = Projection(suite, w.vu_ci[1], core, (
            f"projected from {profile.name}'s {core} medians ({w.median_vu}) with the "
            f"{KIND_WORDS.get(kind, kind)} factor measured on {nodes} (x{f.factor:.3f}, "
            f"up to x{f.high:.3f}, {f.cpu_model})"))
    return out


@dataclass(frozen=True)
class InvalidBlock:
    """The costliest invalid block the limits allow, on one core."""

    where: str  # "Silver (reference core)", "CPU 1"
    block: WorstBlock
    interval_s: float | None
    crafted: dict[str, float]  # suite -> crafted factor used (others at their median)
    factor_cpu: str  # where the factors were measured
    projected: bool  # the times are another core's (a reference core's medians)

    @property
    def time_ns(self) -> float:
        return self.block.time_ns

    @property
    def interval_fraction(self) -> float | None:
        return self.time_ns / (self.interval_s * 1e9) if self.interval_s else None

    def text(self) -> str:
        share = (f", {100 * self.interval_fraction:.2g} % of the {self.interval_s:g} s block "
                 "interval" if self.interval_fraction is not None else "")
        factors = ", ".join(f"{s} x{f:.3f}" for s, f in sorted(self.crafted.items()))
        how = "projected: its medians x " if self.projected else ""
        return (f"invalid block on {self.where}: {self.block.text()} crafted invalid "
                f"signatures ({self.block.binding_text()}) take {fmt_ns(self.time_ns)} to "
                f"reject{share} ({how}crafted factors {factors}, measured on "
                f"{self.factor_cpu}); shown, not binding")

    def to_dict(self) -> dict[str, object]:
        return {"where": self.where, "block": self.block.text(),
                "composition": [list(x) for x in self.block.composition],
                "binding": list(self.block.binding), "time_ns": self.time_ns,
                "interval_s": self.interval_s, "interval_fraction": self.interval_fraction,
                "crafted_factors": dict(self.crafted), "factor_cpu": self.factor_cpu,
                "projected": self.projected, "binding_verdict": False}


def invalid_block(profile: Profile, times_ns: Mapping[str, float],
                  crafted: Mapping[str, AdversaryFactor], where: str,
                  projected: bool = False) -> InvalidBlock | None:
    """The costliest block of crafted invalid signatures the limits allow (None: no
    crafted factor for any suite with a time here)."""
    used = {s: f for s, f in crafted.items() if s in times_ns and s in profile.verify_units}
    if not used:
        return None
    priced = {s: t * (used[s].factor if s in used else 1.0) for s, t in times_ns.items()
              if math.isfinite(t) and t > 0}
    block = worst_block(BlockLimits.of(profile), priced)
    cpu = ", ".join(sorted({f.cpu_model for f in used.values()}))
    return InvalidBlock(where, block, profile.target_block_interval_s,
                        {s: f.factor for s, f in used.items()}, cpu, projected)


def crafted_factors(profile: Profile, directory: Path | None = None
                    ) -> dict[str, AdversaryFactor]:
    """This node's last crafted-invalid factor per SLH-DSA suite of the profile."""
    out = {}
    for suite in profile.suites:
        if suite.startswith("SLH-DSA"):
            f = load_factors(suite, directory).get(CRAFTED)
            if f is not None:
                out[suite] = f
    return out


def reference_invalid_blocks(profile: Profile, directory: Path | None = None
                             ) -> list[InvalidBlock]:
    """The invalid block on each reference core (its medians, e.g. the seeds' Silver)
    with this node's crafted factors: a projection, as the worst-signature figure's."""
    crafted = crafted_factors(profile, directory)
    out = []
    for core in profile.reference_cores:
        found = invalid_block(profile, core.verify_median_ns, crafted,
                              f"{core.name} (reference core)", projected=True)
        if found is not None:
            out.append(found)
    return out


def invalid_blocks(profile: Profile, results: Iterable[CoverageResult]) -> list[InvalidBlock]:
    """The reference cores' invalid blocks first, then each CPU's (the node's verifier,
    its measured times), with this node's crafted factors."""
    out = reference_invalid_blocks(profile)
    crafted = crafted_factors(profile)
    groups: dict[tuple[int, str], dict[str, float]] = {}
    for r in results:
        if r.basis == "node":
            groups.setdefault((r.cpu, r.backend), {})[r.suite] = r.suite_time_ns
    for (cpu, backend), times in sorted(groups.items()):
        found = invalid_block(profile, times, crafted, f"CPU {cpu} ({backend})")
        if found is not None:
            out.append(found)
    return out
