"""The verdict's types: one :class:`CoverageResult` per CPU, backend and suite, its
:data:`Decision` and the words every view gives it. Apart from :mod:`qprof.consensus.verdict`
so that :mod:`qprof.consensus.policy` can take results without importing the verdict."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from qprof.consensus.adversarial import WorstSignatureVU, worst_from_dict
from qprof.consensus.basis import Basis
from qprof.consensus.estimate.estimator import SuiteEstimate
from qprof.consensus.estimate.statistic import Statistic
from qprof.consensus.worst_block import WorstBlock

Decision = Literal["covered", "not_covered", "unsure", "no_estimate", "comparison"]
State = Literal["unit", "comparison", "not_binding", "no_estimate", "covered",
                "not_covered", "unsure"]
# One word per meaning, in every view (check, history, the monitor, the reports, the
# metrics' help): "unsure" is only an interval straddling a constant where the ratio
# binds; a run too contended to estimate has no figure, and says so.
WORDS: dict[State, str] = {
    "unit": "the unit suite",
    "comparison": "comparison only",
    "not_binding": "not binding here",
    "no_estimate": "no reliable estimate",
    "covered": "covered",
    "not_covered": "NOT covered",
    "unsure": "unsure",
}


@dataclass(frozen=True)
class BlockTimeVerdict:
    """The time bound on one core (one backend and operation)."""

    covered: bool | None  # None: unsure, no bound stated, or nothing to compare with
    worst: WorstBlock  # this core's worst-case block, from its own times
    time_ns: float  # that block here
    reference_core: str | None  # the slowest reference core for that very block
    reference_ns: float | None  # the same block there
    max_vs_reference: float | None  # the bound's factor (None: no reference bound)
    vs_reference: float | None  # time_ns / reference_ns
    interval_fraction: float | None  # time_ns / the target block interval
    max_interval_fraction: float | None
    why: str
    # "covered" / "not_covered": the bound holds / fails over the whole range of the
    # block's time (the estimate and every round's block time); "unsure": the range
    # straddles it; "none": no bound stated or nothing to compare with.
    decision: str = "none"
    time_range_ns: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BlockTimeVerdict:
        w = dict(data["worst"])
        for key in ("composition",):
            w[key] = tuple(tuple(x) for x in w[key])
        for key in ("binding", "unsized", "left_out"):
            w[key] = tuple(w.get(key) or ())
        time_range = data.get("time_range_ns")
        return cls(**{**data, "worst": WorstBlock(**w),
                      "time_range_ns": tuple(time_range) if time_range else None})


@dataclass(frozen=True)
class CoverageResult:
    """One suite of the profile on one CPU and backend: estimate against constant."""

    cpu: int
    suite: str
    backend: str
    operation: str
    statistic: Statistic  # what suite_time_ns and unit_time_ns are
    suite_time_ns: float
    unit_time_ns: float
    vu_estimate: int
    vu_constant: int
    # "covered" / "not_covered": the whole 95 % interval on one side of the constant (or
    # no interval); "unsure": it straddles the constant; "no_estimate": too few quiet
    # data (the host was contended), no figure to judge; "comparison": a verifier no node
    # runs alone, no verdict at all. Words for each: :data:`WORDS`, by :attr:`state`.
    decision: Decision
    covered: bool | None  # True / False as decided; None otherwise
    margin: int | None  # constant - estimate (negative: over it); None: no figure judged
    capped: bool | None
    cap_factor: float | None
    worst_block_signatures: int
    worst_block_ns: float
    estimate: SuiteEstimate
    basis: Basis = "node"  # see qprof.consensus.basis
    basis_label: str = ""
    reference_core: str | None = None
    reference_block_ns: float | None = None  # the same block on the profile's reference core
    block_vs_reference: float | None = None  # worst_block_ns / reference_block_ns
    block_interval_fraction: float | None = None  # worst block / target block interval
    vu_ci_low: int | None = None
    vu_ci_high: int | None = None
    # "high": the interval lies on one side of the constant; "uncertain": it straddles
    # it; None: no interval.
    confidence: str | None = None
    verdict: str = ""
    # The chain's rule (qprof.consensus.policy): whether the ratio binds on this core
    # (``decision`` counts only where it does), the core's time bound, and the decision
    # that counts: check's exit code, alerts, metrics and every view act on it.
    ratio_binds: bool = True
    ratio_binding_why: str = ""
    binding_reference: str | None = None  # the reference core this core matched
    block_time_covered: bool | None = None
    block_time: BlockTimeVerdict | None = None
    policy_decision: Decision = "covered"
    # The worst signature an adversary can bring (SLH-DSA; qprof.consensus.adversarial),
    # beside the median figure above; it decides only if the profile holds the constants
    # to it (``constants_held_to``).
    worst_signature: WorstSignatureVU | None = None
    held_to: str = "median"

    @property
    def state(self) -> State:
        """What the row says first, in :data:`WORDS`: the ratio's decision where it binds;
        elsewhere "not_binding"; the unit suite and comparison figures apart."""
        if self.decision == "comparison":
            return "comparison"
        if self.estimate.is_unit:
            return "unit"
        if not self.ratio_binds:
            return "not_binding"
        return self.decision

    @property
    def headline(self) -> str:
        """The verdict in one short line, its word first (every view's first words)."""
        return headline(self)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CoverageResult:
        """Inverse of :meth:`to_dict` after a JSON round trip (lists, string keys)."""
        e = dict(data["estimate"])
        for key in ("ratio_ci", "vu_ci", "round_medians_ns", "contended_rounds"):
            if e.get(key) is not None:
                e[key] = tuple(e[key])
        if e.get("vu_by_round") is not None:
            e["vu_by_round"] = {int(k): v for k, v in e["vu_by_round"].items()}
        known = {f.name for f in fields(cls)}
        block_time = data.get("block_time")
        return cls(**{**{k: v for k, v in data.items() if k in known},
                      "estimate": SuiteEstimate(**e),
                      "worst_signature": worst_from_dict(data.get("worst_signature")),
                      "block_time": (BlockTimeVerdict.from_dict(block_time)
                                     if block_time is not None else None)})


def contended_text(e: SuiteEstimate) -> str:
    """Why an estimate is no estimate, in a few words: the contended share, else the
    estimator's reason."""
    if e.contended_share is not None:
        return f"the host was contended {100 * e.contended_share:.0f} % of the time"
    return e.statistic_why


def _figure(r: CoverageResult) -> str:
    """The figure judged, with its 95 % interval: the median's estimate, or the worst
    signature's where the profile holds its constants to it."""
    w = r.worst_signature
    if w is not None and r.held_to == "worst_signature" and not r.estimate.is_unit:
        return f"worst signature {w.vu} (95 % CI {w.vu_ci[0]}-{w.vu_ci[1]})"
    ci = (f" (95 % CI {r.vu_ci_low}-{r.vu_ci_high})"
          if r.vu_ci_low is not None and r.vu_ci_high is not None else "")
    return f"{r.vu_estimate}{ci}"


def headline(r: CoverageResult) -> str:
    """One short line: the word (:data:`WORDS`) first, then the figure against the
    constant; no figure where there is no reliable estimate."""
    state, c = r.state, r.vu_constant
    word = WORDS[state]
    if state == "unit":
        return f"{r.vu_estimate}: {word} ({c} by definition)"
    if r.decision == "no_estimate":
        if state == "not_binding":  # a short line: the reason in full is the CPU's
            share = r.estimate.contended_share
            why = f" (contended {100 * share:.0f} %)" if share is not None else ""
            return f"{word}; {WORDS['no_estimate']}{why}"
        return f"{WORDS['no_estimate']}: {contended_text(r.estimate)}"
    if state == "unsure":
        return f"{word}: {_figure(r)} straddles the constant {c}"
    return f"{word}: {_figure(r)}, constant {c}"
