"""The Textual application behind ``qprof monitor``.

The UI thread only reads small files and a SQLite store on a 1 Hz timer (see
:mod:`qprof.tui.collect`); everything slow runs in Textual thread workers: the backend
probe (which imports the verifier libraries), measurements (``run_bench``, which itself
runs pyperf worker processes), and, in child processes so that they never hold the UI's
GIL, the coverage evaluation (`qprof check`'s verdict, after each new result) and the
one-off clock estimate of a VM without cpufreq. numba, oqs and pyperf are never
imported on the UI path; slow work starts only after the first frame.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Static

from qprof.atomicfile import OutputError
from qprof.hw.choose import one_per_cluster
from qprof.tui.collect import SNAPSHOT, Collector, MonitorConfig
from qprof.tui.model import Frame, Progress
from qprof.tui.report import write_report
from qprof.tui.sources.child import ChildStopped
from qprof.tui.sources.consensus import profile_names
from qprof.tui.sources.hardware import estimate_clocks
from qprof.tui.sources.measure import MeasureSource
from qprof.tui.sources.trend import TrendResult, TrendState, evaluate_trend_in_child
from qprof.tui.widgets.alerts_log import AlertsLog
from qprof.tui.widgets.choice_screen import ChoiceScreen
from qprof.tui.widgets.core_table import CoreTable
from qprof.tui.widgets.coverage_panel import CoveragePanel
from qprof.tui.widgets.freq_history import FreqHistory
from qprof.tui.widgets.help_screen import HelpScreen
from qprof.tui.widgets.machine_header import MachineHeader
from qprof.tui.widgets.measure_progress import MeasureProgress
from qprof.tui.widgets.trend_panel import TrendPanel
from qprof.verify import BackendStatus, available_backends
from qprof.verify.availability import LiboqsLocation, find_liboqs

PREFERRED_BACKENDS = ("liboqs", "numba", "rustcrypto", "openssl", "reference")


class MonitorApp(App[int]):
    TITLE = "qprof monitor"
    ENABLE_COMMAND_PALETTE = False  # every action has its own key; keeps the footer short
    CSS_PATH = "monitor.tcss"
    BINDINGS = [
        Binding("b", "measure", "Measure core"),
        Binding("p", "profile", "Profile"),
        Binding("v", "backend", "Backend"),
        Binding("e", "export", "Export"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        # Ctrl-C quits too, as everywhere else (Textual would only say "press ctrl+q").
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(self, config: MonitorConfig | None = None,
                 collector: Collector | None = None) -> None:
        super().__init__()
        self.config = config or MonitorConfig()
        self.collector = collector or Collector(self.config)
        self.frame: Frame | None = None
        self.progress: Progress | None = None
        self.measuring_cpu: int | None = None
        self.backend_status: dict[str, BackendStatus] = {}
        self.last_export: Path | None = None
        self.first_frame_at: float | None = None  # monotonic, for the startup figure
        self._stop = threading.Event()
        self._next_scheduled: float | None = None
        self._schedule_index = 0
        self._evaluating: tuple | None = None  # key of the evaluation in flight
        # First run: CPUs still to measure by themselves (None: not started or done).
        self._first_run: list[int] | None = None
        self._first_run_decided = False
        self._first_run_total = 0
        self.trend = TrendState()  # the store's runs over time, after the newest figures

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield MachineHeader(id="header")
        yield CoreTable(id="cores")
        yield CoveragePanel(id="coverage")
        yield TrendPanel(id="trend")
        with Horizontal(id="bottom"):
            with Vertical(id="history-box"):
                yield Static("Frequency history (GHz)",
                             classes="panel-title")
                yield FreqHistory(id="history")
            with Vertical(id="alerts-box"):
                yield Static("Alerts (newest first)", classes="panel-title")
                yield AlertsLog(id="alerts")
        yield MeasureProgress(id="progress")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_frame()
        self.query_one(CoreTable).focus()
        self.call_after_refresh(self._mark_first_frame)
        if self.config.refresh_s > 0:
            self.set_interval(self.config.refresh_s, self.refresh_frame)
        if self.collector.backend is None:
            if self.collector.sources.mode == SNAPSHOT and self.collector.sources.store is None:
                self.collector.set_backend("liboqs")  # nothing is measured: just a label
                self.refresh_frame()
            else:
                self.guess_backend()
        if self.collector.measurable and self.config.measure_every_s > 0:
            self._next_scheduled = time.monotonic() + self.config.measure_every_s

    def _mark_first_frame(self) -> None:
        self.first_frame_at = time.monotonic()
        # Slow work starts after the first frame so that it cannot delay it.
        self._maybe_first_run()
        self._maybe_evaluate()
        cpus = self.collector.cpus_to_estimate()
        if cpus:
            self.estimate_clocks(cpus)

    async def action_quit(self) -> None:
        # Stop the measurement in flight now, while Textual takes the screen down, rather
        # than after (q and Ctrl-C end everything within 2 s).
        self._stop.set()
        self.exit()

    def on_unmount(self) -> None:
        self._stop.set()  # a measurement in flight stops at its next checkpoint
        self.collector.close()

    # ----------------------------------------------------------------- refresh
    def refresh_frame(self) -> None:
        # The interval timer and workers' callbacks can still fire while the app shuts
        # down, after its screens (and so the widgets below) are gone.
        if not self.is_running:
            return
        frame = self.collector.frame()
        self.frame = frame
        self.query_one(MachineHeader).show(frame.machine)
        self.query_one(CoreTable).show(frame.cores, self.collector.profile.suites)
        self.query_one(CoveragePanel).show(frame.coverage, frame.machine.profile,
                                           frame.machine.backend, frame.coverage_note,
                                           frame.verdict_note, frame.preflight,
                                           frame.worst)
        self.query_one(TrendPanel).show(self.trend.views)
        self.query_one(FreqHistory).show(frame.history)
        self.query_one(AlertsLog).show(frame.alerts)
        self.query_one(MeasureProgress).show(self.progress)
        self._maybe_scheduled_measurement()
        self._maybe_first_run()
        if self.first_frame_at is not None:
            self._maybe_evaluate()

    # -------------------------------------------------------------- evaluation
    def _maybe_evaluate(self) -> None:
        """Start `qprof check`'s evaluation of the store in a worker when the store has
        a new result or the backend/profile changed (bootstrap CIs: ~0.3 s per core)."""
        key = self.collector.evaluation_due()
        if key is None or key == self._evaluating:
            return
        self._evaluating = key
        self._evaluate(key)

    @work(thread=True, group="evaluate")
    def _evaluate(self, key: tuple) -> None:
        try:
            evaluation = self.collector.evaluate(key, stop=self._stop)
        except ChildStopped:
            return  # quitting: the child was killed
        if not self._stop.is_set():
            self.call_from_thread(self._evaluated, key, evaluation)

    def _evaluated(self, key: tuple, evaluation: Any) -> None:
        if self._evaluating != key:
            return  # superseded (a newer result, backend or profile): that one shows
        self._evaluating = None
        self.collector.set_evaluation(key, evaluation)
        self.refresh_frame()
        if evaluation.results and (start := self.trend.want(key)) is not None:
            self._trend(start)

    # ------------------------------------------------------------------- trend
    @work(thread=True, group="trend")
    def _trend(self, key: tuple) -> None:
        """The trend of the store's runs in a child process (qprof.tui.sources.trend),
        started only once the newest figures are on screen."""

        store = self.collector.sources.store
        try:
            result = (evaluate_trend_in_child(store.path, self.collector.profile, key[1],
                                              self._stop) if store is not None
                      else TrendResult())
        except ChildStopped:
            return  # quitting: the child was killed
        if not self._stop.is_set():
            self.call_from_thread(self._trended, key, result)

    def _trended(self, key: tuple, result: TrendResult) -> None:
        following = self.trend.done(key, result)
        if result.error:
            self.collector.add_alert("trend_failed", "warning", result.error)
        self.refresh_frame()
        if following is not None:
            self._trend(following)

    # ------------------------------------------------------------ clock estimate
    @work(thread=True, exclusive=True, group="estimate")
    def estimate_clocks(self, cpus: list[int]) -> None:
        """No cpufreq (a VM): time a loop once per CPU in a child process, as
        `qprof freq` does; shown as "~x.xx est" (not a live reading)."""

        try:
            khz, problems = estimate_clocks(cpus, stop=self._stop)
        except ChildStopped:
            return  # quitting
        if not self._stop.is_set():
            self.call_from_thread(self._clocks_estimated, khz, problems)

    def _clocks_estimated(self, khz: dict[int, int], problems: list[str]) -> None:
        self.collector.estimated_khz.update(khz)
        for problem in problems[:2]:
            self.collector.add_alert("estimate_failed", "info", problem)
        self.refresh_frame()

    # ---------------------------------------------------------------- backends
    @work(thread=True, exclusive=True, group="backends")
    def guess_backend(self) -> None:
        """Default backend without importing any verifier library: liboqs when its shared
        library is where liboqs-python looks (file checks only), else numba. The full
        probe (which imports oqs and numba) waits until `v` is pressed."""
        try:
            name = "liboqs" if isinstance(find_liboqs(), LiboqsLocation) else "numba"
        except Exception:  # noqa: BLE001 - a broken verify package: say so, keep going
            name = "liboqs"
        self.call_from_thread(self._backend_guessed, name)

    def _backend_guessed(self, name: str) -> None:
        if self.collector.backend is None:
            self.collector.set_backend(name)
            self.refresh_frame()

    @work(thread=True, exclusive=True, group="backends")
    def probe_backends(self, then_choose: bool = False) -> None:
        """Which backends work here (imports the verifier libraries: off the UI thread,
        and only once the user asks for the list)."""
        try:
            status = dict(available_backends())
        except Exception as exc:  # noqa: BLE001 - a broken backend must not kill the UI
            status = {}
            self.call_from_thread(self.collector.add_alert, "degraded", "warning",
                                  f"backend probe failed: {exc}")
        self.call_from_thread(self._backends_known, status, then_choose)

    def _backends_known(self, status: dict[str, BackendStatus], then_choose: bool) -> None:
        self.backend_status = status
        if self.collector.backend is None:
            usable = [n for n in PREFERRED_BACKENDS if (st := status.get(n)) and st.available]
            self.collector.set_backend(usable[0] if usable else "liboqs")
        self.refresh_frame()
        if then_choose:
            self.action_backend()

    def action_backend(self) -> None:
        if not self.backend_status:
            self.notify("Checking which backends work here…", timeout=3)
            self.probe_backends(then_choose=True)
            return
        if isinstance(self.screen, ChoiceScreen):
            return  # already open
        choices = []
        for name, st in self.backend_status.items():
            ok, version = st.available, st.version
            label = f"{name}" + (f" ({version})" if ok and version else "")
            if not ok:
                label += f" — unavailable: {st.reason}"
            choices.append((name, label, ok))
        if not choices:
            self.notify("No verifier backend could be checked (see the alerts).",
                        severity="warning", timeout=5)
            return
        self.push_screen(ChoiceScreen("Verifier backend (Enter selects, Esc cancels)",
                                      choices, self.collector.backend), self._backend_chosen)

    def _backend_chosen(self, name: str | None) -> None:
        if name and name != self.collector.backend:
            self.collector.set_backend(name)
            self.notify(f"backend: {name}", timeout=3)
            self.refresh_frame()

    # ----------------------------------------------------------------- profiles
    def action_profile(self) -> None:
        names = profile_names()
        choices = [(n, n, True) for n in names]
        self.push_screen(ChoiceScreen("Chain profile (Enter selects, Esc cancels)", choices,
                                      self.collector.profile.name), self._profile_chosen)

    def _profile_chosen(self, name: str | None) -> None:
        if name and name != self.collector.profile.name:
            self.collector.set_profile(name)
            if self.collector.profile.error:
                self.notify(self.collector.profile.error, severity="error", timeout=6)
            else:
                self.notify(f"profile: {name}", timeout=3)
            self.refresh_frame()

    # ----------------------------------------------------------------- measuring
    def action_measure(self) -> None:
        cpu = self.query_one(CoreTable).selected_cpu()
        self.start_measurement(cpu, why="on demand")

    def start_measurement(self, cpu: int | None, why: str, mode: str | None = None) -> bool:
        if not self.collector.measurable:
            self.notify("Cannot measure here: this is a snapshot of another machine "
                        "(--root) or a read-only store.", severity="warning", timeout=5)
            return False
        if cpu is None:
            self.notify("No core selected.", severity="warning")
            return False
        if self.measuring_cpu is not None:
            self.notify(f"Already measuring CPU {self.measuring_cpu}; wait for it to finish.",
                        severity="warning", timeout=4)
            return False
        if self.collector.backend is None:
            self.notify("Still checking which backends work here…", timeout=3)
            return False
        online = {c.cpu: c.online for c in (self.frame.cores if self.frame else ())}
        if online.get(cpu) is False:
            self.notify(f"CPU {cpu} is offline.", severity="warning")
            return False
        self.measuring_cpu = cpu
        self.progress = Progress(0.0, None, f"CPU {cpu} (starting)")
        self.query_one(MeasureProgress).show(self.progress)
        self.collector.add_alert("measure_started", "info",
                                 f"{why}: {self.collector.backend}, profile "
                                 f"{self.collector.profile.name}", f"CPU {cpu}")
        self._measure(cpu, self.collector.backend, self.collector.profile.suites,
                      mode or self.config.measure_mode)
        return True

    @work(thread=True, group="measure")
    def _measure(self, cpu: int, backend: str, suites: tuple[str, ...], mode: str) -> None:
        source = MeasureSource(self.collector.sources.store_path,  # type: ignore[arg-type]
                               root=self.config.root, profile=self.collector.profile.location,
                               mode=mode)
        try:
            summary = source.measure(
                cpu, suites, backend,
                progress=lambda p: self.call_from_thread(self._on_progress, p),
                stop=self._stop)
            error = None
        except Exception as exc:  # noqa: BLE001 - report, keep the UI alive
            summary, error = None, f"{type(exc).__name__}: {exc}"
        if not self._stop.is_set():
            self.call_from_thread(self._measured, cpu, summary, error)

    def _on_progress(self, progress: Progress) -> None:
        self.progress = progress
        self.query_one(MeasureProgress).show(progress)

    def _measured(self, cpu: int, summary: str | None, error: str | None) -> None:
        self.measuring_cpu = None
        self.progress = None
        if error:
            self.collector.add_alert("measure_failed", "warning", error, f"CPU {cpu}")
            self.notify(f"Measurement of CPU {cpu} failed: {error}", severity="error",
                        timeout=8)
        else:
            self.collector.add_alert("measured", "info", summary or "done", f"CPU {cpu}")
            self.notify(f"CPU {cpu} measured.", timeout=3)
        self.collector.invalidate()
        if self._first_run is not None:
            self._next_first_run()
        self.refresh_frame()

    def _maybe_first_run(self) -> None:
        """Nothing measured yet (standalone): measure one CPU per cluster by itself, once
        the first frame is up and the backend is known, so the first screen fills
        with costs without a key press (`--no-auto-measure` turns it off)."""
        if self._first_run_decided or self.first_frame_at is None \
                or self.collector.backend is None:
            return
        self._first_run_decided = True
        if not self.config.auto_measure or not self.collector.first_run():
            return
        self._first_run = self._cluster_firsts()
        self._first_run_total = len(self._first_run)
        self._next_first_run()

    def _next_first_run(self) -> None:
        assert self._first_run is not None
        while self._first_run:
            cpu = self._first_run.pop(0)
            done = self._first_run_total - len(self._first_run)
            self.collector.activity = (
                f"first run: measuring one CPU per cluster ({self.config.measure_mode}, "
                f"nice 10, one at a time): CPU {cpu}, {done}/{self._first_run_total}")
            if self.start_measurement(cpu, why="first run", mode=self.config.measure_mode):
                return
        self._first_run = None
        self.collector.activity = None

    def _maybe_scheduled_measurement(self) -> None:
        """Standalone slow schedule: one core per cluster in turn."""
        if self._next_scheduled is None or time.monotonic() < self._next_scheduled:
            return
        if self.measuring_cpu is not None:
            return
        self._next_scheduled = time.monotonic() + self.config.measure_every_s
        firsts = self._cluster_firsts()
        if firsts:
            cpu = firsts[self._schedule_index % len(firsts)]
            self._schedule_index += 1
            self.start_measurement(cpu, why="scheduled")

    def _cluster_firsts(self) -> list[int]:
        """One CPU per cluster, by the engine's and the daemon's rule (qprof.hw.choose)."""
        cores = self.frame.cores if self.frame else ()
        clusters: dict[int, list[int]] = {}
        for core in cores:
            # Cores without a known cluster count as one (-1 sorts before the real ids).
            key = core.cluster if core.cluster is not None else -1
            clusters.setdefault(key, []).append(core.cpu)
        chosen, _problems = one_per_cluster(
            clusters, {c.cpu for c in cores if c.online is not False})
        return chosen

    # ------------------------------------------------------------------- export
    def action_export(self) -> None:
        if self.frame is None:
            return
        directory = self.collector.export_directory()
        try:
            info = self.collector.profile
            interval = info.profile.target_block_interval_s if info.profile else None
            path = write_report(self.frame, directory, info.name, interval)
        except (OSError, OutputError) as exc:
            self.notify(f"Export failed: {exc}", severity="error", timeout=8)
            return
        self.last_export = path
        # Every file written, by its full path (the Markdown and the HTML beside it).
        written = f"{path} and {path.with_suffix('.html')}"
        self.collector.add_alert("exported", "info", f"report written: {written}")
        # The directory, then each file on its own line: a toast wraps on spaces, and a
        # path has none (it would be cut mid-name).
        self.notify(f"Report written in {path.parent}/:\n{path.name}\n"
                    f"{path.with_suffix('.html').name}", timeout=12)
        self.refresh_frame()

    # --------------------------------------------------------------------- help
    def action_help(self) -> None:
        self.push_screen(HelpScreen())
