"""The chain's own rule: where the ratio binds, and the block-time bound everywhere.

The constants follow the profile's slowest reference core, so each suite on each core
gets two verdicts, decided here and nowhere else: the ratio coverage, binding only where
``ratio_binds`` says, and the time bound (this core's worst-case block against the same
block on the slowest reference core). :func:`apply_policy` puts both on the results;
``policy_decision`` is what every view acts on. The seed's words: docs/ESTIMATOR.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qprof.consensus.profiles import Profile, ReferenceCore
from qprof.consensus.verdict_types import BlockTimeVerdict, CoverageResult, Decision
from qprof.consensus.worst_block import BlockLimits, WorstBlock, worst_block
from qprof.hw.topology import Topology
from qprof.measure.records import Meta
from qprof.measure.units import fmt_ns

UNSURE_TIME_ADVICE = ("to decide, measure longer or on a quieter host (nothing else "
                      "running on that core)")
# The not-binding rows' first words (qprof.consensus.verdict_types.WORDS["not_binding"]).
NOT_BINDING = "not binding here: the constants follow the slowest reference core"
# The ratio against the constant on a core where it does not bind: no covered/NOT covered.
_RATIO_SIDE = {"covered": "within", "not_covered": "above", "unsure": "straddling"}


@dataclass(frozen=True)
class CoreDesign:
    """What a CPU is, as far as matching it with a profile's reference cores goes."""

    cpu: int
    uarch: str | None = None  # core design, e.g. "Cortex-A55", "Zen 3, VM-reported"
    implementer: str | None = None  # ARM MIDR implementer, "0x51"
    part: str | None = None  # ARM MIDR part, "0x805"
    part_name: str | None = None  # "Kryo 4XX Silver"; x86: the model name
    # The node's cgroup CPU quota in CPUs (qprof.hw.cgroup; None: none): under one CPU,
    # its worst-case block takes 1/quota as long (it runs that share of each period).
    cpu_quota: float | None = None

    @property
    def design(self) -> str | None:
        """The design without qprof's qualifiers ("Zen 3, VM-reported" -> "Zen 3")."""
        return self.uarch.split(",")[0].strip() if self.uarch else None

    @property
    def known(self) -> bool:
        return bool(self.uarch or self.part)

    def label(self) -> str:
        return self.part_name or self.uarch or (f"part {self.part}" if self.part else "?")

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> CoreDesign:
        """From a topology row (``qprof topology --json``, a run's ``Meta.cpus``)."""
        def text(key: str) -> str | None:
            value = row.get(key)
            return value if isinstance(value, str) and value else None

        cpu = row.get("cpu")
        return cls(cpu=cpu if isinstance(cpu, int) else -1, uarch=text("uarch"),
                   implementer=text("implementer"), part=text("part"),
                   part_name=text("part_name"))


def cores_from_rows(rows: Iterable[Mapping[str, Any]]) -> dict[int, CoreDesign]:
    cores = (CoreDesign.from_row(r) for r in rows)
    return {c.cpu: c for c in cores if c.cpu >= 0}


def cores_from_records(records: Iterable[object]) -> dict[int, CoreDesign]:
    """What each measured CPU is, from the runs' Meta records (a run records the topology
    rows of the CPUs it measured), newest run last."""

    cores: dict[int, CoreDesign] = {}
    for r in records:
        if isinstance(r, Meta):
            cores.update(cores_from_rows(r.cpus))
    return cores


def with_quota(cores: Mapping[int, CoreDesign], quota: float | None
               ) -> dict[int, CoreDesign]:
    """``cores`` on a node whose cgroup allows ``quota`` CPUs (None: no quota)."""
    return {c: dataclasses.replace(d, cpu_quota=quota) for c, d in cores.items()}


def cores_from_topology(topology: Topology) -> dict[int, CoreDesign]:
    return {c.cpu: CoreDesign(cpu=c.cpu, uarch=c.uarch, implementer=c.implementer,
                              part=c.part, part_name=c.part_name) for c in topology.cpus}


def _hex(value: str | None) -> int | None:
    try:
        return int(value, 16) if value else None
    except ValueError:
        return None


