"""What the daemon would measure with now against what its newest stored run was measured
with: a new liboqs (its version, or its build: the shared object on disk), new numba
kernels, another kernel after a reboot, new microcode. Each is a known change point of
every series (:mod:`qprof.consensus.trend`): the daemon raises ``library_changed`` and
measures at once, so the new segment begins without waiting out the interval."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

from qprof.consensus.trend.explain import known_differences
from qprof.consensus.trend.from_records import run_context
from qprof.consensus.trend.model import RunContext
from qprof.measure.records import Meta
from qprof.measure.runmeta import (
    cpuinfo_field,
    dist_version,
    kernels_digest,
    liboqs_build,
    liboqs_linked_version,
)
from qprof.verify import backend_status
from qprof.verify.availability import find_liboqs

# How often the watch loop compares (a stat of the liboqs shared object, the kernels'
# sources and /proc/cpuinfo: a few ms; the shared object is hashed only when it changed).
LIBRARY_CHECK_S = 10.0


@dataclass(frozen=True)
class LibraryChange:
    run_id: str  # the newest stored run, measured with the old software
    what: tuple[str, ...]  # "liboqs 0.16.0 -> 0.17.0", "kernel 6.8.0 -> 6.11.0", ...

    def text(self) -> str:
        return "; ".join(self.what)


class SoftwareWatch:
    """The software and firmware a run would record now, compared with a stored run's."""

    def __init__(self, root: str, backend: str) -> None:
        self.root = root
        self.backend = backend
        self._build: tuple[tuple[str, int, int, int], str | None] | None = None
        self._announced: set[tuple[str, tuple[str, ...]]] = set()

    def _liboqs_build(self) -> str | None:
        """The loaded liboqs's digest (runmeta.liboqs_build), hashed again only when the
        file's identity (path, inode, size, mtime) changed."""
        where = find_liboqs()
        if isinstance(where, str):
            return None
        try:
            st = os.stat(os.path.realpath(where.library))
        except OSError:
            return None
        ident = (os.path.realpath(where.library), st.st_ino, st.st_size, st.st_mtime_ns)
        if self._build is None or self._build[0] != ident:
            self._build = (ident, liboqs_build(backend_status("liboqs")))
        return self._build[1]

    def current(self) -> RunContext:
        """As build_meta records it (qprof.measure.runmeta), for the fields that start a
        new segment."""

        return RunContext(
            liboqs=liboqs_linked_version(backend_status("liboqs")),
            liboqs_build=self._liboqs_build(),
            numba=dist_version("numba"),
            kernels=kernels_digest(backend_status("numba")),
            kernel=platform.release() or None,
            microcode=cpuinfo_field(self.root, "microcode"))

    def check(self, newest: Meta | None) -> LibraryChange | None:
        """The known change points between the newest stored run and now; each difference
        is returned once (the next run records the new values)."""
        if newest is None:
            return None
        recorded = run_context(newest, -1, [], [], None)
        what = known_differences(recorded, self.current(), self.backend)
        if not what or (newest.run_id, what) in self._announced:
            return None
        self._announced.add((newest.run_id, what))
        return LibraryChange(newest.run_id, what)
