"""The report's section on the adversary inside the constants (qprof.consensus.headroom):
per measured CPU and SLH-DSA suite, the constant each headroom would need (the 95 % upper
bound at the median, the worst valid (ground) and the crafted invalid signature), and the
cost to reject the costliest invalid block the limits allow, on the reference cores and
each CPU, against the block interval. The factors are the ones the run recorded (its
node's last ``qprof adversary`` runs), else this machine's, labelled. Also the worst
signature beside the median in the verdict's words, one line per SLH-DSA suite, as
check, the monitor and the report say it (:func:`worst_lines`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from qprof.consensus import Profile
from qprof.consensus.adversarial import (
    KIND_WORDS,
    AdversaryFactor,
    WorstSignatureVU,
    load_factors,
    reference_worst,
    worst_signature_vu,
)
from qprof.consensus.headroom import CRAFTED, factors_of_records, invalid_block
from qprof.consensus.verdict_types import WORDS, CoverageResult
from qprof.measure.markdown import md_table, md_text
from qprof.measure.units import fmt_ns
from qprof.report.columns import Column, backends_of, unit_of
from qprof.report.figures import column_estimates, column_verdicts


def worst_word(ci: tuple[int, int], constant: int, binds: bool) -> str:
    """The worst signature against the constant in the verdict's words: within, OVER or
    straddling where the ratio binds; "not binding here" where it does not (the
    constants follow the reference cores: an over there is no failure)."""
    if not binds:
        return WORDS["not_binding"]
    side = "within" if ci[1] <= constant else "OVER" if ci[0] > constant else "straddling"
    return f"{side} the constant {constant}"


def held_words(held_to: str) -> str:
    """Whether the worst signature decides (the profile's ``constants_held_to``)."""
    return ("the constants are held to it" if held_to == "worst_signature"
            else "shown, the constants are held to the median")


def _figure(where: str, w: WorstSignatureVU, word: str, kind: str | None) -> str:
    what = f" {KIND_WORDS.get(w.kind, w.kind)}" if w.kind != kind else ""
    return (f"{where}{what} {w.vu} VU ({w.vu_ci[0]}-{w.vu_ci[1]}) vs median "
            f"{w.median_vu}: {word}")


def worst_lines(profile: Profile, results: Sequence[CoverageResult],
                label: Callable[[int], str] = lambda cpu: f"CPU {cpu}") -> list[str]:
    """One line per SLH-DSA suite: the worst signature beside the median on each measured
    CPU (``label`` names it) and projected on the profile's reference cores, in the
    verdict's words (:func:`worst_word`). Empty where ``qprof adversary`` measured none."""
    refs = reference_worst(profile)
    lines = []
    for suite in (s for s in profile.suites if s.startswith("SLH-DSA")):
        constant = profile.verify_units.get(suite)
        if constant is None:
            continue
        here = [(label(r.cpu), r.worst_signature, r.ratio_binds) for r in results
                if r.suite == suite and r.worst_signature is not None
                and r.decision not in ("comparison", "no_estimate")]
        best: dict[str, WorstSignatureVU] = {}
        for core, w in refs:
            if w.suite == suite and (core not in best or w.vu > best[core].vu):
                best[core] = w
        figures = [*here, *((f"{core} (reference, projected)", w, True)
                            for core, w in best.items())]
        if not figures:
            continue
        first = figures[0][1]
        parts = [_figure(where, w, worst_word(w.vu_ci, constant, binds), first.kind)
                 for where, w, binds in figures]
        lines.append(f"{suite} worst signature ({KIND_WORDS.get(first.kind, first.kind)} "
                     f"x{first.factor.factor:.3f}, measured on {first.factor.cpu_model}): "
                     + "; ".join(parts) + f"; {held_words(profile.constants_held_to)}")
    return lines


def _factors(cols: list[Column], profile: Profile) -> tuple[dict[str, dict[str, AdversaryFactor]],
                                                           str]:
    recorded: dict[str, dict[str, AdversaryFactor]] = {}
    for run in {id(c.run): c.run for c in cols}.values():  # once per run, not per column
        for suite, kinds in factors_of_records(run.records).items():
            recorded.setdefault(suite, {}).update(kinds)
    if recorded:
        return recorded, "recorded in the run"
    here = {s: load_factors(s) for s in profile.suites if s.startswith("SLH-DSA")}
    return {s: k for s, k in here.items() if k}, "this machine's last qprof adversary runs"


def headroom_section(cols: list[Column], profile: Profile | None) -> list[str]:
    if profile is None or profile.verifier not in backends_of(cols, "verify"):
        return []
    factors, source = _factors(cols, profile)
    if not factors:
        return []
    unit = unit_of(profile, cols)
    verdicts = [v for v in column_verdicts(
        profile, column_estimates(cols, profile, unit, profile.verifier, "verify"), cols)
        if v.basis == "node"]
    rows = []
    for v in verdicts:
        kinds = factors.get(v.suite, {})
        if not kinds or v.estimate.ratio is None:
            continue
        cells = []
        for kind in ("ground", CRAFTED):
            f = kinds.get(kind)
            w = (worst_signature_vu(v.suite, profile.unit_vu, v.estimate.ratio,
                                    v.estimate.ratio_ci, f) if f is not None else None)
            cells.append(f"{w.vu_ci[1]} (x{f.factor:.3f})" if w and f else "-")
        rows.append([md_text(cols[v.cpu].label), md_text(v.suite), str(v.vu_constant),
                     str(v.vu_ci_high if v.vu_ci_high is not None else v.vu_estimate),
                     *cells])
    lines = ["## The adversary inside the constants", "",
             f"Constants that would cover each headroom where the ratio binds (`qprof "
             f"calibrate --headroom`): the 95 % upper bound of the estimate, at the median "
             f"signature, at the worst valid (ground) one and at the crafted invalid one; "
             f"factors {md_text(source)}. {md_text(profile.name)} holds its constants to "
             f"the {md_text(profile.constants_held_to.replace('_', ' '))}.", ""]
    if rows:
        lines += md_table(["CPU", "Suite", "Constant", "Median (95 % top)",
                           "Ground (95 % top)", "Crafted (95 % top)"], rows) + [""]
    crafted = {s: k[CRAFTED] for s, k in factors.items() if CRAFTED in k}
    blocks = [invalid_block(profile, core.verify_median_ns, crafted,
                            f"{core.name} (reference core)", projected=True)
              for core in profile.reference_cores]
    by_cpu: dict[int, dict[str, float]] = {}
    for v in verdicts:
        by_cpu.setdefault(v.cpu, {})[v.suite] = v.suite_time_ns
    blocks += [invalid_block(profile, times, crafted, cols[i].label)
               for i, times in sorted(by_cpu.items())]
    shown = [b for b in blocks if b is not None]
    if shown:
        lines += ["The costliest invalid block the limits allow (crafted invalid signatures, "
                  "each suite at its median times its crafted factor), what a node pays to "
                  "find it invalid; shown, not binding:", ""]
        lines += md_table(["Where", "Block", "Limit reached", "Time to reject",
                           "Share of the block interval"], [
            [md_text(b.where), md_text(b.block.text()), md_text(b.block.binding_text()),
             fmt_ns(b.time_ns), f"{100 * b.interval_fraction:.2g} %"
             if b.interval_fraction is not None else "-"] for b in shown]) + [""]
    return lines
