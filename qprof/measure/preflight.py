"""Before a run times anything: each backend's known answers and memory per operation.

:func:`run_preflight` runs once per run, after the fixtures: one worker per backend
(a ``WorkerRun`` with ``preflight``, pinned to the first CPU measured) checks its known answers per
suite (:mod:`qprof.verify.functional`) and measures its memory
(:mod:`qprof.measure.resources`). The answers are cached per library build and CPU
(:func:`cache_path`). A suite with a wrong answer, or whose check did not complete, is a
MISMATCH: left out unless ``allow_mismatch``, and never decided (docs/FUNCTIONAL.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qprof.atomicfile import OutputError, write_private
from qprof.hw.sysfs import kernel_text
from qprof.measure.adversary import summary_path
from qprof.measure.adversary_cache import AdversaryCacheError, read_cache
from qprof.measure.child.launch import ChildStopped, ChildTimeout, run
from qprof.measure.protocol import PreflightJob, PreflightResult, WorkerRun
from qprof.measure.records import AdversaryFactors, FunctionalCheck, ResourceUse
from qprof.measure.runmeta import kernels_digest, liboqs_build
from qprof.untrusted import MAX_SHOWN, one_line
from qprof.userfile import read_json
from qprof.verify import BackendStatus

PREFLIGHT_TIMEOUT_S = 600.0  # a cold numba compile of the kernels takes ~1 min
MEMORY_OPERATIONS = ("verify", "verify_invalid")


@dataclass
class Preflight:
    """What the run's preflight found."""

    checks: list[FunctionalCheck] = field(default_factory=list)
    resources: list[ResourceUse] = field(default_factory=list)
    notes: list[tuple[str, str, str]] = field(default_factory=list)  # level, kind, text
    factors: list[AdversaryFactors] = field(default_factory=list)  # the node's last ones
    elapsed_s: float = 0.0

    def mismatch(self, backend: str, suite: str) -> str | None:
        """Why ``backend`` (or a verifier of a dual pair) is not trusted for ``suite``."""
        for part in backend.split("+"):
            for c in self.checks:
                if c.backend == part and c.suite == suite and c.status == "MISMATCH":
                    return f"functional check MISMATCH: {part} {_wrong(c)}"
        return None

    def task_allowed(self, backend: str, suite: str, unit: str, allow: bool) -> bool:
        return allow or (self.mismatch(backend, suite) is None
                         and self.mismatch(backend, unit) is None)


def _wrong(c: FunctionalCheck) -> str:
    """What a MISMATCH check found (or why it could not check)."""
    shown = "; ".join(c.failed[:3])
    if not c.cases:
        return f"could not be checked for {c.suite} ({shown})"
    return f"gave {len(c.failed)} wrong answer(s) of {c.cases} known for {c.suite} ({shown})"


@dataclass
class KeptFactors:
    """The node's last ``qprof adversary`` factors as records of a run, and why a suite's
    cache gave none where it exists but cannot be used (damaged, or a factor no signature
    can have): said, not dropped without a word."""

    records: list[AdversaryFactors] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


def adversary_records(run_id: str, suites: Iterable[str]) -> KeptFactors:
    """The node's last ``qprof adversary`` factors of ``suites`` (its cache; a missing one:
    none, a damaged one: none and why)."""
    out = KeptFactors()
    for suite in suites:
        path = summary_path(suite)
        if not path.exists():
            continue
        try:
            summary = read_cache(path, signatures=False).summary
        except (AdversaryCacheError, OSError) as exc:
            # The cache's own text may be in the error: one bounded line, as read.
            out.unreadable.append(one_line(
                f"{suite}'s worst-signature factors are not used: {exc}", MAX_SHOWN))
            continue
        out.unreadable += [one_line(f"{suite}'s worst-signature factor is not used: "
                                    f"{path}: {why}", MAX_SHOWN) for why in summary.refused]
        out.records += [AdversaryFactors(run_id=run_id, suite=summary.suite, kind=w.kind,
                                         factor=w.ratio, low=w.low, high=w.high,
                                         cpu_model=summary.cpu_model,
                                         measured_at=summary.measured_at,
                                         hash_calls=w.hash_calls)
                        for w in summary.worst.values()]
    return out


def build_of(backend: str, status: BackendStatus | None) -> str:
    """The identity of what ``backend`` runs: a result holds for that build only."""
    if backend == "liboqs":
        return liboqs_build(status) or "unknown"
    if backend == "numba":
        return kernels_digest(status) or "unknown"
    version = (status.version if status is not None else None) or "unknown"
    return hashlib.sha256(version.encode()).hexdigest()[:16]


def cpu_identity(root: str = "/") -> tuple[str, str]:
    """(CPU model, a digest of it with its flags): compiled kernels depend on both."""
    model, flags = "unknown", ""
    try:
        for line in kernel_text(Path(root) / "proc/cpuinfo").splitlines():
            key = line.split(":", 1)[0].strip().lower()
            if key in ("model name", "hardware", "cpu model") and model == "unknown":
                model = line.split(":", 1)[1].strip()[:200]
            elif key in ("flags", "features") and not flags:
                flags = line.split(":", 1)[1].strip()
    except OSError:
        pass
    digest = hashlib.sha256(f"{model}\n{flags}".encode()).hexdigest()[:16]
    return model, digest


def cache_path(cache: Path, backend: str, build: str, cpu_key: str) -> Path:
    return cache / f"functional-{backend}-{build}-{cpu_key}.json"


def _complete(d: Any) -> bool:
    """Is ``d`` a whole answer of a check (its status, counts and labels)?"""
    return (isinstance(d, dict) and d.get("status") in ("PASS", "MISMATCH")
            and isinstance(d.get("cases"), int) and not isinstance(d["cases"], bool)
            and isinstance(d.get("failed", []), list) and isinstance(d.get("sources", []), list)
            and isinstance(d.get("elapsed_s", 0.0), int | float))


