"""The one estimator: Measurement records -> a Verify-Unit estimate and its interval.

One package owns the path, in order:

- ``clock``: clock changes in a run (a cap came or went; on a VM a step of the unit's
  quiet speed): the rounds of one clock are kept;
- ``reduce``: records -> ``Reduced`` per (cpu, suite, backend, operation): the seeds'
  median, p95, round medians, the samples per round;
- ``quiet``: quiet turns: which unit turns ran at the quiet speed, and each operation of
  a suite turn between two of them over the unit's speed around it (``Paired``);
- ``statistic``: which statistic a CPU's estimates use (``auto``), and why;
- ``stats``: round spread, drift, the bootstrap intervals;
- ``estimator``: ``estimate(measurements, ...) -> list[SuiteEstimate]``;
- ``stopping``: the stopping rule the engine is handed (``rule_for``).

``qprof.consensus.verdict`` puts a profile's constants on top. ``qprof.measure`` produces
the records and imports nothing from here.
"""