def matching_reference(profile: Profile, core: CoreDesign | None) -> tuple[ReferenceCore,
                                                                          str] | None:
    """The reference core this core is one of, and how it matched (part, or design)."""
    if core is None:
        return None
    for ref in profile.reference_cores:
        part = (_hex(ref.implementer), _hex(ref.part))
        if (ref.part and None not in part
                and (_hex(core.implementer), _hex(core.part)) == part):
            return ref, f"part {ref.implementer}/{ref.part}"
    for ref in profile.reference_cores:
        if ref.uarch and core.design and core.design.lower() == ref.uarch.lower():
            return ref, f"design {ref.uarch}"
    return None


@dataclass(frozen=True)
class RatioBinding:
    binds: bool
    reference: str | None  # the reference core matched, if any
    why: str
    detail: str = ""  # the why without its "binds here" / "not binding here" head


def ratio_binding(profile: Profile, core: CoreDesign | None) -> RatioBinding:
    """Whether the ratio coverage binds on ``core``, and why (words for every view)."""
    match = matching_reference(profile, core)
    if match is not None:
        ref, how = match
        return RatioBinding(True, ref.name, f"binds here: a reference core ({ref.name}, "
                            f"same {how})")
    if profile.ratio_binds == "all":
        return RatioBinding(True, None, f"binds here: {profile.name} holds every core to "
                            "the ratio (ratio_binds = \"all\")")
    if core is None or not core.known:
        return RatioBinding(True, None, "binds here: the core's design is unknown, so it "
                            "is held to the ratio as a reference core would be")
    refs = ", ".join(r.name for r in profile.reference_cores)
    design = f" ({core.uarch})" if core.uarch and core.uarch != core.label() else ""
    detail = (f"{core.label()}{design} is not one of {profile.name}'s reference cores "
              f"({refs})")
    return RatioBinding(False, None, f"not binding here: {detail}; the constants follow "
                        "the slowest reference core", detail)


def _ms(ns: float) -> str:
    return fmt_ns(ns)


def _round_range(worst: WorstBlock, rounds_ns: Mapping[str, Sequence[float]] | None
                 ) -> tuple[float, float]:
    """The block's time over the estimate and every round both measured: each round's
    block from that round's medians (a slow phase of the host moves whole rounds)."""
    times = [worst.time_ns]
    if rounds_ns and worst.composition and all(s in rounds_ns for s, _ in worst.composition):
        n = min(len(rounds_ns[s]) for s, _ in worst.composition)
        times += [sum(k * float(rounds_ns[s][i]) for s, k in worst.composition)
                  for i in range(n)]
    return min(times), max(times)


def held_factors(profile: Profile, results: Iterable[CoverageResult]) -> dict[str, float]:
    """suite -> the factor a block's signatures cost over the median one's: for a profile
    held to the worst signature, its worst valid signature's (``qprof adversary``: ground,
    an attacker's block); 1 (nothing) for a profile held to the median."""
    if profile.constants_held_to != "worst_signature":
        return {}
    return {r.suite: r.worst_signature.factor.factor for r in results
            if r.worst_signature is not None and r.worst_signature.kind != "crafted_invalid"}


