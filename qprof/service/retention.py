"""How long the store keeps what (applied by ``Store.maintain``)."""

from __future__ import annotations

from dataclasses import dataclass

# Frequency history is downsampled: at most one stored sample per CPU per this many
# seconds unless the value changed (a cap starting is kept at once).
FREQ_MIN_SPACING_S = 30.0
DAY_S = 24 * 3600.0
# ... and kept this long (Retention.keep_freq_s, the default).
FREQ_KEEP_S = 30 * DAY_S
# Run points (each run's estimates per series, ~1-2 kB a run and CPU: ~30 MB a year
# hourly on two CPUs) outlive the runs: a year by default, and never less than this
# whatever keep_s says, so a week of hourly runs (168) is always judgeable together.
POINTS_KEEP_S = 365 * DAY_S
POINTS_MIN_KEEP_S = 8 * DAY_S


@dataclass(frozen=True)
class Retention:
    """How long the store keeps what (seconds; 0 keeps for ever). ``Store.maintain``
    applies it, so a daemon left running for years stays within a bounded size.

    Sizes that drove the defaults: a daemon run of one CPU (check mode, four suites,
    with the shadow pair) is ~0.8-1 MB, nearly all of it the per-sample timings (up to
    4000 per round); without them ~40 kB. Hourly on two clusters that is ~100 MB for two
    days with samples plus ~170 MB for 90 days without: ~0.3 GB at steady state. SQLite
    reuses the freed pages, so the file stops growing (it does not shrink by itself).
    Runs that hold the newest result of some (cpu, suite, backend, operation) are never
    touched: the metrics and ``qprof history`` after a restart come from them.
    """

    keep_s: float = 90 * DAY_S  # runs, their records, and alerts
    keep_samples_s: float = 2 * DAY_S  # per-sample timings inside measurement records
    keep_freq_s: float = FREQ_KEEP_S  # frequency samples at all...
    freq_full_s: float = 1 * DAY_S  # ...at full resolution (FREQ_MIN_SPACING_S) this long,
    freq_bucket_s: float = 600.0  # then one per CPU per bucket plus every cap/max change
    # Work per maintain() call, so a large backlog (a store from before retention) is
    # worked off over a few hourly calls instead of stalling start-up or the watch loop.
    max_runs: int = 50
    max_freq_span_s: float = 2 * DAY_S
    keep_points_s: float = POINTS_KEEP_S  # run points (store_points.py); 0 keeps for ever

    def points_keep_s(self) -> float:
        """How long run points stay (0: for ever): at least as long as the runs and
        never under POINTS_MIN_KEEP_S; the points of a run outlive its samples and rows."""
        if self.keep_points_s <= 0 or self.keep_s <= 0:
            return 0.0
        return max(self.keep_points_s, self.keep_s, POINTS_MIN_KEEP_S)
