"""Until the engine's adaptive rule calls :mod:`qprof.consensus.estimator` (it moves to
its own module in the engine split), it imports the statistic choice from here. The
verdict itself lives in :mod:`qprof.consensus`."""

from qprof.consensus.statistic import choose_statistic, paired_for, paired_spread

__all__ = ["choose_statistic", "paired_for", "paired_spread"]
