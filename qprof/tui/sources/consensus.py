"""Profile constants and Verify-Unit coverage for the monitor: the store's judgement
(:mod:`qprof.service.judged`, as check, history and the daemon have it), one row per
suite and cluster; where a cluster has several measured cores, the core with the
highest estimate speaks for it, because a constant has to cover the slowest core.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from qprof.consensus import Profile, available_profiles, load_profile
from qprof.consensus.judgement import VERIFY_OPERATIONS, Judgement
from qprof.consensus.verdict_types import CoverageResult
from qprof.report.headroom import worst_lines
from qprof.service.cores import topology_cores
from qprof.service.judged import store_judgement
from qprof.service.store import Store
from qprof.tui.model import CoverageView, cpu_ranges, short_design
from qprof.tui.preflight import preflight_lines
from qprof.tui.sources.child import run_child
from qprof.tui.sources.hardware import ClusterFacts


@dataclass(frozen=True)
class ProfileInfo:
    """A loaded profile, or the reason it could not load (the UI keeps running)."""

    name: str
    profile: Profile | None  # None when it failed to load
    error: str | None = None

    @property
    def suites(self) -> tuple[str, ...]:
        return tuple(self.profile.suites) if self.profile is not None else ()

    @property
    def unit_suite(self) -> str:
        return self.profile.unit_suite if self.profile is not None else "ML-DSA-44"

    @property
    def location(self) -> str:
        """What the engine should load: the profile's file, so paths work as names do."""
        return str(Path(self.profile.path).resolve()) if self.profile else self.name

    def constant(self, suite: str) -> int | None:
        if self.profile is None:
            return None
        return self.profile.verify_units.get(suite)


def profile_names() -> list[str]:
    """Profiles the `p` key offers."""

    return available_profiles() or ["qanum"]


def load_profile_info(name: str) -> ProfileInfo:
    try:
        profile = load_profile(name)
    except Exception as exc:  # noqa: BLE001 - ProfileError, OSError: show, do not crash
        return ProfileInfo(name=name, profile=None, error=str(exc))
    return ProfileInfo(name=profile.name, profile=profile)


@dataclass(frozen=True)
class Evaluation:
    """The store's judgement for one backend and profile: one ``CoverageResult`` per
    (cpu, suite), the verdict on its current segment, and that segment's line."""

    results: tuple[CoverageResult, ...] = ()
    measured_at: dict[tuple[int, str], float] = field(default_factory=dict)
    error: str | None = None
    # The newest run's known answers, memory and constants with headroom (tui.preflight).
    preflight: tuple[str, ...] = ()
    segments: dict[tuple[int, str], str] = field(default_factory=dict)
    # The worst signature beside the median, a line per SLH-DSA suite, in check's words.
    worst: tuple[str, ...] = ()


def evaluation_of(judgement: Judgement, info: ProfileInfo, backend: str | None
                  ) -> Evaluation:
    """The monitor's view of a judgement: ``backend``'s verdicts and segment lines."""
    keep = [s for s in judgement.suites if backend is None or s.verdict.backend == backend]
    unit_vu = info.profile.unit_vu if info.profile is not None else 100
    measured_at: dict[tuple[int, str], float] = {}
    for r in judgement.results:
        if backend is None or r.backend == backend:
            key = (r.cpu, r.suite)
            measured_at[key] = max(measured_at.get(key, 0.0), float(r.finished_at or 0.0))
    segments = {(s.verdict.cpu, s.verdict.suite): text for s in keep
                if s.segment is not None and s.segment.runs > 1
                and (text := s.segment_text(unit_vu)) is not None}
    results = tuple(s.verdict for s in keep)
    worst = (tuple(worst_lines(info.profile, results, label=lambda cpu: f"@{cpu}"))
             if info.profile is not None else ())
    return Evaluation(results, measured_at, segments=segments, worst=worst)


def evaluate_store(path: Path, info: ProfileInfo, backend: str | None,
                   root: str = "/") -> Evaluation:
    """The judgement of the store at ``path`` (its own connection: this runs in a child
    process); failures become ``error``. What each CPU is comes from ``root``'s topology
    and what the runs recorded."""
    if info.profile is None:
        return Evaluation()
    try:
        store = Store(path, readonly=True)
        try:
            found = store_judgement(store, info.profile, cores=topology_cores(root),
                                    operations=VERIFY_OPERATIONS)
            newest = store.newest_meta()
            records = list(store.run_records(newest.run_id)) if newest is not None else []
        finally:
            store.close()
        evaluation = evaluation_of(found.judgement, info, backend)

        return dataclasses.replace(evaluation, preflight=preflight_lines(
            records, info.profile, evaluation.results))
    except Exception as exc:  # noqa: BLE001 - a broken store or record: show, keep the UI
        return Evaluation(error=f"evaluating {path}: {type(exc).__name__}: {exc}")


def evaluation_to_json(evaluation: Evaluation) -> str:
    return json.dumps({
        "results": [r.to_dict() for r in evaluation.results],
        "measured_at": [[cpu, suite, ts] for (cpu, suite), ts in
                        evaluation.measured_at.items()],
        "error": evaluation.error,
        "preflight": list(evaluation.preflight),
        "segments": [[cpu, suite, text] for (cpu, suite), text in
                     evaluation.segments.items()],
        "worst": list(evaluation.worst),
    })


