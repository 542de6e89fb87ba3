"""Measurements started from the monitor, through ``qprof.measure.engine.run_bench``.

:meth:`MeasureSource.measure` blocks, so the app calls it from a Textual thread worker;
the engine runs the timing in pyperf worker processes pinned to the CPU (under nice 10),
so the UI process itself does no heavy work. Records go straight into the store the
monitor reads (the daemon's or its own), so a finished measurement shows up on the next
refresh. This module is imported only when something is measured: it pulls in the
engine (and through it pyperf).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from qprof.tui.model import Progress
from qprof.tui.sources.hardware import field_of

# The engine's "check" mode: valid-signature verify only, adaptive A/B/A rounds until the
# Verify-Unit estimate is sure (what `qprof check` uses for its verdict), so a core takes
# tens of seconds rather than the minutes of a full `qprof bench`.
MONITOR_SETTINGS: dict[str, Any] = {
    "mode": "check",
    "operations": ["verify"],
}


def progress_of(event: Any) -> Progress:
    """Engine progress event (ProgressEvent or dict) -> the progress bar's model."""
    fraction = field_of(event, "fraction")
    if fraction is None:
        done, total = field_of(event, "done"), field_of(event, "total")
        fraction = (done / total) if done is not None and total else 0.0
    eta = field_of(event, "eta_s", field_of(event, "eta"))
    cpu, rnd, rounds = field_of(event, "cpu"), field_of(event, "round"), field_of(event, "rounds")
    parts = [
        f"CPU {cpu}" if cpu is not None else "",
        (f"round {rnd + 1}/{rounds}" if rounds else f"round {rnd + 1}")
        if rnd is not None else "",
        field_of(event, "suite") or "",
        field_of(event, "operation") or "",
        field_of(event, "message") or "",
    ]
    item = " ".join(p for p in parts if p) or "…"
    return Progress(max(0.0, min(1.0, float(fraction))),
                    None if eta is None else float(eta), item)


def bench_config(config_cls: type, cpu: int, suites: Iterable[str], backend: str,
                 profile: str, root: Path, mode: str | None = None) -> Any:
    """A BenchConfig for one CPU, filling only the fields the engine defines."""
    wanted: dict[str, Any] = {
        "cpus": [cpu],
        "suites": list(suites),
        "backends": [backend],
        "backend": backend,
        "profile": profile,
        "root": str(root),
        **MONITOR_SETTINGS,
    }
    if mode:
        wanted["mode"] = mode
    if dataclasses.is_dataclass(config_cls):
        known = {f.name for f in dataclasses.fields(config_cls)}
        wanted = {k: v for k, v in wanted.items() if k in known}
    return config_cls(**wanted)


class MeasureSource:
    def __init__(self, store_path: Path, root: Path = Path("/"),
                 profile: str = "qanum", mode: str | None = None) -> None:
        self.store_path = Path(store_path)
        self.mode = mode
        self.root = Path(root)
        self.profile = profile

    def measure(self, cpu: int, suites: Iterable[str], backend: str,
                progress: Callable[[Progress], None] | None = None,
                stop: threading.Event | None = None) -> str:
        """Measure verify of ``suites`` on ``cpu``; returns a one-line summary."""
        from qprof.measure.engine import BenchConfig, run_bench
        from qprof.service.store import Store

        store = Store(self.store_path)
        try:
            config = bench_config(BenchConfig, cpu, suites, backend, self.profile, self.root,
                                  self.mode)

            def on_progress(event: Any) -> None:
                if progress is not None:
                    progress(progress_of(event))

            summary = run_bench(config, store.add, progress=on_progress, stop=stop)
        finally:
            store.close()
        status = field_of(summary, "status", "finished")
        measured = field_of(summary, "measurements")
        count = len(measured) if isinstance(measured, list | tuple) else measured
        return f"{status}" + (f", {count} measurements" if count is not None else "")
