"""The report's section on the adversary inside the constants (qprof.consensus.headroom):
per measured CPU and SLH-DSA suite, the constant each headroom would need (the 95 % upper
bound at the median, the worst valid (ground) and the crafted invalid signature), and the
cost to reject the costliest invalid block the limits allow, on the reference cores and
each CPU, against the block interval. The factors are the ones the run recorded (its
node's last ``qprof adversary`` runs), else this machine's, labelled."""

from __future__ import annotations

from qprof.consensus import Profile
from qprof.consensus.adversarial import AdversaryFactor, load_factors, worst_signature_vu
from qprof.consensus.headroom import CRAFTED, factors_of_records, invalid_block
from qprof.measure.markdown import md_table, md_text
from qprof.measure.units import fmt_ns
from qprof.report.columns import Column, backends_of, unit_of
from qprof.report.figures import column_estimates, column_verdicts


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
