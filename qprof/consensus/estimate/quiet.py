"""Quiet turns and the quiet ratio under contention (the ``paired`` statistic).

Interleaved rounds time the unit and every suite in turns; each operation over the
unit's speed around it is one ratio. Contention moves the ratio itself, so the estimate
is the ratio at no contention: the run's quiet speed, each pair's contention, each pool
signature's own cost, a contention curve through the quiet bins, and the median of the
operations brought to the quiet speed; :func:`paired_ci` bootstraps it hierarchically.
The steps, their reasons and the measured figures: docs/ESTIMATOR.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from qprof.consensus.estimate import stats
from qprof.consensus.estimate.reduce import Reduced
from qprof.consensus.estimate.wmedian import weighted_medians
from qprof.measure import stats as sample_stats

if TYPE_CHECKING:
    import numpy as np

# The run's quiet speed: the median of the quickest band of the unit's turn medians
# (every round) QUIET_SIGMAS sigma (a turn median's jitter) wide that holds this share.
QUIET_MIN_SHARE = 0.05
QUIET_SIGMAS = 4.0
MIN_QUIET_WIDTH = 0.002  # at least 20 bp wide
# A quickest phase whose turns wander further than this many times their jitter from one
# turn to the next (steps up to FIT_MAX) is a contended level, not a quiet phase: 9.4-10
# on the simulator's smt-up runs spent inside one contended phase; steady phases 0.7-1.0
# on every simulated shape (also with half the turns jumping to +50 %), 0.6-1.5 on the
# AMD EPYC guest's runs.
MAX_WANDER = 3.0
# More of the unit's turns than this quicker than the quickest steady phase (by over
# FIT_MAX): the phase is a contended level, the quiet one too rare to measure (none on
# the AMD EPYC guest's runs or the simulated shapes; 1.7 % on a contended Xeon run).
MAX_QUICKER_SHARE = 0.01
# s bins (unit slowdown) of the contention curve; the line through the bins up to FIT_MAX
# gives the quiet level; operations beyond USE_MAX (heavy spells) are left out.
BIN_EDGES = (0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.06, 0.08, 0.11, 0.15, 0.20)
FIT_MAX = 0.03
USE_MAX = 0.20
MIN_BIN_OPS = 5  # a bin's median from fewer operations is not used
# The quiet data a suite needs for an estimate: operations in the fit bins, and rounds
# with some of them (the interval resamples rounds).
MIN_QUIET_OPS = 20
MIN_QUIET_ROUNDS = 3
MAX_BOOTSTRAP_OPS = 4000  # more operations are thinned (every k-th) for the interval
BOOTSTRAP_CHUNK = 32  # replicates at a time (memory: chunk x operations)
SEED = 20261201


def _turns(samples: list[float], size: int) -> list[list[float]]:
    return [samples[i:i + size] for i in range(0, len(samples), size)]


@dataclass(frozen=True)
class RoundQuiet:
    """One round's unit turns against the run's quiet speed."""

    turn_medians: list[float]
    centre: float  # the run's quiet speed u0

    def slowdown(self, c: int) -> float:
        """s of the pair around suite turn c (unit turns c and c+1)."""
        return (self.turn_medians[c] + self.turn_medians[c + 1]) / 2 / self.centre - 1


@dataclass(frozen=True)
class RunQuiet:
    """The run's quiet speed and every round's unit turns against it."""

    u0: float
    band: tuple[float, float]  # the quickest phase's band u0 is the median of
    sigma: float  # a turn median's relative jitter
    # The quickest phase's wander: the median |next turn / turn - 1| of its turns, up to
    # FIT_MAX, over what jitter alone gives (1 for a steady phase; inf: no next turn that
    # near; nan: no band held QUIET_MIN_SHARE).
    wander: float
    # Share of the unit's turns more than FIT_MAX quicker than the band: a quicker speed
    # the core held, too rarely for a band of its own.
    quicker_share: float
    rounds: dict[int, RoundQuiet]

    @property
    def why_not(self) -> str | None:
        """Why this run has no quiet speed, or None."""
        if self.wander != self.wander:
            return (f"the host was contended throughout the run: the unit's turns never "
                    f"held one speed for {QUIET_MIN_SHARE:.0%} of them")
        if self.wander > MAX_WANDER:
            return (f"the host was contended throughout the run: the unit's quickest "
                    f"turns wander {self.wander:.1f}x as far from one turn to the next "
                    f"as their jitter allows (a steady quiet phase: about 1)")
        if self.quicker_share > MAX_QUICKER_SHARE:
            return (f"the host was contended almost throughout the run: "
                    f"{self.quicker_share:.1%} of the unit's turns ran more than "
                    f"{FIT_MAX:.0%} quicker than its quickest steady phase, too few to "
                    f"measure the quiet ratio at")
        return None


def _turn_medians(samples: list[float], size: int) -> tuple[list[float], list[float]]:
    """A round's unit turn medians, and each turn's relative MAD of its samples."""
    medians, mads = [], []
    for t in _turns(samples, size):
        m = sample_stats.median(t)
        medians.append(m)
        if len(t) > 1 and m > 0:
            mads.append(sample_stats.median([abs(x - m) for x in t]) / m)
    return medians, mads


def _quickest_band(medians: list[float], width: float) -> tuple[float, float] | None:
    """The quickest band ``width`` wide that holds QUIET_MIN_SHARE of ``medians``."""
    order = sorted(medians)
    need = max(2, math.ceil(QUIET_MIN_SHARE * len(order)))
    j = 0
    for i, lo in enumerate(order):
        j = max(j, i)
        while j + 1 < len(order) and order[j + 1] <= lo * (1 + width):
            j += 1
        if j - i + 1 >= need:
            return lo, lo * (1 + width)
    return None


def round_quiet(unit: Reduced) -> RunQuiet | None:
    """The run's quiet speed, and every round's unit turns against it (interleaved rounds
    with samples only; see the module text)."""
    turns = {r: (_turn_medians(unit.samples_by_round[r], k), k)
             for r, k in sorted(unit.turn_sizes.items())
             if r in unit.samples_by_round and len(unit.samples_by_round[r]) >= 2 * k}
    if not turns:
        return None
    medians = [x for (m, _d), _k in turns.values() for x in m]
    mads = [x for (_m, d), _k in turns.values() for x in d]
    size = sample_stats.median([k for _t, k in turns.values()])
    # A turn median's jitter: 1.25 x 1.4826 x (within-turn MAD) / sqrt(size), relative.
    sigma = 1.2533 * 1.4826 * sample_stats.median(mads) / max(size, 1) ** 0.5 if mads else 0.0
    band = _quickest_band(medians, max(QUIET_SIGMAS * sigma, MIN_QUIET_WIDTH))
    if band is None:  # no phase: every turn at the run's median speed (not used)
        u0, wander, band = sample_stats.median(medians), float("nan"), (min(medians),
                                                                        max(medians))
    else:
        lo, hi = band
        u0 = sample_stats.median([m for m in medians if lo <= m <= hi])
        # A steady phase's next turn differs by jitter alone, |N(0, 2 sigma^2)| with a
        # median of 0.954 sigma, or jumps to a contended level: the steps up to FIT_MAX
        # (the jumps left out, however often) tell a steady phase from a wandering
        # contended level, whose steps are several % and near ones are not jitter.
        steps = [d for (m, _d), _k in turns.values() for c in range(len(m) - 1)
                 if lo <= m[c] <= hi and (d := abs(m[c + 1] / m[c] - 1)) <= FIT_MAX]
        wander = (sample_stats.median(steps) / (0.954 * sigma) if steps and sigma > 0
                  else 1.0 if steps else math.inf)
    quicker = sum(1 for m in medians if m < band[0] * (1 - FIT_MAX)) / len(medians)
    return RunQuiet(u0, band, sigma, wander, quicker,
                    {r: RoundQuiet(m, u0) for r, ((m, _d), _k) in turns.items()})


def unit_quiet(run: RunQuiet) -> tuple[float, dict[int, float], list[int]]:
    """The unit's quiet speed: (the run's u0, the median of each round's unit turns at
    s <= FIT_MAX where it has some, the rounds without any: contended throughout)."""
    kept = {r: sample_stats.median(quiet) for r, q in run.rounds.items()
            if (quiet := [m for m in q.turn_medians if m <= run.u0 * (1 + FIT_MAX)])}
    return run.u0, kept, sorted(set(run.rounds) - set(kept))


@dataclass
class PairOps:
    """Every paired operation of a suite: the arrays the estimate and its interval use."""

    ratio: np.ndarray  # operation / clock
    slowdown: np.ndarray  # s of its pair
    round_index: np.ndarray  # 0..rounds-1, for the bootstrap
    signature: np.ndarray  # pool signature id (unknown: one id per operation)
    cost: np.ndarray  # its signature's relative cost (1 when unknown)
    rounds: list[int]  # round_index -> round
    quiet: RunQuiet | None = None  # the quiet speed u0 the slowdowns are measured from
    # The unit's turn medians of these rounds, and each one's round_index: u0 is the
    # median of those in its band, redone per bootstrap replicate.
    unit_turns: np.ndarray | None = None
    unit_turn_round: np.ndarray | None = None


@dataclass
class Paired:
    """A suite's quiet ratio from interleaved turns (see the module text)."""

    ratio: float  # the quiet ratio (nan: too few quiet operations)
    by_round: dict[int, float]  # the same per round that had quiet operations
    quiet_fraction: dict[int, float]  # every round: share of its B turns at s <= FIT_MAX
    contended: list[int]  # rounds without quiet turns, or contended throughout
    quiet_turns: int  # B turns at s <= FIT_MAX
    turns: int  # B turns in all rounds
    unit_quiet_ns: float  # the unit's quiet speed
    unit_by_round: dict[int, float]  # its quiet centre per round not contended throughout
    # Kept round -> its operations brought to the quiet speed (ratio / g(s)).
    ratios_by_round: dict[int, list[float]] = field(default_factory=dict)
    contended_share: float = 0.0  # share of the unit's turns at s > FIT_MAX
    slope_bp: float | None = None  # the ratio's change per 1 % of slowdown, in bp
    quiet_ops: int = 0  # operations in the fit bins
    ops: PairOps | None = field(default=None, repr=False, compare=False)
    why_not: str | None = None  # why there is no estimate (too few quiet data)

    @property
    def spread_bp(self) -> float:
        return stats.round_spread_bp(list(self.by_round.values()))

    @property
    def unit_spread_bp(self) -> float:
        return stats.round_spread_bp(list(self.unit_by_round.values()))

    @property
    def usable(self) -> bool:
        return self.why_not is None and self.ratio == self.ratio


