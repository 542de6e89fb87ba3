"""The daemon: a ~1 s watch loop on the main thread, measurement cycles on a worker
thread (one at a time), metrics over HTTP, sd_notify to systemd.

Start-up problems split two ways: bad configuration (unparsable file, unknown profile,
a --root that is not a Linux root, bad --listen) exits 2 with one line; runtime trouble
(state dir read-only or full, metrics port taken, liboqs missing, a CPU going offline)
is one log line and degraded operation that says what is degraded (log, STATUS=, the
qprof_degraded metric).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from qprof.atomicfile import OutputError, open_private, private_dir
from qprof.consensus import ProfileError, load_profile
from qprof.hw.cgroup import NodeCgroupError, limit_lines, node_of, own_limit
from qprof.hw.topology import NotLinuxRoot
from qprof.service.alerts import Alert, AlertCommand, AlertDispatcher
from qprof.service.config import ConfigError, DaemonConfig
from qprof.service.coverage_alerts import verdict_line
from qprof.service.cycle import CycleRunner, select_cpus
from qprof.service.library import LIBRARY_CHECK_S, SoftwareWatch
from qprof.service.metrics import DegradedReason, MetricsState, serve_metrics
from qprof.service.metrics_http import format_address
from qprof.service.notify import Notifier
from qprof.service.store import Store
from qprof.service.store_file import DB_NAME, StoreBusy, StoreError, default_state_dir, is_busy
from qprof.service.store_held import HeldWrites
from qprof.service.watch import Watcher
from qprof.verify import availability

log = logging.getLogger("qprof.daemon")

EXIT_OK = 0
EXIT_CONFIG = 2
EXIT_RETRY = 75  # EX_TEMPFAIL: try again later (systemd's Restart=on-failure does)
LOCK_NAME = "qprof.lock"  # in the state dir: one daemon per store
STOP_JOIN_S = 1.5  # SIGTERM to exit within 5 s: wait this long for the engine to stop
# (a worker reports only when its whole block of rounds is done, so waiting longer
# rarely saves a result; on a loaded machine the rest of the shutdown needs the margin)
MAINTAIN_EVERY_S = 3600.0  # apply the store's retention this often
STORE_RETRY_S = 5.0  # writes the store could not take (a full disk): tried again this often


class RetryLater(Exception):
    """Start-up cannot go on now but may later (the store stays locked): exit 75."""


class Daemon:
    def __init__(self, cfg: DaemonConfig, environ: dict[str, str] | None = None) -> None:
        self.cfg = cfg
        self.stop = threading.Event()
        self.notifier = Notifier(environ)
        self.state = MetricsState(cycle_interval_s=cfg.interval)
        self.alerts = AlertDispatcher()
        self.store: Store | None = None
        self.held: HeldWrites | None = None  # writes the store could not take yet
        self.watcher: Any = None
        self.cycles: CycleRunner | None = None
        self.cycle_thread: threading.Thread | None = None
        self.metrics_server: Any = None
        self.alert_command: AlertCommand | None = None
        self.backend: str | None = None
        self.next_cycle = 0.0
        self.skipping = False
        self._last_error: str | None = None
        self._freq_write_failed = False
        self._next_maintenance = 0.0
        self._ready = False  # sinks attached: degradations become alerts too
        self._lock_fds: list[int] = []  # the store's locks (_lock_state_dir), held for life
        self._status_asked: str | None = None  # SIGUSR1/2 seen: log the status line
        self._store_write_failed = False
        self._store_wait_logged = False
        self._next_store_retry = 0.0
        self.software: SoftwareWatch | None = None  # libraries and firmware vs the store's
        self._next_library_check = 0.0
        self._earliest_cycle = 0.0  # the first cycle's delay holds a library change too
        # Why the next cycle comes at once: a library change (all CPUs) or the detector's
        # burst (only the CPUs in alarm); None: the interval applies.
        self._library_pending = False
        self._only_cpus: set[int] | None = None

    # -- start-up ---------------------------------------------------------------------

    def degrade(self, what: str, reason: DegradedReason, why: str) -> None:
        self.state.set_degraded(what, reason, why)
        if self._ready:
            self.alerts.emit("degraded", "warning", f"degraded: {what}: {why}", what=what,
                             reason=why)
        else:  # start-up: logged now, one alert once the sinks are attached (run())
            log.warning("degraded: %s: %s", what, why)

    def setup(self) -> None:
        """Raises ConfigError for what the user must fix; degrades for the rest."""
        cfg = self.cfg
        self._install_signals()  # a SIGTERM during start-up is a clean stop too
        self._lower_priority()
        self._load_profile()
        self._report_cgroup()
        self._open_watcher()
        self._choose_backend()  # may be a config error: before any file is created
        self._open_store()
        self.alerts.sinks.append(self._alert_to_store)
        self.alerts.sinks.append(self._alert_to_metrics)
        if cfg.alert_command:
            self.alert_command = AlertCommand(cfg.alert_command, cfg.alert_timeout)
            self.alerts.sinks.append(self.alert_command)
        assert self.store is not None
        self.cycles = CycleRunner(cfg, self.store, self.alerts, self.state, self.backend or "",
                                  capped_now=self.watcher.capped_cpus,
                                  online_now=self._online, held=self.held)
        # Serve the last stored results at once, and don't re-alert on old coverage.
        self.cycles.refresh_results(announce=False)
        for run_id in self.store.mark_unfinished_runs_aborted():
            self.alerts.emit("cycle_aborted", "warning",
                             f"run {run_id} was cut short by a crash or kill; marked aborted",
                             run_id=run_id, reason="found unfinished at start-up")
        self._start_metrics()
        self.next_cycle = self._earliest_cycle = time.time() + cfg.first_cycle_delay
        if self.backend is not None:
            self.software = SoftwareWatch(str(cfg.root), self.backend)

    def _report_cgroup(self) -> None:
        """Log the daemon's and the node's CPU quota (qprof.hw.cgroup); a node option that
        names no cgroup is the user's to fix."""
        root = str(self.cfg.root)
        try:
            node = node_of(root, self.cfg.node_cgroup, self.cfg.node_unit)
        except NodeCgroupError as exc:
            raise ConfigError(str(exc)) from None
        for line in limit_lines(own_limit(root) if root == "/" else None, node):
            log.info("cgroup: %s", line)

    def _lower_priority(self) -> None:
        # Measurements run at nice 10 (the engine's workers too); the daemon itself need
        # not compete with the node either. Under systemd, Nice=10 already did this.
        try:
            current = os.nice(0)
            if current < 10:
                os.nice(10 - current)
        except OSError as exc:
            log.info("could not lower priority to nice 10: %s", exc)

    def _load_profile(self) -> None:
        name = self.cfg.profile or "qanum"
        try:
            self.state.profile = load_profile(name)
        except ProfileError as exc:
            if self.cfg.profile:
                raise ConfigError(str(exc)) from None
            self.degrade("coverage", DegradedReason.PROFILE_UNAVAILABLE,
                         f"default profile unavailable: {exc}")

    def _open_watcher(self) -> None:
        try:
            self.watcher = Watcher(self.cfg.root, self.alerts, self.cfg.cap_hold_samples,
                                   self.cfg.cap_hold_seconds)
        except (NotLinuxRoot, OSError) as exc:
            raise ConfigError(f"--root {self.cfg.root}: {exc}") from None

    def _open_store(self) -> None:
        state_dir = Path(self.cfg.state_dir) if self.cfg.state_dir else default_state_dir()
        path = state_dir / DB_NAME
        deadline = time.monotonic() + self.cfg.store_wait
        while True:
            try:
                private_dir(state_dir)
                self._lock_state_dir(state_dir)
                self.store = Store(path)
                self.held = HeldWrites(self.store)
                # Retention, and a write at start-up, so a read-only or full store usually
                # shows here rather than mid-cycle (later write failures degrade the same).
                self._maintain()
                log.info("store: %s", path)
                return
            except (StoreError, OutputError, OSError, sqlite3.Error) as exc:
                if self.store is not None:
                    self.store.close()
                    self.store = None
                if not (isinstance(exc, StoreBusy) or is_busy(exc)):
                    self.degrade("store", DegradedReason.STORE_UNUSABLE,
                                 f"{path} not usable ({exc}); results are kept in memory "
                                 "only and lost when the daemon stops")
                    self.store = Store(":memory:")
                    self.held = HeldWrites(self.store)
                    return
                self._wait_for_store(path, deadline)

    def _wait_for_store(self, path: Path, deadline: float) -> None:
        """The store is locked by another process: wait (STATUS= says so, the watchdog
        is fed), and past --store-wait give up for the supervisor to retry. Running on an
        in-memory store instead would lose everything measured at the next stop."""
        left = deadline - time.monotonic()
        if left <= 0 or self.stop.is_set():
            raise RetryLater(f"store {path} still locked by another process after "
                             f"{self.cfg.store_wait:g} s (a backup or VACUUM?); exiting "
                             f"{EXIT_RETRY} to be started again later")
        status = f"waiting for the store {path}: locked by another process"
        if not self._store_wait_logged:
            log.warning("%s (a backup or VACUUM?); waiting up to %.0f s", status, left)
            self._store_wait_logged = True
        self.notifier.status(status)
        self.notifier.watchdog()
        self.stop.wait(min(1.0, left))

    def _lock_state_dir(self, state_dir: Path) -> None:
        """One daemon per store: a second would mark the first one's running run aborted
        and measure the same cores at the same time. The lock (flock, released by the
        kernel when the process dies) is ``qprof.lock`` in the state dir and, when
        qprof.db is a symlink into another directory, in that directory too (the store's
        real one: two state dirs linking to one file are one store). It names its
        holder's pid."""
        if self._lock_fds:
            return
        db = state_dir / DB_NAME
        real_dir = db.resolve().parent
        dirs = [state_dir] + ([real_dir] if real_dir != state_dir.resolve() else [])
        fds: list[int] = []
        try:
            for lock_dir in dirs:
                try:
                    fd = open_private(lock_dir, LOCK_NAME)  # never through a symlink
                except OutputError as exc:
                    if os.path.lexists(lock_dir / LOCK_NAME):
                        raise ConfigError(str(exc)) from None
                    continue  # unwritable: the store degrades to memory, nothing shared
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                    os.close(fd)
                    what = (f"state dir {state_dir}" if lock_dir == state_dir else
                            f"store {db} (a link to {db.resolve()})")
                    raise ConfigError(f"{what} is in use by another qprof daemon (pid "
                                      f"{holder}); stop it or give this one another "
                                      "--state-dir") from None
                fds.append(fd)
        except ConfigError:
            for fd in fds:
                os.close(fd)
            raise
        for fd in fds:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fds = fds

    def _maintain(self) -> None:
        """Apply the retention policy (start-up, then hourly from the watch loop)."""
        assert self.store is not None
        self._next_maintenance = time.time() + MAINTAIN_EVERY_S
        removed = self.store.maintain(self.cfg.retention())
        if any(removed.values()):
            log.info("store retention: removed %d runs and %d alerts, per-sample timings of "
                     "%d runs, %d frequency samples, %d run points", removed["runs"],
                     removed["alerts"], removed["stripped_runs"], removed["freq_samples"],
                     removed["run_points"])

    def _choose_backend(self) -> None:
        wanted = self.cfg.backend
        statuses = availability.available_backends()
        if wanted == "auto":
            for name in ("liboqs", "numba"):
                st = statuses.get(name)
                if st is not None and st.available:
                    self.backend = name
                    break
            liboqs = statuses.get("liboqs")
            if self.backend != "liboqs":
                why = liboqs.reason if liboqs is not None else "not registered"
                self.degrade("liboqs", DegradedReason.LIBOQS_UNAVAILABLE,
                             f"liboqs unavailable ({why}); measuring with "
                             f"{self.backend or 'nothing'} instead")
        else:
            st = statuses.get(wanted)
            if st is None:
                raise ConfigError(f"--backend: unknown backend {wanted!r} (known: "
                                  f"{', '.join(sorted(statuses))}, auto)")
            if st.available:
                self.backend = wanted
            else:
                self.degrade("measurement", DegradedReason.BACKEND_UNAVAILABLE,
                             f"backend {wanted} unavailable ({st.reason}); "
                             "measurement cycles are off, watching and metrics continue")
        if self.backend is None and "measurement" not in self.state.degraded:
            self.degrade("measurement", DegradedReason.NO_BACKEND,
                         "no verifier backend available; cycles are off")

    def _start_metrics(self) -> None:
        address = self.cfg.listen_address()
        if address is None:
            log.info("metrics: off (--listen none)")
            return
        host, port = address
        try:
            self.metrics_server, _ = serve_metrics(self.state, host, port,
                                                   self.cfg.metrics_limits())
        except (OSError, RuntimeError) as exc:  # RuntimeError: its thread cannot start
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            self.degrade("metrics", DegradedReason.LISTEN_FAILED,
                         f"cannot listen on {format_address(host, port)} ({why}); "
                         "metrics are off")
            return
        actual = self.metrics_server.server_address[1]
        log.info("metrics: http://%s/metrics", format_address(host, actual))

    # -- sinks ---------------------------------------------------------------------------

    def _alert_to_store(self, alert: Alert) -> None:
        assert self.held is not None
        if self.held.put(alert):
            return
        # Not self.degrade(): its alert would come back here. The disk filling up
        # shows in qprof_degraded and STATUS=, and is logged once.
        if not self._store_write_failed:
            log.error("store: writing alerts failed (%s); they are held in memory and "
                      "written when the store takes them again, and still reach the log, "
                      "metrics and the alert command", self.held.error)
            self.state.set_degraded("store", DegradedReason.STORE_WRITE_FAILED,
                                    f"writing alerts failed: {self.held.error}")
        self._store_write_failed = True

    def _alert_to_metrics(self, alert: Alert) -> None:
        with self.state.lock:
            self.state.alert_counts[alert.kind] = self.state.alert_counts.get(alert.kind, 0) + 1

    # -- the loop ------------------------------------------------------------------------

    def _online(self, cpu: int) -> bool:
        tick = self.watcher.last
        view = tick.cpus.get(cpu) if tick is not None else None
        return view.online is not False if view is not None else False

    def run(self) -> int:
        assert self.store is not None
        with self.state.lock:
            self.state.alert_counts = self.store.alerts.counts()
            degraded = dict(self.state.degraded)
        self._ready = True
        for what, why in sorted(degraded.items()):
            self.alerts.emit("degraded", "warning", f"started degraded: {what}: {why.detail}",
                             what=what, reason=why.detail, at_startup=True)
        self.notifier.ready(self.status_line())
        log.info("qprof daemon started: %s", self.status_line())
        watchdog_every = self.notifier.watchdog_interval_s
        next_watchdog = 0.0
        next_status = 0.0
        while not self.stop.is_set():
            now = time.time()
            self._watch_once(now)
            self._check_store(now)
            self._check_libraries(now)
            self._maybe_start_cycle(now)
            if now >= self._next_maintenance:
                try:
                    self._maintain()
                except sqlite3.Error as exc:
                    log.warning("store retention failed: %s", exc)
            if watchdog_every is not None and now >= next_watchdog:
                self.notifier.watchdog()
                next_watchdog = now + watchdog_every
            if now >= next_status:
                self.notifier.status(self.status_line())
                next_status = now + 10.0
            if self._status_asked is not None:
                log.info("%s: %s", self._status_asked, self.status_line())
                self._status_asked = None
            self.stop.wait(self.cfg.watch_interval)
        return self.shutdown()

    def _install_signals(self) -> None:
        def on_stop(signum: int, _frame: Any) -> None:
            log.info("received %s: stopping", signal.Signals(signum).name)
            self.stop.set()

        def on_status(signum: int, _frame: Any) -> None:
            # Logged by the loop: the handler may run while the loop holds a lock.
            self._status_asked = signal.Signals(signum).name

        # SIGHUP (a closing terminal; systemd sends none): a clean stop, as SIGTERM. A
        # restart re-reads the settings.
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, on_stop)
        for sig in (signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, on_status)

    def _watch_once(self, now: float) -> None:
        try:
            tick = self.watcher.tick(now)
        except Exception as exc:  # bad hardware data must not stop the watch
            text = f"{type(exc).__name__}: {exc}"
            if text != self._last_error:
                log.error("watch: reading hardware failed: %s", text)
                self._last_error = text
            return
        self._last_error = None
        with self.state.lock:
            self.state.freqs = dict(tick.cpus)
        assert self.store is not None
        try:
            self.store.freq.add([(c.cpu, tick.ts, c.cur_khz, c.max_khz, c.hw_max_khz,
                                          c.capped) for c in tick.cpus.values()])
        except sqlite3.Error as exc:
            # Results the store could not take (the graver reason) stay the one shown.
            if not self._freq_write_failed and "store" not in self.state.degraded:
                self.degrade("store", DegradedReason.FREQ_HISTORY_WRITE_FAILED,
                             f"writing frequency history failed: {exc}")
            self._freq_write_failed = True
        else:
            self._freq_write_failed = False

    def _check_store(self, now: float) -> None:
        """The store's file still the one open (else put back: StoreConnection), and
        writes that failed (a full disk) written once they can be, the degradation
        cleared then."""
        assert self.store is not None and self.cycles is not None
        for event in self.store.check_file():
            if event.restored:
                self.state.clear_degraded("store", (DegradedReason.STORE_REPLACED,))
                self.alerts.emit("degraded", "warning", f"store: {event.message}",
                                 what="store", reason=event.message)
            else:
                self.degrade("store", DegradedReason.STORE_REPLACED, event.message)
        if now < self._next_store_retry:
            return
        self._next_store_retry = now + STORE_RETRY_S
        if self.cycle_thread is None or not self.cycle_thread.is_alive():
            self.cycles.retry_held()  # (a running cycle retries with each record)
        if self.cycles.held.pending or self._freq_write_failed:
            return
        self._store_write_failed = False
        if self.state.clear_degraded("store", (DegradedReason.STORE_WRITE_FAILED,
                                               DegradedReason.FREQ_HISTORY_WRITE_FAILED)):
            log.info("store: writing works again; no longer degraded")

    def _check_libraries(self, now: float) -> None:
        """A new liboqs (version or build), numba kernels, kernel or microcode against the
        newest stored run's: library_changed, and the next cycle at once (a new segment
        begins; its first runs size the step)."""
        if self.software is None or now < self._next_library_check:
            return
        self._next_library_check = now + LIBRARY_CHECK_S
        assert self.store is not None
        try:
            change = self.software.check(self.store.newest_meta())
        except (sqlite3.Error, OSError, ValueError) as exc:
            log.warning("comparing the libraries with the newest run failed: %s", exc)
            return
        if change is None:
            return
        self.alerts.emit("library_changed", "warning",
                         f"what the runs are measured with changed since run "
                         f"{change.run_id}: {change.text()}; measuring at once",
                         run_id=change.run_id, what_changed=list(change.what),
                         backend=self.backend)
        self._library_pending = True
        self.next_cycle = min(self.next_cycle, max(now, self._earliest_cycle))

    def idle_reason(self) -> str | None:
        """None when idle enough to measure, else why not."""
        tick = self.watcher.last
        if tick is None:
            return "no hardware reading yet"
        per_cpu = (tick.load.load1 / tick.load.online_cpus) if tick.load.load1 is not None \
            else None
        if per_cpu is not None and per_cpu > self.cfg.max_load:
            return (f"load {tick.load.load1:.2f} over {tick.load.online_cpus} CPUs "
                    f"({per_cpu:.2f} per CPU) is above --max-load {self.cfg.max_load:g}")
        busy = tick.load.busy_pct
        if busy is not None and busy > self.cfg.max_busy:
            return f"CPUs {busy:.0f} % busy, above --max-busy {self.cfg.max_busy:g} %"
        return None

    def _maybe_start_cycle(self, now: float) -> None:
        if now < self.next_cycle or self.backend is None:
            return
        if self.cycle_thread is not None and self.cycle_thread.is_alive():
            return  # one heavy job at a time
        why = self.idle_reason()
        if why is not None:
            self._skip_cycle(now, why)
            return
        online = {c: v.online for c, v in self.watcher.last.cpus.items()}
        cpus, warnings = select_cpus(self.cfg.cpus, self.watcher.clusters(), online)
        for w in warnings:
            log.warning("cycle: %s", w)
        if self._only_cpus and not self._library_pending:
            cpus = [c for c in cpus if c in self._only_cpus] or cpus  # the burst's CPUs
        self._library_pending = False
        self._only_cpus = None
        # Pushed back again when the cycle ends: --interval is the rest between cycles.
        self.next_cycle = now + self.cfg.interval
        if not cpus:
            log.warning("cycle: no CPU to measure")
            return
        thread = threading.Thread(target=self._cycle, args=(cpus,), name="measure",
                                  daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:  # "can't start new thread": the task limit is reached
            self._skip_cycle(now, f"cannot start the measurement thread ({exc}): the "
                             "daemon's task limit (systemd TasksMax=) is reached; are many "
                             "metrics connections open?")
            return
        self.skipping = False
        self.cycle_thread = thread

    def _skip_cycle(self, now: float, why: str) -> None:
        """No cycle now: alert once (then log) and try again after --retry."""
        retry = min(self.cfg.retry, self.cfg.interval)
        if not self.skipping:
            self.alerts.emit("cycle_skipped", "info", f"measurement cycle skipped: {why}",
                             reason=why, retry_in_s=retry)
        else:
            log.info("cycle skipped again: %s", why)
        self.skipping = True
        with self.state.lock:
            self.state.cycles["skipped"] = self.state.cycles.get("skipped", 0) + 1
        self.next_cycle = now + retry

    def _cycle(self, cpus: list[int]) -> None:
        assert self.cycles is not None
        log.info("cycle: measuring cpus %s", ",".join(map(str, cpus)))
        try:
            outcome = self.cycles.run_cycle(cpus, self.stop)
        except Exception as exc:  # one line, and the next cycle comes as planned
            outcome = f"failed: {type(exc).__name__}: {exc}"
            with self.state.lock:
                self.state.cycles["failed"] = self.state.cycles.get("failed", 0) + 1
        finally:
            # A cycle longer than the interval must not be followed by another at once,
            # unless a library changed meanwhile or the detector's alarm asks for a burst.
            burst = self.cycles.burst_cpus()
            now = time.time()
            self.next_cycle = now + self.cfg.interval
            if self._library_pending or (burst and not self.stop.is_set()):
                self._only_cpus = burst or None
                self.next_cycle = now
        if self._library_pending:
            outcome += "; libraries changed: measuring again at once"
        elif self._only_cpus:
            outcome += (f"; change detector's alarm on cpus "
                        f"{','.join(map(str, sorted(self._only_cpus)))}: measuring again "
                        "at once")
        with self.state.lock:
            coverage = list(self.state.coverage)
        log.info("cycle %s; %s", outcome, verdict_line(coverage))

    def status_line(self) -> str:
        parts = []
        if self.cycles is not None and self.cycles.current_cpu is not None:
            parts.append(f"measuring cpu {self.cycles.current_cpu}")
        else:
            wait = max(0, int(self.next_cycle - time.time()))
            parts.append(f"watching; next cycle in {wait} s" if self.backend else "watching")
        capped = sorted(self.watcher.capped_cpus()) if self.watcher is not None else []
        if capped:
            parts.append(f"capped cpus {','.join(map(str, capped))}")
        with self.state.lock:
            degraded = sorted(self.state.degraded)
        if degraded:
            parts.append(f"degraded: {', '.join(degraded)}")
        return "; ".join(parts)

    # -- shutdown ------------------------------------------------------------------------

    def shutdown(self) -> int:
        self.notifier.stopping()
        thread = self.cycle_thread
        if thread is not None and thread.is_alive():
            thread.join(STOP_JOIN_S)
            if thread.is_alive() and self.cycles is not None:
                run_id = self.cycles.abort_current("daemon stopped before the measurement "
                                                   "finished")
                log.warning("stopping while measuring: run %s marked aborted", run_id)
                self._terminate_workers()
        if self.cycles is not None and not self.cycles.retry_held():
            log.error("store: %d records and alerts held in memory (%s) are lost: the "
                      "store did not take them before the daemon stopped",
                      self.cycles.held.pending, self.cycles.held.error)
        if self.metrics_server is not None:
            self.metrics_server.shutdown()
            self.metrics_server.server_close()
        if self.alert_command is not None:
            self.alert_command.close(wait_s=1.0)
        log.info("qprof daemon stopped")
        return EXIT_OK

    @staticmethod
    def _terminate_workers() -> None:
        """SIGTERM the engine's worker processes (our children) still running a round."""
        import psutil

        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.terminate()


def run_daemon(cfg: DaemonConfig) -> int:
    daemon = Daemon(cfg)
    try:
        daemon.setup()
    except ConfigError as exc:
        log.error("config error: %s", exc)
        return EXIT_CONFIG
    except RetryLater as exc:
        log.error("%s", exc)
        return EXIT_RETRY
    rc = daemon.run()
    if daemon.cycle_thread is not None and daemon.cycle_thread.is_alive():
        # The engine is still finishing a worker round; its run is already marked
        # aborted. Leave now (the 5 s stop promise) without waiting on it in finalization.
        logging.shutdown()
        os._exit(rc)
    return rc
