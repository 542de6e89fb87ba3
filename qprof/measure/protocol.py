"""What the engine and its worker processes say to each other (both import this module).

The engine writes a :class:`Job` file and starts a worker on it (:class:`WorkerRun`).
The worker reports :class:`WorkerEvent` lines on stderr (``@qprof {json}``),
rewrites its :class:`WorkerResult` file after every task, and appends one pyperf run per
task and round to the CPU's pyperf file when the run keeps one (:attr:`Job.pyperf`). A
serving worker (``serve``)
then reads :func:`encode_more` lines (more :class:`Task` s) or ``done`` on stdin.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from qprof.measure.child.job import ChildJob

EVENT_PREFIX = "@qprof "
DONE = "done"
EventKind = Literal["start", "done", "failed", "idle"]


def _write_whole(path: Path, data: dict[str, Any]) -> None:
    """A result file as JSON, atomically: a worker stopped mid-write leaves the previous
    whole file (the engine reads it while the worker may still run)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


@dataclass(frozen=True)
class Task:
    """Time one (suite, backend, operation) in one round."""

    suite: str
    backend: str
    operation: str
    budget_s: float  # wall time the values should fill
    min_n: int
    max_n: int
    round: int = 0
    n: int | None = None  # values fixed by the task's first round (None: from the budget)
    dual: tuple[str, str] | None = None  # (first, second) verifier of a dual operation

    @property
    def name(self) -> str:
        """The pyperf benchmark's name."""
        return f"{self.suite}/{self.backend}/{self.operation}"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.suite, self.backend, self.operation)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        dual = d.get("dual")
        return cls(
            suite=str(d["suite"]), backend=str(d["backend"]), operation=str(d["operation"]),
            budget_s=float(d["budget_s"]), min_n=int(d["min_n"]), max_n=int(d["max_n"]),
            round=int(d.get("round", 0)), n=int(d["n"]) if d.get("n") else None,
            dual=(str(dual[0]), str(dual[1])) if dual else None,
        )


@dataclass(frozen=True)
class WorkerRun(ChildJob):
    """A worker process's job: the file of its :class:`Job` (or, ``preflight``, of its
    :class:`PreflightJob`)."""

    KIND: ClassVar[str] = "qprof.measure.worker"
    job: str
    preflight: bool = False


@dataclass(frozen=True)
class Job:
    cpu: int
    nice: int
    timer: str  # "wall" | "cpu"
    fixtures: str | None  # keys and signatures of the run (qprof.measure.fixtures)
    result: str  # the WorkerResult file
    # The CPU's pyperf JSON; runs are added to what it already holds (None: not kept, so
    # not written: rewriting a run's growing file took 1.5 s per worker by a check run's
    # last rounds, on the measured CPU).
    pyperf: str | None
    parent: int  # the engine's pid: a worker started after its engine died exits
    tasks: tuple[Task, ...]
    interleave_block_s: float = 0.0  # > 0: each round's tasks timed together, in turns
    serve: bool = False  # stay for more rounds (stdin) after the tasks

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def read(cls, path: Path) -> Job:
        """ValueError/KeyError/TypeError/OSError when the file is not a job."""
        d = json.loads(path.read_text())
        return cls(
            cpu=int(d["cpu"]), nice=int(d.get("nice", 10)), timer=str(d.get("timer", "wall")),
            fixtures=d.get("fixtures") or None, result=str(d["result"]),
            pyperf=str(d["pyperf"]) if d.get("pyperf") else None,
            parent=int(d.get("parent", 0)),
            tasks=tuple(Task.from_dict(t) for t in d["tasks"]),
            interleave_block_s=float(d.get("interleave_block_s") or 0.0),
            serve=bool(d.get("serve")),
        )


@dataclass(frozen=True)
class PreflightJob:
    """One backend's checks before any suite is timed (a :class:`WorkerRun` with
    ``preflight``): its known answers per suite (``functional``: the suites not
    already passed for this build and CPU), then its memory per operation."""

    cpu: int
    nice: int
    backend: str
    fixtures: str | None
    result: str  # a PreflightResult file
    parent: int
    functional: tuple[str, ...]  # suites to check
    resources: tuple[str, ...]  # suites to measure
    operations: tuple[str, ...]  # which operations the memory pass measures
    cache: str | None = None  # where the second implementation's SLH-DSA signature is kept

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def read(cls, path: Path) -> PreflightJob:
        d = json.loads(path.read_text())
        return cls(cpu=int(d["cpu"]), nice=int(d["nice"]), backend=str(d["backend"]),
                   fixtures=d.get("fixtures") or None, result=str(d["result"]),
                   parent=int(d.get("parent", 0)),
                   functional=tuple(str(s) for s in d["functional"]),
                   resources=tuple(str(s) for s in d["resources"]),
                   operations=tuple(str(s) for s in d["operations"]),
                   cache=d.get("cache") or None)


