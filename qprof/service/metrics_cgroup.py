"""Prometheus: the daemon's cgroup CPU quota and how often it stopped the newest run
(qprof.hw.cgroup; a `Throttled` record per run). Nothing without a quota."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily

from qprof.measure.records import Throttled


def cgroup_metrics(last: Throttled | None) -> Iterator[GaugeMetricFamily]:
    if last is None:
        return
    quota = GaugeMetricFamily("qprof_cgroup_cpu_quota",
                              "The CPU quota of the daemon's cgroup, in CPUs (quota / "
                              "period), as its newest run read it", labels=["cgroup"])
    quota.add_metric([last.cgroup], last.quota_cpus)
    yield quota
    throttled = GaugeMetricFamily("qprof_cpu_throttled_periods",
                                  "Periods in which the cgroup's CPU quota stopped the "
                                  "newest run while it measured (its rounds are judged "
                                  "as capped)", labels=["cgroup"])
    throttled.add_metric([last.cgroup], last.throttled_periods)
    yield throttled
    seconds = GaugeMetricFamily("qprof_cpu_throttled_seconds",
                                "Time the cgroup was stopped during the newest run",
                                labels=["cgroup"])
    seconds.add_metric([last.cgroup], last.throttled_us / 1e6)
    yield seconds
