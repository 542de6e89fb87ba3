"""What each CPU of the daemon's results is, for the profile's policy (reference cores are
matched by design or part): the topology of the daemon's root, and what each run recorded
in its Meta (the CPUs it measured), which wins where it names a design."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable

from qprof.consensus.policy import CoreDesign, cores_from_rows, cores_from_topology
from qprof.measure.records import Measurement, Meta, Throttled
from qprof.service.store import Store


def topology_cores(root: str) -> dict[int, CoreDesign]:
    """The root's CPUs; empty when the topology cannot be read (the CPUs are then held to
    the ratio everywhere, as cores of unknown design)."""
    from qprof.hw.topology import read_topology

    try:
        return cores_from_topology(read_topology(root))
    except Exception:  # a damaged or foreign root: no design known, nothing lost
        return {}


def recorded_cores(store: Store, measurements: Iterable[Measurement]) -> dict[int, CoreDesign]:
    """The designs the runs behind ``measurements`` recorded (their Meta's CPU rows)."""
    cores: dict[int, CoreDesign] = {}
    for run_id in dict.fromkeys(m.run_id for m in measurements):
        with contextlib.suppress(KeyError, sqlite3.Error):
            for record in store.run_records(run_id):
                if isinstance(record, Meta):
                    cores.update({cpu: c for cpu, c in cores_from_rows(record.cpus).items()
                                  if c.known})
                break  # the Meta is a run's first record
    return cores


def recorded_quota(store: Store, measurements: Iterable[Measurement]) -> float | None:
    """The cgroup CPU quota (CPUs) the runs behind ``measurements`` ran under, from their
    Throttled record (the newest run's first); None: no quota. Check prices a run's
    worst-case block with it; so do the readers of a store."""
    for run_id in reversed(list(dict.fromkeys(m.run_id for m in measurements))):
        with contextlib.suppress(KeyError, sqlite3.Error):
            for record in store.run_records(run_id):
                if isinstance(record, Throttled):
                    return record.quota_cpus
    return None
