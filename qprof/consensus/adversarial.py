"""The worst-signature figure: the Verify Units of the costliest signature an adversary
can bring, beside the median signature's: the median estimate times the factor
``qprof adversary`` measured (a property of the verifier's code path, so it carries to
a core where only the median was measured, as a projection). Worst VU = ceil(unit_vu x
ratio x factor), its interval from both intervals' ends. Why: docs/ADVERSARY.md.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qprof.consensus.profiles import Profile
from qprof.measure.adversary import summary_path
from qprof.measure.adversary_cache import (
    AdversaryCacheError,
    CachedSummary,
    WorstRatio,
    read_cache,
)
from qprof.measure.markdown import one_line

_log = logging.getLogger(__name__)

# Which adversarial signature a figure is for, costliest first in what it does to a node.
KINDS = ("ground", "crafted_invalid", "costliest")
SHOWN_KINDS = ("ground", "crafted_invalid")  # the chosen and the crafted signature
VALID_KINDS = ("ground", "costliest")  # signatures a valid block can hold


@dataclass(frozen=True)
class AdversaryFactor:
    """A worst signature's liboqs time over the median random one (``qprof adversary``)."""

    suite: str
    kind: str  # "ground" (valid, chosen by the key owner) | "crafted_invalid" | "costliest"
    factor: float
    low: float
    high: float
    hash_calls: int | None
    cpu_model: str
    measured_at: float

    @classmethod
    def of(cls, summary: CachedSummary, worst: WorstRatio) -> AdversaryFactor:
        return cls(summary.suite, worst.kind, worst.ratio, worst.low, worst.high,
                   worst.hash_calls, summary.cpu_model, summary.measured_at)


_loaded: dict[Path, tuple[tuple[int, int, int], dict[str, AdversaryFactor]]] = {}


def load_factors(suite: str, directory: Path | None = None) -> dict[str, AdversaryFactor]:
    """The factors of the last ``qprof adversary SUITE`` run, by kind ({} without one).
    Read again only when the file changed (the verdict asks on every evaluation)."""
    path = summary_path(suite, directory)
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        return {}
    cached = _loaded.get(path)
    if cached and cached[0] == stamp:
        return dict(cached[1])
    found = _read_factors(path)
    _loaded[path] = (stamp, found)
    return dict(found)


def _read_factors(path: Path) -> dict[str, AdversaryFactor]:
    """The factors in the cache at ``path``; a damaged cache is ignored with one warning
    naming the file and the field (check and /metrics go on without the figure)."""
    try:
        summary = read_cache(path, signatures=False).summary
    except AdversaryCacheError as exc:
        _log.warning("adversary cache ignored (no worst-signature figure): %s",
                     one_line(str(exc)))
        return {}
    for why in summary.refused:
        _log.warning("adversary cache ignored in part (no worst-signature figure of that "
                     "kind): %s", one_line(f"{path}: {why}"))
    return {kind: AdversaryFactor.of(summary, summary.worst[kind])
            for kind in KINDS if kind in summary.worst}


@dataclass(frozen=True)
class WorstSignatureVU:
    """The worst-signature figure of one suite: VU and its 95 % interval."""

    suite: str
    kind: str
    vu: int
    vu_ci: tuple[int, int]
    median_vu: int
    factor: AdversaryFactor
    projected: bool  # the factor was measured elsewhere (another core or machine)

    def covered_by(self, constant: int) -> bool | None:
        """True/False when the whole interval is on one side of ``constant``, else None."""
        if self.vu_ci[1] <= constant:
            return True
        if self.vu_ci[0] > constant:
            return False
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "kind": self.kind, "vu": self.vu,
                "vu_ci": list(self.vu_ci), "median_vu": self.median_vu,
                "factor": self.factor.factor,
                "factor_ci": [self.factor.low, self.factor.high],
                "hash_calls": self.factor.hash_calls, "factor_cpu": self.factor.cpu_model,
                "measured_at": self.factor.measured_at,
                "projected": self.projected}


def valid_factors(factors: dict[str, AdversaryFactor]) -> dict[str, AdversaryFactor]:
    """The factors of signatures a valid block can hold (not the crafted invalid one)."""
    return {k: f for k, f in factors.items() if k in VALID_KINDS}


def worst_signature_vu(suite: str, unit_vu: int, ratio: float,
                       ratio_ci: tuple[float, float] | None, factor: AdversaryFactor,
                       projected: bool = False) -> WorstSignatureVU:
    """The VU at ``factor``'s signature for a suite whose median ratio to the unit is
    ``ratio`` (interval ``ratio_ci``; None: the point alone, as for seed medians)."""
    lo_r, hi_r = ratio_ci if ratio_ci else (ratio, ratio)
    vu = math.ceil(unit_vu * ratio * factor.factor - 1e-9)
    low = min(vu, math.ceil(unit_vu * lo_r * factor.low - 1e-9))
    high = max(vu, math.ceil(unit_vu * hi_r * factor.high - 1e-9))
    median_vu = math.ceil(unit_vu * ratio - 1e-9)
    return WorstSignatureVU(suite, factor.kind, vu, (low, high), median_vu, factor, projected)


