"""The monitor's view model: plain data the widgets draw, built by :mod:`qprof.tui.collect`.

Nothing here imports Textual, numba, oqs or pyperf, so the collector and the report
writer can be tested (and run) without a terminal. Times are nanoseconds and
frequencies kHz, as in the record contract; formatting to µs/GHz happens in the
``fmt_*`` helpers so that every view prints the same numbers the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qprof.hw.sysfs import format_cpulist

# Markers that carry meaning in text, never by colour alone (NO_COLOR terminals).
COVERED_MARK = "✓"
NOT_COVERED_MARK = "✗"
CAP_MARK = "⚠"
UNKNOWN = "?"


@dataclass(frozen=True)
class MachineView:
    """Header line: what machine, which profile/backend, where the data comes from."""

    model: str  # SoC or CPU model name
    designs: str  # "Cortex-A77 ×4 + Kryo 4XX Silver (Cortex-A55) ×4"
    arch: str | None
    profile: str
    backend: str
    source: str  # "standalone (store …)", "daemon store …", "snapshot --root …"
    measurable: bool  # False when replaying another machine's snapshot
    problems: tuple[str, ...] = ()
    activity: str | None = None  # e.g. the first run's own measurements, in progress
    quota: str | None = None  # qprof's cgroup CPU quota, when it has one (qprof.hw.cgroup)


@dataclass(frozen=True)
class CoreView:
    """One row of the per-core table."""

    cpu: int
    online: bool | None
    cluster: int | None
    design: str | None  # core design (uarch), e.g. "Cortex-A55"
    part: str | None  # vendor part name, e.g. "Kryo 4XX Silver"
    core_class: str | None  # "performance" | "efficiency" | ...
    governor: str | None
    cur_khz: int | None
    max_khz: int | None  # what the CPU may run at now
    hw_max_khz: int | None  # what the hardware can do
    capped: bool | None
    cap_factor: float | None
    cap_cause: str | None
    estimated: bool = False  # frequency guessed (e.g. /proc/cpuinfo "cpu MHz")
    load_pct: float | None = None
    # suite -> verify time the verdict compared, by ``statistic``
    times_ns: dict[str, float] = field(default_factory=dict)
    vu: dict[str, int] = field(default_factory=dict)  # suite -> VU estimate
    statistic: str | None = None  # "median" | "p10" | "paired" | None (not measured)
    # Clock estimated by timing a known loop (no cpufreq, e.g. a VM): once, cached.
    est_khz: int | None = None


@dataclass(frozen=True)
class CoverageView:
    """One suite on one cluster (or core): estimate against the profile's constant."""

    suite: str
    where: str  # "cluster 0 (CPUs 0-3)" or "CPU 2"
    cluster: int | None
    cpu: int | None  # the core the numbers come from
    backend: str | None
    time_ns: float | None  # verify time the verdict compared, by statistic; None: not measured
    vu_estimate: int | None
    vu_constant: int | None
    margin: int | None  # constant - estimate (negative = not covered)
    covered: bool | None  # None = not measured yet
    capped: bool | None = None
    cap_factor: float | None = None
    worst_block_ns: float | None = None
    measured_at: float | None = None
    note: str | None = None  # why there is no figure ("not measured yet", ...)
    # `qprof check`'s statistic for this core: "paired" for interleaved rounds, "median"
    # for rounds timed one suite after the other, "p10" only when asked for (as
    # qprof.consensus.estimate.statistic chooses); time_ns is by that statistic.
    statistic: str | None = None
    statistic_why: str | None = None
    confidence: str | None = None  # "high" | "uncertain" (CI straddles the constant)
    vu_median_rule: int | None = None  # the estimate by the plain median, for comparison
    # qprof.consensus.basis: "node" / "dual" carry a verdict; "comparison" never does.
    basis: str | None = None
    basis_label: str | None = None
    # qprof.consensus.verdict: covered / not_covered / unsure / no_estimate / comparison.
    decision: str | None = None
    vu_ci: tuple[int, int] | None = None  # the estimate's 95 % interval
    is_unit: bool = False  # the unit suite: its estimate is the unit's VU by definition
    # The chain's rule (qprof.consensus.policy): whether the ratio binds on this core
    # (a ✗ where it does not is shown, but is no failure), and the core's time bound:
    # its worst-case block here against the same block on the slowest reference core.
    ratio_binds: bool | None = None
    block_time_covered: bool | None = None
    block_time_ns: float | None = None
    block_reference_ns: float | None = None
    block_reference_core: str | None = None
    block_text: str | None = None  # "125 x SLH-DSA-SHAKE-128s (bound by ...)"
    # The verdict's word (qprof.consensus.verdict_types.WORDS key, CoverageResult.state) and
    # its one-line verdict, as `qprof check` prints them.
    state: str | None = None
    headline: str | None = None
    # The kept runs' segment the verdict stands on (several runs), as check prints it.
    segment: str | None = None