def block_time_verdict(profile: Profile, times_ns: Mapping[str, float],
                       rounds_ns: Mapping[str, Sequence[float]] | None = None,
                       factors: Mapping[str, float] | None = None,
                       quota: float | None = None) -> BlockTimeVerdict:
    """This core's worst-case block against the same block on the slowest reference core
    and the share of the block interval the profile allows. ``rounds_ns``: each suite's
    round medians; the block's time over them is the range the bound is judged on (it
    holds over all of it, fails over all of it, or the verdict is unsure). ``factors``:
    each suite's signatures priced at that many times the median one (:func:`held_factors`:
    the attacker's block), here and on the reference cores alike. ``quota``: the node's
    cgroup CPU quota (CPUs): under one, this core's block takes 1/quota as long."""
    factors = {s: f for s, f in (factors or {}).items() if f != 1.0}
    slow = 1.0 / quota if quota is not None and 0 < quota < 1 else 1.0
    if factors or slow != 1.0:
        times_ns = {s: t * factors.get(s, 1.0) * slow for s, t in times_ns.items()}
        rounds_ns = {s: [t * factors.get(s, 1.0) * slow for t in ts]
                     for s, ts in (rounds_ns or {}).items()}
    worst = worst_block(BlockLimits.of(profile), times_ns)
    low_ns, high_ns = _round_range(worst, rounds_ns)
    bound = profile.block_time
    refs = [(r.name, t) for r in profile.reference_cores
            if (t := worst.time_on({s: m * factors.get(s, 1.0)
                                    for s, m in r.verify_median_ns.items()})) is not None]
    ref_name, ref_ns = max(refs, key=lambda x: x[1]) if refs else (None, None)
    interval_ns = (profile.target_block_interval_s * 1e9
                   if profile.target_block_interval_s else None)
    fraction = worst.time_ns / interval_ns if interval_ns else None
    factor = bound.max_vs_reference if bound is not None else None
    max_fraction = bound.max_interval_fraction if bound is not None else None
    vs = worst.time_ns / ref_ns if ref_ns else None
    priced = (" at the worst valid signatures (" + ", ".join(
        f"{s} x{f:.3f}" for s, f in sorted(factors.items())) + ")" if factors else "")
    if slow != 1.0:
        priced += f" under the node's CPU quota of {quota:.2f} CPU (x{slow:.2f})"
    block = (f"worst-case block {worst.text()}{priced} ({worst.binding_text()}): "
             f"{_ms(worst.time_ns)}")
    there = (f" here, {_ms(ref_ns)} on the reference core {ref_name}" if ref_ns is not None
             else " here")
    # Each check: the largest time it allows, and its words.
    checks: list[tuple[float, str]] = []
    if factor is not None and ref_ns is not None and vs is not None:
        limit = "" if factor == 1 else f" (bound {factor:g}x)"
        checks.append((factor * ref_ns, f"{vs:.2f}x the reference{limit}"))
    if max_fraction is not None and fraction is not None and interval_ns:
        checks.append((max_fraction * interval_ns, f"{100 * fraction:.3g} % of the "
                       f"{profile.target_block_interval_s:g} s interval (bound "
                       f"{100 * max_fraction:g} %)"))
    missing = [s for s in worst.left_out]
    note = f"; not measured here: {', '.join(missing)}" if missing else ""
    if bound is None:
        return BlockTimeVerdict(None, worst, worst.time_ns, ref_name, ref_ns, None, vs,
                                fraction, None,
                                f"{block}{there}: {profile.name} states no time bound{note}")
    if not checks or (factor is not None and factor != 0 and ref_ns is None):
        why = (f"{block}{there}: no time verdict: the reference cores have no verify "
               f"median for {', '.join(s for s, _ in worst.composition)}{note}")
        return BlockTimeVerdict(None, worst, worst.time_ns, ref_name, ref_ns, factor, vs,
                                fraction, max_fraction, why)
    allowed = min(limit for limit, _ in checks)
    spread = (f" (rounds {_ms(low_ns)}-{_ms(high_ns)})"
              if high_ns > low_ns * (1 + 1e-9) else "")
    if high_ns <= allowed:
        decision, covered, word = "covered", True, "within the time bound"
    elif low_ns > allowed:
        decision, covered, word = "not_covered", False, "EXCEEDS the time bound"
    else:
        decision, covered = "unsure", None
        word = (f"unsure: the block's time over the rounds straddles the bound "
                f"({_ms(allowed)}); {UNSURE_TIME_ADVICE}")
    why = f"{block}{spread}{there}: {'; '.join(text for _, text in checks)}: {word}{note}"
    return BlockTimeVerdict(covered, worst, worst.time_ns, ref_name, ref_ns, factor, vs,
                            fraction, max_fraction, why, decision, (low_ns, high_ns))


