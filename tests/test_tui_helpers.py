"""Shared set-up of the monitor tests (no tests here): fixture roots, a seeded store,
a frozen config."""

from __future__ import annotations

from pathlib import Path

import pytest

from qprof.measure.records import End, Measurement, Meta
from qprof.service.store import Store
from qprof.tui.collect import MonitorConfig

HW_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hw"
BIG_LITTLE = HW_FIXTURES / "seeds-arm"  # the seeds' machine: 6 Silver A55 + 2 Gold A77 capped
THIS_VM = HW_FIXTURES / "vm-this-machine"  # a 2-vCPU KVM guest without cpufreq
FROZEN_AT = 1_764_504_000.0  # 2025-11-30 12:00:00 UTC: every clock in these tests

# The seeds' Silver core (2026-10-14_arm, silver-core2.jsonl), liboqs verify medians in ns.
SILVER_MEDIANS = {
    "ML-DSA-44": 190_750,
    "ML-DSA-87": 545_300,
    "SLH-DSA-SHAKE-128s": 3_005_000,
    "SLH-DSA-SHAKE-256s": 6_660_000,
}
# The seeds' Gold core measured while capped at 1.08 GHz (2026-10-21, liboqs, stage 3).
GOLD_CAPPED_MEDIANS = {
    "ML-DSA-44": 121_400,
    "ML-DSA-87": 342_300,
    "SLH-DSA-SHAKE-128s": 1_850_000,
    "SLH-DSA-SHAKE-256s": 3_760_000,
}


def fixture_root(path: Path) -> Path:
    if not (path / "proc" / "cpuinfo").exists():
        pytest.skip(f"hardware fixture {path} is absent")
    return path


def seed_store(path: Path, cpu: int = 2, medians: dict[str, int] = SILVER_MEDIANS,
               capped: bool = False, cap_factor: float | None = None,
               run_id: str = "seed-silver", t0: float = FROZEN_AT - 3600,
               backend: str = "liboqs") -> Path:
    """A real SQLite Store holding one finished run of verify medians on one CPU."""
    store = Store(path)
    store.add(Meta(run_id=run_id, started_at=t0, qprof_version="test",
                   command=["qprof", "bench"], profile="qanum-2026-10-14"))
    for i, (suite, median) in enumerate(medians.items()):
        store.add(Measurement(run_id=run_id, cpu=cpu, suite=suite, backend=backend,
                              operation="verify", round=0, n=200, median_ns=float(median),
                              p95_ns=median * 1.05, finished_at=t0 + 10 + i,
                              capped=capped, cap_factor=cap_factor))
    store.add(End(run_id=run_id, finished_at=t0 + 60, status="finished"))
    store.close()
    return path


def frozen_config(root: Path, store: Path | None = None, **overrides: object) -> MonitorConfig:
    """No timer, no schedule, a fixed clock and backend: the screen depends on data only."""
    settings: dict[str, object] = dict(
        root=root, store_path=store, profile="qanum-2026-10-14", backend="liboqs",
        refresh_s=0.0, measure_every_s=0.0, auto_measure=False, clock=lambda: FROZEN_AT,
    )
    settings.update(overrides)
    return MonitorConfig(**settings)  # type: ignore[arg-type]