def evaluation_from_json(text: str) -> Evaluation:
    data = json.loads(text)
    return Evaluation(
        results=tuple(CoverageResult.from_dict(r) for r in data["results"]),
        measured_at={(int(cpu), str(suite)): float(ts) for cpu, suite, ts in
                     data["measured_at"]},
        error=data.get("error"),
        preflight=tuple(str(x) for x in data.get("preflight", ())),
        segments={(int(cpu), str(suite)): str(text) for cpu, suite, text in
                  data.get("segments", ())},
        worst=tuple(str(x) for x in data.get("worst", ())),
    )


def evaluate_store_in_child(path: Path, info: ProfileInfo, backend: str | None,
                            stop: threading.Event | None = None,
                            timeout_s: float = 300.0, root: str = "/") -> Evaluation:
    """:func:`evaluate_store` in a child process. In a thread it would hold the UI's
    GIL for seconds (pure-Python statistics and a bootstrap: keys answered ~3.5 s late
    on this 2-vCPU VM); a child leaves the UI process idle. Blocking: from a worker;
    ``stop`` kills the child (raises ChildStopped)."""

    cmd = [sys.executable, "-m", "qprof.tui.sources.consensus", str(path), info.location,
           backend or "", root]
    try:
        rc, out, err = run_child(cmd, stop, timeout_s)
        if rc != 0:
            tail = (err.strip().splitlines() or [f"exit code {rc}"])[-1]
            return Evaluation(error=f"evaluating {path}: {tail}")
        return evaluation_from_json(out)
    except (OSError, subprocess.SubprocessError, ValueError, TypeError, KeyError) as exc:
        return Evaluation(error=f"evaluating {path}: {type(exc).__name__}: {exc}")


def core_costs(evaluation: Evaluation | None
               ) -> dict[int, tuple[dict[str, float], dict[str, int], str | None]]:
    """cpu -> (suite -> verify ns, suite -> VU estimate, statistic) for the per-core
    table: the figure the verdict used (median, 10th percentile or quiet-turn pairs)."""
    out: dict[int, tuple[dict[str, float], dict[str, int], str | None]] = {}
    for r in evaluation.results if evaluation else ():
        times, vus, _ = out.setdefault(r.cpu, ({}, {}, r.statistic))
        times[r.suite] = r.suite_time_ns
        if r.decision != "no_estimate":  # the contended median's VU is no estimate
            vus[r.suite] = r.vu_estimate
    return out


def coverage_rows(
    evaluation: Evaluation | None,
    info: ProfileInfo,
    clusters: list[ClusterFacts],
    backend: str | None,
    missing: str = "not measured yet",
) -> tuple[CoverageView, ...]:
    """One row per suite × cluster; unmeasured pairs say so (``missing``) instead of
    disappearing."""
    results = list(evaluation.results) if evaluation else []
    measured_at = evaluation.measured_at if evaluation else {}
    groups: list[tuple[int | None, str, tuple[int, ...]]] = [
        (c.id, f"cl{c.id} {short_design(c.design)} {cpu_ranges(c.cpus)}", c.cpus) for c in clusters
    ]
    if not groups:  # topology without clusters: one group per measured CPU
        groups = [(None, f"CPU {cpu}", (cpu,)) for cpu in sorted({r.cpu for r in results})]
    rows: list[CoverageView] = []
    for suite in info.suites:
        for cluster_id, where, cpus in groups:
            candidates = [r for r in results if r.suite == suite and r.cpu in cpus]
            if not candidates:
                rows.append(CoverageView(
                    suite=suite, where=where, cluster=cluster_id, cpu=None, backend=backend,
                    time_ns=None, vu_estimate=None, vu_constant=info.constant(suite),
                    margin=None, covered=None, note=missing))
                continue
            r = max(candidates, key=lambda r: (r.vu_estimate, r.suite_time_ns))
            rows.append(CoverageView(
                suite=suite, where=where, cluster=cluster_id, cpu=r.cpu, backend=r.backend,
                time_ns=r.suite_time_ns, vu_estimate=r.vu_estimate,
                vu_constant=r.vu_constant,
                margin=r.margin, covered=r.covered, capped=r.capped,
                cap_factor=r.cap_factor if r.capped else None,
                worst_block_ns=r.worst_block_ns,
                measured_at=measured_at.get((r.cpu, suite)),
                note=r.verdict or None,
                statistic=r.statistic,
                statistic_why=r.estimate.statistic_why,
                confidence=r.confidence,
                vu_median_rule=r.estimate.vu_by_statistic.get("median"),
                basis=r.basis,
                basis_label=r.basis_label,
                decision=r.decision,
                vu_ci=r.estimate.vu_ci,
                is_unit=r.estimate.is_unit,
                ratio_binds=r.ratio_binds,
                block_time_covered=r.block_time_covered,
                block_time_ns=r.block_time.time_ns if r.block_time else None,
                block_reference_ns=r.block_time.reference_ns if r.block_time else None,
                block_reference_core=r.block_time.reference_core if r.block_time else None,
                block_text=(f"{r.block_time.worst.text()} "
                            f"({r.block_time.worst.binding_text()})"
                            if r.block_time else None),
                state=r.state,
                headline=r.headline,
                segment=(evaluation.segments.get((r.cpu, suite))
                         if evaluation is not None else None),
            ))
    return tuple(rows)


if __name__ == "__main__":  # the child of evaluate_store_in_child: PATH PROFILE BACKEND ROOT
    import os

    os.nice(10)  # background work: the UI and the user's own jobs come first
    _path, _profile, _backend = sys.argv[1:4]
    _root = sys.argv[4] if len(sys.argv) > 4 else "/"
    _info = load_profile_info(_profile)
    if _info.error:
        sys.exit(f"profile: {_info.error}")
    print(evaluation_to_json(evaluate_store(Path(_path), _info, _backend or None, _root)))
