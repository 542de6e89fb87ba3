"""One measurement cycle: each chosen CPU in turn through the engine ``qprof bench`` uses.

Each CPU is its own run in the store, so a stop or crash loses only the CPU in flight
(marked aborted). After each run its results are read back from the store; the verdict,
its alerts and the ``qprof_vu_*`` metrics stand on each suite's current segment
(:mod:`qprof.service.trend`), lost or regained coverage, a block over its bound, a
disagreement or a capped result raise alerts, a confirmed change ``ratio_changed``, and
a pending detector alarm asks for a burst of runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable

from qprof.consensus.estimate.clock import clock_changes
from qprof.consensus.estimate.stopping import rule_for
from qprof.consensus.judgement import judge
from qprof.consensus.policy import CoreDesign, with_quota
from qprof.consensus.profiles import profile_unit
from qprof.consensus.trend.from_records import run_points
from qprof.consensus.trend.model import SeriesTrend
from qprof.consensus.trend.report import change_dict, change_text
from qprof.consensus.verdict_types import CoverageResult
from qprof.consensus.vu import block_signatures
from qprof.hw.cgroup import NodeCgroupError, node_of
from qprof.hw.choose import one_per_cluster
from qprof.hw.sysfs import parse_cpu_arg
from qprof.measure.block import (
    Block,
    BlockError,
    BlockResult,
    build_block,
    build_mixed_block,
    verify_block,
)
from qprof.measure.child.launch import ChildStopped, ChildTimeout, run
from qprof.measure.config import QANUM_SUITES, BenchConfig
from qprof.measure.engine import run_bench
from qprof.measure.fixtures import cache_dir
from qprof.measure.machine_lock import machine_lock
from qprof.measure.records import (
    AdversaryFactors,
    Disagreement,
    End,
    FunctionalCheck,
    Measurement,
    Meta,
    Note,
    Record,
    ResourceUse,
    Throttled,
)
from qprof.measure.warmup import WarmupJob, kernel_step
from qprof.service import coverage_alerts
from qprof.service.alerts import AlertDispatcher
from qprof.service.config import ConfigError, DaemonConfig
from qprof.service.cores import recorded_cores, topology_cores
from qprof.service.metrics import DegradedReason, MetricsState
from qprof.service.store import Store
from qprof.service.store_held import HeldWrites
from qprof.service.trend import (
    TREND_RUNS,
    ChangeTracker,
    TrendSummary,
    pending_alarms,
    trailing_gaps,
)

log = logging.getLogger("qprof.daemon")


WARM_TIMEOUT_S = 600.0  # a cold numba compile of every kernel takes ~1 min
# Runs stored without their points (a store from before them) given them after a cycle,
# newest first: each is one estimator pass over its records (a one-minute check run of
# four suites: 17 s on a loaded 2-vCPU Zen 5 guest, a few s idle), so the two days of runs
# that still have their samples are caught up over a few cycles.
BACKFILL_RUNS = 6


def bench_config(cfg: DaemonConfig, cpu: int, backend: str,
                 profile: str | None = None) -> BenchConfig:
    """A BenchConfig for one CPU: 'check' mode (what the VU verdict needs) at nice 10.

    ``profile`` is the profile the daemon loaded (its name goes into the run's Meta, so
    an export says what the verdict was against); ``cfg.profile`` wins when set.
    """
    bc = BenchConfig(
        cpus=[cpu], backends=[backend], mode="check", profile=cfg.profile or profile,
        root=str(cfg.root), nice=10, command=["qprof", "daemon"], grow_pools=True,
        # A cycle must not run on for ever on a machine that got busy.
        time_limit_s=max(60.0, cfg.interval / 2),
        # As `qprof check` (its default --statistic auto): the adaptive rounds pin down
        # the statistic the verdict and the metrics will use.
        statistic="auto",
        suites=list(cfg.suites) if cfg.suites else None,
        # Check mode times verify alone; the shadow pair (liboqs + a second verifier on
        # every sample, valid and invalid signatures) is what finds a disagreement.
        operations=(["verify", "dual_shadow", "dual_shadow_invalid"]
                    if cfg.dual and backend == "liboqs" else None),
    )
    if not cfg.quick:
        return bc
    # --quick: the verdict's operations only, short budgets, fixed rounds (tests, small
    # boxes).
    return dataclasses.replace(bc, budget_s=0.1, rounds=3, max_rounds=3, adaptive=False,
                               min_n=10, max_n=500)


class CycleRunner:
    def __init__(self, cfg: DaemonConfig, store: Store, alerts: AlertDispatcher,
                 state: MetricsState, backend: str,
                 capped_now: Callable[[], dict[int, float | None]],
                 online_now: Callable[[int], bool], held: HeldWrites | None = None) -> None:
        self.cfg = cfg
        self.store = store
        self.alerts = alerts
        self.state = state
        self.backend = backend
        self.capped_now = capped_now
        self.online_now = online_now
        self.current_run: str | None = None  # begun and not yet ended
        self.last_run: str | None = None  # the newest run begun
        self.current_cpu: int | None = None
        # Records (and the daemon's alerts) the store could not take: written when it can.
        self.held = held if held is not None else HeldWrites(store)
        self._store_failed = False
        self.coverage_alerts = coverage_alerts.CoverageAlerts(
            alerts, cfg.renotify, lambda: coverage_alerts.announced_before(self.store.alerts))
        self._cores: dict[int, CoreDesign] | None = None
        self._warmed = False
        self._blocks: dict[str, Block] = {}  # signed once per process (cfg.block)
        self._mismatch_alerted: set[tuple[str, str, str | None]] = set()
        self.changes = ChangeTracker()  # ratio changes announced, alarms' bursts
        self._backfill_tried: set[str] = set()  # runs whose records gave no points

    # -- results and coverage --------------------------------------------------------

    def refresh_results(self, announce: bool = True) -> None:
        """Re-read results from the store into the metrics: the verdict on each suite's
        current segment; alert on coverage changes and on confirmed ratio changes."""
        measurements = self.store.newest_run_measurements("verify")
        if self.state.throttled is None:  # after a restart: the newest run's, as recorded
            kept = self.store.newest_runs_records("throttled", 1)
            if kept and isinstance(kept[-1], Throttled):
                self.state.set_throttled(kept[-1])
        judgement = judge(measurements, self.state.profile,
                          self.store.points.run_points(operation="verify", newest=TREND_RUNS),
                          cores=self.cores(measurements))
        self.state.set_judgement(judgement)
        trends, segments = list(judgement.trends), dict(judgement.segments)
        self._trend_alerts(trends, announce)
        alarms = pending_alarms(trends)
        self.changes.update_alarms(alarms)
        self.state.set_trend(TrendSummary(
            trends=tuple(trends), segments=segments, alarms=alarms,
            undecided=trailing_gaps(trends, segments), changes=self.changes.counts))
        coverage = judgement.coverage
        with self.state.lock:
            self.state.last_cycle_ts = self.store.last_finished_at()
        profile = self.state.profile.name if self.state.profile else "?"
        self.coverage_alerts.update(coverage, profile, announce)

    def _trend_alerts(self, trends: list[SeriesTrend], announce: bool) -> None:
        """ratio_changed for each confirmed change not announced before (at start-up the
        stored ones are only noted)."""
        profile = self.state.profile
        unit_vu = profile_unit(profile).vu
        for t, c in self.changes.new_changes(trends):
            if announce:  # the details as `qprof trend --json` gives a change
                details = {**change_dict(c, unit_vu), "suite": c.suite,
                           "backend": t.key.backend}
                self.alerts.emit("ratio_changed", "warning",
                                 f"cpu {t.key.cpu} ({t.key.backend}) {change_text(c, unit_vu)}",
                                 cpu=t.key.cpu, **details)

    def store_points(self, run_id: str | None) -> int:
        """The finished run's estimates per series (consensus.trend.from_records, the
        estimator as check runs it) into the store's run points: what the trend judges,
        kept after retention strips the run. Returns how many were stored."""
        if run_id is None:
            return 0
        unit = profile_unit(self.state.profile).suite
        try:
            points = run_points(self.store.run_records(run_id), unit_suite=unit)
            if not points:  # the unit suite alone: nothing to judge, nothing to backfill
                self._backfill_tried.add(run_id)
            return self.store.points.add(run_id, points)
        except (KeyError, sqlite3.Error) as exc:
            log.warning("run %s: its run points were not stored: %s", run_id, exc)
            return 0

    def backfill_points(self, limit: int = BACKFILL_RUNS) -> int:
        """Points for runs stored without them, newest first (each tried once per
        process: a run of the unit suite alone has none); returns how many runs got
        some."""
        try:
            missing = [r for r in self.store.points.missing(limit + len(self._backfill_tried))
                       if r not in self._backfill_tried][:limit]
        except sqlite3.Error as exc:
            log.warning("store: runs without points not listed: %s", exc)
            return 0
        done = 0
        for run_id in missing:
            self._backfill_tried.add(run_id)
            done += self.store_points(run_id) > 0
        if done:
            log.info("store: run points computed for %d earlier runs", done)
        return done

    def burst_cpus(self) -> set[int]:
        """CPUs to measure again at once: a pending alarm of the detector, with runs left
        in its burst (qprof.service.trend.BURST_RUNS)."""
        return self.changes.burst_cpus()

    def cores(self, measurements: list[Measurement]) -> dict[int, CoreDesign]:
        """What each CPU is (the profile's policy matches reference cores by design or
        part): the daemon's topology, read once, under what the runs recorded."""
        if self._cores is None:
            self._cores = topology_cores(str(self.cfg.root))
        cores = {**self._cores, **recorded_cores(self.store, measurements)}
        return with_quota(cores, self.quota())  # a node's CPU quota bounds its block

    def quota(self) -> float | None:
        """The node's CPU quota in CPUs (--node-cgroup/--node-unit, else the daemon's own
        as its newest run recorded it); None: none."""
        if self.cfg.node_cgroup or self.cfg.node_unit:
            with contextlib.suppress(NodeCgroupError):
                node = node_of(str(self.cfg.root), self.cfg.node_cgroup, self.cfg.node_unit)
                return node.cpus if node is not None else None
            return None
        return self.state.throttled.quota_cpus if self.state.throttled else None

    # -- the sink ------------------------------------------------------------------------

    def _sink(self, record: Record) -> None:
        """Commit each record as it arrives; alert on disagreements at once."""
        if isinstance(record, Meta):
            self.current_run = self.last_run = record.run_id
        if self.held.put(record):
            if self._store_failed:
                self._store_failed = False
                log.info("store: writing works again: the held records are written")
        elif not self._store_failed:
            self._store_failed = True
            why = (f"writing failed ({self.held.error}); results are held in memory and "
                   "written when the store takes them again (lost if the daemon stops "
                   "first)")
            self.state.set_degraded("store", DegradedReason.STORE_WRITE_FAILED, why)
            self.alerts.emit("degraded", "warning", f"degraded: store: {why}", what="store",
                             reason=why)
        if isinstance(record, Disagreement):
            self.state.count_disagreement(record.cpu, record.suite)
            self.alerts.emit("disagreement", "critical",
                             f"cpu {record.cpu} {record.suite}: verifiers disagree "
                             f"{record.backends}", cpu=record.cpu, suite=record.suite,
                             run_id=record.run_id, backends=record.backends,
                             public_key_hex=record.public_key_hex[:64] + "...",
                             signature_hex=record.signature_hex[:64] + "...")
        if isinstance(record, Note) and record.kind == "wrong_verdict":
            # One verifier got a signature's verdict wrong (valid rejected or invalid
            # accepted): a disagreement with the signer, as serious as one between two.
            self.alerts.emit("disagreement", "critical", f"{record.text}", cpu=record.cpu,
                             run_id=record.run_id, note=record.kind)
        if isinstance(record, FunctionalCheck | ResourceUse):
            self._preflight(record)
        if isinstance(record, AdversaryFactors):
            with self.state.lock:
                self.state.factors = [f for f in self.state.factors if (f.suite, f.kind) != (
                    record.suite, record.kind)] + [record]
        if isinstance(record, Throttled):
            self.state.set_throttled(record)
            if record.throttled_periods:
                self.alerts.emit("cpu_throttled", "warning", f"cgroup CPU quota "
                                 f"{record.quota_cpus:.2f} CPU on {record.cgroup}: throttled "
                                 f"in {record.throttled_periods} of {record.periods} periods "
                                 "while measuring", run_id=record.run_id, cgroup=record.cgroup,
                                 quota_cpus=record.quota_cpus, factor=record.factor)
        if isinstance(record, End):
            self.current_run = None

    def _preflight(self, record: FunctionalCheck | ResourceUse) -> None:
        """The newest run's known answers and memory into the metrics; a wrong known
        answer alerts at once (critical: that suite is not timed, or never decided)."""
        with self.state.lock:
            if isinstance(record, ResourceUse):
                self.state.resources = [r for r in self.state.resources if (
                    r.cpu, r.backend, r.suite, r.operation) != (
                    record.cpu, record.backend, record.suite, record.operation)] + [record]
                return
            self.state.functional = [c for c in self.state.functional if (
                c.backend, c.suite) != (record.backend, record.suite)] + [record]
        key = (record.backend, record.suite, record.build)
        if record.status == "MISMATCH" and key not in self._mismatch_alerted:
            # Once per build in this process: every cycle's run finds it again (cached).
            self._mismatch_alerted.add(key)
            self.alerts.emit("functional_mismatch", "critical",
                             f"{record.backend} {record.suite}: functional check MISMATCH: "
                             f"{len(record.failed)} of {record.cases} known answers wrong "
                             f"({'; '.join(record.failed[:2])}); not timed unless allowed, "
                             "never decided", backend=record.backend, suite=record.suite,
                             run_id=record.run_id, failed=record.failed[:5],
                             build=record.build, cached=record.cached)

    def retry_held(self) -> bool:
        """Write what the store could not take; True when nothing is held any more (the
        results then count, as if the writes had never failed)."""
        if not self.held.pending:
            return True
        count = self.held.pending
        if not self.held.flush():
            return False
        log.info("store: writing works again: %d held records and alerts written", count)
        self._store_failed = False
        self.refresh_results()
        return True

    # -- the cycle ----------------------------------------------------------------------

    def run_cycle(self, cpus: list[int], stop: threading.Event) -> str:
        """Measure each CPU; returns 'finished', 'partial' (some CPUs failed) or 'aborted'."""
        if not self._warmed:
            self._warm_numba(stop)
        outcome = "finished"
        for cpu in cpus:
            if stop.is_set():
                outcome = "aborted"
                break
            if not self.online_now(cpu):
                log.warning("cpu %d is offline: not measured this cycle", cpu)
                outcome = "partial"
                continue
            status = self._measure_cpu(cpu, stop)
            if status == "aborted":
                outcome = "aborted"
                break
            if status != "finished":
                outcome = "partial"
        if outcome == "finished" and self.cfg.block:
            with machine_lock():  # one measurement per machine (qprof.measure.machine_lock)
                self.measure_blocks(stop)
        if not stop.is_set() and self.backfill_points():
            self.refresh_results(announce=False)  # older runs: their changes are history
        with self.state.lock:
            self.state.cycles[outcome] = self.state.cycles.get(outcome, 0) + 1
        return outcome

    def measure_blocks(self, stop: threading.Event) -> None:
        """Verify each profile suite's worst-case block on every online CPU this process
        may use (``qprof block``): single with the cycle's backend, and enforce (liboqs
        + numba) when the daemon runs dual. Results replace the previous ones."""
        profile = self.state.profile
        if profile is None:
            return
        cpus = sorted(c for c in os.sched_getaffinity(0) if self.online_now(c))
        modes = ["single"] + (["enforce"] if self.cfg.dual and self.backend == "liboqs" else [])
        results = []
        for suite in profile.suites:
            if stop.is_set():
                return
            try:
                if suite not in self._blocks:
                    self._blocks[suite] = build_block(suite, block_signatures(profile, suite))
                for mode in modes:
                    results.append(verify_block(self._blocks[suite], cpus, self.backend, mode,
                                                block_interval_s=profile.target_block_interval_s))
            except (BlockError, OSError, ValueError) as exc:
                log.warning("block %s: not verified: %s", suite, exc)
        results += self._measure_worst_mixture(cpus, modes, stop)
        with self.state.lock:
            self.state.blocks = results

    def _measure_worst_mixture(self, cpus: list[int], modes: list[str],
                               stop: threading.Event) -> list[BlockResult]:
        """The worst-case block when it mixes suites (consensus's, from the newest
        verdict's times on the first judged CPU), built for real and verified as the
        single-suite blocks are; ``suite`` "worst", its composition in the result."""
        profile = self.state.profile
        with self.state.lock:
            coverage: list[CoverageResult] = list(self.state.coverage)
        bt = next((c.block_time for c in coverage
                   if c.basis == "node" and c.block_time is not None), None)
        if profile is None or bt is None or len(bt.worst.composition) < 2 or stop.is_set():
            return []
        key = "worst: " + bt.worst.text()
        out = []
        try:
            if key not in self._blocks:
                self._blocks = {k: b for k, b in self._blocks.items()
                                if not k.startswith("worst: ")}  # one mixture kept
                self._blocks[key] = build_mixed_block(bt.worst.composition)
            for mode in modes:
                r = verify_block(self._blocks[key], cpus, self.backend, mode,
                                 block_interval_s=profile.target_block_interval_s,
                                 per_signature_s=bt.time_ns / 1e9 / max(1, bt.worst.spends))
                out.append(dataclasses.replace(r, suite="worst"))
        except (BlockError, OSError, ValueError) as exc:
            log.warning("worst-case block %s: not verified: %s", bt.worst.text(), exc)
        return out

    def _measure_cpu(self, cpu: int, stop: threading.Event) -> str:
        self.current_cpu = cpu
        self.current_run = self.last_run = None
        caps_before = self.capped_now()
        log.info("measuring cpu %d (backend %s)", cpu, self.backend)
        error: str | None = None
        try:
            profile = self.state.profile.name if self.state.profile is not None else None
            config, rule = rule_for(bench_config(self.cfg, cpu, self.backend, profile))
            summary = run_bench(config, self._sink, stop=stop, rule=rule)
            status = summary.status
            if status != "finished":
                error = summary.reason
        except Exception as exc:  # the engine failing must not take the daemon down
            status, error = "aborted", f"{type(exc).__name__}: {exc}"
            log.error("cpu %d: measurement failed: %s", cpu, error)
        if stop.is_set() and status not in ("finished",):
            status = "aborted"
        if self.current_run is not None:  # the engine ended without an End record
            reason = error or ("daemon stopping" if stop.is_set() else "engine returned "
                               "without an end record")
            self._finish(self.current_run,
                         status if status in ("finished", "partial") else "aborted", reason)
        run_id = self.last_run
        self.current_run = None
        self.current_cpu = None
        if status == "partial" and error:
            log.warning("cpu %d: run %s partial: %s", cpu, run_id, error)
        if status == "aborted":
            self.alerts.emit("cycle_aborted", "warning",
                             f"cpu {cpu}: measurement aborted"
                             f" ({error or ('daemon stopping' if stop.is_set() else status)})",
                             cpu=cpu, run_id=run_id, reason=error)
            return "aborted" if stop.is_set() else "failed"
        self._check_skew(cpu, caps_before, run_id)
        self.store_points(run_id)
        self.changes.measured(cpu)
        self.refresh_results()
        return status

    def _warm_numba(self, stop: threading.Event) -> None:
        """Fill numba's on-disk cache before the first cycle of this process.

        Workers verify once before timing, so a compile never lands in a measurement;
        but on a cold cache (a fresh install, or a new qprof) the first round's worker
        would spend 30-60 s compiling, which the engine reads as a slow machine (its
        time limit and round-length estimates) and which a SIGTERM would have to wait
        out. A separate process at nice 10 does it once; the workers then load the cache.
        """
        self._warmed = True
        if self.backend != "numba" and not (self.cfg.dual and self.backend == "liboqs"):
            return
        suites = list(self.cfg.suites) or (
            list(self.state.profile.suites) if self.state.profile is not None
            else list(QANUM_SUITES))
        job = WarmupJob(os.getpid(), str(cache_dir()), ("numba",), tuple(suites),
                        tuple(kernel_step(s) for s in suites))
        started = time.monotonic()
        try:
            done = run(job, stop, WARM_TIMEOUT_S, nice=10)
        except OSError as exc:
            log.warning("numba warm-up did not start: %s", exc)
            return
        except (ChildStopped, ChildTimeout):
            log.info("numba warm-up cut short (%s)", "stopping" if stop.is_set()
                     else f"over {WARM_TIMEOUT_S:.0f} s")
            return
        if done.returncode != 0:
            log.warning("numba warm-up failed (exit %d)%s", done.returncode,
                        f": {done.tail()}" if done.tail() else "")
        else:
            log.info("numba kernels ready (%.1f s)", time.monotonic() - started)

    def _finish(self, run_id: str, status: str, reason: str | None) -> None:
        try:
            self.store.finish_run(run_id, status, reason)
        except (sqlite3.Error, KeyError) as exc:
            log.error("could not close run %s in the store: %s", run_id, exc)

    def abort_current(self, reason: str) -> str | None:
        """Called at shutdown when the engine did not stop in time."""
        run_id = self.current_run
        if run_id is not None:
            self._finish(run_id, "aborted", reason)
        return run_id

    def _check_skew(self, cpu: int, caps_before: dict[int, float | None],
                    run_id: str | None) -> None:
        """A result measured under a cap, or while the clock changed, is skewed: say so,
        with the factor and the rounds the estimate left out (qprof.consensus.estimate.clock)."""
        measured: list[Measurement] = []
        if run_id is not None:
            with contextlib.suppress(KeyError, sqlite3.Error):
                measured = [rec for rec in self.store.run_records(run_id)
                            if isinstance(rec, Measurement) and rec.cpu == cpu]
        now = self.capped_now()
        capped = cpu in caps_before or cpu in now or any(m.capped for m in measured)
        unit = profile_unit(self.state.profile).suite
        changes = clock_changes(measured, unit)
        if not capped and not changes:
            return
        factors = [m.cap_factor for m in measured if m.capped and m.cap_factor]
        factors += [f for source in (caps_before, now) if (f := source.get(cpu))]
        factors += [c.factor for c in changes]
        factor = max(factors) if factors else None
        if changes:
            message = "; ".join(c.text() for c in changes) + f" (run {run_id})"
        else:
            message = (f"cpu {cpu}: results of run {run_id} were measured under a cap"
                       + (f" ({factor:.2f}x)" if factor else "")
                       + "; times are slower than the core can do")
        self.alerts.emit("result_skewed", "warning", message, cpu=cpu, run_id=run_id,
                         factor=factor, clock_changes=[{
                             "source": c.source, "factor": round(c.factor, 3),
                             "backend": c.backend, "slow_rounds": c.slow_rounds,
                             "rounds_left_out": [r for r in c.rounds if r not in c.kept_rounds]
                             if c.decided else [], "left_out": c.decided} for c in changes])


def select_cpus(spec: str, clusters: dict[int, list[int]], online: dict[int, bool]
                ) -> tuple[list[int], list[str]]:
    """CPUs a cycle measures, and warnings (unknown/offline CPUs asked for)."""
    warnings: list[str] = []
    if spec == "all":
        return sorted(c for c, on in online.items() if on), warnings
    if spec == "clusters":
        out, warnings = one_per_cluster(clusters, {c for c, on in online.items() if on})
        if not out:  # no cluster info: every online CPU
            out = sorted(c for c, on in online.items() if on)
        return out, warnings
    try:
        wanted = parse_cpu_arg(spec)
    except ValueError as exc:
        raise ConfigError(f"cpus: expected 'clusters', 'all' or a list like 0,2-3 "
                          f"({exc})") from None
    out = []
    for c in wanted:
        if c not in online:
            warnings.append(f"cpu {c} does not exist")
        elif not online[c]:
            warnings.append(f"cpu {c} is offline")
        else:
            out.append(c)
    return out, warnings