def worst_of(suite: str, unit_vu: int, ratio: float, ratio_ci: tuple[float, float] | None,
             factors: dict[str, AdversaryFactor], projected: bool = False
             ) -> WorstSignatureVU | None:
    """The highest worst-signature figure over the kinds measured (None: none)."""
    figures = [worst_signature_vu(suite, unit_vu, ratio, ratio_ci, f, projected)
               for f in factors.values()]
    return max(figures, key=lambda w: w.vu) if figures else None


def reference_worst(profile: Profile, directory: Path | None = None
                    ) -> list[tuple[str, WorstSignatureVU]]:
    """(reference core, figure) per priced suite with a measured factor: the profile's
    reference medians (the seeds' Silver for qanum) times the factor measured here,
    a projection (the factor comes from another core)."""
    out = []
    for core in profile.reference_cores:
        med = core.verify_median_ns
        unit = med.get(profile.unit_suite)
        if not unit:
            continue
        for suite in profile.suites:
            if (suite not in med or suite not in profile.verify_units
                    or not suite.startswith("SLH-DSA")):
                continue
            for f in load_factors(suite, directory).values():
                if f.kind in SHOWN_KINDS:
                    out.append((core.name, worst_signature_vu(
                        suite, profile.unit_vu, med[suite] / unit, None, f, projected=True)))
    return out


def each_kind(suite: str, unit_vu: int, ratio: float | None,
              ratio_ci: tuple[float, float] | None, directory: Path | None = None
              ) -> list[WorstSignatureVU]:
    """The figure at each shown kind (ground valid, crafted invalid) of the last run."""
    if ratio is None or not suite.startswith("SLH-DSA"):
        return []
    return [worst_signature_vu(suite, unit_vu, ratio, ratio_ci, f)
            for f in load_factors(suite, directory).values() if f.kind in SHOWN_KINDS]


def for_estimate(suite: str, unit_vu: int, ratio: float | None,
                 ratio_ci: tuple[float, float] | None,
                 factors: dict[str, AdversaryFactor] | None = None,
                 directory: Path | None = None) -> WorstSignatureVU | None:
    """The worst-signature figure beside a measured estimate (its ratio and interval),
    with the factors of the last adversary run of ``suite`` unless given."""
    if ratio is None or not suite.startswith("SLH-DSA"):
        return None
    found = factors if factors is not None else load_factors(suite, directory)
    return worst_of(suite, unit_vu, ratio, ratio_ci, found)


def worst_from_dict(d: dict[str, Any] | None) -> WorstSignatureVU | None:
    """Inverse of ``WorstSignatureVU.to_dict`` or of ``dataclasses.asdict`` of it (a
    JSON round trip); None stays None."""
    if d is None:
        return None
    if isinstance(d.get("factor"), dict):  # dataclasses.asdict (CoverageResult.to_dict)
        f = d["factor"]
        return WorstSignatureVU(
            str(d["suite"]), str(d["kind"]), int(d["vu"]),
            (int(d["vu_ci"][0]), int(d["vu_ci"][1])), int(d["median_vu"]),
            AdversaryFactor(str(f["suite"]), str(f["kind"]), float(f["factor"]),
                            float(f["low"]), float(f["high"]), f.get("hash_calls"),
                            str(f["cpu_model"]), float(f["measured_at"])),
            bool(d["projected"]))
    factor = AdversaryFactor(str(d["suite"]), str(d["kind"]), float(d["factor"]),
                             float(d["factor_ci"][0]), float(d["factor_ci"][1]),
                             d.get("hash_calls"), str(d.get("factor_cpu", "")),
                             float(d.get("measured_at", 0.0)))
    return WorstSignatureVU(str(d["suite"]), str(d["kind"]), int(d["vu"]),
                            (int(d["vu_ci"][0]), int(d["vu_ci"][1])), int(d["median_vu"]),
                            factor, bool(d.get("projected", False)))


KIND_WORDS = {"ground": "ground valid", "crafted_invalid": "crafted invalid",
              "costliest": "costliest of the pool"}


def describe(w: WorstSignatureVU, constant: int, binds: bool) -> str:
    """The worst-signature figure in words, beside the median (check, report, monitor)."""
    side = {True: "within", False: "OVER", None: "straddling"}[w.covered_by(constant)]
    held = "the constants are held to it" if binds else "shown, not binding (the " \
        "constants are held to the median)"
    where = "projected with the factor measured on " if w.projected else "factor from "
    return (f"worst signature ({KIND_WORDS.get(w.kind, w.kind)}, x{w.factor.factor:.3f}, "
            f"{where}{w.factor.cpu_model}): {w.vu} VU (95 % CI {w.vu_ci[0]}-{w.vu_ci[1]}) "
            f"vs median {w.median_vu}, {side} the constant {constant}; {held}")
