"""Noise simulator: check-mode runs with a known true ratio, on a host shaped like this one.

A simulated run is what ``qprof check`` records on one CPU, made by the engine's own parts:
its ``Task`` s, the worker's :func:`qprof.measure.timing.interleave` scheduling the turns
(with time functions that return simulated durations), the worker's ``TaskResult`` and the
engine's :func:`qprof.measure.collect.collect` turning them into ``Measurement`` records
(per-round cap state as the frequency sampler gives it), and, with ``Config.adaptive``, the
engine's stopping rule adding B/A pairs within the time limit. ``FreqSample`` and ``Note``
records come as a real run has them. The records then go through the same reduction and
verdict code as real runs, through :func:`estimate` (the one adapter to the estimator).

The host (``Host``): every operation costs its suite's quiet cost times the host's speed at
that moment (drift x cap x contention burst), times a small lognormal jitter, plus timer and
device interrupts (a Poisson process in time, so long operations collect more of them; the
parameters reproduce the quantiles of liboqs verify on this EPYC Zen 5 KVM guest: ML-DSA-44
p10/p50 0.99 and a 1-2 % tail of +20 us, SLH-DSA-SHAKE-256s p10/p50 0.977, p90/p50 1.05).
The true ratio of a suite is the ratio of the medians of these quiet distributions
(the seeds' rule on a quiet core), computed once from a large quiet sample.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from qprof.consensus import Profile, load_profile
from qprof.consensus.estimate import stats
from qprof.consensus.estimate.stopping import StoppingRule
from qprof.measure.adaptive import PairCredit, floor_s, pair_fits
from qprof.measure.collect import Where, collect
from qprof.measure.config import MODE_SETTINGS
from qprof.measure.fixtures import pool_start
from qprof.measure.freqwatch import CapState
from qprof.measure.protocol import Task, TaskResult, WorkerResult
from qprof.measure.records import FreqSample, Measurement, Note, Record
from qprof.measure.timing import interleave

RUN_ID = "sim"
EPOCH = 1_790_000_000.0  # unix time of a simulated run's start
# Quiet cost of one verify (seconds), liboqs 0.16 on this host (AMD EPYC Zen 5, KVM).
QUIET_COST_S = {
    "ML-DSA-44": 14.6e-6,
    "ML-DSA-87": 32.6e-6,
    "SLH-DSA-SHAKE-128s": 547e-6,
    "SLH-DSA-SHAKE-256s": 1.12e-3,
}
UNIT = "ML-DSA-44"
JITTER_SIGMA = 0.006  # lognormal jitter of every operation
INTERRUPTS_PER_S = 1200.0  # interrupts hitting the measured thread (Poisson in time)
INTERRUPT_MEAN_S = 20e-6  # exponential length of one
ROUND_GAP_S = 0.005  # engine and worker work between two rounds
HW_MAX_KHZ = 3_000_000
WOBBLE_S = 0.004  # a contention phase's level changes at this scale


@dataclass(frozen=True)
class Shape:
    """A documented noise shape: how the host's speed moves during a run."""

    name: str
    text: str
    bursts_per_s: float = 0.0  # contention spells: Poisson arrivals...
    burst_s: tuple[float, float] = (0.1, 2.0)  # ... uniform length ...
    burst_slowdown: tuple[float, float] = (1.3, 1.7)  # ... and uniform slowdown factor
    drift_per_s: float = 0.0  # the host slows by this fraction per second
    cap_at: float | None = None  # fraction of the run after which a cap holds ...
    cap_factor: float = 1.5  # ... slowing the core this much
    cpufreq: bool = True  # the cap is visible in cpufreq (False: a VM; only timings show it)
    offline_at: float | None = None  # fraction of the run after which the CPU goes offline
    # Contention phases (a neighbour on the SMT sibling, another tenant): alternating
    # with quiet stretches, this share of the time, each lasting uniform ``phase_s``, the
    # unit slowed by a uniform factor in ``phase_slowdown``.
    phase_share: float = 0.0
    phase_s: tuple[float, float] = (1.0, 60.0)
    phase_slowdown: tuple[float, float] = (1.02, 1.15)
    # How much of the unit's slowdown (in phases and spells) each suite takes: 1 = the
    # same (the ratio holds), < 1 = the ratio falls under contention, > 1 = it rises.
    beta: tuple[tuple[str, float], ...] = ()
    # The suites' quiet ratio drifts by this fraction per second (the host's own state).
    ratio_drift_per_s: float = 0.0

    def beta_of(self, suite: str) -> float:
        return dict(self.beta).get(suite, 1.0)


