"""The verdict over time as Prometheus families: each suite's current segment (the
estimate the verdict is on, its interval, its run count and gaps), the unrounded ratio of
the newest run and of the segment (in ratio x unit VU, so a fleet's trend is not held to
whole VU: one VU of ML-DSA-87 is 44 bp), the confirmed changes, the detector's pending
alarm. ``qprof trend --prometheus`` reads these names: keep them stable."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from qprof.consensus import Profile
from qprof.consensus.estimate.estimator import SuiteEstimate
from qprof.consensus.profiles import profile_unit
from qprof.consensus.trend.verdict import segment_vu
from qprof.service.trend import TrendSummary

SEGMENT = ["cpu", "suite", "backend"]
RATIO = ["cpu", "suite", "backend", "scope"]


def trend_metrics(trend: TrendSummary, run_estimates: list[SuiteEstimate],
                  profile: Profile | None) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
    unit_vu = profile_unit(profile).vu
    seg_est = GaugeMetricFamily(
        "qprof_vu_segment_estimate",
        "Verify Units of the current segment: every comparable run of this CPU and backend "
        "since the last change, combined (what qprof_vu_estimate and the verdict hold)",
        labels=SEGMENT)
    seg_low = GaugeMetricFamily("qprof_vu_segment_ci_low",
                                "Bottom of the segment estimate's 95 % interval (VU)",
                                labels=SEGMENT)
    seg_high = GaugeMetricFamily("qprof_vu_segment_ci_high",
                                 "Top of the segment estimate's 95 % interval (VU)",
                                 labels=SEGMENT)
    seg_runs = GaugeMetricFamily("qprof_vu_segment_runs",
                                 "Decided runs the segment estimate combines (0: its runs "
                                 "so far were all undecided, no estimate)", labels=SEGMENT)
    seg_gaps = GaugeMetricFamily("qprof_vu_segment_gaps",
                                 "Undecided runs in the segment (too contended for a quiet "
                                 "ratio): counted, never combined", labels=SEGMENT)
    ratio = GaugeMetricFamily(
        "qprof_vu_ratio",
        "The cost ratio to the unit suite x the unit's VU, unrounded: scope run (the "
        "newest run alone, when decided) or segment (the current segment)", labels=RATIO)
    ratio_low = GaugeMetricFamily("qprof_vu_ratio_ci_low",
                                  "Bottom of qprof_vu_ratio's 95 % interval", labels=RATIO)
    ratio_high = GaugeMetricFamily("qprof_vu_ratio_ci_high",
                                   "Top of qprof_vu_ratio's 95 % interval", labels=RATIO)
    for (cpu, backend, _op, suite), seg in sorted(trend.segments.items()):
        label = [str(cpu), suite, backend]
        vu, (lo, hi) = segment_vu(seg, unit_vu)
        seg_est.add_metric(label, float(vu))
        seg_low.add_metric(label, float(lo))
        seg_high.add_metric(label, float(hi))
        seg_runs.add_metric(label, float(seg.runs))
        seg_gaps.add_metric(label, float(seg.gaps))
        scoped = [*label, "segment"]
        ratio.add_metric(scoped, unit_vu * seg.ratio)
        ratio_low.add_metric(scoped, unit_vu * seg.ratio_ci[0])
        ratio_high.add_metric(scoped, unit_vu * seg.ratio_ci[1])
    for (cpu, backend, _op, suite), gaps in sorted(trend.undecided.items()):
        seg_runs.add_metric([str(cpu), suite, backend], 0.0)  # no estimate yet
        seg_gaps.add_metric([str(cpu), suite, backend], float(gaps))
    for e in run_estimates:
        if e.is_unit or e.undecided or e.ratio is None or e.ratio_ci is None:
            continue  # an undecided run is a gap: no figure
        scoped = [str(e.cpu), e.suite, e.backend, "run"]
        ratio.add_metric(scoped, unit_vu * e.ratio)
        ratio_low.add_metric(scoped, unit_vu * e.ratio_ci[0])
        ratio_high.add_metric(scoped, unit_vu * e.ratio_ci[1])
    changes = CounterMetricFamily(
        "qprof_ratio_changes",
        "Confirmed changes of a suite's ratio (a known change point that moved it beyond "
        "its interval, or one the detector found and the runs confirmed), seen by this "
        "daemon since it started", labels=["cpu", "suite"])
    # 0 for every judged (cpu, suite) until its first change, so increase() sees that one.
    counts = {(cpu, suite): 0 for cpu, _b, _op, suite in trend.segments} | trend.changes
    for (cpu, suite), n in sorted(counts.items()):
        changes.add_metric([str(cpu), suite], float(n))
    alarm = GaugeMetricFamily(
        "qprof_ratio_alarm",
        "1 while the change detector's alarm on a suite is pending (neither confirmed nor "
        "dismissed yet: the daemon measures again at once)",
        labels=["cpu", "suite", "backend", "direction"])
    for (cpu, backend, _op, suite), a in sorted(trend.alarms.items()):
        alarm.add_metric([str(cpu), suite, backend, a.direction], 1.0)
    yield from (seg_est, seg_low, seg_high, seg_runs, seg_gaps, ratio, ratio_low,
                ratio_high, changes, alarm)
