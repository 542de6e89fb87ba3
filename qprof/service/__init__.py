"""qprof.service: the daemon, its SQLite store, alerts, Prometheus metrics, sd_notify.

Readers (the monitor, `qprof history`) need only the store::

    from qprof.service.store import Store, default_state_dir
"""
