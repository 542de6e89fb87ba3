"""Prometheus: the worst-signature figure beside the median VU (consensus.adversarial)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily

from qprof.consensus import Profile
from qprof.consensus.adversarial import reference_worst
from qprof.consensus.verdict_types import CoverageResult


def worst_signature_metrics(cov: list[CoverageResult], profile: Profile | None
                            ) -> Iterator[GaugeMetricFamily]:
    labels = ["cpu", "suite", "backend", "kind"]
    vu = GaugeMetricFamily("qprof_vu_worst_signature",
                           "Verify Units at the costliest signature an adversary can bring "
                           "(qprof adversary: ground valid or crafted invalid SLH-DSA), "
                           "beside qprof_vu_estimate (the median signature)", labels=labels)
    high = GaugeMetricFamily("qprof_vu_worst_signature_ci_high",
                             "Top of the 95 % interval of qprof_vu_worst_signature",
                             labels=labels)
    ref = GaugeMetricFamily("qprof_vu_worst_signature_reference",
                            "The worst-signature VU projected on the profile's reference "
                            "core (its medians x the factor measured here)",
                            labels=["core", "suite", "kind", "profile"])
    held = GaugeMetricFamily("qprof_constants_held_to_info",
                             "1 for the figure the profile holds its constants to: median "
                             "or worst_signature", labels=["profile", "held_to"])
    for c in cov:
        w = c.worst_signature
        # No reliable estimate: no figure to scale (as check, the monitor and the report).
        if w is not None and c.decision != "no_estimate":
            key = [str(c.cpu), c.suite, c.backend, w.kind]
            vu.add_metric(key, float(w.vu))
            high.add_metric(key, float(w.vu_ci[1]))
    if profile is not None:
        held.add_metric([profile.name, profile.constants_held_to], 1.0)
        for core, w in reference_worst(profile):
            ref.add_metric([core, w.suite, w.kind, profile.name], float(w.vu))
    yield from (vu, high, ref, held)
