"""The records that flow readers -> records -> store -> views.

One run of measurements is one JSONL file: a ``meta`` line first, then ``env``,
``freq``, ``measurement``, ``disagreement``, ``note``, ``functional`` (known answers
before timing) and ``resources`` (memory per operation) lines in the order they
happened, and an ``end`` line when the run finished (a file without one was cut short).
The daemon's SQLite store holds the same records; the TUI and reports read them back
through :func:`record_from_dict`. Fields may be added; none may change meaning. Times
are nanoseconds, frequencies kHz (as sysfs has them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from qprof.measure.adversary_cache import usable_factor
from qprof.measure.records_parts import (
    CpuRow,
    EnvSnapshot,
    MachineInfo,
    PartError,
    RunSettings,
    hints_of,
    plain,
    read_value,
    short,
)
from qprof.verify.slhdsa_calls import impossible_counts

SCHEMA_VERSION = 1

# Operations a measurement line can carry.
OPERATIONS = (
    "verify",  # valid signature
    "verify_invalid",  # one byte flipped
    "dual_enforce",  # liboqs, then the second verifier only when liboqs accepts
    "dual_shadow",  # both verifiers always
    "keygen",
    "sign",
    "kem_keygen",
    "kem_encaps",
    "kem_decaps",
    # Added: the dual modes on the invalid (one byte flipped) signature.
    "dual_enforce_invalid",
    "dual_shadow_invalid",
)


@dataclass
class Record:
    type: ClassVar[str] = "record"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type}
        d.update({f.name: plain(getattr(self, f.name)) for f in fields(self)})
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=False, allow_nan=False)


@dataclass
class Meta(Record):
    """First line of a run: what measured, where, how."""

    type: ClassVar[str] = "meta"
    run_id: str
    started_at: float  # unix time
    qprof_version: str
    command: list[str]
    versions: dict[str, str | None] = field(default_factory=dict)  # python, numba, liboqs...
    machine: MachineInfo = field(default_factory=MachineInfo)
    cpus: list[CpuRow] = field(default_factory=list)  # the measured CPUs
    profile: str | None = None
    settings: RunSettings = field(default_factory=RunSettings)
    schema: int = SCHEMA_VERSION


@dataclass
class Env(Record):
    """Environment snapshot before/after a run (the seeds' .env.txt)."""

    type: ClassVar[str] = "env"
    run_id: str
    when: str  # "before" | "after"
    taken_at: float
    snapshot: EnvSnapshot


@dataclass
class FreqSample(Record):
    """Frequency of one CPU seen during a run."""

    type: ClassVar[str] = "freq"
    run_id: str
    taken_at: float
    cpu: int
    cur_khz: int | None
    max_khz: int | None  # what the CPU may run at now (policy/thermal cap applied)
    hw_max_khz: int | None  # what the hardware can do (cpuinfo_max_freq)
    capped: bool | None  # None = unknown
    cause: str | None = None  # "policy", "thermal", ... when the system says
    round: int | None = None


@dataclass
class Measurement(Record):
    """One operation timed on one CPU with one backend in one round."""

    type: ClassVar[str] = "measurement"
    run_id: str
    cpu: int
    suite: str  # registry name, e.g. "ML-DSA-44"
    backend: str  # "liboqs", "numba", "dual", ...
    operation: str  # one of OPERATIONS
    round: int  # 0-based position in the A/B/A/B/A interleaving
    n: int  # number of samples
    median_ns: float
    p95_ns: float
    mean_ns: float | None = None
    stdev_ns: float | None = None
    min_ns: float | None = None
    max_ns: float | None = None
    samples_ns: list[float] | None = None  # kept when small enough
    finished_at: float | None = None
    capped: bool | None = None  # CPU ran below its hardware maximum during this round
    cap_factor: float | None = None  # hw_max / effective max, e.g. 2.24
    pyperf_json: str | None = None  # path of pyperf's own file, relative to the JSONL
    checks: int = 0  # verifier agreement checks made while measuring
    disagreements: int = 0
    # Added: interleaved rounds (unit and suites timed in turns of a few ms): values per
    # turn; sample j was timed in turn j // turn_size, the same turn for every suite of
    # the round. None: the suite had the round to itself.
    turn_size: int | None = None
    # Added: verify of a signature pool (qprof.measure.fixtures): sample j verified the
    # run's pool signature (pool_start + j) % pool_size (the same pool, in the same order,
    # in every worker of the run). None: not recorded (older runs), or not a pool.
    pool_size: int | None = None
    # Added: where the round started in the pool (fixtures.pool_start). None: signature 0
    # (runs recorded before rounds started apart).
    pool_start: int | None = None
    # Added: the backend failed its functional check before timing (a FunctionalCheck
    # record with MISMATCH) and was timed under --allow-mismatch: why; its verdict is never
    # decided (qprof.consensus.functional). None: it passed, or was not checked.
    functional_mismatch: str | None = None
    # Added: verify of an SLH-DSA pool: each pool signature's Keccak-f permutations (in
    # pool order, pool_size of them), and those every signature of the suite makes (all
    # but the chain steps): the estimator holds the pool's mix of costs to every
    # signature's (qprof.consensus.estimate.poolmix). None: not counted (ML-DSA, older runs).
    pool_permutations: list[int] | None = None
    pool_fixed_permutations: int | None = None
    # Added: the measured CPU's /proc/stat ticks while the round was timed, and the
    # hypervisor's steal among them (the same for every suite of an interleaved round;
    # evidence: bench/steal_rounds.py). None: not recorded (older runs, no /proc/stat).
    steal_ticks: int | None = None
    cpu_ticks: int | None = None
    # Added: timed verifies whose verdict was wrong (a valid pool signature refused, an
    # invalid one accepted): the values timed something else, so the backend's suite is
    # never decided (qprof.consensus.functional). 0: every one was right (or older runs).
    wrong_verdicts: int = 0


@dataclass
class Disagreement(Record):
    """The verifiers did not agree: always loud."""

    type: ClassVar[str] = "disagreement"
    run_id: str
    cpu: int
    suite: str
    backends: dict[str, bool]  # backend -> its verdict
    public_key_hex: str
    message_hex: str
    signature_hex: str
    context_hex: str = ""
    found_at: float | None = None


@dataclass
class Note(Record):
    """Something a reader of the run must know (cap, drift, aborted CPU...)."""

    type: ClassVar[str] = "note"
    run_id: str
    level: str  # "info" | "warning" | "error"
    text: str
    cpu: int | None = None
    kind: str | None = None  # "cap", "drift", "cpu_aborted", ...


@dataclass
class End(Record):
    type: ClassVar[str] = "end"
    run_id: str
    finished_at: float
    status: str  # "finished" | "aborted" | "partial"
    reason: str | None = None
    checks: int = 0
    disagreements: int = 0


@dataclass
class FunctionalCheck(Record):
    """Known answers one backend gave for one suite before anything was timed
    (qprof.verify.functional): Wycheproof and qprof's shipped vectors, and fresh
    signatures of a second implementation, valid and tampered. "MISMATCH": some answer was
    wrong; that backend's suite is timed only under --allow-mismatch, never decided."""

    type: ClassVar[str] = "functional"
    run_id: str
    backend: str
    suite: str
    status: str  # "PASS" | "MISMATCH"
    cases: int  # known answers checked
    failed: list[str] = field(default_factory=list)  # labels of the wrong ones (bounded)
    sources: list[str] = field(default_factory=list)  # "wycheproof", "acvp", ...
    build: str | None = None  # digest of the loaded library / kernels the result holds for
    cpu_model: str | None = None
    cached: bool = False  # taken from the cache of an earlier run (same build and CPU)
    elapsed_s: float = 0.0  # what checking took (0 when cached)


@dataclass
class ResourceUse(Record):
    """Memory one operation costs with one backend, measured once per run off the timing
    path (qprof.measure.resources), as the SQIsign report's resource table: the code the
    backend loads, the process RSS before the operations and its high-water mark during
    them, and the Python-level allocation (tracemalloc, a separate pass). Upper-bound
    proxies, not isolated algorithm memory: the RSS figures include the interpreter."""

    type: ClassVar[str] = "resources"
    run_id: str
    cpu: int
    backend: str
    suite: str
    operation: str
    calls: int  # operations between the baseline and the peak
    baseline_rss_kib: int  # after the backend, its fixtures and one warm-up call
    peak_rss_kib: int  # VmHWM over the calls
    # How the high-water mark was brought down to the baseline first: "clear_refs" (the
    # kernel's /proc/PID/clear_refs "5"), or "fresh_process" (none: the peak since start).
    hwm_reset: str
    py_peak_bytes: int | None = None  # tracemalloc: largest Python allocation during one call
    py_retained_bytes: int | None = None  # tracemalloc: left allocated per call
    code_bytes: int | None = None  # the backend's loadable code for this suite
    code_what: str = ""  # what code_bytes counts (an ELF image, numba's cache files)
    load_rss_kib: int | None = None  # RSS that loading this suite's verifier added
    runtime_rss_kib: int | None = None  # RSS that importing the backend's runtime added
    # Added: the operation's own native stack and heap (qprof.measure.native_memory):
    # the stack its C call wrote below its entry, on a fresh thread stack (byte-granular),
    # and malloc's bytes in use the calls left (mallinfo2, the thread's malloc cache
    # included; not a peak). None: not readable here, or an older run; native_note says
    # why. stack_bound: "" the figure, "at_most" / "at_least" a bound (note says why).
    stack_bytes: int | None = None
    heap_left_bytes: int | None = None
    native_note: str = ""
    stack_bound: str = ""

    @property
    def peak_increment_kib(self) -> int:
        return max(0, self.peak_rss_kib - self.baseline_rss_kib)


@dataclass
class AdversaryFactors(Record):
    """The node's last ``qprof adversary`` factor of one kind for one suite, as the run
    found it (so a fleet's runs carry what `qprof calibrate --headroom` needs): the
    costliest signature's liboqs time over the median random one's, with its 95 %
    interval."""

    type: ClassVar[str] = "adversary"
    run_id: str
    suite: str
    kind: str  # "ground" (valid) | "crafted_invalid" | "costliest" (of the pool, valid)
    factor: float
    low: float
    high: float
    cpu_model: str
    measured_at: float
    hash_calls: int | None = None


@dataclass
class Throttled(Record):
    """qprof's cgroup had a CPU quota during the run: its ``cpu.stat`` counts over the
    run (after - before; :mod:`qprof.hw.cgroup`). Runs without a quota carry none."""

    type: ClassVar[str] = "throttled"
    run_id: str
    cgroup: str
    version: int  # cgroup v1 or v2
    quota_cpus: float  # quota / period: 0.5 is half of one CPU's time each period
    factor: float  # how much slower one busy thread runs at most under it
    periods: int
    throttled_periods: int  # periods in which the cgroup was stopped
    throttled_us: int


RECORD_TYPES: dict[str, type[Record]] = {
    cls.type: cls for cls in (Meta, Env, FreqSample, Measurement, Disagreement, Note, End,
                              FunctionalCheck, ResourceUse, AdversaryFactors, Throttled)
}


class RecordError(ValueError):
    """A line that is not a valid record; carries file:line when known."""


def _check_types(cls: type[Record], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` checked against ``cls``'s annotations, the typed parts built."""
    hints = hints_of(cls)
    try:
        return {name: read_value(value, hints[name], name) for name, value in kwargs.items()}
    except PartError as exc:
        raise RecordError(f"{cls.type} record: {exc}") from None


# Unix times a record, a stored run point or a Prometheus sample may carry: from 1970 to
# the year 5138 (6e14, a 'freq' record's taken_at, stalled the report's chart axis; 1e15
# crashed the trend's dates).
MAX_UNIX_TIME = 1e11
_TIMES = ("started_at", "taken_at", "finished_at", "found_at")


def is_unix_time(value: float) -> bool:
    """The one bound on times read from outside (see MAX_UNIX_TIME)."""
    return 0 <= value <= MAX_UNIX_TIME


def _check_ranges(rec: Record) -> None:
    """Every record: unix times within 1970..5138, CPU numbers within 0..65535."""
    for name in _TIMES:
        value = getattr(rec, name, None)
        if value is not None and not is_unix_time(value):
            raise RecordError(f"{rec.type} record: {name} must be a unix time (0 to "
                              f"{MAX_UNIX_TIME:g} s), got {value!r}")
    cpu = getattr(rec, "cpu", None)
    if cpu is not None and not 0 <= cpu <= 65535:
        raise RecordError(f"{rec.type} record: cpu must be 0 to 65535, got {cpu!r}")


def _check_measurement(rec: Measurement) -> None:
    for name in ("median_ns", "p95_ns"):
        value = getattr(rec, name)
        if value <= 0:
            raise RecordError(f"measurement {name} must be a positive number, got {value!r}")
    for name in ("cpu", "round", "n"):
        if getattr(rec, name) < 0:
            raise RecordError(f"measurement {name} must not be negative, "
                              f"got {getattr(rec, name)}")
    if rec.samples_ns is not None and any(v < 0 for v in rec.samples_ns):
        raise RecordError("measurement samples_ns must not hold negative times")
    if rec.samples_ns and max(rec.samples_ns) <= 0:
        # Times the estimators divide by (their median, a turn's quiet speed).
        raise RecordError("measurement samples_ns must not be all 0")
    for name in ("mean_ns", "stdev_ns", "min_ns", "max_ns"):
        value = getattr(rec, name)
        if value is not None and value < 0:
            raise RecordError(f"measurement {name} must not be negative, got {value!r}")
    if rec.turn_size is not None and rec.turn_size < 0:
        raise RecordError(f"measurement turn_size must not be negative, got {rec.turn_size}")
    if rec.pool_start is not None and rec.pool_start < 0:
        raise RecordError(f"measurement pool_start must not be negative, got {rec.pool_start}")
    if rec.wrong_verdicts < 0:
        raise RecordError(f"measurement wrong_verdicts must not be negative, got "
                          f"{rec.wrong_verdicts}")
    for name in ("steal_ticks", "cpu_ticks"):
        value = getattr(rec, name)
        if value is not None and value < 0:
            raise RecordError(f"measurement {name} must not be negative, got {value}")
    if (rec.steal_ticks is not None and rec.cpu_ticks is not None
            and rec.steal_ticks > rec.cpu_ticks):
        raise RecordError(f"measurement steal_ticks ({rec.steal_ticks}) must not exceed "
                          f"cpu_ticks ({rec.cpu_ticks})")
    if rec.cap_factor is not None and not 0 < rec.cap_factor <= 1000:
        raise RecordError(f"measurement cap_factor must be above 0 and at most 1000, got "
                          f"{rec.cap_factor!r}")
    if rec.pool_size is not None and rec.pool_size < 1:
        raise RecordError(f"measurement pool_size must be at least 1, got {rec.pool_size}")
    if rec.pool_permutations is not None:
        if rec.pool_size is None or len(rec.pool_permutations) != rec.pool_size:
            raise RecordError("measurement pool_permutations must hold one count per pool "
                              f"signature ({rec.pool_size}), got {len(rec.pool_permutations)}")
        fixed = rec.pool_fixed_permutations
        if fixed is None or fixed < 0 or any(p < fixed for p in rec.pool_permutations):
            raise RecordError("measurement pool_permutations need pool_fixed_permutations, "
                              "at least 0 and at most every count")
        why = impossible_counts(rec.suite, rec.pool_permutations, fixed)
        if why is not None:
            raise RecordError(f"measurement pool_permutations cannot be verifications: {why}")


def record_from_dict(d: dict[str, Any]) -> Record:
    """A record from its JSON object, every field checked against its annotation."""
    if not isinstance(d, dict):
        raise RecordError("record is not a JSON object")
    kind = d.get("type")
    cls = RECORD_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise RecordError(f"unknown record type {short(kind)}")
    known = {f.name for f in fields(cls)}
    kwargs = {k: v for k, v in d.items() if k in known}
    kwargs = _check_types(cls, kwargs)
    try:
        rec = cls(**kwargs)
    except TypeError as exc:
        raise RecordError(f"{kind} record: {exc}") from None
    _check_ranges(rec)
    if isinstance(rec, Measurement):
        _check_measurement(rec)
    elif isinstance(rec, AdversaryFactors):
        try:  # the cache's rule: a factor a verdict may use, or none
            rec.factor, rec.low, rec.high = usable_factor(rec.suite, rec.kind, rec.factor,
                                                          rec.low, rec.high)
        except ValueError as exc:
            raise RecordError(f"adversary record {rec.suite} {rec.kind}: {exc}") from None
    return rec