# Fitted to `qprof check` runs on the Intel Xeon guest (2 vCPU, liboqs 0.16) while other
# engineers' jobs shared its cores: the unit ran more than 3 % slower than its quiet speed
# in ~85 % of its turns, by 2-15 %; in those phases the ratios fell (SLH-DSA-SHAKE-128s
# by ~48 bp, 256s ~37 bp, ML-DSA-87 ~35 bp per 1 % of unit slowdown: the suites take
# 52 %, 63 %, 65 % of the unit's slowdown).
HOST_BETA = (("ML-DSA-87", 0.65), ("SLH-DSA-SHAKE-128s", 0.52), ("SLH-DSA-SHAKE-256s", 0.63))
# The host: SLH-DSA slowed by 50-80 % where the unit slowed by 40 %.
UP_BETA = (("ML-DSA-87", 1.0), ("SLH-DSA-SHAKE-128s", 1.6), ("SLH-DSA-SHAKE-256s", 1.6))

SHAPES = (
    Shape("quiet", "quiet floor only: jitter and interrupts"),
    Shape("bursts", "contention spells of 0.1-2 s at +30-70 %, about 25 % of the time",
          bursts_per_s=0.25),
    Shape("heavy", "contention spells of 0.1-2 s at +30-70 %, about 60 % of the time",
          bursts_per_s=0.9),
    Shape("drift", "slow drift: the host slows by 0.5 % per second", drift_per_s=0.005),
    Shape("cap", "a frequency cap (x1.5) starts 40 % into the run, seen in cpufreq",
          cap_at=0.4),
    Shape("vm-step", "the same cap on a VM: no cpufreq, only the timings show it",
          cap_at=0.4, cpufreq=False),
    Shape("host", "this host: spells 25 % of the time, drift 0.5 %/s",
          bursts_per_s=0.25, drift_per_s=0.005),
    Shape("offline", "the CPU goes offline 45 % into the run", offline_at=0.45),
    Shape("smt-here", "the Xeon guest: phases of 1-60 s, 85 % of the time, unit +2-15 %, "
          "the suites slowed less (ratio -35 to -48 bp per 1 %)", phase_share=0.85,
          beta=HOST_BETA),
    Shape("smt-up", "the issue's host: phases of 1-60 s, 40 % of the time, unit +20-40 %, "
          "SLH-DSA slowed 1.6x as much", phase_share=0.4, phase_slowdown=(1.2, 1.4),
          beta=UP_BETA),
    Shape("ratio-drift", "the quiet ratio itself drifts +1 % per minute, phases of 1-20 s "
          "30 % of the time", phase_share=0.3, phase_s=(1.0, 20.0), beta=HOST_BETA,
          ratio_drift_per_s=0.01 / 60),
)
# The new shapes: contention that changes the ratio, phases of seconds to minutes, drift.
RATIO_SHAPES = ("smt-here", "smt-up", "ratio-drift")
SHAPES_BY_NAME = {s.name: s for s in SHAPES}


class CpuOffline(Exception):
    """The simulated CPU went offline: the worker exits (EXIT_AFFINITY)."""


