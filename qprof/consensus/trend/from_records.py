"""A run's records -> its run points: the estimator per CPU and backend (the same call as
`qprof check`), with what ran under the run. Used for JSONL files (`qprof trend RUN.jsonl`)
and by the daemon when a run finishes (it stores the points, so a run stays judgeable
after retention strips its samples)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from qprof.consensus.estimate.estimator import REPLICATES, estimate_both
from qprof.consensus.functional import undecided_where_mismatched
from qprof.consensus.trend.model import RunContext, RunPoint, SeriesKey, SuiteRun
from qprof.measure.records import Env, FreqSample, Measurement, Meta, Record
from qprof.measure.records_parts import CpuRow
from qprof.measure.units import NO_PROFILE_UNIT


def _str(value: object) -> str | None:
    return value[:200] if isinstance(value, str) and value else None


def _steal_pct(envs: list[Env], cpu: int) -> float | None:
    """Steal time between the before and after snapshots, % of the CPU's ticks."""
    by_when = {e.when: e.snapshot.cpu_times or {} for e in envs}
    t0, t1 = by_when.get("before", {}).get(cpu), by_when.get("after", {}).get(cpu)
    if t0 is None or t1 is None:
        return None
    total = t1.total - t0.total
    return 100.0 * (t1.steal - t0.steal) / total if total > 0 else None


def _load(envs: list[Env]) -> float | None:
    for e in envs:
        if e.when == "before" and e.snapshot.load is not None:
            return e.snapshot.load.one
    return None


def _cpu_row(meta: Meta, cpu: int) -> CpuRow:
    return next((r for r in meta.cpus if r.cpu == cpu), CpuRow(cpu=cpu))


def run_context(meta: Meta, cpu: int, envs: list[Env], freqs: list[FreqSample],
                contended_share: float | None) -> RunContext:
    v, m, row = meta.versions, meta.machine, _cpu_row(meta, cpu)
    samples = [f for f in freqs if f.cpu == cpu]
    capped = (any(f.capped for f in samples) if any(f.capped is not None for f in samples)
              else row.capped)
    return RunContext(
        liboqs=_str(v.get("liboqs_linked")), liboqs_build=_str(v.get("liboqs_build")),
        numba=_str(v.get("numba")), kernels=_str(v.get("qprof_kernels")),
        kernel=_str(m.kernel), microcode=_str(m.microcode),
        capped=capped, cap_factor=row.cap_factor,
        governor=_str(row.governor), load=_load(envs),
        steal_pct=_steal_pct(envs, cpu), contended_share=contended_share,
        qprof=_str(v.get("qprof_commit")) or _str(v.get("qprof")),
    )


def _pool_se(full: tuple[float, float] | None, held: tuple[float, float] | None
             ) -> float | None:
    """The pool's share of a run's standard error of ln ratio: what the interval with the
    signatures resampled adds to the one without (in quadrature)."""
    if full is None or held is None or min(*full, *held) <= 0:
        return None
    z2 = (2 * 1.959963984540054) ** 2
    share = (math.log(full[1] / full[0]) ** 2 - math.log(held[1] / held[0]) ** 2) / z2
    return math.sqrt(share) if share > 0 else 0.0


def _core_model(row: CpuRow, meta: Meta) -> str | None:
    """The core's model as a series tells it apart: the model name with the core design
    and, on x86, family and model (a VM's "AMD EPYC" is a Zen 4 on one host, a Zen 5 on
    the next)."""
    name = _str(row.model_name) or _str(meta.machine.cpu_model)
    parts = [p for p in (_str(row.uarch),) if p]
    family, model = row.family, row.model
    if family is not None and model is not None:
        parts.append(f"family {family} model {model}")
    if name and parts:
        return f"{name} ({'; '.join(parts)})"
    return name or (parts[0] if parts else None)


def series_key(meta: Meta, cpu: int, backend: str, operation: str) -> SeriesKey:
    row = _cpu_row(meta, cpu)
    model = _core_model(row, meta)
    return SeriesKey(node=_str(meta.machine.hostname) or "?", cpu=cpu,
                     cpu_model=model, backend=backend, operation=operation,
                     mode=_str(meta.settings.mode) or "?")


def run_points(records: Iterable[Record], *, unit_suite: str = NO_PROFILE_UNIT.suite,
               operation: str = "verify", replicates: int = REPLICATES,
               ) -> list[tuple[SeriesKey, RunPoint]]:
    """One point per CPU and backend of one run (its Meta first). Undecided estimates
    are kept as gaps; a run without its Meta gives nothing."""
    records = list(records)
    meta = next((r for r in records if isinstance(r, Meta)), None)
    if meta is None:
        return []
    measurements = [r for r in records if isinstance(r, Measurement)]
    envs = [r for r in records if isinstance(r, Env)]
    freqs = [r for r in records if isinstance(r, FreqSample)]
    by_group: dict[tuple[int, str], list[SuiteRun]] = {}
    shares: dict[tuple[int, str], float | None] = {}
    unit_ns: dict[tuple[int, str], float | None] = {}
    # The measurement's share alone (signatures held): the rest of a run's interval is
    # its signature pool's, which the runs of one pool share.
    full, held_pool = estimate_both(measurements, unit_suite=unit_suite,
                                    operation=operation, replicates=replicates)
    held = {(e.cpu, e.backend, e.suite): e.ratio_ci for e in held_pool}
    # A backend that failed its known answers is never decided: a gap, as in check.
    for e in undecided_where_mismatched(full, measurements, unit_suite):
        group = by_group.setdefault((e.cpu, e.backend), [])
        if e.is_unit:
            shares[(e.cpu, e.backend)] = e.contended_share
            unit_ns[(e.cpu, e.backend)] = e.suite_time_ns if e.undecided is None else None
            continue
        decided = e.undecided is None and e.ratio is not None and e.ratio_ci is not None
        group.append(SuiteRun(
            suite=e.suite, ratio=e.ratio if decided else None,
            ratio_ci=e.ratio_ci if decided else None,
            undecided=None if decided else (e.undecided or "no interval"),
            time_ns=e.suite_time_ns if decided else None,
            pool_se=_pool_se(e.ratio_ci, held.get((e.cpu, e.backend, e.suite))) if decided
            else None,
            pool_signatures=e.pool_signatures))
    out = []
    for (cpu, backend), suites in sorted(by_group.items()):
        if not suites:
            continue
        ctx = run_context(meta, cpu, envs, freqs, shares.get((cpu, backend)))
        out.append((series_key(meta, cpu, backend, operation),
                    RunPoint(run_id=meta.run_id, started_at=meta.started_at,
                             suites=tuple(suites), context=ctx, unit_suite=unit_suite,
                             unit_time_ns=unit_ns.get((cpu, backend)))))
    return out
