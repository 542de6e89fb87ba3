"""The monitor's measurement source: an aborted run is an error that says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from qprof.measure import engine
from qprof.measure.fixtures import FixtureError
from qprof.tui.sources.measure import MeasurementAborted, MeasureSource

TINY_PROFILE = Path(__file__).resolve().parent / "fixtures" / "tui" / "tiny-profile.toml"


def test_no_signer_aborts_with_what_to_install(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def no_signer(suite: str, *args: object, **kwargs: object) -> None:
        raise FixtureError(f"no backend can sign {suite} here (install liboqs)")

    monkeypatch.setattr(engine, "cached_pool", no_signer)
    source = MeasureSource(tmp_path / "monitor.db", profile=str(TINY_PROFILE), mode="quick")
    with pytest.raises(MeasurementAborted, match=r"no signature of the unit suite: "
                       r"no backend can sign ML-DSA-44 here \(install liboqs\)"):
        source.measure(0, ["ML-DSA-44", "ML-DSA-87"], "numba")