class Host:
    """The simulated clock and the host's speed at each moment of it."""

    def __init__(self, shape: Shape, rng: np.random.Generator, run_s: float) -> None:
        self.shape, self.rng, self.run_s = shape, rng, run_s
        self.t = 0.0
        starts: list[float] = []
        t = 0.0
        while shape.bursts_per_s > 0:
            t += rng.exponential(1.0 / shape.bursts_per_s)
            if t > run_s * 3:  # adaptive rounds and slow spells stretch the run
                break
            starts.append(t)
        self.burst_start = starts
        self.burst_end = [s + rng.uniform(*shape.burst_s) for s in starts]
        self.burst_slow = [rng.uniform(*shape.burst_slowdown) for _ in starts]
        # Contention phases: quiet stretches and phases alternate, from a random point.
        self.phase_start: list[float] = []
        self.phase_end: list[float] = []
        self.phase_slow: list[float] = []
        self.phase_wobble: list[np.ndarray] = []
        if shape.phase_share > 0:
            mean = sum(shape.phase_s) / 2
            gap = mean * (1 - shape.phase_share) / shape.phase_share
            t = -rng.uniform(0, mean + gap)
            while t < run_s * 3:
                t += rng.exponential(gap) if gap > 0 else 0.0
                length = rng.uniform(*shape.phase_s)
                self.phase_start.append(t)
                self.phase_end.append(t + length)
                self.phase_slow.append(rng.uniform(*shape.phase_slowdown))
                # A neighbour's load is not steady at the scale of turns: each 4 ms of a
                # phase takes 40-160 % of the phase's slowdown (as the unit's turn
                # medians spread under contention on the Xeon guest).
                self.phase_wobble.append(rng.uniform(0.4, 1.6, int(length / WOBBLE_S) + 2))
                t += length

    def capped(self, t: float) -> bool:
        return self.shape.cap_at is not None and t >= self.shape.cap_at * self.run_s

    def contention(self, t: float) -> float:
        """The unit's slowdown factor from neighbours at time t (1.0 = none)."""
        i = bisect.bisect_right(self.burst_start, t) - 1
        # Spells may overlap: the latest one that still holds decides.
        while i >= 0 and self.burst_start[i] > t - self.shape.burst_s[1]:
            if self.burst_end[i] > t:
                return self.burst_slow[i]
            i -= 1
        j = bisect.bisect_right(self.phase_start, t) - 1
        if j >= 0 and self.phase_end[j] > t:
            wobble = self.phase_wobble[j][int((t - self.phase_start[j]) / WOBBLE_S)]
            return 1.0 + (self.phase_slow[j] - 1.0) * float(wobble)
        return 1.0

    def speed(self, t: float, suite: str = UNIT) -> float:
        """How much slower than quiet ``suite`` runs at time t (1.0 = quiet)."""
        s = 1.0 + self.shape.drift_per_s * t
        if self.capped(t):
            s *= self.shape.cap_factor
        c = self.contention(t)
        if suite != UNIT:
            s *= 1.0 + self.shape.ratio_drift_per_s * t
            return s * (1.0 + self.shape.beta_of(suite) * (c - 1.0))
        return s * c

    def check_online(self) -> None:
        at = self.shape.offline_at
        if at is not None and self.t >= at * self.run_s:
            raise CpuOffline


class Operation:
    """A time function (as the worker's): one verify of ``suite``, in simulated seconds."""

    CHUNK = 4096

    def __init__(self, host: Host, suite: str, pool: np.ndarray) -> None:
        self.host, self.cost, self.suite = host, QUIET_COST_S[suite], suite
        self.pool = pool  # each pool signature's cost factor
        # Timed call j verifies pool signature (start + j) % len(pool), as the worker.
        self.calls = 0
        self.start = 0
        self._quiet = np.empty(0)
        self._i = 0

    def __call__(self, loops: int) -> float:
        if self._i >= len(self._quiet):
            self._quiet = quiet_durations(self.host.rng, self.cost, self.CHUNK)
            self._i = 0
        host = self.host
        host.check_online()
        sig = float(self.pool[(self.start + self.calls) % len(self.pool)])
        self.calls += 1
        dt = float(self._quiet[self._i]) * sig * host.speed(host.t, self.suite)
        self._i += 1
        host.t += dt
        return dt


def quiet_durations(rng: np.random.Generator, cost: float, n: int) -> np.ndarray:
    """``n`` quiet-floor durations of an operation costing ``cost`` seconds."""
    base = cost * np.exp(rng.normal(0.0, JITTER_SIGMA, n))
    hits = rng.poisson(INTERRUPTS_PER_S * base)
    # The sum of k exponential interrupt lengths is gamma(k); k = 0 adds nothing.
    extra = np.where(hits > 0, rng.gamma(np.maximum(hits, 1), INTERRUPT_MEAN_S), 0.0)
    return base + extra


