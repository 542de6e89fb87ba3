"""Prometheus metrics: a custom collector over the daemon's current state.

The collector reads a snapshot (``MetricsState``) that the watch loop and the cycles
update; scrapes never touch /sys or the store. The state is seeded from the store at
start-up, so the last stored results are served right after a restart.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.registry import Collector

from qprof.consensus import Profile
from qprof.consensus.estimate.estimator import SuiteEstimate
from qprof.consensus.judgement import Judgement, SuiteResult
from qprof.consensus.verdict_types import CoverageResult
from qprof.hw.freq import CpuFreq
from qprof.measure.block import BlockResult
from qprof.measure.records import (
    AdversaryFactors,
    FunctionalCheck,
    ResourceUse,
    Throttled,
)
from qprof.service.alerts import KINDS
from qprof.service.metrics_adversarial import worst_signature_metrics
from qprof.service.metrics_cgroup import cgroup_metrics
from qprof.service.metrics_headroom import headroom_metrics
from qprof.service.metrics_http import DEFAULT_LIMITS, MetricsServer, ServerLimits, serve
from qprof.service.metrics_resources import functional_metrics, resource_metrics
from qprof.service.metrics_trend import trend_metrics
from qprof.service.trend import TrendSummary

log = logging.getLogger("qprof.daemon")


class DegradedReason(StrEnum):
    """Why a part runs degraded: the fixed values of qprof_degraded's ``reason`` label
    (a free-text message would make a new series for every exception text)."""

    PROFILE_UNAVAILABLE = "profile_unavailable"
    STORE_UNUSABLE = "store_unusable"
    STORE_WRITE_FAILED = "store_write_failed"
    STORE_REPLACED = "store_replaced"  # the file replaced under the daemon, not yet put back
    FREQ_HISTORY_WRITE_FAILED = "freq_history_write_failed"
    LIBOQS_UNAVAILABLE = "liboqs_unavailable"
    BACKEND_UNAVAILABLE = "backend_unavailable"
    NO_BACKEND = "no_backend"
    LISTEN_FAILED = "listen_failed"


@dataclass(frozen=True)
class Degradation:
    reason: DegradedReason  # the metric's label
    detail: str  # the message for the log, STATUS= and alerts


@dataclass
class MetricsState:
    lock: threading.Lock = field(default_factory=threading.Lock)
    freqs: dict[int, CpuFreq] = field(default_factory=dict)
    results: list[SuiteResult] = field(default_factory=list)
    profile: Profile | None = None
    coverage: list[CoverageResult] = field(default_factory=list)
    alert_counts: dict[str, int] = field(default_factory=dict)
    last_cycle_ts: float | None = None
    cycles: dict[str, int] = field(default_factory=dict)  # status -> count (this process)
    degraded: dict[str, Degradation] = field(default_factory=dict)  # by what
    # Verifier disagreements seen by this process, per (cpu, suite): the alerting rules
    # name the CPU and suite from these labels.
    disagreements: dict[tuple[int, str], int] = field(default_factory=dict)
    cycle_interval_s: float | None = None  # the configured rest between cycles
    blocks: list[BlockResult] = field(default_factory=list)  # newest worst-case blocks
    # The newest run's preflight: known answers per backend and suite, memory per operation.
    functional: list[FunctionalCheck] = field(default_factory=list)
    resources: list[ResourceUse] = field(default_factory=list)
    factors: list[AdversaryFactors] = field(default_factory=list)  # as the newest run found
    run_estimates: list[SuiteEstimate] = field(default_factory=list)  # the newest run's own
    trend: TrendSummary = field(default_factory=TrendSummary)  # segments, changes, alarms
    throttled: Throttled | None = None  # the newest run's, under a cgroup CPU quota

    def set_throttled(self, record: Throttled) -> None:
        with self.lock:
            self.throttled = record

    def set_degraded(self, what: str, reason: DegradedReason, detail: str) -> None:
        with self.lock:
            self.degraded[what] = Degradation(reason, detail)

    def clear_degraded(self, what: str, reasons: tuple[DegradedReason, ...]) -> bool:
        """No longer degraded for one of ``reasons``; True if it was."""
        with self.lock:
            found = self.degraded.get(what)
            if found is None or found.reason not in reasons:
                return False
            del self.degraded[what]
            return True

    def count_disagreement(self, cpu: int, suite: str) -> None:
        with self.lock:
            self.disagreements[(cpu, suite)] = self.disagreements.get((cpu, suite), 0) + 1

    def set_judgement(self, judgement: Judgement) -> None:
        with self.lock:
            self.results = list(judgement.results)
            self.coverage = judgement.coverage
            self.run_estimates = list(judgement.run_estimates)

    def set_trend(self, trend: TrendSummary) -> None:
        with self.lock:
            self.trend = trend


def build_info() -> dict[str, str]:
    """qprof_build_info's labels: what this daemon's figures were measured with."""
    from qprof import __version__
    from qprof.measure.runmeta import liboqs_linked_version
    from qprof.verify import backend_status
    from qprof.verify.availability import distribution_version

    return {"version": __version__,
            "numba": distribution_version("numba") or "none",
            "liboqs": liboqs_linked_version(backend_status("liboqs")) or "none"}


class QprofCollector(Collector):
    def __init__(self, state: MetricsState, build: dict[str, str]) -> None:
        self.state = state
        self.build = build

    def collect(self) -> Iterable[Any]:
        info = InfoMetricFamily("qprof_build", "Versions of qprof and of the numba and "
                                "liboqs it verifies with ('none': not available)")
        info.add_metric([], self.build)
        yield info
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
            disagreements = dict(s.disagreements)
            interval = s.cycle_interval_s
            blocks = list(s.blocks)
            preflight = (list(s.functional), list(s.resources))
            factors = list(s.factors)
            run_estimates = list(s.run_estimates)
            trend = s.trend
            throttled = s.throttled

        yield from cgroup_metrics(throttled)
        yield from _cpu_metrics(freqs)

        verify = GaugeMetricFamily("qprof_verify_seconds",
                                   "Verify time of a valid signature (newest run), the "
                                   "statistic the coverage verdict uses (see "
                                   "qprof_verify_statistic_info)",
                                   labels=["cpu", "suite", "backend"])
        stat = GaugeMetricFamily("qprof_verify_statistic_info",
                                 "1 for the statistic qprof_verify_seconds holds: median, "
                                 "or a quiet-speed estimate (p10, paired) on a busy or "
                                 "shared host, as qprof check --statistic auto picks it",
                                 labels=["cpu", "suite", "backend", "statistic"])
        for r in results:
            verify.add_metric([str(r.cpu), r.suite, r.backend], r.time_ns / 1e9)
            stat.add_metric([str(r.cpu), r.suite, r.backend, r.statistic], 1.0)
        yield from (verify, stat)

        est = GaugeMetricFamily("qprof_vu_estimate",
                                "Verify Units this CPU's times imply: ceil(100 x suite/unit), "
                                "of the current segment (every comparable run since the last "
                                "change; the newest run alone: qprof_vu_ratio{scope=\"run\"})",
                                labels=["cpu", "suite", "backend"])
        covered = GaugeMetricFamily("qprof_vu_covered",
                                    "1 when the profile's constant covers the estimate (the "
                                    "current segment's, as qprof_vu_estimate) of "
                                    "the verifier the constants are held to (the profile's "
                                    "verifier; other verifiers alone get no verdict); "
                                    "binding: whether the ratio binds on this CPU (the "
                                    "profile's ratio_binds: its reference cores, or all)",
                                    labels=["cpu", "suite", "profile", "binding"])
        basis = GaugeMetricFamily("qprof_vu_estimate_basis_info",
                                  "1 for what qprof_vu_estimate is: node (the profile's "
                                  "verifier, judged), dual (a pair led by it, judged apart) "
                                  "or comparison (a verifier no node runs alone: no verdict)",
                                  labels=["cpu", "suite", "backend", "basis"])
        est_high = GaugeMetricFamily("qprof_vu_estimate_ci_high",
                                     "Top of the 95 % interval of qprof_vu_estimate (what "
                                     "qprof calibrate covers where the ratio binds)",
                                     labels=["cpu", "suite", "backend"])
        unsure = GaugeMetricFamily("qprof_vu_unsure",
                                   "1 when the estimate's 95 % interval straddles the "
                                   "constant where the ratio binds: no covered/not covered "
                                   "until measured longer, on a quieter host or another core",
                                   labels=["cpu", "suite", "profile"])
        no_estimate = GaugeMetricFamily("qprof_vu_no_estimate",
                                        "1 when there is no reliable estimate: too few quiet "
                                        "turns (the host was contended); no figure, no "
                                        "verdict until measured longer or at a quieter time",
                                        labels=["cpu", "suite", "profile"])
        verdicts: dict[tuple[int, str], bool] = {}
        binds: dict[int, bool] = {}
        for c in cov:
            est.add_metric([str(c.cpu), c.suite, c.backend], float(c.vu_estimate))
            if c.vu_ci_high is not None:
                est_high.add_metric([str(c.cpu), c.suite, c.backend], float(c.vu_ci_high))
            basis.add_metric([str(c.cpu), c.suite, c.backend, c.basis], 1.0)
            if c.basis == "node" and c.covered is not None:
                key = (c.cpu, c.suite)
                verdicts[key] = verdicts.get(key, True) and c.covered
                binds[c.cpu] = c.ratio_binds
            # The verdict's words (qprof.consensus.verdict.WORDS): unsure only where the
            # ratio binds; no reliable estimate wherever the host was too contended.
            if c.basis == "node" and c.state == "unsure" and profile is not None:
                unsure.add_metric([str(c.cpu), c.suite, profile.name], 1.0)
            if c.basis == "node" and c.decision == "no_estimate" and profile is not None:
                no_estimate.add_metric([str(c.cpu), c.suite, profile.name], 1.0)
        const_metric = GaugeMetricFamily("qprof_vu_constant",
                                         "The profile's Verify-Unit constant",
                                         labels=["suite", "profile"])
        if profile is not None:
            for suite, value in profile.verify_units.items():
                const_metric.add_metric([suite, profile.name], float(value))
            for (cpu, suite), ok in sorted(verdicts.items()):
                covered.add_metric([str(cpu), suite, profile.name,
                                    "true" if binds[cpu] else "false"], 1.0 if ok else 0.0)
        yield from (est, est_high, basis, const_metric, covered, unsure, no_estimate)
        yield from worst_signature_metrics(cov, profile)
        if profile is not None:
            yield from block_time_metrics(cov, profile.name)
        yield from _block_metrics(blocks)
        yield from functional_metrics(preflight[0])
        yield from resource_metrics(preflight[1])
        yield from headroom_metrics(factors, cov, profile)
        yield from trend_metrics(trend, run_estimates, profile)

        yield from _service_metrics(alert_counts, cycles, last_cycle, interval, disagreements,
                                    degraded)


def block_time_metrics(cov: list[CoverageResult], profile: str) -> Iterator[Any]:
    """The time bound per CPU (the node's verifier: basis node), as consensus decided it
    (``CoverageResult.block_time``): the worst-case block here, the same block on the
    slowest reference core, and whether the bound holds."""
    covered = GaugeMetricFamily(
        "qprof_block_time_covered",
        "1 when this CPU's worst-case block (the costliest the profile's limits allow, from "
        "its verify times) takes no longer than the same block on the slowest reference "
        "core (and within the profile's share of the block interval, if it states one)",
        labels=["cpu", "profile"])
    here = GaugeMetricFamily(
        "qprof_worst_block_seconds",
        "This CPU's worst-case block, estimated from its verify times (one core)",
        labels=["cpu", "profile"])
    there = GaugeMetricFamily(
        "qprof_worst_block_reference_seconds",
        "The same block on the slowest reference core (its verify medians in the profile)",
        labels=["cpu", "profile", "reference"])
    unsure = GaugeMetricFamily(
        "qprof_block_time_unsure",
        "1 when the block's time over the run's rounds straddles the time bound (no "
        "verdict until measured longer or on a quieter host)", labels=["cpu", "profile"])
    info = InfoMetricFamily(
        "qprof_worst_block", "What this CPU's worst-case block holds and which limits bind",
        labels=["cpu", "profile"])
    seen: set[int] = set()
    for c in cov:
        bt = c.block_time
        if c.basis != "node" or bt is None or c.cpu in seen:
            continue
        seen.add(c.cpu)
        label = [str(c.cpu), profile]
        here.add_metric(label, bt.time_ns / 1e9)
        if bt.reference_ns is not None and bt.reference_core is not None:
            there.add_metric([*label, bt.reference_core], bt.reference_ns / 1e9)
        if c.block_time_covered is not None:
            covered.add_metric(label, 1.0 if c.block_time_covered else 0.0)
        elif bt.decision == "unsure":
            unsure.add_metric(label, 1.0)
        info.add_metric(label, {"block": bt.worst.text(),
                                "binding": ",".join(bt.worst.binding) or "none"})
    yield from (covered, unsure, here, there, info)


def _cpu_metrics(freqs: dict[int, CpuFreq]) -> Iterator[GaugeMetricFamily]:
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
    online = GaugeMetricFamily("qprof_cpu_online",
                               "1 when the CPU is online (present even where the "
                               "kernel gives no frequency data, e.g. a VM)",
                               labels=["cpu"])
    for cpu, f in sorted(freqs.items()):
        label = [str(cpu)]
        online.add_metric(label, 0.0 if f.online is False else 1.0)
        if f.cur_khz is not None:
            cur.add_metric(label, f.cur_khz * 1000.0)
        if f.max_khz is not None:
            mx.add_metric(label, f.max_khz * 1000.0)
        if f.hw_max_khz is not None:
            hw.add_metric(label, f.hw_max_khz * 1000.0)
        if f.capped is not None:
            capped.add_metric(label, 1.0 if f.capped else 0.0)
    yield from (online, cur, mx, hw, capped)


def _service_metrics(alert_counts: dict[str, int], cycles: dict[str, int],
                     last_cycle: float | None, interval: float | None,
                     disagreements: dict[tuple[int, str], int],
                     degraded: dict[str, Degradation],
                     ) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
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
    every = GaugeMetricFamily("qprof_cycle_interval_seconds",
                              "Configured rest between measurement cycles (rules compare "
                              "the age of the last cycle with it)")
    if interval is not None:
        every.add_metric([], interval)
    yield every
    dis = CounterMetricFamily("qprof_verifier_disagreements",
                              "Signatures the verifiers judged differently, by CPU "
                              "and suite, since the daemon started",
                              labels=["cpu", "suite"])
    for (cpu, suite), n in sorted(disagreements.items()):
        dis.add_metric([str(cpu), suite], float(n))
    yield dis
    deg = GaugeMetricFamily("qprof_degraded", "1 for each part running degraded, with "
                            "why as one of a fixed set of reasons",
                            labels=["what", "reason"])
    for what, why in sorted(degraded.items()):
        deg.add_metric([what, why.reason], 1.0)
    yield deg


def _block_metrics(blocks: list[BlockResult]) -> Iterable[Any]:
    wall = GaugeMetricFamily(
        "qprof_block_verify_seconds",
        "Wall time to verify the profile's worst-case block of one suite on the CPUs of "
        "the scope, one pinned thread each (qprof block)",
        labels=["suite", "mode", "scope"],
    )
    estimate = GaugeMetricFamily(
        "qprof_block_single_core_estimate_seconds",
        "The same block estimated on one core: signatures x median per-signature time",
        labels=["suite", "mode"],
    )
    mixture = InfoMetricFamily(
        "qprof_block_composition",
        "What the block labelled suite=\"worst\" holds: the profile's worst-case mixture "
        "of suites under all its limits, as consensus found it from this node's times",
        labels=["suite"])
    for b in blocks:
        wall.add_metric([b.suite, b.mode, b.scope], b.wall_s)
        if b.composition and b.mode == "single":
            mixture.add_metric([b.suite], {"block": " + ".join(
                f"{n} x {s}" for s, n in b.composition)})
    estimates = {(b.suite, b.mode): b.single_core_estimate_s for b in blocks}
    for (suite, mode), seconds in estimates.items():
        estimate.add_metric([suite, mode], seconds)
    yield from (wall, estimate, mixture)


def serve_metrics(state: MetricsState, host: str, port: int,
                  limits: ServerLimits = DEFAULT_LIMITS
                  ) -> tuple[MetricsServer, threading.Thread]:
    """Start the exposition HTTP server (service.metrics_http: bounded connections, each
    with a deadline); returns (server, thread). OSError if the bind fails, RuntimeError if
    its thread cannot start."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QprofCollector(state, build_info()))
    # process_start_time_seconds, memory, CPU time, open files (Linux /proc).
    ProcessCollector(registry=registry)
    return serve(registry, host, port, limits)
