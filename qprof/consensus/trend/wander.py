"""How far the host moves a ratio's level at a run, beyond the runs' own noise: what a
step's interval holds besides its two segments' errors. A step as measured is the code's
change plus the host's level move at that run; where the host moved the level, the
segments' errors alone missed the step (docs/TREND.md, "A step's interval")."""

from __future__ import annotations

from collections.abc import Sequence

from qprof.consensus.trend.changepoints import noise_var

BLOCK = 5  # runs per block: the spread of block means beyond the runs' noise
FLOOR = 0.5  # the level wander assumed before any is seen, in run-to-run sds
PRIOR_BLOCKS = 8  # ... worth this many blocks against the measured one


def level_var(segments: Sequence[Sequence[float]], block: int = BLOCK,
              floor: float = FLOOR, prior_blocks: int = PRIOR_BLOCKS) -> float:
    """The variance (of log ratios) of the host's level move at a run, from each
    segment's runs (log ratios, in order; each segment's own level is taken out): the
    mean square of the means of blocks of ``block`` runs beyond what the run-to-run
    noise gives them, shrunk towards ``floor`` squared times that noise with the weight
    of ``prior_blocks`` blocks (a few blocks tell little of it)."""
    resid: list[float] = []
    means: list[float] = []
    for ys in segments:
        if not ys:
            continue
        mu = sum(ys) / len(ys)
        r = [y - mu for y in ys]
        resid += r
        means += [sum(r[j:j + block]) / block for j in range(0, len(r) - block + 1, block)]
    if len(resid) < 3:
        return 0.0
    noise = noise_var(resid, [1.0] * len(resid))  # run to run, as Pelt's penalty reads it
    k = len(means) if len(means) >= 2 else 0
    measured = max(sum(m * m for m in means) / k - noise / block, 0.0) if k else 0.0
    return (k * measured + prior_blocks * floor * floor * noise) / (k + prior_blocks)
