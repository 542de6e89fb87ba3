"""Prometheus metrics: a custom collector over the daemon's current state.

The collector reads a snapshot (``MetricsState``) that the watch loop and the cycles
update; scrapes never touch /sys or the store. The state is seeded from the store at
start-up, so the last stored results are served right after a restart.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from qprof.consensus import CoverageResult, Profile, SuiteMedian, coverage
from qprof.measure.records import Measurement
from qprof.measure.stats import median
from qprof.service.alerts import KINDS
from qprof.service.watch import CpuView

log = logging.getLogger("qprof.daemon")


@dataclass
class SuiteResult:
    """Verify cost of one suite on one CPU with one backend, from its newest run."""

    cpu: int
    suite: str
    backend: str
    median_ns: float  # median of the run's round medians
    run_id: str
    rounds: int
    capped: bool | None
    cap_factor: float | None
    finished_at: float | None


def summarize(measurements: Iterable[Measurement], operation: str = "verify"
              ) -> list[SuiteResult]:
    """Group measurements of one operation by (cpu, suite, backend), newest run each."""
    groups: dict[tuple[int, str, str], list[Measurement]] = {}
    for m in measurements:
        if m.operation == operation:
            groups.setdefault((m.cpu, m.suite, m.backend), []).append(m)
    out = []
    for (cpu, suite, backend), ms in sorted(groups.items()):
        newest_run = max(ms, key=lambda m: m.finished_at or 0.0).run_id
        rows = [m for m in ms if m.run_id == newest_run]
        caps = [m.capped for m in rows if m.capped is not None]
        factors = [m.cap_factor for m in rows if m.cap_factor is not None]
        out.append(SuiteResult(
            cpu=cpu, suite=suite, backend=backend,
            median_ns=median(m.median_ns for m in rows), run_id=newest_run,
            rounds=len(rows), capped=any(caps) if caps else None,
            cap_factor=max(factors) if factors else None,
            finished_at=max((m.finished_at or 0.0) for m in rows) or None,
        ))
    return out


def coverage_of(profile: Profile | None, results: list[SuiteResult]) -> list[CoverageResult]:
    """The profile's verdicts over these results (empty without a profile)."""
    if profile is None:
        return []
    return coverage(profile, [
        SuiteMedian(cpu=r.cpu, backend=r.backend, suite=r.suite, median_ns=r.median_ns,
                    capped=r.capped, cap_factor=r.cap_factor) for r in results])


@dataclass
class MetricsState:
    lock: threading.Lock = field(default_factory=threading.Lock)
    freqs: dict[int, CpuView] = field(default_factory=dict)
    results: list[SuiteResult] = field(default_factory=list)
    profile: Profile | None = None
    coverage: list[CoverageResult] = field(default_factory=list)
    alert_counts: dict[str, int] = field(default_factory=dict)
    last_cycle_ts: float | None = None
    cycles: dict[str, int] = field(default_factory=dict)  # status -> count (this process)
    degraded: dict[str, str] = field(default_factory=dict)  # what -> why

    def set_results(self, results: list[SuiteResult]) -> list[CoverageResult]:
        cov = coverage_of(self.profile, results)
        with self.lock:
            self.results = results
            self.coverage = cov
        return cov


class QprofCollector(Collector):
    def __init__(self, state: MetricsState) -> None:
        self.state = state

    def collect(self) -> Iterable[Any]:
        s = self.state
        with s.lock:
            freqs = dict(s.freqs)
            cov = list(s.coverage)
            results = list(s.results)
            profile = s.profile
            alert_counts = dict(s.alert_counts)
            last_cycle = s.last_cycle_ts
            cycles = dict(s.cycles)
            degraded = dict(s.degraded)

        cur = GaugeMetricFamily("qprof_cpu_frequency_hertz", "Current CPU frequency",
                                labels=["cpu"])
        mx = GaugeMetricFamily("qprof_cpu_max_frequency_hertz",
                               "Highest frequency the CPU may run at now (caps applied)",
                               labels=["cpu"])
        hw = GaugeMetricFamily("qprof_cpu_hardware_max_frequency_hertz",
                               "Highest frequency the CPU can do (cpuinfo_max_freq)",
                               labels=["cpu"])
        capped = GaugeMetricFamily("qprof_cpu_capped",
                                   "1 when the CPU is held below its hardware maximum",
                                   labels=["cpu"])
        for cpu, f in sorted(freqs.items()):
            label = [str(cpu)]
            if f.cur_khz is not None:
                cur.add_metric(label, f.cur_khz * 1000.0)
            if f.max_khz is not None:
                mx.add_metric(label, f.max_khz * 1000.0)
            if f.hw_max_khz is not None:
                hw.add_metric(label, f.hw_max_khz * 1000.0)
            if f.capped is not None:
                capped.add_metric(label, 1.0 if f.capped else 0.0)
        yield from (cur, mx, hw, capped)

        verify = GaugeMetricFamily("qprof_verify_seconds",
                                   "Median verify time of a valid signature (newest run)",
                                   labels=["cpu", "suite", "backend"])
        for r in results:
            verify.add_metric([str(r.cpu), r.suite, r.backend], r.median_ns / 1e9)
        yield verify

        est = GaugeMetricFamily("qprof_vu_estimate",
                                "Verify Units this CPU's times imply: ceil(100 x suite/unit)",
                                labels=["cpu", "suite", "backend"])
        covered = GaugeMetricFamily("qprof_vu_covered",
                                    "1 when the profile's constant covers the estimate "
                                    "(worst backend measured on the CPU)",
                                    labels=["cpu", "suite", "profile"])
        verdicts: dict[tuple[int, str], bool] = {}
        for c in cov:
            est.add_metric([str(c.cpu), c.suite, c.backend], float(c.vu_estimate))
            key = (c.cpu, c.suite)
            verdicts[key] = verdicts.get(key, True) and c.covered
        const_metric = GaugeMetricFamily("qprof_vu_constant",
                                         "The profile's Verify-Unit constant",
                                         labels=["suite", "profile"])
        if profile is not None:
            for suite, value in profile.verify_units.items():
                const_metric.add_metric([suite, profile.name], float(value))
            for (cpu, suite), ok in sorted(verdicts.items()):
                covered.add_metric([str(cpu), suite, profile.name], 1.0 if ok else 0.0)
        yield from (est, const_metric, covered)

        alerts = CounterMetricFamily("qprof_alerts", "Alerts raised, by kind", labels=["kind"])
        for kind in sorted(set(KINDS) | set(alert_counts)):
            alerts.add_metric([kind], float(alert_counts.get(kind, 0)))
        yield alerts
        cyc = CounterMetricFamily("qprof_cycles", "Measurement cycles by outcome "
                                  "(since the daemon started)", labels=["status"])
        for status, n in sorted(cycles.items()):
            cyc.add_metric([status], float(n))
        yield cyc
        last = GaugeMetricFamily("qprof_last_cycle_timestamp_seconds",
                                 "Unix time the last measurement run finished")
        if last_cycle is not None:
            last.add_metric([], last_cycle)
        yield last
        deg = GaugeMetricFamily("qprof_degraded", "1 for each part running degraded",
                                labels=["what", "reason"])
        for what, why in sorted(degraded.items()):
            deg.add_metric([what, why], 1.0)
        yield deg


def serve_metrics(state: MetricsState, host: str, port: int):
    """Start the exposition HTTP server; returns (server, thread). OSError if bind fails."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QprofCollector(state))
    server, thread = start_http_server(port, addr=host, registry=registry)
    return server, thread
