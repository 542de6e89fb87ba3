"""Prometheus: the node's last `qprof adversary` factors (as its newest run recorded them)
and the cost to reject the costliest invalid block the limits allow
(qprof.consensus.headroom), on the profile's reference cores and on each CPU measured.
Shown, never binding."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily

from qprof.consensus import Profile
from qprof.consensus.headroom import invalid_blocks
from qprof.consensus.verdict_types import CoverageResult
from qprof.measure.records import AdversaryFactors


def headroom_metrics(factors: Sequence[AdversaryFactors], cov: list[CoverageResult],
                     profile: Profile | None) -> Iterator[GaugeMetricFamily]:
    factor = GaugeMetricFamily("qprof_adversary_factor",
                               "The costliest signature an adversary brings over the median "
                               "random one (qprof adversary: ground valid, crafted invalid), "
                               "as this node's newest run recorded it; what qprof calibrate "
                               "--headroom multiplies", labels=["suite", "kind"])
    high = GaugeMetricFamily("qprof_adversary_factor_high",
                             "Top of the 95 % interval of qprof_adversary_factor",
                             labels=["suite", "kind"])
    for f in factors:
        factor.add_metric([f.suite, f.kind], f.factor)
        high.add_metric([f.suite, f.kind], f.high)
    seconds = GaugeMetricFamily("qprof_invalid_block_seconds",
                                "Time to reject the costliest invalid block the profile's "
                                "limits allow (crafted invalid signatures; not binding)",
                                labels=["where", "profile"])
    share = GaugeMetricFamily("qprof_invalid_block_interval_fraction",
                              "qprof_invalid_block_seconds over the target block interval",
                              labels=["where", "profile"])
    if profile is not None:
        for b in invalid_blocks(profile, cov):
            seconds.add_metric([b.where, profile.name], b.time_ns / 1e9)
            if b.interval_fraction is not None:
                share.add_metric([b.where, profile.name], b.interval_fraction)
    yield from (factor, high, seconds, share)