# What one signature costs to verify depends on it: each pool signature's cost factor is
# lognormal with this sigma (measured: 48 fresh SLH-DSA-SHAKE-128s signatures 0.92-1.14x
# their median, sd 420 bp; SLH-DSA-SHAKE-256s 410 bp; ML-DSA ~50 bp), and each run signs
# its own pool (``pool_size`` signatures, as qprof.measure.fixtures).
SIGNATURE_SIGMA = {"ML-DSA-44": 0.005, "ML-DSA-87": 0.005, "SLH-DSA-SHAKE-128s": 0.042,
                   "SLH-DSA-SHAKE-256s": 0.041}
POOL_SIZE = {"ML-DSA-44": 32, "ML-DSA-87": 32, "SLH-DSA-SHAKE-128s": 256,
             "SLH-DSA-SHAKE-256s": 256}


def signature_pool(rng: np.random.Generator, suite: str, size: int) -> np.ndarray:
    return np.exp(rng.normal(0.0, SIGNATURE_SIGMA[suite], size))


@cache
def true_ratio(suite: str) -> float:
    """median(suite) / median(unit) over the quiet distributions of every signature one
    could make (an infinite pool): the truth a run estimates."""
    rng = np.random.default_rng(7)

    def med(s: str) -> float:
        n = 400_000
        return float(np.median(quiet_durations(rng, QUIET_COST_S[s], n)
                               * signature_pool(rng, s, n)))

    return med(suite) / med(UNIT)


CHECK = MODE_SETTINGS["check"]


@dataclass
class Config:
    """The check mode's settings (qprof.measure.config.MODE_SETTINGS["check"])."""

    rounds: int = CHECK.rounds
    budget_s: float = CHECK.budget_s
    min_n: int = CHECK.min_n
    max_n: int = CHECK.max_n
    block_s: float = CHECK.interleave_block_s
    # Extra B/A pairs by the engine's stopping rule (statistic "auto", as `qprof check`),
    # up to max_rounds or the time limit (`qprof check --time-limit`, simulated seconds).
    adaptive: bool = False
    max_rounds: int = CHECK.max_rounds
    time_limit_s: float = 60.0
    min_cpu_s: float = CHECK.min_cpu_s  # before the rule's "sure" may end the rounds
    cpu: int = 1
    backend: str = "liboqs"
    suites: tuple[str, ...] = tuple(QUIET_COST_S)
    pool: bool = True  # signature pools, recorded per value (False: records of old runs)


@dataclass
class SimRun:
    shape: Shape
    seed: int
    records: list[Record]
    truth: dict[str, float]  # suite -> true ratio to the unit

    @property
    def measurements(self) -> list[Measurement]:
        return [r for r in self.records if isinstance(r, Measurement)]


def planned_run_s(cfg: Config) -> float:
    """Quiet wall time of the run's rounds (the time base of the shapes' fractions)."""
    per_round = sum(min(cfg.max_n, cfg.budget_s / QUIET_COST_S[s]) * QUIET_COST_S[s]
                    for s in cfg.suites)
    return cfg.rounds * (per_round + ROUND_GAP_S)


