"""qprof.measure: per-core cost measurement, values kept in pyperf's format.

``records`` (the JSONL record contract), ``engine.run_bench`` (the one engine) and its
seams ``plan``, ``protocol``, ``processes``, ``progress``, ``adaptive``, ``collect``,
``freqwatch``, ``runmeta``; ``worker`` / ``timing`` (what each pinned worker times),
``fixtures`` (keys and signatures per run), ``stats`` (median, p95), ``jsonl`` (sink
and reader), ``hwinfo`` (what the engine needs from :mod:`qprof.hw`). The estimator
and the verdict live in :mod:`qprof.consensus`.
"""
