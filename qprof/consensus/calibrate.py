"""Constants proposed from a fleet's runs (`qprof calibrate`).

Each suite's proposal is the smallest constant that covers the top of its estimate's
95 % interval on every CPU where the ratio binds (the unit keeps its constant); the time
bound is then judged again with the proposed constants. With a headroom
(:mod:`qprof.consensus.headroom`) SLH-DSA estimates are first raised to the worst
signature's. Background: docs/ESTIMATOR.md.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qprof.consensus.policy import block_time_verdict
from qprof.consensus.profiles import Profile
from qprof.consensus.verdict_types import BlockTimeVerdict, CoverageResult
from qprof.untrusted import one_line

# No Verify-Unit constant is this large (SLH-DSA-SHAKE-256s: 3600); an estimate beyond it
# comes from times that are no verify times (a unit of 1e-300 ns), not from a node.
MAX_CONSTANT = 10_000_000


@dataclass(frozen=True)
class NodeEstimate:
    """One suite on one CPU of one node, judged by the profile's verifier (basis node)."""

    node: str
    cpu: int
    suite: str
    backend: str
    vu_estimate: int
    vu_high: int  # top of the 95 % interval (the estimate itself when there is none)
    time_ns: float  # the verify time the estimate used
    binds: bool  # whether the ratio binds on this CPU (the profile's policy)
    binding_why: str = ""
    # The ratio to the unit and the top of its 95 % interval (None: only VU known, e.g.
    # from Prometheus): what a headroom multiplies (qprof.consensus.headroom).
    ratio: float | None = None
    ratio_high: float | None = None

    @classmethod
    def from_result(cls, node: str, r: CoverageResult) -> NodeEstimate:
        ci = r.estimate.ratio_ci
        return cls(node=node, cpu=r.cpu, suite=r.suite, backend=r.backend,
                   vu_estimate=r.vu_estimate,
                   vu_high=r.vu_ci_high if r.vu_ci_high is not None else r.vu_estimate,
                   time_ns=r.suite_time_ns, binds=r.ratio_binds,
                   binding_why=r.ratio_binding_why, ratio=r.estimate.ratio,
                   ratio_high=ci[1] if ci is not None else r.estimate.ratio)


def node_estimates(node: str, results: Iterable[CoverageResult]) -> list[NodeEstimate]:
    """The figures a proposal may use: the node's verifier alone (basis "node")."""
    return [NodeEstimate.from_result(node, r) for r in results if r.basis == "node"]


@dataclass(frozen=True)
class SuiteProposal:
    suite: str
    current: int
    proposed: int
    upper_bound: int | None  # the largest 95 % upper bound where the ratio binds
    driven_by: str | None  # "node cpu N": where that bound was measured
    binding_cpus: int  # CPUs where the ratio binds that measured this suite
    other_cpus: int  # CPUs that measured it where the ratio does not bind
    largest_elsewhere: int | None  # the largest upper bound where it does not bind
    note: str
    projected: bool = False  # from the reference medians (no CPU that binds measured it)

    @property
    def change(self) -> int:
        return self.proposed - self.current


@dataclass(frozen=True)
class NodeTimeBound:
    """A node's CPU: its worst-case block under the current and the proposed constants."""

    node: str
    cpu: int
    backend: str
    current: BlockTimeVerdict
    proposed: BlockTimeVerdict


@dataclass(frozen=True)
class Projection:
    """A suite's figure on the profile's slowest reference core, from its recorded
    medians (with an adversary factor measured on the nodes given): the proposal where
    no CPU that binds measured the suite."""

    suite: str
    vu_high: int
    core: str  # the reference core
    why: str  # "projected from qanum's Silver medians with the ground factor ..."


def reference_median_vu(profile: Profile, suite: str) -> tuple[str, float] | None:
    """(core, ratio to the unit) on the profile's slowest reference core for ``suite``,
    from its recorded medians (None: no reference core has both)."""
    found: list[tuple[float, str]] = []
    for ref in profile.reference_cores:
        med = ref.verify_median_ns
        if med.get(suite) and med.get(profile.unit_suite):
            found.append((med[suite] / med[profile.unit_suite], ref.name))
    if not found:
        return None
    ratio, name = max(found)
    return name, ratio


@dataclass(frozen=True)
class Proposal:
    profile: Profile  # the current profile
    proposed_profile: Profile
    suites: tuple[SuiteProposal, ...]
    time_bounds: tuple[NodeTimeBound, ...]
    nodes: tuple[str, ...]

    @property
    def constants(self) -> dict[str, int]:
        return dict(self.proposed_profile.verify_units)