def policy_decision(ratio_decision: Decision, binds: bool,
                    block_time_covered: bool | None, block_time_unsure: bool = False
                    ) -> Decision:
    """What counts for a suite on a core: its ratio where the ratio binds, and the time
    bound everywhere (a comparison figure counts for nothing)."""
    if ratio_decision == "comparison":
        return "comparison"
    if block_time_covered is False:
        return "not_covered"
    ratio = ratio_decision if binds else "covered"
    if ratio == "covered" and block_time_unsure:
        return "unsure"
    return ratio


def _not_binding_text(r: CoverageResult, binding: RatioBinding) -> str:
    """"not binding here" first, then the ratio against the constant (or why there is no
    reliable estimate), never "covered"/"NOT covered"/"unsure"."""
    if r.estimate.is_unit:
        return r.verdict
    if r.decision == "no_estimate":
        return f"{NOT_BINDING} ({binding.detail}); {r.verdict}"
    low = f" (95 % CI {r.vu_ci_low}-{r.vu_ci_high})" if r.vu_ci_low is not None else ""
    return (f"{NOT_BINDING} ({binding.detail}): estimate {r.vu_estimate}{low}, constant "
            f"{r.vu_constant}: the ratio is {_RATIO_SIDE[r.decision]} the constant")


def apply_policy(profile: Profile, results: list[CoverageResult],
                 cores: Mapping[int, CoreDesign] | None = None) -> list[CoverageResult]:
    """Both verdicts on every result: where its ratio binds, and its core's time bound
    (one worst-case block per CPU, backend and operation, from that group's times)."""
    groups: dict[tuple[int, str, str], dict[str, float]] = {}
    rounds: dict[tuple[int, str, str], dict[str, Sequence[float]]] = {}
    for r in results:
        key = (r.cpu, r.backend, r.operation)
        groups.setdefault(key, {})[r.suite] = r.suite_time_ns
        rounds.setdefault(key, {})[r.suite] = r.estimate.round_medians_ns
    held = held_factors(profile, results)
    quota = {c: d.cpu_quota for c, d in (cores or {}).items()}
    times = {key: block_time_verdict(profile, t, rounds[key], held, quota.get(key[0]))
             for key, t in groups.items()}
    out = []
    for r in results:
        binding = ratio_binding(profile, (cores or {}).get(r.cpu))
        bt = times[(r.cpu, r.backend, r.operation)]
        judged = r.basis != "comparison"
        covered_in_time = bt.covered if judged else None
        verdict = r.verdict if binding.binds or not judged else _not_binding_text(r, binding)
        out.append(dataclasses.replace(
            r, ratio_binds=binding.binds, ratio_binding_why=binding.why,
            binding_reference=binding.reference, block_time=bt,
            block_time_covered=covered_in_time, verdict=verdict,
            policy_decision=policy_decision(r.decision, binding.binds, covered_in_time,
                                            judged and bt.decision == "unsure")))
    return out


def run_gaps(profile: Profile, results: Sequence[CoverageResult], status: str,
             reason: str | None = None) -> list[str]:
    """What a run lacks for a passing verdict: the profile's priced suites it did not
    measure, per CPU and backend judged ("not measured: ML-DSA-87, SLH-DSA-SHAKE-128s on
    CPU 0"), and a run not finished (cut short, a CPU aborted). A verdict on the suites
    measured says nothing of the others: a run holding the unit suite alone "passed"."""
    measured: dict[tuple[int, str], set[str]] = {}
    for r in results:
        if r.basis != "comparison":
            measured.setdefault((r.cpu, r.backend), set()).add(r.suite)
    several = len({backend for _, backend in measured}) > 1
    gaps = [f"not measured: {', '.join(missing)} on CPU {cpu}"
            + (f" ({backend})" if several else "")
            for (cpu, backend), suites in sorted(measured.items())
            if (missing := [s for s in profile.verify_units if s not in suites])]
    if measured and status != "finished":
        gaps.append(f"the run is {status}" + (f" ({reason})" if reason else ""))
    return gaps


def gated_decision(decision: Decision, gaps: Sequence[str]) -> Decision:
    """A run with gaps (:func:`run_gaps`) never passes: "covered" becomes "unsure" (exit
    3: no verdict either way, measure what is missing); a binding verdict surely broken
    on what was measured still decides."""
    return "unsure" if gaps and decision == "covered" else decision
