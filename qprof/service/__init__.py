"""qprof.service: the daemon, its SQLite store, alerts, Prometheus metrics, sd_notify.

Readers (the monitor, `qprof history`) need only the store::

    from qprof.service.store import Store
    from qprof.service.store_file import default_state_dir
"""