def simulate_run(shape: Shape, seed: int, cfg: Config | None = None) -> SimRun:
    """One check-mode run on one CPU under ``shape``; records in the engine's order."""
    cfg = cfg or Config()
    rng = np.random.default_rng(seed)
    host = Host(shape, rng, planned_run_s(cfg))
    pools = {s: (signature_pool(rng, s, POOL_SIZE[s]) if cfg.pool else np.ones(1))
             for s in cfg.suites}
    ops = [Operation(host, s, pools[s]) for s in cfg.suites]
    records: list[Record] = []
    fixed_n: dict[str, int] = {}
    mine: list[Measurement] = []
    rule = StoppingRule(cfg.suites[0], cfg.rounds, "auto", profile=load_profile("qanum"))
    pair_budget = 2 * cfg.budget_s * len(cfg.suites)
    seconds: list[float] = []

    def freq(rnd: int) -> bool:
        cap = host.capped(host.t)
        if shape.cpufreq:
            cur = round(HW_MAX_KHZ / shape.cap_factor) if cap else HW_MAX_KHZ
            records.append(FreqSample(RUN_ID, EPOCH + host.t, cfg.cpu, cur, cur, HW_MAX_KHZ,
                                      cap, "policy" if cap else None, rnd))
        return cap

    def one_round(rnd: int) -> None:
        started = host.t
        tasks = [Task(s, cfg.backend, "verify", cfg.budget_s, cfg.min_n, cfg.max_n, rnd,
                      fixed_n.get(s)) for s in cfg.suites]
        seen = [freq(rnd)]
        def reset() -> None:  # as the worker: count only the timed calls
            for op in ops:
                op.calls = 0
                op.start = pool_start(rnd, len(op.pool))

        timed = interleave(ops, tasks, [t.n for t in tasks], cfg.block_s,
                           before_timing=reset)
        seen.append(freq(rnd))
        host.t += ROUND_GAP_S
        results = [TaskResult(i, t.name, len(v), 1, EPOCH + started, EPOCH + host.t,
                              tuple(v), turn_size=k,
                              pool_size=len(pools[t.suite]) if cfg.pool else None,
                              pool_start=pool_start(rnd, len(pools[t.suite])))
                   for i, (t, v, k) in enumerate(zip(tasks, timed.values, timed.per_turn,
                                                     strict=True))]
        # As the frequency sampler: a round is capped when any of its samples was.
        caps: dict[int, CapState] = {rnd: (any(seen), shape.cap_factor if any(seen) else None,
                                           None) if shape.cpufreq else (None, None, None)}
        got = collect(Where(RUN_ID, cfg.cpu, None, 5000), tasks,
                      WorkerResult(cfg.cpu, results), caps)
        for m in got.measurements:
            fixed_n.setdefault(m.suite, m.n)
        mine.extend(got.measurements)
        seconds.append(host.t - started)

    # As the engine: the rule asked past the floor, and again after its pairs.
    credit = PairCredit(floor_s(cfg.min_cpu_s, cfg.time_limit_s, 1))
    try:
        target = cfg.rounds
        rnd = 0
        while rnd < target:
            one_round(rnd)
            rnd += 1
            if (rnd == target and cfg.adaptive and target + 2 <= cfg.max_rounds
                    and pair_fits(host.t, cfg.time_limit_s, pair_budget, seconds,
                                  [cfg.budget_s * len(cfg.suites)] * len(seconds), 0.0)
                    and credit.take(rule, mine, cfg.cpu, host.t)):
                target += 2
    except CpuOffline:
        # The worker exits on the lost pinning and the engine keeps nothing of it
        # (a non-zero exit aborts the CPU without collecting).
        mine = []
        records.append(Note(RUN_ID, "error", f"CPU {cfg.cpu} aborted: CPU {cfg.cpu} went "
                            "offline or the pinning was changed", cfg.cpu, "cpu_aborted"))
    records.extend(mine)
    # A drifting quiet ratio: the truth of this run is its ratio at the run's middle.
    drift = 1.0 + shape.ratio_drift_per_s * host.t / 2
    return SimRun(shape, seed, records,
                  {s: true_ratio(s) * (drift if s != UNIT else 1.0) for s in cfg.suites})


# ---------------------------------------------------------------- the estimator, adapted


@dataclass(frozen=True)
class Outcome:
    """One suite's verdict, in the terms the simulator scores."""

    suite: str
    statistic: str  # the statistic the estimate used
    ratio: float  # unit_vu x estimate / unit estimate, before the ceiling
    vu_estimate: int
    vu_low: int | None
    vu_high: int | None
    confidence: str | None
    undecided: bool = False  # too few quiet data: the verdict says unsure, whatever


def estimate(profile: Profile, records: list[Record], statistic: str) -> list[Outcome]:
    """THE adapter: the verdict the product uses, on a run's records."""
    from qprof.consensus.verdict import evaluate

    ms = [r for r in records if isinstance(r, Measurement)]
    return [
        Outcome(r.suite, r.statistic, profile.unit_vu * r.suite_time_ns / r.unit_time_ns,
                r.vu_estimate, r.vu_ci_low, r.vu_ci_high, r.confidence,
                r.estimate.undecided is not None)
        for r in evaluate(profile, ms, statistic=statistic)
    ]


# ---------------------------------------------------------------- scoring


STATISTICS = ("median", "p10", "paired", "auto")


