"""Frequency and cap state of one CPU while its workers run: ``FreqSample`` records, and
per round whether the CPU was capped (a cap that comes or goes mid-run marks only its
rounds). A round in which qprof's cgroup was throttled (its CPU quota) is capped too,
with the cause ``cgroup CPU quota`` and the quota's factor (:mod:`qprof.hw.cgroup`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from qprof.hw import Topology, read_topology
from qprof.hw.cgroup import CAUSE, CpuLimit, own_limit, read_throttling
from qprof.hw.freq import CpuFreq
from qprof.measure import hwinfo
from qprof.measure.records import FreqSample, Record

FREQ_INTERVAL_S = 0.5
CapState = tuple[bool | None, float | None, CpuFreq | None]  # capped, factor, worst


class FreqWatch:
    """Samples one CPU's frequency/cap while a worker runs; records go to the sink.

    A worker measures several rounds; the engine calls :meth:`set_round` as the worker
    reports each task, so a cap that comes or goes mid-run marks only its rounds.
    """

    def __init__(self, root: str, cpu: int, run_id: str, emit: Callable[[Record], None]) -> None:
        self.root, self.cpu, self.run_id, self.emit = root, cpu, run_id, emit
        self.round: int | None = None
        self.samples: list[tuple[int | None, CpuFreq]] = []
        self._topology: Topology | None = None
        self._topology_tried = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # qprof's cgroup when it has a CPU quota: its throttled periods, sample by sample
        self.limit: CpuLimit | None = None
        self.throttled: list[tuple[int | None, int]] = []

    def sample(self) -> None:
        if not self._topology_tried:
            # Read once per run: the frequency files are what changes between samples.
            self._topology_tried = True
            try:
                self._topology = read_topology(self.root)
            except Exception:
                self._topology = None  # the frequency reader says why, sample by sample
            limit = own_limit(self.root) if self.root == "/" else None
            self.limit = limit if limit is not None and limit.cpus is not None else None
        if self.limit is not None and self.limit.limited_by is not None:
            t = read_throttling(Path(self.limit.limited_by))
            if t is not None:
                with self._lock:
                    self.throttled.append((self.round, t.throttled))
        f = hwinfo.frequencies(self.root, [self.cpu], self._topology).get(self.cpu)
        if f is None:
            return
        with self._lock:
            rnd = self.round
            self.samples.append((rnd, f))
        if f.cur_khz is None and f.max_khz is None and f.hw_max_khz is None:
            return  # nothing to record (e.g. a VM without cpufreq)
        self.emit(
            FreqSample(
                run_id=self.run_id,
                taken_at=time.time(),
                cpu=self.cpu,
                cur_khz=f.cur_khz,
                max_khz=f.max_khz,
                hw_max_khz=f.hw_max_khz,
                capped=f.capped,
                cause=f.cap_cause,
                round=rnd,
            )
        )

    def start(self, round_index: int) -> None:
        self.round = round_index
        self.samples = []
        self._stop.clear()
        self.sample()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def set_round(self, round_index: int) -> None:
        if round_index != self.round:
            with self._lock:
                self.round = round_index
            self.sample()

    def _loop(self) -> None:
        while not self._stop.wait(FREQ_INTERVAL_S):
            self.sample()

    @staticmethod
    def _summarize(samples: list[CpuFreq]) -> CapState:
        known = [s for s in samples if s.capped is not None]
        if not known:
            return None, None, None
        capped = [s for s in known if s.capped]
        if not capped:
            return False, None, None
        worst = max(capped, key=lambda s: s.cap_factor or 0.0)
        return True, worst.cap_factor, worst

    def finish(self) -> CapState:
        """Stop sampling; the cap state over the whole worker."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.sample()
        state = self._summarize([f for _r, f in self.samples])
        counts = [n for _r, n in self.throttled]
        return self._quota(state, bool(counts) and counts[-1] > counts[0])

    def _quota(self, state: CapState, throttled: bool) -> CapState:
        """``state`` with the cgroup's quota as the cap when it throttled (and slows more)."""
        if not throttled or self.limit is None:
            return state
        factor = self.limit.factor
        if state[0] and (state[1] or 0.0) >= (factor or 0.0):
            return state
        return True, factor, CpuFreq(self.cpu, True, capped=True, cap_factor=factor,
                                     cap_cause=CAUSE)

    def _throttled_rounds(self) -> set[int]:
        """Rounds in which the throttled count went up (from the sample before each)."""
        out: set[int] = set()
        for (_r0, before), (rnd, after) in zip(self.throttled, self.throttled[1:],
                                                strict=False):
            if rnd is not None and after > before:
                out.add(rnd)
        return out

    def by_round(self) -> dict[int, CapState]:
        rounds: dict[int, list[CpuFreq]] = {}
        for rnd, f in self.samples:
            if rnd is not None:
                rounds.setdefault(rnd, []).append(f)
        hit = self._throttled_rounds()
        return {rnd: self._quota(self._summarize(fs), rnd in hit)
                for rnd, fs in rounds.items()}