@dataclass(frozen=True)
class AlertView:
    ts: float
    kind: str
    severity: str
    where: str
    message: str


@dataclass(frozen=True)
class ClusterHistory:
    """Recent frequencies (kHz) of one cluster, oldest first."""

    cluster: int | None
    label: str
    samples_khz: tuple[int, ...]
    max_khz: int | None  # scale of the sparkline (hardware maximum)


@dataclass(frozen=True)
class TrendView:
    """One suite on one CPU over the store's runs (:mod:`qprof.consensus.trend`): each
    run's estimate, the change points, and the current segment's estimate (every
    comparable run since the last change) beside the newest run's own."""

    cpu: int
    suite: str
    backend: str
    # Each run's estimate in VU (unit VU x ratio, unrounded), oldest first; None: the run
    # was undecided (too contended to estimate), a gap counted and shown.
    estimates: tuple[float | None, ...]
    changes: tuple[int, ...]  # index of the first run after each change point
    change_bp: tuple[float, ...]  # the size of each change, bp of the ratio
    segment_vu: int | None  # None: no decided run since the last change
    segment_ci: tuple[int, int] | None
    segment_runs: int  # decided runs the segment combines
    segment_gaps: int  # undecided runs inside it
    newest_vu: int | None  # None: the newest run was undecided
    newest_ci: tuple[int, int] | None
    change_lines: tuple[str, ...] = ()  # each change sized and explained, oldest first
    alarm: str | None = None  # the detector's alarm, not yet confirmed or dismissed

    @property
    def runs(self) -> int:
        return len(self.estimates)


@dataclass(frozen=True)
class Progress:
    """A measurement in flight (None when idle)."""

    fraction: float  # 0..1
    eta_s: float | None
    item: str  # "CPU 2 ML-DSA-87 round 1/3"


@dataclass(frozen=True)
class Frame:
    """Everything one refresh shows."""

    taken_at: float
    machine: MachineView
    cores: tuple[CoreView, ...]
    coverage: tuple[CoverageView, ...]
    history: tuple[ClusterHistory, ...] = ()
    alerts: tuple[AlertView, ...] = ()
    coverage_note: str | None = None  # e.g. "not measured on this machine (snapshot)"
    # Why the backend gives no verdict, and what to run (numba alone: comparison only).
    verdict_note: str | None = None
    # The newest run's known answers, memory per operation and constants with headroom
    # (qprof.tui.preflight), one line each.
    preflight: tuple[str, ...] = ()
    # The worst signature beside the median (qprof.report.headroom.worst_lines).
    worst: tuple[str, ...] = ()


# ---------------------------------------------------------------- formatting helpers


def fmt_ghz(khz: int | None) -> str:
    if khz is None:
        return "—"
    return f"{khz / 1_000_000:.2f}"


def fmt_pct(value: float | None) -> str:
    return "—" if value is None else f"{value:3.0f}%"  # fixed width: no relayout per tick