@dataclass
class Cell:
    """One (shape, statistic, suite) of the table, over ``runs`` simulated runs."""

    shape: str
    statistic: str
    suite: str
    errors_bp: list[float] = field(default_factory=list)  # estimate vs truth, per run
    covered: list[bool] = field(default_factory=list)  # the 95 % interval held the truth
    inside: list[bool] = field(default_factory=list)  # the estimate lay inside its interval
    runs: int = 0  # runs simulated (some may give no verdict: CPU offline)
    used: dict[str, int] = field(default_factory=dict)  # statistic actually used -> runs
    undecided: int = 0  # runs whose estimate could decide nothing (scored apart)

    @property
    def verdicts(self) -> int:
        return len(self.errors_bp)

    @property
    def bias_bp(self) -> float:
        return float(np.mean(self.errors_bp)) if self.errors_bp else math.nan

    @property
    def spread_bp(self) -> float:
        return float(np.std(self.errors_bp, ddof=1)) if len(self.errors_bp) > 1 else math.nan

    @property
    def rms_bp(self) -> float:
        return float(np.sqrt(np.mean(np.square(self.errors_bp)))) if self.errors_bp else math.nan

    @property
    def coverage(self) -> float:
        return float(np.mean(self.covered)) if self.covered else math.nan


def score(run: SimRun, outcomes: Iterable[Outcome], statistic: str, profile: Profile,
          cells: dict[tuple[str, str, str], Cell]) -> None:
    for suite in run.truth:
        if suite != profile.unit_suite:
            cells.setdefault((run.shape.name, statistic, suite),
                             Cell(run.shape.name, statistic, suite)).runs += 1
    for o in outcomes:
        if o.suite == profile.unit_suite:
            continue
        c = cells[(run.shape.name, statistic, o.suite)]
        if o.undecided:
            c.undecided += 1
            c.inside.append(o.vu_low is None or o.vu_high is None
                            or o.vu_low <= o.vu_estimate <= o.vu_high)
            continue
        truth = run.truth[o.suite]
        c.errors_bp.append(stats.bp(o.ratio / (profile.unit_vu * truth) - 1.0))
        true_vu = math.ceil(profile.unit_vu * truth)
        c.covered.append(o.vu_low is not None and o.vu_high is not None
                         and o.vu_low <= true_vu <= o.vu_high)
        c.inside.append(o.vu_low is not None and o.vu_high is not None
                        and o.vu_low <= o.vu_estimate <= o.vu_high)
        c.used[o.statistic] = c.used.get(o.statistic, 0) + 1


def simulate_table(profile: Profile, shapes: Iterable[Shape] = SHAPES, runs: int = 20,
                   seed: int = 1, cfg: Config | None = None,
                   statistics: Iterable[str] = STATISTICS,
                   progress: Callable[[str], None] | None = None,
                   ) -> dict[tuple[str, str, str], Cell]:
    """(shape, statistic, suite) -> Cell, each shape simulated ``runs`` times."""
    cells: dict[tuple[str, str, str], Cell] = {}
    for shape in shapes:
        for i in range(runs):
            run = simulate_run(shape, seed * 1000 + i, cfg)
            for statistic in statistics:
                score(run, estimate(profile, run.records, statistic), statistic, profile,
                      cells)
        if progress:
            progress(shape.name)
    return cells


def markdown_table(cells: dict[tuple[str, str, str], Cell]) -> str:
    """Rows shape x statistic; per suite: bias / spread (bp), interval coverage."""
    suites = list(dict.fromkeys(c.suite for c in cells.values()))
    head = "| shape | statistic | " + " | ".join(
        f"{s}: bias, spread (bp), coverage" for s in suites) + " |"
    lines = [head, "|" + "---|" * (2 + len(suites))]
    keys = dict.fromkeys((c.shape, c.statistic) for c in cells.values())
    for shape, statistic in keys:
        row = []
        for s in suites:
            c = cells[(shape, statistic, s)]
            if not c.verdicts:
                row.append(f"no verdict (0 of {c.runs} runs)"
                           + (f" [undecided {c.undecided}]" if c.undecided else ""))
                continue
            used = ""
            if statistic == "auto" or set(c.used) != {statistic} or c.undecided:
                used = " [" + ", ".join(
                    [f"{k} {v}" for k, v in sorted(c.used.items())]
                    + ([f"undecided {c.undecided}"] if c.undecided else [])) + "]"
            row.append(f"{c.bias_bp:+.0f}, {c.spread_bp:.0f}, {100 * c.coverage:.0f} %{used}")
        lines.append(f"| {shape} | {statistic} | " + " | ".join(row) + " |")
    return "\n".join(lines)