def propose(profile: Profile, estimates: Sequence[NodeEstimate],
            name: str | None = None, projections: Mapping[str, Projection] | None = None
            ) -> Proposal:
    """The smallest constants covering every binding CPU's 95 % upper bound; a suite no
    binding CPU measured takes its ``projections`` figure, else keeps its constant."""
    rows: list[SuiteProposal] = []
    constants = dict(profile.verify_units)
    for suite in profile.suites:
        current = profile.verify_units[suite]
        mine = [e for e in estimates if e.suite == suite]
        binding = [e for e in mine if e.binds]
        elsewhere = [e for e in mine if not e.binds]
        far = max((e.vu_high for e in elsewhere), default=None)
        if suite == profile.unit_suite:
            rows.append(SuiteProposal(suite, current, current, None, None, len(binding),
                                      len(elsewhere), far, "the unit (its constant by "
                                      "definition)"))
            continue
        beside = f"; up to {far} where the ratio does not bind" if far is not None else ""
        projected = (projections or {}).get(suite)
        if not binding and projected is not None:
            constants[suite] = projected.vu_high
            rows.append(SuiteProposal(suite, current, projected.vu_high, projected.vu_high,
                                      f"{projected.core} (reference medians)", 0,
                                      len(elsewhere), far, projected.why + beside, True))
            continue
        if not binding:
            ref = reference_median_vu(profile, suite)
            there = ("" if ref is None else f"; {profile.name}'s {ref[0]} medians give "
                     f"{math.ceil(profile.unit_vu * ref[1] - 1e-9)}")
            rows.append(SuiteProposal(suite, current, current, None, None, 0,
                                      len(elsewhere), far, "kept: no CPU where the ratio "
                                      "binds measured it" + there + beside))
            continue
        top = max(binding, key=lambda e: (e.vu_high, e.node, e.cpu))
        constants[suite] = top.vu_high
        change = top.vu_high - current
        note = (f"covers the 95 % upper bound of the {len(binding)} CPU(s) where the "
                "ratio binds" + ("" if change else " (unchanged)") + beside)
        rows.append(SuiteProposal(suite, current, top.vu_high, top.vu_high,
                                  f"{top.node} cpu {top.cpu}", len(binding), len(elsewhere),
                                  far, note))
    proposed = dataclasses.replace(
        profile, name=name or f"{profile.name}-proposed", verify_units=constants,
        description=(f"{profile.name} constants proposed by qprof calibrate from "
                     f"{len({e.node for e in estimates})} node(s)"))
    bounds = []
    groups: dict[tuple[str, int, str], dict[str, float]] = {}
    for e in estimates:
        groups.setdefault((e.node, e.cpu, e.backend), {})[e.suite] = e.time_ns
    for (node, cpu, backend), times in sorted(groups.items()):
        bounds.append(NodeTimeBound(node, cpu, backend, block_time_verdict(profile, times),
                                    block_time_verdict(proposed, times)))
    return Proposal(profile, proposed, tuple(rows), tuple(bounds),
                    tuple(dict.fromkeys(e.node for e in estimates)))


# -- the proposal as a profile TOML ---------------------------------------------------------

# TOML's basic strings take no control character raw (tab aside, escaped here too); a
# bare key only these. Lone surrogates (an argument in no UTF-8) have no TOML at all.
_TOML_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n",
                 "\f": "\\f", "\r": "\\r"}
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _string(v: str) -> str:
    """``v`` as a TOML basic string that reads back as ``v`` (lone surrogates as U+FFFD)."""
    out = []
    for ch in v:
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif ch < " " or ch == "\x7f":
            out.append(f"\\u{ord(ch):04x}")
        elif "\ud800" <= ch <= "\udfff":
            out.append("\ufffd")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else "nan"
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"no TOML for {v!r}")


def _key(k: str) -> str:
    return k if _BARE_KEY.fullmatch(k) else _string(k)


def _table(lines: list[str], header: str, values: Mapping[str, Any]) -> None:
    lines += ["", header]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in values.items() if v is not None]


def profile_toml(profile: Profile, comment: Sequence[str] = ()) -> str:
    """``profile`` as a TOML file :func:`qprof.consensus.load_profile` reads back equal."""
    # A comment is one line each: a hostname with a newline would start a TOML line.
    lines = [f"# {one_line(c)}" if c else "#" for c in comment]
    top: dict[str, Any] = {
        "name": profile.name, "description": profile.description,
        "unit_suite": profile.unit_suite, "verifier": profile.verifier,
        "suites_in_use": list(profile.suites_in_use),
        "max_block_verify_units": profile.max_block_verify_units,
        "max_block_auth_bytes": profile.max_block_auth_bytes,
        "auth_bytes_per_block": profile.auth_bytes_per_block or None,
        "target_block_interval_s": profile.target_block_interval_s,
        "ratio_binds": profile.ratio_binds,
        "constants_held_to": profile.constants_held_to,
    }
    lines += [f"{k} = {_value(v)}" for k, v in top.items() if v is not None]
    if profile.block_time is not None:
        # max_vs_reference needs reference cores (the loader refuses it without them).
        _table(lines, "[block_time]", {
            "max_vs_reference": (profile.block_time.max_vs_reference
                                 if profile.reference_cores else None),
            "max_interval_fraction": profile.block_time.max_interval_fraction})
    if profile.auth_bytes_per_spend:
        _table(lines, "[auth_bytes_per_spend]", profile.auth_bytes_per_spend)
    _table(lines, "[verify_units]", profile.verify_units)
    for ref in profile.reference_cores:
        _table(lines, "[[reference_cores]]", {
            "name": ref.name, "part_name": ref.part_name, "uarch": ref.uarch,
            "implementer": ref.implementer, "part": ref.part, "max_khz": ref.max_khz,
            "backend": ref.backend, "source": ref.source})
        _table(lines, "[reference_cores.verify_median_ns]", ref.verify_median_ns)
    return "\n".join(lines) + "\n"
