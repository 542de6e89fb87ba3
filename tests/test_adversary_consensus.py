"""The worst-signature figure beside the median: VU at the adversary's signatures.

A summary file like the one ``qprof adversary`` keeps is written by hand, so the
arithmetic is checked without measuring: the seeds' Silver medians (qanum's reference
core) times a measured factor give the projected worst-signature VU against 3600.
"""

from __future__ import annotations

import json
from pathlib import Path

from qprof.consensus import load_profile
from qprof.consensus.adversarial import (
    load_factors,
    reference_worst,
    worst_signature_vu,
)

SUITE = "SLH-DSA-SHAKE-256s"


def _summary(directory: Path, suite: str, ground: float, crafted: float) -> None:
    summary = {"suite": suite, "cpu": 1, "cpu_model": "test CPU", "measured_at": 0.0,
               "worst": {"ground": {"ratio": ground, "low": ground - 0.01,
                                    "high": ground + 0.01, "hash_calls": 5000, "label": ""},
                         "crafted_invalid": {"ratio": crafted, "low": crafted - 0.02,
                                             "high": crafted + 0.02, "hash_calls": 6000,
                                             "label": ""}}}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{suite}.last.json").write_text(json.dumps({"summary": summary,
                                                               "signatures": []}))


def test_factors_load_and_multiply(tmp_path: Path) -> None:
    _summary(tmp_path, SUITE, 1.10, 1.30)
    factors = load_factors(SUITE, tmp_path)
    assert set(factors) == {"ground", "crafted_invalid"}
    w = worst_signature_vu(SUITE, 100, 34.92, (34.8, 35.0), factors["ground"])
    assert w.median_vu == 3492 and w.vu == 3842
    assert w.vu_ci[0] <= w.vu <= w.vu_ci[1] and w.vu_ci == (3794, 3885)
    assert w.covered_by(3600) is False and w.covered_by(4000) is True
    assert w.covered_by(3850) is None
    assert load_factors("SLH-DSA-SHAKE-128s", tmp_path) == {}


def test_silver_projection_against_3600(tmp_path: Path) -> None:
    _summary(tmp_path, SUITE, 1.10, 1.30)
    figures = {(core, w.suite): w for core, w in reference_worst(load_profile("qanum"),
                                                                 tmp_path)}
    w = figures[("Silver", SUITE)]
    assert w.projected and w.kind == "crafted_invalid"
    assert w.median_vu == 3492 and w.vu == 4539 > 3600
    assert ("Silver", "SLH-DSA-SHAKE-128s") not in figures  # no factor measured for it


def test_bad_summary_gives_no_factor(tmp_path: Path) -> None:
    (tmp_path / f"{SUITE}.last.json").write_text("{not json")
    assert load_factors(SUITE, tmp_path) == {}
    _summary(tmp_path, SUITE, float("nan"), -1.0)  # a hand-edited file: no crash, no figure
    assert load_factors(SUITE, tmp_path) == {}
    _summary(tmp_path, SUITE, 1.1, 1.3)
    assert set(load_factors(SUITE, tmp_path)) == {"ground", "crafted_invalid"}


def test_round_trip_and_words(tmp_path: Path) -> None:
    from qprof.consensus.adversarial import describe, worst_from_dict

    _summary(tmp_path, SUITE, 1.10, 1.30)
    w = worst_signature_vu(SUITE, 100, 34.92, (34.8, 35.0), load_factors(SUITE, tmp_path)["ground"])
    assert worst_from_dict(w.to_dict()) == w and worst_from_dict(None) is None
    text = describe(w, 3600, binds=False)
    assert "3842 VU" in text and "OVER the constant 3600" in text and "not binding" in text
