"""qprof.measure: per-core cost measurement, values kept in pyperf's format.

- ``records``: the record contract (Meta, Env, FreqSample, Measurement, Disagreement,
  Note, End), one JSONL line each.
- ``engine.run_bench(config, sink, progress, stop)``: the one engine (``qprof bench``,
  ``qprof check``, the daemon, the monitor); ``config.BenchConfig``, ``ProgressEvent``,
  ``RunSummary``.
  Its seams: ``plan`` (what to measure), ``protocol`` (the typed engine <-> worker
  messages), ``processes`` (start/follow/stop workers), ``progress`` (bar and ETA),
  ``adaptive`` (the stopping rule), ``collect`` (worker results -> records),
  ``freqwatch`` (caps per round), ``runmeta`` (the Meta record, the clock choice).
- ``worker`` / ``timing``: what each pinned, niced worker process runs and times.
- ``fixtures``: keys and signatures prepared once per run (cached between runs).
- ``stats`` / ``reduce``: reduction rules (median, p95, round spread, drift, bootstrap CI,
  quiet-turn pairs); the estimator and verdict on top of them live in ``qprof.consensus``;
  ``report``: Markdown tables.
- ``jsonl``: ``JsonlSink``, ``read_run`` (bad lines reported as file:line and skipped).
- ``hwinfo``: what the engine needs from ``qprof.hw`` (with a sysfs fallback).
"""
