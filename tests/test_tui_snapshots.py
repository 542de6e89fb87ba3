"""Snapshot tests of the main screen (pytest-textual-snapshot).

Deterministic by construction: hardware from fixture roots (nothing live, no load %),
a fixed clock, no refresh timer, a fixed backend, and relative paths in the header
(the test runs in a temporary directory holding links to the fixtures). Regenerate with
``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_tui_helpers import (
    BIG_LITTLE,
    GOLD_CAPPED_MEDIANS,
    THIS_VM,
    fixture_root,
    frozen_config,
    seed_store,
)

from qprof.tui.app import MonitorApp

pytestmark = pytest.mark.timeout(60)


async def settled(pilot) -> None:  # noqa: ANN001 - a textual Pilot
    """The coverage evaluation runs in a worker after the first frame: wait for it."""
    for _ in range(600):
        await pilot.pause(0.05)
        if pilot.app.first_frame_at is not None and pilot.app._evaluating is None:
            break
    await pilot.pause()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path


def test_big_little_with_seeded_costs(snap_compare, workdir: Path) -> None:  # noqa: ANN001
    (workdir / "seeds-arm").symlink_to(fixture_root(BIG_LITTLE))
    db = seed_store(workdir / "seed.db", cpu=2)
    seed_store(db, cpu=6, medians=GOLD_CAPPED_MEDIANS, capped=True, cap_factor=2.24,
               run_id="seed-gold")
    app = MonitorApp(frozen_config(Path("seeds-arm"), store=Path("seed.db")))
    assert snap_compare(app, terminal_size=(120, 36), run_before=settled)


def test_this_vm_at_80x24(snap_compare, workdir: Path) -> None:  # noqa: ANN001
    (workdir / "vm").symlink_to(fixture_root(THIS_VM))
    app = MonitorApp(frozen_config(Path("vm"), profile="qanum"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=settled)
