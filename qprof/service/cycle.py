"""One measurement cycle: each chosen CPU in turn through the engine ``qprof bench`` uses.

Each CPU is its own run in the store (begun by the engine's Meta, closed by its End), so
a stop or crash mid-cycle loses only the CPU in flight: the runs before it are finished,
and the run cut short is marked aborted (at once on SIGTERM, at the next start after a
kill -9). After each run the results are re-read from the store and compared: a lost or
regained Verify-Unit coverage, a verifier disagreement, a result taken under a cap all
raise alerts.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from qprof.measure.records import Disagreement, End, Measurement, Meta, Record
from qprof.service.alerts import AlertDispatcher
from qprof.service.config import DaemonConfig, parse_cpu_list
from qprof.service.metrics import MetricsState, summarize
from qprof.service.store import Store

log = logging.getLogger("qprof.daemon")


class EngineMissing(RuntimeError):
    pass


def load_engine() -> tuple[Any, Callable[..., Any]]:
    """(BenchConfig, run_bench) from qprof.measure.engine."""
    try:
        from qprof.measure.engine import BenchConfig, run_bench
    except ImportError as exc:
        raise EngineMissing(f"measurement engine unavailable: {exc}") from None
    return BenchConfig, run_bench


# --quick: the verdict's operations only, short budgets, fixed rounds (tests, small boxes).
QUICK_SETTINGS = {"budget_s": 0.1, "rounds": 3, "max_rounds": 3, "adaptive": False,
                  "min_n": 10, "max_n": 500}


def bench_config(config_cls: Any, cfg: DaemonConfig, cpu: int, backend: str) -> Any:
    """A BenchConfig for one CPU: 'check' mode (what the VU verdict needs) at nice 10."""
    wanted: dict[str, Any] = {
        "cpus": [cpu],
        "backends": [backend],
        "mode": "check",
        "profile": cfg.profile,
        "root": str(cfg.root),
        "nice": 10,
        "command": ["qprof", "daemon"],
        # A cycle must not run on for ever on a machine that got busy.
        "time_limit_s": max(60.0, cfg.interval / 2),
    }
    if cfg.suites:
        wanted["suites"] = list(cfg.suites)
    if cfg.quick:
        wanted.update(QUICK_SETTINGS)
    # Only fields this engine has (the daemon keeps working across engine versions).
    names = {f.name for f in dataclasses.fields(config_cls)}
    return config_cls(**{k: v for k, v in wanted.items() if k in names})


class CycleRunner:
    def __init__(self, cfg: DaemonConfig, store: Store, alerts: AlertDispatcher,
                 state: MetricsState, backend: str,
                 capped_now: Callable[[], dict[int, float | None]],
                 online_now: Callable[[int], bool]) -> None:
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
        self._store_failed = False
        self._coverage: dict[tuple[int, str, str], bool] = {}

    # -- results and coverage --------------------------------------------------------

    def refresh_results(self, announce: bool = True) -> None:
        """Re-read results from the store into the metrics; alert on coverage changes."""
        results = summarize(self.store.newest_run_measurements("verify"))
        coverage = self.state.set_results(results)
        with self.state.lock:
            self.state.last_cycle_ts = self.store.last_finished_at()
        for c in coverage:
            key = (c.cpu, c.suite, c.backend)
            was = self._coverage.get(key)
            self._coverage[key] = c.covered
            if not announce or was is None or was == c.covered:
                continue
            profile = self.state.profile.name if self.state.profile else "?"
            if c.covered:
                self.alerts.emit("coverage_regained", "info",
                                 f"cpu {c.cpu} {c.suite} ({c.backend}): covered again by "
                                 f"{profile}: estimate {c.vu_estimate} <= constant "
                                 f"{c.vu_constant}", cpu=c.cpu, suite=c.suite,
                                 backend=c.backend, estimate=c.vu_estimate,
                                 constant=c.vu_constant, profile=profile)
            else:
                self.alerts.emit("coverage_lost", "critical",
                                 f"cpu {c.cpu} {c.suite} ({c.backend}): NOT covered by "
                                 f"{profile}: estimate {c.vu_estimate} > constant "
                                 f"{c.vu_constant}", cpu=c.cpu, suite=c.suite,
                                 backend=c.backend, estimate=c.vu_estimate,
                                 constant=c.vu_constant, profile=profile,
                                 capped=c.capped, cap_factor=c.cap_factor)

    # -- the sink ------------------------------------------------------------------------

    def _sink(self, record: Record) -> None:
        """Commit each record as it arrives; alert on disagreements at once."""
        if isinstance(record, Meta):
            self.current_run = self.last_run = record.run_id
        try:
            self.store.add(record)
        except sqlite3.Error as exc:
            if not self._store_failed:
                log.error("store write failed (%s): results are measured but NOT saved; "
                          "metrics still show them until restart", exc)
                with self.state.lock:
                    self.state.degraded["store"] = f"write failed: {exc}"
            self._store_failed = True
        if isinstance(record, Disagreement):
            self.alerts.emit("disagreement", "critical",
                             f"cpu {record.cpu} {record.suite}: verifiers disagree "
                             f"{record.backends}", cpu=record.cpu, suite=record.suite,
                             run_id=record.run_id, backends=record.backends,
                             public_key_hex=record.public_key_hex[:64] + "...",
                             signature_hex=record.signature_hex[:64] + "...")
        if isinstance(record, End):
            self.current_run = None

    # -- the cycle ----------------------------------------------------------------------

    def run_cycle(self, cpus: list[int], stop: threading.Event) -> str:
        """Measure each CPU; returns 'finished', 'partial' (some CPUs failed) or 'aborted'."""
        try:
            config_cls, run_bench = load_engine()
        except EngineMissing as exc:
            log.error("%s: cycle skipped", exc)
            self.alerts.emit("cycle_skipped", "warning", f"cycle skipped: {exc}",
                             reason=str(exc))
            return "skipped"
        outcome = "finished"
        for cpu in cpus:
            if stop.is_set():
                outcome = "aborted"
                break
            if not self.online_now(cpu):
                log.warning("cpu %d is offline: not measured this cycle", cpu)
                outcome = "partial"
                continue
            status = self._measure_cpu(config_cls, run_bench, cpu, stop)
            if status == "aborted":
                outcome = "aborted"
                break
            if status != "finished":
                outcome = "partial"
        with self.state.lock:
            self.state.cycles[outcome] = self.state.cycles.get(outcome, 0) + 1
        return outcome

    def _measure_cpu(self, config_cls: Any, run_bench: Callable[..., Any], cpu: int,
                     stop: threading.Event) -> str:
        self.current_cpu = cpu
        self.current_run = self.last_run = None
        caps_before = self.capped_now()
        log.info("measuring cpu %d (backend %s)", cpu, self.backend)
        error: str | None = None
        try:
            summary = run_bench(bench_config(config_cls, self.cfg, cpu, self.backend),
                                self._sink, stop=stop)
            status = str(getattr(summary, "status", "finished") or "finished")
            if status != "finished":
                error = getattr(summary, "reason", None)
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
        self.refresh_results()
        return status

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
        """A result measured under a cap is slower than the core: say so."""
        factors: list[float] = []
        capped = cpu in caps_before or cpu in self.capped_now()
        if run_id is not None:
            try:
                for rec in self.store.run_records(run_id):
                    if isinstance(rec, Measurement) and rec.capped:
                        capped = True
                        if rec.cap_factor:
                            factors.append(rec.cap_factor)
            except (KeyError, sqlite3.Error):
                pass
        for source in (caps_before, self.capped_now()):
            if source.get(cpu):
                factors.append(source[cpu])  # type: ignore[arg-type]
        if capped:
            factor = max(factors) if factors else None
            self.alerts.emit("result_skewed", "warning",
                             f"cpu {cpu}: results of run {run_id} were measured under a cap"
                             + (f" ({factor:.2f}x)" if factor else "")
                             + "; times are slower than the core can do",
                             cpu=cpu, run_id=run_id, factor=factor)


def select_cpus(spec: str, clusters: dict[int, list[int]], online: dict[int, bool]
                ) -> tuple[list[int], list[str]]:
    """CPUs a cycle measures, and warnings (unknown/offline CPUs asked for)."""
    warnings: list[str] = []
    if spec == "all":
        return sorted(c for c, on in online.items() if on), warnings
    if spec == "clusters":
        out = []
        for cid, members in sorted(clusters.items()):
            live = [c for c in sorted(members) if online.get(c, False)]
            if live:
                out.append(live[0])
            else:
                warnings.append(f"cluster {cid} has no online CPU")
        if not out:  # no cluster info: every online CPU
            out = sorted(c for c, on in online.items() if on)
        return out, warnings
    wanted = parse_cpu_list(spec)
    out = []
    for c in wanted:
        if c not in online:
            warnings.append(f"cpu {c} does not exist")
        elif not online[c]:
            warnings.append(f"cpu {c} is offline")
        else:
            out.append(c)
    return out, warnings

