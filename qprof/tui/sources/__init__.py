"""Data sources of the monitor: one class per origin of data (s-tui style).

- :class:`~qprof.tui.sources.hardware.HardwareSource`: topology and frequencies
  (``qprof.hw`` over a root directory: this machine or a ``--root`` snapshot);
- :class:`~qprof.tui.sources.load.LoadSource`: per-CPU load from /proc/stat;
- :class:`~qprof.tui.sources.store.StoreSource`: measurements, alerts and frequency
  history from a ``qprof.service.store.Store`` (the daemon's or the monitor's own);
- :class:`~qprof.tui.sources.consensus.ConsensusSource`: profile constants and
  Verify-Unit coverage;
- :class:`~qprof.tui.sources.measure.MeasureSource`: on-demand and scheduled
  measurements through ``qprof.measure.engine.run_bench`` in a worker thread.
"""
