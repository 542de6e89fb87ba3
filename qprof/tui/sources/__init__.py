"""Data sources of the monitor, one module per origin of data (s-tui style): ``hardware``
(topology and frequencies over a root), ``load`` (/proc/stat), ``store`` (measurements,
alerts and frequency history of a store), ``consensus`` (profile constants and the
store's judgement), ``trend`` (the verdict over time), ``measure`` (on-demand and
scheduled runs of the engine) and ``child`` (work done in a child process).
"""
