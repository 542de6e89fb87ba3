"""Builds one :class:`~qprof.tui.model.Frame` per refresh from the data sources, and
decides where the data come from (:func:`resolve_sources`: a ``--root`` snapshot, a
daemon's store attached live, or standalone with the monitor's own store).

No Textual here: the app calls :meth:`Collector.frame` on its 1 Hz timer; the coverage
(:meth:`Collector.evaluate`, slow) is recomputed off the UI process when a result lands.
The sources in detail: docs/FIRST_MINUTES.md.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qprof.atomicfile import OutputError, private_dir
from qprof.consensus.basis import verdict_basis
from qprof.hw.caps import CapSeen, CapTracker
from qprof.hw.cgroup import own_limit
from qprof.service.store_paths import user_stores
from qprof.tui.model import (
    AlertView,
    ClusterHistory,
    CoreView,
    CoverageView,
    Frame,
    MachineView,
    cpu_ranges,
    short_design,
)
from qprof.tui.sources.consensus import (
    Evaluation,
    ProfileInfo,
    core_costs,
    coverage_rows,
    evaluate_store,
    evaluate_store_in_child,
    load_profile_info,
)
from qprof.tui.sources.hardware import ClusterFacts, CpuFacts, HardwareSource
from qprof.tui.sources.load import LoadSource
from qprof.tui.sources.store import StoreSource
from qprof.verify.liboqs_build import qprof_command

STANDALONE = "standalone"
DAEMON = "daemon"
SNAPSHOT = "snapshot"

MEASUREMENTS_TTL_S = 5.0  # re-read the store at most this often (the daemon writes rarely)
ALERTS_SHOWN = 30

# What a coverage evaluation was made from: (store's newest result time, backend,
# profile file). A new finished run, another backend or profile makes it stale.
EvalKey = tuple[float | None, str, str]


@dataclass
class MonitorConfig:
    root: Path = Path("/")
    state_dir: Path | None = None  # None = default_state_dir()
    store_path: Path | None = None  # explicit store file (tests, `--store`)
    profile: str = "qanum"
    backend: str | None = None  # None = first available (resolved after the first frame)
    live: bool | None = None  # None = live when root is "/"
    refresh_s: float = 1.0  # 0 = no timer (frozen screens for snapshot tests)
    measure_every_s: float = 3600.0  # standalone schedule; 0 = only on demand
    measure_mode: str = "check"  # the engine's mode for `b` and scheduled measurements
    # Standalone with no stored result: measure one CPU per cluster at once, one at a
    # time (at the engine's nice 10), without a key press, in measure_mode: the first
    # figures come from `qprof check`'s method (interleaved rounds, the stopping rule),
    # not from another one, within check's time limit (60 s a CPU).
    auto_measure: bool = True
    history_len: int = 120
    export_dir: Path | None = None  # None = the state dir's exports/ (store_paths)
    clock: Callable[[], float] = time.time
    # Cap alerts: the daemon's hysteresis (qprof.hw.caps), in refreshes and seconds.
    cap_samples: int = 3
    cap_hold_s: float = 5.0


@dataclass
class Sources:
    mode: str  # STANDALONE | DAEMON | SNAPSHOT
    label: str
    hardware: HardwareSource
    load: LoadSource
    store: StoreSource | None
    store_path: Path | None  # where measurements are written (None = cannot measure)
    notes: list[str] = field(default_factory=list)


def home_short(path: Path) -> str:
    """``path`` with the home directory as ``~``: the header's store path fits 80 columns
    more often (the whole path: `qprof history`, which reads the same stores)."""
    try:
        return "~/" + str(Path(path).relative_to(Path.home()))
    except (ValueError, RuntimeError):  # not under home, or no home
        return str(path)


def _writable_dir(path: Path) -> bool:
    try:
        private_dir(path)
    except OutputError:
        return False
    return os.access(path, os.W_OK)


def resolve_sources(config: MonitorConfig) -> Sources:
    root = Path(config.root)
    hardware = HardwareSource(root, live=config.live)
    load = LoadSource(root, live=hardware.live)
    notes: list[str] = []
    if config.store_path is not None:
        path = Path(config.store_path)
        mode = SNAPSHOT if not hardware.live else STANDALONE
        label = f"store {path}" + ("" if hardware.live else f" · --root {root}")
        return Sources(mode, label, hardware, load, StoreSource(path, readonly=False),
                       path if hardware.live else None, notes)
    if not hardware.live and config.state_dir is None:
        return Sources(SNAPSHOT, f"snapshot --root {root}",
                       hardware, load, None, None, notes)
    stores = user_stores(config.state_dir)
    state_dir = stores.state_dir
    daemon_db = stores.daemon.path
    if daemon_db.exists():
        label = f"daemon store {home_short(daemon_db)}"
        if not hardware.live:
            label += f" · --root {root}"
        writable = hardware.live and os.access(daemon_db, os.W_OK)
        return Sources(DAEMON, label, hardware, load, StoreSource(daemon_db, readonly=True),
                       daemon_db if writable else None, notes)
    if not _writable_dir(state_dir):
        notes.append(f"state dir {state_dir} is not writable; using a temporary store")
        state_dir = Path(tempfile.mkdtemp(prefix="qprof-monitor-"))
    path = user_stores(state_dir).monitor.path
    if not hardware.live:
        return Sources(SNAPSHOT, f"store {home_short(path)} · --root {root}", hardware, load,
                       StoreSource(path, readonly=False) if path.exists() else None,
                       None, notes)
    return Sources(STANDALONE, f"standalone (store {home_short(path)})", hardware, load,
                   StoreSource(path, readonly=False), path, notes)


def _cpus_label(group: list[CpuFacts]) -> str:
    cpus = [c.cpu for c in group]
    return f"CPU {cpus[0]}" if len(cpus) == 1 else f"CPUs {cpu_ranges(cpus)}"


class Collector:
    """Keeps the sources, the frequency rings and the monitor's own alerts."""

    def __init__(self, config: MonitorConfig, sources: Sources | None = None) -> None:
        self.config = config
        self.sources = sources or resolve_sources(config)
        self.profile: ProfileInfo = load_profile_info(config.profile)
        self.backend: str | None = config.backend
        self._history: dict[int | None, deque[int]] = {}
        self._local_alerts: deque[AlertView] = deque(maxlen=ALERTS_SHOWN)
        self._caps = CapTracker(config.cap_samples, config.cap_hold_s)
        self._evaluation: Evaluation | None = None
        self._evaluation_key: EvalKey | None = None
        self._marker: float | None = None  # the store's newest finished result
        self._marker_at: float | None = None
        self.estimated_khz: dict[int, int] = {}  # one-off clock estimates (no cpufreq)
        self._seeded_history = False
        self._store_alerts: list[Any] = []
        self._store_alerts_at: float | None = None
        self.activity: str | None = None  # what the monitor does by itself (header)

    # ----------------------------------------------------------------- switching
    def set_profile(self, name: str) -> None:
        self.profile = load_profile_info(name)

    def set_backend(self, name: str) -> None:
        self.backend = name
        self.invalidate()

    def invalidate(self) -> None:
        """Re-read the store on the next frame (a measurement just finished)."""
        self._marker_at = None
        self._store_alerts_at = None

    def add_alert(self, kind: str, severity: str, message: str, where: str = "") -> None:
        self._local_alerts.appendleft(
            AlertView(self.config.clock(), kind, severity, where, message))

    def export_directory(self) -> Path:
        """Where `e` writes: --export-dir, else the state dir's exports/ (never the
        current directory, which may be a checkout)."""
        if self.config.export_dir is not None:
            return Path(self.config.export_dir)
        return user_stores(self.config.state_dir).exports

    @property
    def measurable(self) -> bool:
        return self.sources.store_path is not None

    def first_run(self) -> bool:
        """Standalone on this machine with nothing measured yet: the monitor's own store
        holds no result (an attached daemon measures by itself)."""
        store = self.sources.store
        return (self.sources.mode == STANDALONE and self.measurable and store is not None
                and store.last_change() is None)

    # -------------------------------------------------------------------- frame
    def machine(self) -> MachineView:
        try:
            info = self.sources.hardware.machine()
        except (OSError, ValueError) as exc:
            info = {"model": f"unreadable: {exc}", "designs": "unknown", "arch": None}
        profile = self.profile.name + (" (not loaded)" if self.profile.error else "")
        problems = list(self.sources.notes)
        if self.profile.error:
            problems.append(self.profile.error)
        if self.sources.store is not None and self.sources.store.error:
            problems.append(self.sources.store.error)
        return MachineView(
            model=info["model"], designs=info["designs"], arch=info.get("arch"),
            profile=profile, backend=self.backend or "choosing…",
            source=self.sources.label, measurable=self.measurable,
            problems=tuple(problems), activity=self.activity, quota=self._quota(),
        )

    def _quota(self) -> str | None:
        """'CPU quota 0.50 CPU (cgroup v2)': measured runs are throttled beyond it."""
        limit = own_limit(self.config.root)
        if limit is None or limit.cpus is None:
            return None
        return f"CPU quota {limit.cpus:.2f} CPU (cgroup v{limit.version})"

    # --------------------------------------------------------------- evaluation
    def evaluation_key(self) -> EvalKey | None:
        """What the coverage should be computed from now; None when there is nothing
        to evaluate (no store, backend or profile). Only a cheap query per TTL."""
        store = self.sources.store
        if store is None or self.backend is None or self.profile.profile is None:
            return None
        now = time.monotonic()
        if self._marker_at is None or now - self._marker_at > MEASUREMENTS_TTL_S:
            self._marker = store.last_change()
            self._marker_at = now
        return (self._marker, self.backend, self.profile.location)

    def evaluation_due(self) -> EvalKey | None:
        """The key to evaluate when the shown evaluation is stale, else None. A store
        without results is settled here at once (nothing slow to compute)."""
        key = self.evaluation_key()
        if key is None or key == self._evaluation_key:
            return None
        if key[0] is None:
            self.set_evaluation(key, Evaluation())
            return None
        return key

    def evaluate(self, key: EvalKey, in_child: bool = True,
                 stop: threading.Event | None = None) -> Evaluation:
        """`qprof check`'s verdict for ``key``: slow (bootstrap CIs), blocking; in a
        child process by default so that the UI process stays responsive."""
        store = self.sources.store
        if store is None:
            return Evaluation()
        root = str(self.config.root)  # what each CPU is: the profile's policy
        if in_child:
            return evaluate_store_in_child(store.path, self.profile, key[1], stop, root=root)
        return evaluate_store(store.path, self.profile, key[1], root)

    def set_evaluation(self, key: EvalKey, evaluation: Evaluation) -> None:
        self._evaluation, self._evaluation_key = evaluation, key

    def current_evaluation(self) -> tuple[Evaluation | None, bool]:
        """(evaluation to show, still evaluating). An older evaluation of the same
        backend and profile stays on screen until the new one is ready; one of another
        backend or profile is never shown."""
        key = self.evaluation_key()
        if key is None:
            return None, False
        done = self._evaluation_key
        if done is None or done[1:] != key[1:]:
            return None, True
        return self._evaluation, done != key

    def evaluate_now(self) -> None:
        """Synchronous evaluation (scripts and tests without the app's worker)."""
        key = self.evaluation_due()
        if key is not None:
            self.set_evaluation(key, self.evaluate(key, in_child=False))

    def frame(self) -> Frame:
        now = self.config.clock()
        hw = self.sources.hardware
        try:
            cpus = hw.cpus()
            clusters = hw.clusters()
        except (OSError, ValueError) as exc:  # NotLinuxRoot is a ValueError
            cpus, clusters = [], []
            hw.problems.append(str(exc))
        loads = self.sources.load.sample()
        evaluation, evaluating = self.current_evaluation()
        costs = core_costs(evaluation)
        cores = tuple(self._core_view(c, loads.get(c.cpu), costs.get(c.cpu)) for c in cpus)
        self._watch_caps(cpus, now)
        self._record_history(cpus, clusters, now)
        missing = "not measured here"
        if self.sources.store is not None:
            missing = "evaluating…" if evaluating and evaluation is None else \
                "not measured yet"
        coverage: tuple[CoverageView, ...] = coverage_rows(
            evaluation, self.profile, clusters, self.backend, missing=missing)
        note = None
        if self.sources.store is None:
            note = "snapshot of another machine: costs not measured here"
        elif evaluation is not None and evaluation.error:
            note = evaluation.error
        elif evaluating and evaluation is None:
            note = "evaluating the stored measurements…"
        elif self.activity and not (evaluation and evaluation.results):
            note = f"not measured yet — {self.activity}"
        elif not (evaluation and evaluation.results):
            note = ("not measured yet — press b to measure the selected core"
                    if self.measurable else "not measured yet")
        return Frame(
            taken_at=now,
            machine=self.machine(),
            cores=cores,
            coverage=coverage,
            history=self._histories(clusters, cpus),
            alerts=self._alerts(),
            coverage_note=note,
            verdict_note=self.verdict_note(),
            preflight=evaluation.preflight if evaluation is not None else (),
            worst=evaluation.worst if evaluation is not None else (),
        )

    def verdict_note(self) -> str | None:
        """One line when the backend can give no verdict (numba alone is comparison only,
        qprof.consensus.basis): why, and what to run for one."""

        profile = self.profile.profile
        if profile is None or self.backend is None or self.sources.store is None:
            return None
        if verdict_basis(profile, self.backend) != "comparison":
            return None
        # Why (the constants are held to another verifier: the `v` dialog and the help
        # say which) and what to run, a command that runs from the user's shell; shown
        # until liboqs is there.
        run = (f"run `{qprof_command()} setup liboqs`, restart"
               if profile.verifier == "liboqs" else f"install {profile.verifier}")
        return f"No verdict: {self.backend} alone is comparison only: {run}"

    def _core_view(self, c: CpuFacts, load: float | None,
                   cost: tuple[dict[str, float], dict[str, int], str | None] | None
                   ) -> CoreView:
        times, vu, statistic = cost if cost else ({}, {}, None)
        return CoreView(
            cpu=c.cpu, online=c.online, cluster=c.cluster, design=c.design, part=c.part,
            core_class=c.core_class, governor=c.governor, cur_khz=c.cur_khz,
            max_khz=c.max_khz, hw_max_khz=c.hw_max_khz, capped=c.capped,
            cap_factor=c.cap_factor, cap_cause=c.cap_cause, estimated=c.estimated,
            load_pct=load, times_ns=times, vu=vu, statistic=statistic,
            est_khz=self.estimated_khz.get(c.cpu) if c.cur_khz is None else None,
        )

    # ---------------------------------------------------------- clock estimates
    def cpus_to_estimate(self) -> list[int]:
        """Online CPUs of the live machine without any frequency reading (VMs): their
        clock can be estimated once by timing a loop (see :func:`estimate_clocks`)."""
        if not self.sources.hardware.live or self.estimated_khz:
            return []
        try:
            cpus = self.sources.hardware.cpus()
        except (OSError, ValueError):
            return []
        if any(c.cur_khz is not None for c in cpus):
            return []  # cpufreq (or cpuinfo) answers: nothing to guess
        return [c.cpu for c in cpus if c.online is not False]

    # ------------------------------------------------------------ caps as alerts
    def _watch_caps(self, cpus: list[CpuFacts], now: float) -> None:
        """The monitor's own cap alerts (standalone has no daemon to raise them): the
        daemon's tracker and hysteresis, one per cluster (a frequency domain changes
        together). A cap present at start is in the table, not news."""
        members: dict[int | None, list[CpuFacts]] = {}
        for c in cpus:
            if c.online is not False:
                members.setdefault(c.cluster, []).append(c)
        for cluster, group in members.items():
            known = [c for c in group if c.capped is not None]
            worst = max(known, key=lambda c: (bool(c.capped), c.cap_factor or 0.0), default=None)
            seen = CapSeen(any(c.capped for c in known) if known else None,
                           *((worst.cap_factor, worst.cap_cause, worst.max_khz, worst.hw_max_khz)
                             if worst is not None and worst.capped else ()))
            change = self._caps.update(cluster, seen, now)
            if change is None or change.at_startup:
                continue
            self.add_alert("cap_started" if change.started else "cap_ended",
                           "warning" if change.started else "info", change.message(),
                           _cpus_label(group))

    # ------------------------------------------------------------------ history
    def _record_history(self, cpus: list[CpuFacts], clusters: list[ClusterFacts],
                        now: float) -> None:
        if not self._seeded_history:
            self._seeded_history = True
            self._seed_history_from_store(clusters, now)
        if not self.sources.hardware.live and self._history:
            return  # a snapshot does not move: one point is the whole story
        by_cpu = {c.cpu: c for c in cpus}
        for key, members in self._cluster_members(clusters, cpus):
            values = [khz for m in members
                      if m in by_cpu and (khz := by_cpu[m].cur_khz) is not None]
            if values:
                ring = self._history.setdefault(key, deque(maxlen=self.config.history_len))
                ring.append(max(values))  # the fastest core shows a cap first

    def _seed_history_from_store(self, clusters: list[ClusterFacts], now: float) -> None:
        store = self.sources.store
        if store is None or self.sources.mode != DAEMON:
            return
        since = now - self.config.history_len * max(self.config.refresh_s, 1.0)
        for cluster in clusters:
            if not cluster.cpus:
                continue
            ring = self._history.setdefault(cluster.id, deque(maxlen=self.config.history_len))
            for _ts, khz in store.freq_history(cluster.cpus[0], since):
                ring.append(khz)

    @staticmethod
    def _cluster_members(clusters: list[ClusterFacts], cpus: list[CpuFacts]
                         ) -> list[tuple[int | None, tuple[int, ...]]]:
        if clusters:
            return [(c.id, c.cpus) for c in clusters]
        return [(None, tuple(c.cpu for c in cpus))]

    def _histories(self, clusters: list[ClusterFacts], cpus: list[CpuFacts]
                   ) -> tuple[ClusterHistory, ...]:
        out = []
        hw_max = {c.cpu: c.hw_max_khz or c.max_khz for c in cpus}
        for key, members in self._cluster_members(clusters, cpus):
            design = next((short_design(c.design) for c in clusters if c.id == key), None)
            label = (f"cl{key} {design}" if key is not None else "all") + \
                f" {cpu_ranges(members)}"
            scale = max((khz for m in members if (khz := hw_max.get(m))), default=None)
            out.append(ClusterHistory(key, label, tuple(self._history.get(key, ())), scale))
        return tuple(out)

    # ------------------------------------------------------------------- alerts
    def _alerts(self) -> tuple[AlertView, ...]:
        merged = list(self._local_alerts)
        store = self.sources.store
        if store is not None:
            now = time.monotonic()
            if self._store_alerts_at is None or now - self._store_alerts_at > MEASUREMENTS_TTL_S:
                self._store_alerts = store.alerts(ALERTS_SHOWN)
                self._store_alerts_at = now
            for a in self._store_alerts:
                where = (f"CPU {a.cpu}" if a.cpu is not None
                         else f"cluster {a.cluster}" if a.cluster is not None else "")
                merged.append(AlertView(ts=a.ts, kind=a.kind, severity=a.severity,
                                        where=where, message=a.message))
        merged.sort(key=lambda a: a.ts, reverse=True)
        return tuple(merged[:ALERTS_SHOWN])

    def close(self) -> None:
        if self.sources.store is not None:
            with contextlib.suppress(Exception):
                self.sources.store.close()
