"""Profile constants and Verify-Unit coverage for the monitor (``qprof.consensus``).

Coverage comes from :func:`qprof.consensus.coverage` over the newest verify medians of
one backend (estimate = ceil(100 × median(suite) / median(unit suite)), both from the
same core). The panel shows one row per suite and cluster; when a cluster has several
measured cores, the core with the highest estimate speaks for it, because a constant
has to cover the slowest core.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qprof.tui.model import CoverageView, cpu_ranges
from qprof.tui.sources.hardware import ClusterFacts, field_of

# What a block's signature check costs: the plain verify, or both verifiers (enforce).
VERIFY_OPERATIONS = ("verify", "dual_enforce")


@dataclass(frozen=True)
class ProfileInfo:
    """A loaded profile, or the reason it could not load (the UI keeps running)."""

    name: str
    profile: Any  # qprof.consensus.Profile, None when it failed to load
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
        path = getattr(self.profile, "path", None)
        return str(Path(path).resolve()) if path else self.name

    def constant(self, suite: str) -> int | None:
        if self.profile is None:
            return None
        return self.profile.verify_units.get(suite)


def profile_names() -> list[str]:
    """Profiles the `p` key offers."""
    from qprof.consensus import available_profiles

    return available_profiles() or ["qanum"]


def load_profile_info(name: str) -> ProfileInfo:
    try:
        from qprof.consensus import load_profile

        profile = load_profile(name)
    except Exception as exc:  # noqa: BLE001 - ProfileError, OSError: show, do not crash
        return ProfileInfo(name=name, profile=None, error=str(exc))
    return ProfileInfo(name=profile.name, profile=profile)


def newest_verify(measurements: Iterable[Any]) -> dict[int, dict[str, Any]]:
    """cpu -> suite -> newest Measurement of a valid-signature verify."""
    out: dict[int, dict[str, Any]] = {}
    for m in measurements:
        if field_of(m, "operation") not in VERIFY_OPERATIONS:
            continue
        per_cpu = out.setdefault(int(m.cpu), {})
        old = per_cpu.get(m.suite)
        if old is None or (m.finished_at or 0) >= (old.finished_at or 0):
            per_cpu[m.suite] = m
    return out


def _results(measurements: Iterable[Any], info: ProfileInfo) -> list[Any]:
    if info.profile is None:
        return []
    from qprof.consensus import SuiteMedian, coverage

    medians = [
        SuiteMedian(cpu=cpu, backend=m.backend, suite=suite, median_ns=float(m.median_ns),
                    capped=m.capped, cap_factor=m.cap_factor, samples=m.n)
        for cpu, by_suite in newest_verify(measurements).items()
        for suite, m in by_suite.items()
    ]
    return coverage(info.profile, medians)


def core_costs(measurements: Iterable[Any], info: ProfileInfo
               ) -> dict[int, tuple[dict[str, float], dict[str, int]]]:
    """cpu -> (suite -> median ns, suite -> VU estimate) for the per-core table."""
    measurements = list(measurements)
    out: dict[int, tuple[dict[str, float], dict[str, int]]] = {}
    for cpu, by_suite in newest_verify(measurements).items():
        out[cpu] = ({s: float(m.median_ns) for s, m in by_suite.items()}, {})
    for r in _results(measurements, info):
        out[r.cpu][1][r.suite] = r.vu_estimate
    return out


def coverage_rows(
    measurements: Iterable[Any],
    info: ProfileInfo,
    clusters: list[ClusterFacts],
    backend: str | None,
    missing: str = "not measured yet",
) -> tuple[CoverageView, ...]:
    """One row per suite × cluster; unmeasured pairs say so (``missing``) instead of
    disappearing."""
    results = _results(measurements, info)
    groups: list[tuple[int | None, str, tuple[int, ...]]] = [
        (c.id, f"cl{c.id} {_short(c.design)} {cpu_ranges(c.cpus)}", c.cpus) for c in clusters
    ]
    if not groups:  # topology without clusters: one group per measured CPU
        groups = [(None, f"CPU {cpu}", (cpu,)) for cpu in sorted({r.cpu for r in results})]
    newest = newest_verify(measurements)
    rows: list[CoverageView] = []
    for suite in info.suites:
        for cluster_id, where, cpus in groups:
            candidates = [r for r in results if r.suite == suite and r.cpu in cpus]
            if not candidates:
                rows.append(CoverageView(
                    suite=suite, where=where, cluster=cluster_id, cpu=None, backend=backend,
                    median_ns=None, vu_estimate=None, vu_constant=info.constant(suite),
                    margin=None, covered=None, note=missing))
                continue
            r = max(candidates, key=lambda r: (r.vu_estimate, r.median_ns))
            m = newest.get(r.cpu, {}).get(suite)
            rows.append(CoverageView(
                suite=suite, where=where, cluster=cluster_id, cpu=r.cpu, backend=r.backend,
                median_ns=r.median_ns, vu_estimate=r.vu_estimate, vu_constant=r.vu_constant,
                margin=r.margin, covered=r.covered, capped=r.capped,
                cap_factor=r.cap_factor if r.capped else None,
                worst_block_ns=r.worst_block_ns,
                measured_at=field_of(m, "finished_at"),
                note=r.verdict or None,
            ))
    return tuple(rows)


def _short(design: str | None) -> str:
    if not design:
        return "?"
    return design.removeprefix("Cortex-")
