"""The one estimator: Measurement records -> a Verify-Unit estimate and its interval.

In order: ``clock`` (the rounds of one clock), ``reduce`` (records -> ``Reduced`` per CPU,
suite, backend, operation), ``quiet`` (quiet-turn pairs), ``poolmix`` (a pool's mix
held to the population's), ``statistic`` (which statistic, and why), ``stats`` (spread,
drift, bootstrap intervals), ``estimator`` (``estimate``) and ``stopping`` (the rule the
engine is handed). ``qprof.measure`` produces the records and imports nothing from here.
"""