def fmt_cap(core: CoreView) -> str:
    """Cap marker in text: '⚠ cap ×2.24 thermal', '' when not capped, '?' when unknown."""
    if core.capped is None:
        # No cpufreq (VMs) or unreadable: say so rather than guess.
        return "n/a" if core.max_khz is None and core.hw_max_khz is None else UNKNOWN
    if not core.capped:
        return ""
    parts = [f"{CAP_MARK} cap"]
    if core.cap_factor is not None:
        parts.append(f"×{core.cap_factor:.2f}")
    if core.cap_cause:
        parts.append(core.cap_cause)
    return " ".join(parts)


# The Covered cell in the verdict's words (qprof.consensus.verdict_types.WORDS): a figure that
# carries no verdict (a verifier no node runs alone); a 95 % interval straddling a binding
# constant (no ✓/✗ until measured longer); a run too contended to estimate (no figure);
# a ratio that does not bind on this core, "not binding here" first.
COMPARISON_CELL = "comparison only"
UNSURE_CELL = "? unsure"
NO_ESTIMATE_CELL = "no reliable estimate"
NOT_BINDING_CELL = "not binding here"
UNIT_CELL = "the unit suite"
_SIDE = {"covered": "within", "not_covered": "over", "unsure": "straddles"}


def fmt_covered(covered: bool | None, missing: str = "not measured yet",
                decision: str | None = None, binds: bool | None = None,
                unit: bool = False) -> str:
    if decision == "comparison":
        return COMPARISON_CELL
    if unit and decision is not None:  # its figure is the unit by definition: no side
        return UNIT_CELL
    if binds is False and decision is not None:  # the constants follow the reference cores
        side = "no estimate" if decision == "no_estimate" else _SIDE.get(decision, "?")
        return f"{NOT_BINDING_CELL} ({side})"
    if decision == "no_estimate":
        return NO_ESTIMATE_CELL
    if decision == "unsure":
        return UNSURE_CELL
    if covered is None:
        return missing
    if binds is False:
        return f"{NOT_BINDING_CELL} ({'within' if covered else 'over'})"
    return f"{COVERED_MARK} yes" if covered else f"{NOT_COVERED_MARK} NO"


def fmt_estimate(row: CoverageView) -> str:
    """'4294 (4234-4332)': the estimate with its 95 % interval, as `qprof check` gives
    it ('—' when not measured; the unit suite alone, its figure by definition)."""
    if row.vu_estimate is None or row.decision == "no_estimate":
        return "—"  # no reliable estimate: the contended median's figure is none
    if row.vu_ci is None or row.is_unit:
        return str(row.vu_estimate)
    return f"{row.vu_estimate} ({row.vu_ci[0]}-{row.vu_ci[1]})"


STAT_SHORT = {"median": "med"}  # others ("p10", "paired") are short already


def fmt_stat(statistic: str | None) -> str:
    """'med' / 'p10' / 'paired' / '—': the statistic `qprof check` used on that core."""
    return "—" if statistic is None else STAT_SHORT.get(statistic, statistic)


def cpu_ranges(cpus: list[int] | tuple[int, ...]) -> str:
    """[0,1,2,3,6] -> '0-3,6' (the kernel's cpulist notation, as `qprof topology` prints)."""
    return format_cpulist(list(cpus))


def bare_design(design: str | None) -> str | None:
    """'Zen 3, VM-reported' -> 'Zen 3': the qualifier qprof.hw adds to a design it could
    not confirm (VM-reported, by flags) is shown once, in the header's design line; the
    columns keep the name so that 80 columns still fit."""
    return design.split(", ", 1)[0] if design else design


def short_design(design: str | None) -> str:
    """'Cortex-A55' -> 'A55' for the narrowest columns (cluster labels at 80×24)."""
    return (bare_design(design) or "?").removeprefix("Cortex-").removeprefix("ARM ")
