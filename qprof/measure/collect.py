"""From a worker's result to records: one ``Measurement`` per (suite, backend, operation,
round), ``Disagreement`` s with their inputs, and the notes a reader needs."""

from __future__ import annotations

from dataclasses import dataclass, field

from qprof.hw.caps import RATIOS_UNAFFECTED, cap_message
from qprof.measure import stats
from qprof.measure.freqwatch import CapState
from qprof.measure.plan import NoteText
from qprof.measure.poolcost import PoolCost
from qprof.measure.protocol import Task, WorkerResult
from qprof.measure.records import Disagreement, Measurement


@dataclass
class Collected:
    measurements: list[Measurement] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)
    notes: list[NoteText] = field(default_factory=list)
    wrong_verdicts: int = 0


@dataclass(frozen=True)
class Where:
    """What the records of one worker share."""

    run_id: str
    cpu: int
    pyperf_json: str | None  # the CPU's pyperf file, as records name it (None: not kept)
    keep_samples: int  # Measurement.samples_ns kept up to this many
    # Each SLH-DSA pool's counts (qprof.measure.poolcost), carried by its verify records.
    pool_costs: dict[str, PoolCost] = field(default_factory=dict)


def _values_ns(values_s: tuple[float, ...]) -> list[float]:
    return [round(v * 1e9, 1) for v in values_s]


def verify_medians(tasks: list[Task], result: WorkerResult, start: int = 0
                   ) -> dict[str, float]:
    """Suite -> median ns of the worker's verify tasks: the figures its records will
    carry, for the progress line at once (the records may wait for the pools' counts)."""
    return {tasks[res.index].suite: stats.summarize(_values_ns(res.values_s)).median_ns
            for res in result.results
            if start <= res.index < len(tasks) and res.values_s
            and tasks[res.index].operation == "verify"}


def collect(where: Where, tasks: list[Task], result: WorkerResult,
            caps: dict[int, CapState], start: int = 0) -> Collected:
    """Records of the worker's tasks from index ``start`` (a serving worker's result holds
    its earlier rounds too); ``caps``: the cap state of each round."""
    out = Collected()
    cpu = where.cpu
    for k, (capped, factor, worst) in sorted(caps.items()):
        if capped and worst is not None:
            out.notes.append(("warning", "cap", f"CPU {cpu} round {k + 1}: " + cap_message(
                worst.max_khz, worst.hw_max_khz, factor, worst.cap_cause)
                + f"; {RATIOS_UNAFFECTED}"))
    for res in result.results:
        if res.index < start or res.index >= len(tasks) or not res.values_s:
            continue
        task = tasks[res.index]
        capped, factor, _worst = caps.get(task.round, (None, None, None))
        values = _values_ns(res.values_s)
        s = stats.summarize(values)
        cost = where.pool_costs.get(task.suite) if task.operation == "verify" else None
        if cost is not None and len(cost.permutations) != res.pool_size:
            cost = None
        m = Measurement(
            run_id=where.run_id, cpu=cpu, suite=task.suite, backend=task.backend,
            operation=task.operation, round=task.round, n=s.n, median_ns=s.median_ns,
            p95_ns=s.p95_ns, mean_ns=s.mean_ns, stdev_ns=s.stdev_ns, min_ns=s.min_ns,
            max_ns=s.max_ns, samples_ns=values if len(values) <= where.keep_samples else None,
            finished_at=res.finished_at, capped=capped, cap_factor=factor,
            pyperf_json=where.pyperf_json, checks=res.checks,
            disagreements=res.disagreements, turn_size=res.turn_size,
            pool_size=res.pool_size, pool_start=res.pool_start if res.pool_size else None,
            pool_permutations=list(cost.permutations) if cost is not None else None,
            pool_fixed_permutations=cost.fixed if cost is not None else None,
            steal_ticks=res.steal_ticks, cpu_ticks=res.cpu_ticks,
            wrong_verdicts=res.wrong_verdicts,
        )
        out.measurements.append(m)
        what = f"CPU {cpu} {task.suite} {task.backend} {task.operation}"
        if res.wrong_verdicts:
            out.wrong_verdicts += res.wrong_verdicts
            out.notes.append(("error", "wrong_verdict",
                              f"{what}: {res.wrong_verdicts} of {m.n} verdicts were wrong"))
        for ex in res.examples:
            out.disagreements.append(Disagreement(run_id=where.run_id, cpu=cpu,
                                                  suite=task.suite, **ex))
        if m.disagreements:
            out.notes.append(("error", "disagreement",
                              f"CPU {cpu} {task.suite} {task.operation}: {m.disagreements} "
                              f"of {m.checks} checks disagreed"))
    for fail in result.failures:
        if start <= fail.index < len(tasks):
            rnd = tasks[fail.index].round
            out.notes.append(("warning", "task_failed",
                              f"CPU {cpu} round {rnd + 1}: {fail.name}: {fail.error}"))
    return out
