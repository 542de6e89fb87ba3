"""What a run measures (BenchConfig), what it reports while running (ProgressEvent) and
what it returns (RunSummary)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from qprof.measure.records import FunctionalCheck, Measurement, ResourceUse
from qprof.measure.units import medians_text

QANUM_SUITES = ("ML-DSA-44", "ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")
VERIFY_OPS = ("verify", "verify_invalid")
DUAL_OPS = ("dual_enforce", "dual_shadow", "dual_enforce_invalid", "dual_shadow_invalid")
WALLET_OPS = ("keygen", "sign")
KEM_OPS = ("kem_keygen", "kem_encaps", "kem_decaps")
MODES = ("check", "quick", "default", "full")
# `qprof check`'s default --time-limit, which the monitor's check-mode runs keep too: no
# round starts that would end later (the floor is then min(50 s, this / CPUs)). Without
# one, a host whose intervals never reach the rule's target ran to max_rounds (81 rounds,
# ~90 s of a CPU on the AMD EPYC guest).
CHECK_TIME_LIMIT_S = 60.0
TIMERS = ("auto", "wall", "cpu")
AUTO_CPU_TIMER_LOAD = 0.5


@dataclass(frozen=True)
class ModeSettings:
    operations: tuple[str, ...]
    budget_s: float  # time per (suite, backend, operation) per round
    wallet_budget_s: float
    min_n: int
    max_n: int
    rounds: int  # base A/B/A/B/A rounds
    max_rounds: int  # adaptive extra rounds stop here
    sign_slow: bool  # SLH-DSA "s" signing (~1 s each)
    # > 0: every round times the unit and the suites together, in turns of this many
    # seconds (A B1 B2 B3 A B1 ...); 0: the seeds' rounds, one suite after the other.
    interleave_block_s: float = 0.0
    # Rounds one worker process times (None: all base rounds in one process).
    rounds_per_worker: int | None = None
    # Seconds a CPU's rounds run before the stopping rule's "sure" may end them (or the
    # CPU's share of the time limit, when shorter): 0, the rule alone decides.
    min_cpu_s: float = 0.0


MODE_SETTINGS: dict[str, ModeSettings] = {
    # Only what the verdict needs: verify, adaptive rounds until the estimate is sure.
    # Interleaved in turns of 4 ms: on a shared host (a VM whose core is slowed now and
    # then by a neighbour for 0.1-2 s) a whole 0.3 s round of one suite could land in a
    # slow spell; in turns of 4 ms the unit and the suites see the same spells.
    # A worker process per round: a process can have its own speed for a suite (where its
    # stack and buffers landed: ML-DSA-44 verify took 14.46-14.94 us in 16 processes
    # started one after another here, same key). In one process per run that is a hidden
    # error of the whole run; a process per round averages it over the rounds, and the
    # interval, which resamples rounds, holds it. Start-up is ~0.1 s with liboqs: a run
    # took 6.5-6.7 s either way.
    # Up to 81 rounds: the time limit, not the cap, ends a check run (with 41 a run on
    # the AMD EPYC guest stopped at 49 s of its 60).
    # At least 50 s a CPU: a shared host's quiet ratio itself wanders from one minute to
    # the next (SLH-DSA by ~50 bp sd on the AMD EPYC guest), which an interval of a few
    # seconds' rounds cannot see. Runs the rule found sure after 7-24 s there held the
    # eight runs' median in 5-6 of 8 intervals; with this floor, three series of eight
    # held it in 22-23 of 24 suite-runs (docs/ESTIMATOR.md, "The floor").
    "check": ModeSettings(("verify",), 0.3, 0.0, 30, 4000, 7, 81, False, 0.004, 1, 50.0),
    "quick": ModeSettings(
        VERIFY_OPS + DUAL_OPS + WALLET_OPS + KEM_OPS, 0.12, 0.1, 15, 1000, 5, 5, False
    ),
    "default": ModeSettings(
        VERIFY_OPS + DUAL_OPS + WALLET_OPS + KEM_OPS, 0.4, 0.3, 30, 4000, 5, 7, False
    ),
    "full": ModeSettings(
        VERIFY_OPS + DUAL_OPS + WALLET_OPS + KEM_OPS, 1.5, 1.0, 50, 5000, 5, 11, True
    ),
}


@dataclass
class BenchConfig:
    cpus: list[int] | None = None  # None: one CPU per cluster
    suites: list[str] | None = None  # None: the profile's suites, else qanum's four
    unit_suite: str | None = None  # None: the profile's unit, else ML-DSA-44
    backends: list[str] | None = None  # None: liboqs if available, else numba
    operations: list[str] | None = None  # None: the mode's
    mode: str = "default"
    profile: str | None = None  # name or path; gives suites, unit and constants
    dual: tuple[str, str] | None = None  # None: liboqs + numba (or rustcrypto) when possible
    rounds: int | None = None  # base rounds (odd: A/B/.../A); None: the mode's
    # Rounds one worker process measures (None: the mode's; extra B/A pairs get a
    # process each unless the base rounds shared one, Plan.serves).
    rounds_per_worker: int | None = None
    # Seconds per turn when each round times all suites together (None: the mode's;
    # 0: the seeds' A/B/A/B/A rounds, one suite after the other).
    interleave_block_s: float | None = None
    max_rounds: int | None = None
    adaptive: bool = True
    budget_s: float | None = None
    min_n: int | None = None
    max_n: int | None = None
    time_limit_s: float | None = None  # no new round is started past this
    min_cpu_s: float | None = None  # None: the mode's (ModeSettings.min_cpu_s)
    target_ci_bp: float = 50.0  # stop adding rounds when the ratio's CI half-width is below
    max_spread_bp: float = 100.0  # ... and the ML-DSA round spread is below this
    pyperf_dir: Path | None = None  # where pyperf's JSON files are kept (None: not kept)
    record_base: Path | None = None  # Measurement.pyperf_json is relative to this
    root: str = "/"
    nice: int = 10
    # "wall" (perf_counter, the seeds' clock), "cpu" (CPU time of the worker thread), or
    # "auto": cpu when the machine is busy (1-minute load >= AUTO_CPU_TIMER_LOAD), else wall.
    timer: str = "auto"
    # The statistic the adaptive rounds pin down: the verdict's ("auto", as `qprof check`,
    # the daemon and the monitor show it), or one asked for ("median", "p10", "paired").
    statistic: str = "auto"
    fixture_cache: Path | None = None  # None: $QPROF_CACHE_DIR or ~/.cache/qprof/fixtures
    keep_samples: int = 5000  # Measurement.samples_ns kept up to this many samples
    command: list[str] = field(default_factory=list)
    python: str | None = None  # interpreter for workers (default: this one)
    # Known answers and memory per backend before timing (qprof.measure.preflight); a
    # backend's suite that fails them is timed only when allow_mismatch.
    preflight: bool = True
    allow_mismatch: bool = False
    # Warnings and errors echoed on stderr as they come (False: the caller prints the
    # run's notes itself, once: `qprof check`'s text).
    echo_notes: bool = True
    # After the run, grow the signature pools in a child that ends with this process
    # (qprof.measure.poolgrow): for the monitor and the daemon, which stay on.
    grow_pools: bool = False

    def settings(self) -> ModeSettings:
        if self.mode not in MODE_SETTINGS:
            raise ValueError(f"unknown mode {self.mode!r}; modes: {', '.join(MODES)}")
        return MODE_SETTINGS[self.mode]


@dataclass
class ProgressEvent:
    fraction: float  # 0..1 of the planned work
    eta_s: float | None
    elapsed_s: float
    cpu: int | None = None
    suite: str | None = None
    backend: str | None = None
    operation: str | None = None
    round: int | None = None
    rounds: int | None = None
    message: str = ""
    # Suite -> median ns of the verify tasks a worker just finished (the records follow,
    # after the pools' counts on a first run): the first figures on screen.
    medians: dict[str, float] | None = None

    def line(self) -> str:
        what = " ".join(
            x for x in (
                f"cpu {self.cpu}" if self.cpu is not None else "",
                f"round {self.round + 1}/{self.rounds}" if self.round is not None else "",
                self.suite or "",
                self.backend or "",
                self.operation or "",
            ) if x
        )
        eta = f" ETA {self.eta_s:.0f}s" if self.eta_s is not None else ""
        text = f"[{self.fraction * 100:5.1f}%]{eta} {what}"
        figures = medians_text(self.medians or {})
        return f"{text} {self.message}{': ' + figures if figures else ''}".rstrip()


@dataclass
class RunSummary:
    run_id: str
    status: str  # "finished" | "partial" | "aborted"
    reason: str | None
    elapsed_s: float
    cpus: list[int]
    aborted_cpus: dict[int, str] = field(default_factory=dict)
    measurements: list[Measurement] = field(default_factory=list)
    checks: int = 0
    disagreements: int = 0
    wrong_verdicts: int = 0
    rounds: dict[int, int] = field(default_factory=dict)  # cpu -> rounds run
    notes: list[str] = field(default_factory=list)
    functional: list[FunctionalCheck] = field(default_factory=list)  # before timing
    resources: list[ResourceUse] = field(default_factory=list)  # memory per operation
