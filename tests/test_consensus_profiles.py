"""Profiles: the shipped ones load; every error names file, key and expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from qprof.consensus import ProfileError, available_profiles, load_profile


def test_qanum_profile_has_todays_constants():
    p = load_profile("qanum")
    assert p.unit_suite == "ML-DSA-44"
    assert p.unit_vu == 100
    assert p.verify_units == {
        "ML-DSA-44": 100,
        "ML-DSA-87": 290,
        "SLH-DSA-SHAKE-128s": 1600,
        "SLH-DSA-SHAKE-256s": 3600,
    }
    assert p.max_block_verify_units == 200_000
    assert p.max_block_auth_bytes == 3_000_000
    assert p.target_block_interval_s == 75
    assert p.suites_in_use == ("ML-DSA-87", "SLH-DSA-SHAKE-256s")
    ref = p.reference_core()
    assert ref is not None and ref.name == "Silver"
    assert ref.part_name == "Kryo 4XX Silver" and ref.uarch == "Cortex-A55"
    assert ref.part == "0x805" and ref.implementer == "0x51"
    assert p.suites[0] == "ML-DSA-44"


def test_reference_medians_reproduce_seed_001_estimates():
    from qprof.consensus import vu_estimate

    p = load_profile("qanum")
    cores = {c.name: c for c in p.reference_cores}
    expect = {
        "Silver": {"ML-DSA-87": 286, "SLH-DSA-SHAKE-128s": 1576, "SLH-DSA-SHAKE-256s": 3492},
        "Gold": {"ML-DSA-87": 283, "SLH-DSA-SHAKE-128s": 1466, "SLH-DSA-SHAKE-256s": 3200},
    }
    for name, rows in expect.items():
        med = cores[name].verify_median_ns
        for suite, vu in rows.items():
            assert vu_estimate(med[suite], med["ML-DSA-44"]) == vu, (name, suite)


def test_dated_profile_has_the_constants_at_measurement():
    p = load_profile("qanum-2026-10-14")
    assert p.verify_units["SLH-DSA-SHAKE-128s"] == 1200
    assert p.verify_units["SLH-DSA-SHAKE-256s"] == 3500
    assert p.verify_units["ML-DSA-87"] == 290
    assert {"qanum", "qanum-2026-10-14"} <= set(available_profiles())


def test_profile_by_path(tmp_path: Path):
    src = load_profile("qanum").path
    copy = tmp_path / "mine.toml"
    copy.write_text(src.read_text())
    assert load_profile(str(copy)).name == "qanum"


def test_profiles_ship_inside_the_package_and_qprof_profiles_overrides(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import qprof

    shipped = load_profile("qanum").path
    assert shipped.parent == Path(qprof.__file__).resolve().parent / "profiles"
    mine = tmp_path / "qanum.toml"
    mine.write_text(shipped.read_text().replace("max_block_verify_units = 200000",
                                                "max_block_verify_units = 150000"))
    monkeypatch.setenv("QPROF_PROFILES", str(tmp_path))
    p = load_profile("qanum")
    assert p.path == mine and p.max_block_verify_units == 150_000


GOOD = """
name = "t"
unit_suite = "ML-DSA-44"
max_block_verify_units = 200000
[verify_units]
"ML-DSA-44" = 100
"ML-DSA-87" = 290
"""


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        (GOOD.replace('"ML-DSA-87" = 290', '"ML-DSA-99" = 290'), "verify_units", "unknown suite"),
        (GOOD.replace('"ML-DSA-87" = 290', '"ML-DSA-87" = 290.5'), "ML-DSA-87", "integer"),
        (GOOD.replace('"ML-DSA-87" = 290', '"ML-DSA-87" = "290"'), "ML-DSA-87", "integer"),
        (GOOD.replace('"ML-DSA-87" = 290', '"ML-DSA-87" = true'), "ML-DSA-87", "integer"),
        (GOOD.replace('unit_suite = "ML-DSA-44"\n', ""), "unit_suite", "missing"),
        (GOOD.replace('"ML-DSA-44" = 100\n', ""), "verify_units", "unit suite"),
        (GOOD.replace("200000", "-5"), "max_block_verify_units", ">= 1"),
        (GOOD.replace("max_block_verify_units = 200000\n", ""), "max_block_verify_units",
         "missing"),
        (GOOD.replace('name = "t"', 'name = "t"\nsuites_in_use = 3'), "suites_in_use", "list"),
        (GOOD.replace('name = "t"', 'name = "t"\nsuites_in_use = ["ML-DSA-65"]'),
         "suites_in_use", "no entry"),
        ("name = [", "", "not valid TOML"),
    ],
)
def test_profile_errors_name_file_key_and_expectation(tmp_path, text, key, expected):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    msg = str(info.value)
    assert str(path) in msg
    assert key in msg
    assert expected in msg


def test_unknown_profile_lists_known_ones():
    with pytest.raises(ProfileError, match="qanum"):
        load_profile("no-such-chain")
    with pytest.raises(ProfileError, match="not found"):
        load_profile("/nonexistent/x.toml")