# The known answers of every suite of one library build and CPU: a few KiB.
CACHE_MAX_BYTES = 1 << 20


def _cached(path: Path, suites: Iterable[str]) -> dict[str, dict[str, Any]]:
    try:
        found = read_json(path, CACHE_MAX_BYTES, "functional check cache")
    except (OSError, ValueError):  # UserFileError: missing, a FIFO, too large, not JSON
        return {}
    if not isinstance(found, dict):
        return {}
    return {s: found[s] for s in suites if _complete(found.get(s))}


def _keep(path: Path, results: dict[str, dict[str, Any]]) -> None:
    with contextlib.suppress(OutputError, OSError):  # checked again next run
        write_private(path.parent, path.name, json.dumps({**_cached(path, results),
                                                          **results}))


@dataclass(frozen=True)
class PreflightPlan:
    """What the engine hands over: where, with what, for which suites."""

    run_id: str
    cpu: int
    nice: int
    python: str
    workdir: Path
    fixtures: Path | None
    cache: Path
    backends: tuple[str, ...]
    suites: dict[str, tuple[str, ...]]  # backend -> suites it runs here
    statuses: dict[str, BackendStatus]


def _run_one(plan: PreflightPlan, backend: str, functional: tuple[str, ...],
             stop: threading.Event) -> PreflightResult:
    job = PreflightJob(
        cpu=plan.cpu, nice=plan.nice, backend=backend,
        fixtures=str(plan.fixtures) if plan.fixtures else None,
        result=str(plan.workdir / f"preflight-{backend}.json"), parent=os.getpid(),
        functional=functional, resources=plan.suites[backend],
        operations=MEMORY_OPERATIONS, cache=str(plan.cache))
    path = plan.workdir / f"preflight-{backend}.job.json"
    job.write(path)
    try:  # reading stderr all along: a full pipe must not stall the worker
        done = run(WorkerRun(str(path), preflight=True), stop, PREFLIGHT_TIMEOUT_S,
                   python=plan.python, poll_s=0.1)
    except OSError as exc:
        return PreflightResult(backend, errors=[f"cannot start: {exc}"])
    except (ChildStopped, ChildTimeout) as exc:
        return PreflightResult(backend, errors=["stopped" if isinstance(exc, ChildStopped)
                                                else "timed out"])
    exited = ([] if done.returncode == 0
              else [f"exit {done.returncode}: {done.tail(3)}".rstrip(": ")])
    try:  # what it wrote before it ended, with why it ended early
        found = PreflightResult.read(Path(job.result))
    except (OSError, ValueError, KeyError, TypeError):
        return PreflightResult(backend, errors=exited or ["no result written"])
    found.errors += exited
    return found


def run_preflight(plan: PreflightPlan, stop: threading.Event) -> Preflight:
    """Each backend's known answers (from the cache where this build was checked on
    this CPU) and memory per operation, as records."""
    started = time.monotonic()
    out = Preflight()
    # This machine's CPU, whatever root the run reads: the known answers are computed here.
    model, cpu_key = cpu_identity()
    for backend in plan.backends:
        if stop.is_set():
            break
        suites = plan.suites[backend]
        build = build_of(backend, plan.statuses.get(backend))
        where = cache_path(plan.cache, backend, build, cpu_key)
        cached = _cached(where, suites)
        todo = tuple(s for s in suites if s not in cached)
        result = _run_one(plan, backend, todo, stop)
        fresh = {str(d["suite"]): d for d in result.functional
                 if _complete(d) and d.get("suite") in todo}
        if fresh:
            _keep(where, fresh)
        why = "; ".join(result.errors) or "no answer"
        for suite in suites:
            d = fresh.get(suite) or cached.get(suite)
            if d is None:
                if not stop.is_set():  # nothing is timed after a stop
                    out.checks.append(FunctionalCheck(
                        run_id=plan.run_id, backend=backend, suite=suite, status="MISMATCH",
                        cases=0, failed=[f"the check did not complete ({why})"[:300]],
                        build=build, cpu_model=model))
                continue
            out.checks.append(FunctionalCheck(
                run_id=plan.run_id, backend=backend, suite=suite, status=str(d["status"]),
                cases=int(d["cases"]), failed=[str(x) for x in d.get("failed", [])],
                sources=[str(x) for x in d.get("sources", [])], build=build,
                cpu_model=model, cached=suite not in fresh,
                elapsed_s=0.0 if suite not in fresh else round(float(d.get("elapsed_s", 0.0)), 3)))
        for m in result.resources:
            out.resources.append(ResourceUse(run_id=plan.run_id, cpu=plan.cpu, **m))
        for error in result.errors:
            out.notes.append(("warning", "preflight", f"{backend}: preflight: {error}"))
    kept = adversary_records(plan.run_id, sorted({s for v in plan.suites.values() for s in v}))
    out.factors = kept.records
    out.notes += [("warning", "adversary_cache", why) for why in kept.unreadable]
    for c in out.checks:
        if c.status == "MISMATCH":
            out.notes.append(("error", "functional_mismatch",
                              f"{c.backend} {c.suite}: functional check MISMATCH: {_wrong(c)}"))
    out.elapsed_s = time.monotonic() - started
    ran = [c for c in out.checks if not c.cached]
    out.notes.append(("info", "preflight", (
        f"before timing: known answers ({len(ran)} of {len(out.checks)} suite checks run, "
        f"the rest cached for this build and CPU) and memory per operation took "
        f"{out.elapsed_s:.1f} s")))
    return out

