"""Signature by signature: what each one costs to verify, on one pinned core.

A list of signatures is timed round-robin (each round visits every signature, starting
one further each round, so drift falls on all alike) in a worker process pinned to the
CPU, on the job's clock (:class:`qprof.measure.timing.Clock`, CPU time by default); the
parent keeps off that CPU meanwhile. A value is the mean of calls filling
:data:`MIN_VALUE_S`; a signature's figure is the median of its rounds.

The worker runs as a :class:`SigTimeRun` child job (:mod:`qprof.measure.child`).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

from qprof.measure.child.job import ChildJob, Entry
from qprof.measure.child.launch import run
from qprof.measure.lifeline import die_with_parent
from qprof.measure.processes import parent_off_cpu
from qprof.measure.run_dir import RunDir, sweep
from qprof.measure.timing import Clock
from qprof.measure.worker import _pin, _set_nice
from qprof.verify import get_verifier

MIN_VALUE_S = 0.004  # calls per value fill at least this long
# A signature's quickest round is what the cost model predicts, so each must get a
# quiet one: on the AMD EPYC guest the core runs contended 70-90 % of the time, and with
# 15 rounds about 1 in 11 signatures had none (a pool signature 16 % above the model).
DEFAULT_ROUNDS = 45
NICE = 10


class SigTimeError(RuntimeError):
    """The timing worker failed (message: why)."""


@dataclass(frozen=True)
class SigItem:
    suite: str
    public_key: bytes
    message: bytes
    signature: bytes
    context: bytes = b""

    def to_dict(self) -> dict[str, str]:
        return {"suite": self.suite, "public_key": self.public_key.hex(),
                "message": self.message.hex(), "signature": self.signature.hex(),
                "context": self.context.hex()}

    @classmethod
    def from_dict(cls, d: dict[str, str]) -> SigItem:
        return cls(d["suite"], bytes.fromhex(d["public_key"]), bytes.fromhex(d["message"]),
                   bytes.fromhex(d["signature"]), bytes.fromhex(d["context"]))


@dataclass(frozen=True)
class SigTiming:
    """One signature with one backend: per-round ns per call, and the verdict."""

    index: int
    backend: str
    accepted: bool
    values_ns: tuple[float, ...]

    @property
    def median_ns(self) -> float:
        return statistics.median(self.values_ns)


@dataclass(frozen=True)
class SigJob:
    cpu: int
    rounds: int
    timer: str
    nice: int
    backends: tuple[str, ...]
    items: tuple[SigItem, ...]

    def write(self, path: Path) -> None:
        d = asdict(self)
        d["items"] = [i.to_dict() for i in self.items]
        path.write_text(json.dumps(d))

    @classmethod
    def read(cls, path: Path) -> SigJob:
        d = json.loads(path.read_text())
        return cls(int(d["cpu"]), int(d["rounds"]), str(d["timer"]), int(d["nice"]),
                   tuple(str(b) for b in d["backends"]),
                   tuple(SigItem.from_dict(i) for i in d["items"]))


def time_signatures(items: Sequence[SigItem], cpu: int, rounds: int = DEFAULT_ROUNDS,
                    backends: Sequence[str] = ("liboqs",), timer: str = "cpu",
                    nice: int = NICE) -> list[list[SigTiming]]:
    """Per item, one ``SigTiming`` per backend (in ``backends`` order)."""
    if not items:
        return []
    # A run's directory: one a kill leaves behind is swept by the next run (run_dir).
    sweep()
    work = RunDir()
    try:
        job_path, out_path = work.path / "job.json", work.path / "out.json"
        SigJob(cpu, rounds, timer, nice, tuple(backends), tuple(items)).write(job_path)
        with parent_off_cpu(cpu):
            try:
                done = run(SigTimeRun(str(job_path), str(out_path)))
            except OSError as exc:
                raise SigTimeError(f"cannot start the timing worker: {exc}") from exc
        if done.returncode != 0 or not out_path.is_file():
            tail = done.tail(3) or done.returncode
            raise SigTimeError(f"timing worker failed on CPU {cpu}: {tail}")
        raw = json.loads(out_path.read_text())
    finally:
        work.remove()
    return [[SigTiming(int(t["index"]), str(t["backend"]), bool(t["accepted"]),
                       tuple(float(v) for v in t["values_ns"])) for t in row] for row in raw]


def _run(job: SigJob) -> list[list[dict[str, object]]]:
    clock = Clock.of(job.timer)
    verifiers = {(b, s): get_verifier(b, s) for b in job.backends
                 for s in {i.suite for i in job.items}}
    for v in verifiers.values():
        v.warm_up()
    n = len(job.items)
    calls = [[1] * len(job.backends) for _ in range(n)]
    accepted = [[False] * len(job.backends) for _ in range(n)]
    for i, item in enumerate(job.items):  # calibrate: calls per value
        for b, backend in enumerate(job.backends):
            v = verifiers[(backend, item.suite)]
            t0 = time.perf_counter()
            accepted[i][b] = v.verify(item.public_key, item.message, item.signature,
                                      item.context)
            one = max(time.perf_counter() - t0, 1e-7)
            calls[i][b] = max(1, int(MIN_VALUE_S / one + 0.5))
    values: list[list[list[float]]] = [[[] for _ in job.backends] for _ in range(n)]
    for r in range(job.rounds):
        for step in range(n):
            i = (step + r) % n
            item = job.items[i]
            for b, backend in enumerate(job.backends):
                v = verifiers[(backend, item.suite)]
                loops = calls[i][b]
                t0 = clock.now()
                for _ in range(loops):
                    v.verify(item.public_key, item.message, item.signature, item.context)
                dt = clock.now() - t0 - clock.overhead_s
                values[i][b].append(max(dt, 1e-9) / loops * 1e9)
    return [[{"index": i, "backend": backend, "accepted": accepted[i][b],
              "values_ns": values[i][b]} for b, backend in enumerate(job.backends)]
            for i in range(n)]


@dataclass(frozen=True)
class SigTimeRun(ChildJob):
    """The timing worker's job: its :class:`SigJob` file and where it writes."""

    KIND: ClassVar[str] = "qprof.measure.sigtime"
    job: str
    out: str


def run_timing(run: SigTimeRun) -> int:
    """The timing worker: pinned, at the job's niceness, its timings to ``run.out``."""
    die_with_parent()
    try:
        job = SigJob.read(Path(run.job))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"qprof sigtime: bad job file {run.job}: {exc}", file=sys.stderr)
        return 4
    error = _pin(job.cpu)
    if error:
        print(f"qprof sigtime: {error}", file=sys.stderr)
        return 3
    _set_nice(job.nice)
    Path(run.out).write_text(json.dumps(_run(job)))
    return 0


CHILD = Entry(SigTimeRun, run_timing)