def _bins(slowdown: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.searchsorted(np.asarray(BIN_EDGES), slowdown, side="left")


def _fit(ops: PairOps, weights: np.ndarray, fit_bins: list[int], level_bins: list[int]
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per replicate (rows of ``weights``): the quiet level a (line through the fit bins
    at s = 0), its slope b, and each operation's g(s)."""
    import numpy as np

    norm = ops.ratio / ops.cost
    which = _bins(ops.slowdown)
    reps = weights.shape[0]
    xs, ys, ws = [], [], []
    for k in fit_bins:
        sel = which == k
        w = weights[:, sel]
        ys.append(weighted_medians(norm[sel], w))
        tot = w.sum(axis=1)
        xs.append((w * ops.slowdown[sel]).sum(axis=1) / np.maximum(tot, 1e-300))
        ws.append(tot)
    x, y, wt = np.stack(xs, 1), np.stack(ys, 1), np.stack(ws, 1)
    if len(fit_bins) == 1:  # the quiet bin alone (a quiet host): its level, no slope
        a, b = y[:, 0], np.zeros(reps)
    else:
        sw = wt.sum(1)
        mx, my = (wt * x).sum(1) / sw, (wt * y).sum(1) / sw
        var = (wt * (x - mx[:, None]) ** 2).sum(1)
        b = np.where(var > 0, (wt * (x - mx[:, None]) * (y - my[:, None])).sum(1)
                     / np.maximum(var, 1e-300), 0.0)
        a = my - b * mx
        if fit_bins[0] == 0 and (which == 0).sum() >= MIN_QUIET_OPS:
            # Enough operations at the quiet speed: their own level, moved along the line
            # by their small mean slowdown. A neighbour's load changes within a turn, so
            # s measures the contention of a suite turn with an error: the line's slope
            # is attenuated, and an intercept extrapolated from contended bins with it
            # lies on the contended side (-40 bp on the smt-here shape).
            a = y[:, 0] - b * x[:, 0]
    g = np.ones((reps, len(norm)))
    quiet = ops.slowdown <= FIT_MAX
    g[:, quiet] = (a[:, None] + b[:, None] * ops.slowdown[quiet]) / a[:, None]
    for k in level_bins:
        sel = which == k
        g[:, sel] = (weighted_medians(norm[sel], weights[:, sel]) / a)[:, None]
    return a, b, g


def _bins_used(ops: PairOps) -> tuple[list[int], list[int], np.ndarray]:
    """(fit bins, level bins, operations used) with enough operations each."""
    import numpy as np

    which = _bins(ops.slowdown)
    counts = np.bincount(which, minlength=len(BIN_EDGES) + 1)
    nfit = sum(1 for e in BIN_EDGES if e <= FIT_MAX)
    fit = [k for k in range(nfit) if counts[k] >= MIN_BIN_OPS]
    level = [k for k in range(nfit, len(BIN_EDGES)) if counts[k] >= MIN_BIN_OPS]
    # The line holds for every s up to FIT_MAX; beyond it, only bins with their own level.
    used = (ops.slowdown <= FIT_MAX) | (np.isin(which, level) & (ops.slowdown <= USE_MAX))
    return fit, level, used


def _estimate(ops: PairOps, weights: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per replicate: (quiet ratio, the curve's level a at s = 0, its slope b)."""
    import numpy as np

    fit, level, used = _bins_used(ops)
    a, b, g = _fit(ops, weights, fit, level)
    z = ops.ratio[None, :] / g  # differs per replicate
    return weighted_medians(z, np.where(used[None, :], weights, 0.0)), a, b


def _signature_costs(ops: PairOps) -> np.ndarray:
    """Each operation's signature cost relative to the pool's median signature, from its
    ratios brought to the quiet speed by a first fit without them."""
    import numpy as np

    fit, level, used = _bins_used(ops)
    one = np.ones((1, len(ops.ratio)))
    _a, _b, g = _fit(ops, one, fit, level)
    z = ops.ratio / g[0]
    sig = ops.signature
    ids, inverse = np.unique(sig[used], return_inverse=True)
    if len(ids) < 2 or len(ids) == used.sum():  # one signature, or no pool recorded
        return np.ones(len(ops.ratio))
    order = np.argsort(inverse, kind="stable")
    groups = np.split(z[used][order], np.cumsum(np.bincount(inverse))[:-1])
    per_sig = np.array([np.median(g) for g in groups])
    rel = per_sig / np.median(z[used])
    lookup = dict(zip(ids.tolist(), rel.tolist(), strict=True))
    return np.array([lookup.get(s, 1.0) for s in sig.tolist()])


def _collect(suite: Reduced, run: RunQuiet
             ) -> tuple[PairOps, dict[int, int], dict[int, int]] | None:
    """The paired operations, and per round its B turns and its quiet B turns."""
    import numpy as np

    ratio: list[float] = []
    slow: list[float] = []
    rix: list[int] = []
    sig: list[int] = []
    turns: dict[int, int] = {}
    quiet: dict[int, int] = {}
    rounds: list[int] = []
    unique = 1 << 40  # ids of operations whose signature is not recorded
    for r, k in sorted(suite.turn_sizes.items()):
        q = run.rounds.get(r)
        if q is None or r not in suite.samples_by_round:
            continue
        samples = suite.samples_by_round[r]
        pairable = max(min(-(-len(samples) // k), len(q.turn_medians) - 1), 0)
        pool = suite.pool_sizes.get(r)
        first = suite.pool_starts.get(r, 0)
        turns[r], quiet[r] = pairable, 0
        i = len(rounds)
        rounds.append(r)
        for c in range(pairable):
            s = q.slowdown(c)
            clock = (q.turn_medians[c] + q.turn_medians[c + 1]) / 2
            quiet[r] += s <= FIT_MAX
            for j in range(c * k, min((c + 1) * k, len(samples))):
                ratio.append(samples[j] / clock)
                slow.append(s)
                rix.append(i)
                if pool:
                    sig.append((first + j) % pool)
                else:
                    sig.append(unique)
                    unique += 1
    if not ratio:
        return None
    unit_turns = [m for r in rounds for m in run.rounds[r].turn_medians]
    unit_round = [i for i, r in enumerate(rounds) for _m in run.rounds[r].turn_medians]
    ops = PairOps(np.asarray(ratio), np.asarray(slow), np.asarray(rix),
                  np.asarray(sig, dtype=np.int64), np.ones(len(ratio)), rounds,
                  run, np.asarray(unit_turns),
                  np.asarray(unit_round))
    return ops, turns, quiet


def paired_ratios(suite: Reduced, unit: Reduced, run: RunQuiet | None = None
                  ) -> Paired | None:
    """The suite's quiet ratio against the unit (see the module text); None unless both
    were timed in interleaved rounds with their samples kept. ``run``: the unit's
    :func:`round_quiet`, when the caller pairs several suites with one unit."""
    import numpy as np

    if run is None:
        run = round_quiet(unit)
    if run is None or not suite.turn_sizes:
        return None
    rq = run.rounds
    got = _collect(suite, run)
    unit_ns, unit_by_round, without_quiet = unit_quiet(run)
    if got is None:
        return None
    ops, turns, quiet = got
    unit_turns = sum(len(q.turn_medians) for q in rq.values())
    contended_turns = sum(
        sum(1 for c in range(len(q.turn_medians) - 1) if q.slowdown(c) > FIT_MAX)
        for q in rq.values())
    share = contended_turns / max(unit_turns - len(rq), 1)
    fraction = {r: quiet[r] / turns[r] if turns[r] else 0.0 for r in turns}
    quiet_rounds = [r for r in turns if quiet[r] > 0]
    contended = sorted(set(without_quiet) | {r for r in turns if quiet[r] == 0})
    n_quiet = int((ops.slowdown <= FIT_MAX).sum())
    base = Paired(float("nan"), {}, fraction, contended, sum(quiet.values()),
                  sum(turns.values()), unit_ns, unit_by_round, {}, share, None, n_quiet, ops)
    fit, _level, _used = _bins_used(ops)
    # A level at s = 0: a line through two quiet bins, or the quickest bin alone.
    fits = len(fit) >= 2 or fit == [0]
    if run.why_not is not None:
        base.why_not = (f"{run.why_not}; the unit was over {FIT_MAX:.0%} slower than its "
                        f"quickest phase {share:.0%} of the time")
        return base
    if n_quiet < MIN_QUIET_OPS or not fits or len(quiet_rounds) < MIN_QUIET_ROUNDS:
        base.why_not = (
            f"too few quiet turns: {sum(quiet.values())} of {sum(turns.values())} in "
            f"{len(quiet_rounds)} rounds ({n_quiet} operations; at least {MIN_QUIET_OPS} "
            f"in {MIN_QUIET_ROUNDS} rounds needed); the host was contended "
            f"{share:.0%} of the time")
        return base
    ops.cost = _signature_costs(ops)
    est, _a, slope = _estimate(ops, np.ones((1, len(ops.ratio))))
    ratio = float(est[0])
    _f, level, used = _bins_used(ops)
    a, _b, g = _fit(ops, np.ones((1, len(ops.ratio))), fit, level)
    z = ops.ratio / g[0]
    by_round: dict[int, float] = {}
    zs: dict[int, list[float]] = {}
    for i, r in enumerate(ops.rounds):
        sel = (ops.round_index == i) & used
        if r in quiet_rounds and sel.any():
            zs[r] = z[sel].tolist()
            by_round[r] = float(np.median(z[sel]))
    base.ratio = ratio
    base.by_round = by_round
    base.ratios_by_round = zs
    base.slope_bp = float(slope[0] / a[0] * 100) if a[0] else None  # per 0.01 of s, in bp
    return base


def _replicate_u0(ops: PairOps, by_round: np.ndarray, rng: np.random.Generator
                  ) -> np.ndarray | None:
    """Per replicate: the weighted median of the unit turns in u0's band (the band as
    the run's: where the quickest phase lies is no source of error, its centre is)."""
    import numpy as np

    turns, where, run = ops.unit_turns, ops.unit_turn_round, ops.quiet
    if turns is None or where is None or run is None or not run.band[1] > 0:
        return None
    inside = (turns >= run.band[0]) & (turns <= run.band[1])
    if not inside.any():
        return None
    values, rounds = turns[inside], where[inside]
    order = np.argsort(values, kind="stable")
    w = by_round[:, rounds[order]] * rng.exponential(size=(by_round.shape[0], len(order)))
    cum = np.cumsum(w, axis=1)
    out: np.ndarray = values[order][np.argmax(cum >= cum[:, -1:] / 2, axis=1)]
    return out


def paired_ci(p: Paired, replicates: int = 1000, confidence: float = 0.95,
              signatures: bool = True) -> tuple[float, float] | None:
    """95 % interval of the quiet ratio: a Bayesian bootstrap with weights for rounds,
    pool signatures and operations, the curve and the median redone per replicate.
    ``signatures=False``: the measurement's share alone (what more rounds can narrow;
    the stopping rule's question), the pool held as it is."""
    import numpy as np

    ops = p.ops
    if ops is None or not p.usable or replicates <= 0:
        return None
    n = len(ops.ratio)
    rng = np.random.default_rng(SEED)
    if n > MAX_BOOTSTRAP_OPS:  # a random subset (every k-th would alias with the pool)
        keep = np.sort(rng.choice(n, MAX_BOOTSTRAP_OPS, replace=False))
        ops = PairOps(ops.ratio[keep], ops.slowdown[keep], ops.round_index[keep],
                      ops.signature[keep], ops.cost[keep], ops.rounds, ops.quiet,
                      ops.unit_turns, ops.unit_turn_round)
        n = len(keep)
    fit, _level, _used = _bins_used(ops)
    if not (len(fit) >= 2 or fit == [0]):
        return None
    _ids, sig_index = np.unique(ops.signature, return_inverse=True)
    n_sig, n_round = int(sig_index.max()) + 1, len(ops.rounds)
    # Records without the pool's order: each operation is its own signature (one level).
    by_signature = signatures and n_sig < n
    out: list[np.ndarray] = []
    done = 0
    while done < replicates:
        reps = min(BOOTSTRAP_CHUNK, replicates - done)
        by_round = rng.exponential(size=(reps, n_round))
        w = by_round[:, ops.round_index] * rng.exponential(size=(reps, n))
        if by_signature:
            w *= rng.exponential(size=(reps, n_sig))[:, sig_index]
        est, a, b = _estimate(ops, w)
        # The run's quiet speed is an estimate too: the replicate's own u0 (its rounds'
        # and turns' weights) moves its estimate along its curve, by b/a per unit of s.
        u0 = _replicate_u0(ops, by_round, rng)
        if u0 is not None and ops.quiet is not None:
            est = est * (1 + np.where(a != 0, b / a, 0.0) * (u0 / ops.quiet.u0 - 1))
        out.append(est)
        done += reps
    values = np.concatenate(out)
    alpha = (1 - confidence) / 2
    lo, mid, hi = np.quantile(values, [alpha, 0.5, 1 - alpha])
    # The replicates' spread about their own median, put about the estimate: a subset
    # for the interval, or a curve the weights bend, may move the replicates' centre.
    return float(p.ratio * lo / mid), float(p.ratio * hi / mid)