@dataclass
class PreflightResult:
    """What a preflight found: qprof.verify.functional.SuiteCheck and
    qprof.measure.resources.OperationMemory as dicts, and what failed."""

    backend: str
    functional: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def write(self, path: Path) -> None:
        _write_whole(path, asdict(self))

    @classmethod
    def read(cls, path: Path) -> PreflightResult:
        d = json.loads(path.read_text())
        return cls(backend=str(d["backend"]), functional=list(d["functional"]),
                   resources=list(d["resources"]), errors=[str(e) for e in d["errors"]])


def _count(value: Any) -> int | None:
    return int(value) if value is not None else None


def encode_more(tasks: list[Task]) -> str:
    """A serving worker's next round(s): one line on its stdin."""
    return json.dumps({"tasks": [asdict(t) for t in tasks]}) + "\n"


def decode_more(line: str) -> list[Task] | None:
    """The tasks of a stdin line; None for ``done`` or EOF. ValueError when malformed."""
    text = line.strip()
    if not text or text == DONE:
        return None
    try:
        return [Task.from_dict(t) for t in json.loads(text)["tasks"]]
    except (KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"bad command: {exc}") from exc


@dataclass(frozen=True)
class WorkerEvent:
    event: EventKind
    index: int | None = None  # the task's index in the worker's tasks (job's, then more)
    name: str = ""
    n: int | None = None
    error: str | None = None

    def line(self) -> str:
        return EVENT_PREFIX + json.dumps(asdict(self)) + "\n"

    @classmethod
    def parse(cls, line: str) -> WorkerEvent | None:
        """The event on a stderr line; None for any other line (tracebacks, messages)."""
        if not line.startswith(EVENT_PREFIX):
            return None
        try:
            d = json.loads(line[len(EVENT_PREFIX):])
            kind = d["event"]
            if kind not in ("start", "done", "failed", "idle"):
                return None
            index = d.get("index")
            return cls(event=kind, index=index if isinstance(index, int) else None,
                       name=str(d.get("name", "")), n=d.get("n"), error=d.get("error"))
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class TaskResult:
    """What pyperf's JSON cannot hold: the verifiers' agreement, and the values' layout."""

    index: int
    name: str
    n: int
    warmups: int
    started_at: float
    finished_at: float
    values_s: tuple[float, ...]  # the timed values (also in the pyperf file)
    checks: int = 0
    disagreements: int = 0
    wrong_verdicts: int = 0
    # Inputs of disagreements: qprof.measure.records.Disagreement's fields past run/cpu/suite.
    examples: tuple[dict[str, Any], ...] = ()
    turn_size: int | None = None  # interleaved: values per turn
    pool_size: int | None = None  # value j verified pool signature (pool_start + j) % pool_size
    pool_start: int = 0
    # The CPU's /proc/stat ticks while the values were timed, and the steal among them
    # (None: not readable).
    steal_ticks: int | None = None
    cpu_ticks: int | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskResult:
        return cls(
            index=int(d["index"]), name=str(d["name"]), n=int(d["n"]),
            warmups=int(d["warmups"]), started_at=float(d["started_at"]),
            finished_at=float(d["finished_at"]),
            values_s=tuple(float(v) for v in d["values_s"]),
            checks=int(d.get("checks", 0)), disagreements=int(d.get("disagreements", 0)),
            wrong_verdicts=int(d.get("wrong_verdicts", 0)),
            examples=tuple(dict(e) for e in d.get("examples", ())),
            turn_size=int(d["turn_size"]) if d.get("turn_size") else None,
            pool_size=int(d["pool_size"]) if d.get("pool_size") else None,
            pool_start=int(d.get("pool_start") or 0),
            steal_ticks=_count(d.get("steal_ticks")),
            cpu_ticks=_count(d.get("cpu_ticks")),
        )


@dataclass(frozen=True)
class TaskFailure:
    index: int
    name: str
    error: str


@dataclass
class WorkerResult:
    cpu: int
    results: list[TaskResult] = field(default_factory=list)
    failures: list[TaskFailure] = field(default_factory=list)

    def write(self, path: Path) -> None:
        _write_whole(path, asdict(self))

    @classmethod
    def read(cls, path: Path) -> WorkerResult:
        """OSError/ValueError when missing or not a result file."""
        d = json.loads(path.read_text())
        try:
            return cls(
                cpu=int(d["cpu"]),
                results=[TaskResult.from_dict(r) for r in d["results"]],
                failures=[TaskFailure(int(f["index"]), str(f["name"]), str(f["error"]))
                          for f in d["failures"]],
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a worker result: {exc}") from exc
