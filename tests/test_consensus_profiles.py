"""Profiles: the shipped ones load; every error names file, key and expectation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from faults import one_line, qprof

from qprof.consensus import ProfileError, available_profiles, load_profile
from qprof.service.config import ConfigError, load_config_file


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


def test_profiles_ship_from_the_top_level_directory_and_qprof_profiles_overrides(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from importlib import resources

    import qprof.profiles

    repo = Path(__file__).resolve().parents[1]
    shipped = load_profile("qanum").path
    # The package qprof.profiles is the repository's profiles/ (pyproject package-dir);
    # scripts/check-wheel proves that a wheel carries the same files.
    assert shipped.parent == Path(str(resources.files("qprof.profiles"))).resolve()
    assert shipped.parent == repo / "profiles"
    assert Path(qprof.profiles.__file__).parent == repo / "profiles"
    assert not (repo / "qprof" / "profiles").exists()
    mine = tmp_path / "qanum.toml"
    mine.write_text(shipped.read_text().replace("max_block_verify_units = 200000",
                                                "max_block_verify_units = 150000"))
    monkeypatch.setenv("QPROF_PROFILES", str(tmp_path))
    p = load_profile("qanum")
    assert p.path == mine and p.max_block_verify_units == 150_000


def test_qanum_states_the_seeds_rule():
    for name in ("qanum", "qanum-2026-10-14"):
        p = load_profile(name)
        assert p.ratio_binds == "reference"
        assert p.block_time is not None and p.block_time.max_vs_reference == 1.0
        assert p.block_time.max_interval_fraction is None
        assert p.auth_bytes_per_spend["ML-DSA-87"] == 7226
        assert p.auth_bytes_per_spend["SLH-DSA-SHAKE-256s"] == 29864
        assert set(p.auth_bytes_per_spend) == set(p.verify_units)
        assert p.auth_bytes_per_block == 16


def test_a_profile_without_policy_keys_binds_everywhere(tmp_path: Path):
    path = tmp_path / "plain.toml"
    path.write_text(GOOD)
    p = load_profile(path)
    assert p.ratio_binds == "all" and p.block_time is None
    assert p.auth_bytes_per_spend == {} and p.auth_bytes_per_block == 0


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
        ('ratio_binds = "some"\n' + GOOD, "ratio_binds", "expected one of"),
        ('ratio_binds = "reference"\n' + GOOD, "ratio_binds", "reference_cores"),
        (GOOD + '[block_time]\nmax_vs_reference = 0\n', "block_time.max_vs_reference",
         "positive"),
        (GOOD + '[block_time]\nmax_vs_ref = 1\n', "block_time", "unknown key"),
        (GOOD + '[block_time]\nmax_interval_fraction = 0.5\n',
         "block_time.max_interval_fraction", "target_block_interval_s"),
        ('target_block_interval_s = 75\n' + GOOD
         + '[block_time]\nmax_interval_fraction = 2\n', "max_interval_fraction",
         "fraction"),
        (GOOD + '[auth_bytes_per_spend]\n"ML-DSA-44" = 3739\n', "auth_bytes_per_spend",
         "max_block_auth_bytes"),
        ('max_block_auth_bytes = 3000000\n' + GOOD
         + '[auth_bytes_per_spend]\n"ML-DSA-65" = 10\n', "auth_bytes_per_spend",
         "unknown suite"),
        ('max_block_auth_bytes = 3000000\n' + GOOD
         + '[auth_bytes_per_spend]\n"ML-DSA-44" = 0\n', "ML-DSA-44", ">= 1"),
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


def test_verifier_key_names_the_verdicts_basis(tmp_path: Path) -> None:
    from qprof.consensus.basis import verdict_basis

    qanum = load_profile("qanum")
    assert qanum.verifier == "liboqs"
    assert verdict_basis(qanum, "liboqs") == "node"
    assert verdict_basis(qanum, "liboqs+numba", "dual_enforce") == "dual"
    assert verdict_basis(qanum, "liboqs+numba", "dual_shadow") == "comparison"
    assert verdict_basis(qanum, "numba") == "comparison"
    assert verdict_basis(qanum, "liboqs", "dual_enforce") == "comparison"
    bad = tmp_path / "bad.toml"
    bad.write_text('unit_suite = "ML-DSA-44"\nverifier = "liboqs+numba"\n'
                   'max_block_verify_units = 10\n[verify_units]\n"ML-DSA-44" = 1\n')
    with pytest.raises(ProfileError, match="verifier"):
        load_profile(bad)


def test_only_the_profiles_verifier_gets_covered() -> None:
    from qprof.consensus.verdict import evaluate
    from qprof.measure.records import Measurement

    qanum = load_profile("qanum")
    records = [Measurement(run_id="r", cpu=0, suite=s, backend=b, operation=op, round=0,
                           n=1, median_ns=ns, p95_ns=ns)
               for b, op in (("liboqs", "verify"), ("numba", "verify"),
                             ("liboqs+numba", "dual_enforce"))
               for s, ns in (("ML-DSA-44", 100.0), ("ML-DSA-87", 300.0))]
    got = {(r.backend, r.suite): r for op in ("verify", "dual_enforce")
           for r in evaluate(qanum, records, operation=op)}
    assert got[("liboqs", "ML-DSA-87")].covered is False
    assert got[("liboqs+numba", "ML-DSA-87")].covered is False
    assert "dual enforce" in got[("liboqs+numba", "ML-DSA-87")].verdict
    numba = got[("numba", "ML-DSA-87")]
    assert (numba.covered, numba.margin, numba.confidence, numba.vu_estimate) == (
        None, None, None, 300)
    assert "covered" not in numba.verdict.lower()


# -- 1. profiles and --config: not UTF-8, deeply nested, nan/inf -----------------------------

NOT_UTF8 = b'name = "x\xff\xfe"\n'


DEEP = b"x = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"


@pytest.mark.parametrize("content,words", [(NOT_UTF8, "not UTF-8"), (DEEP, "nested")],
                         ids=["not-utf8", "deep"])
def test_profile_not_utf8_or_deep_is_a_profile_error(tmp_path: Path, content: bytes,
                                                     words: str) -> None:
    path = tmp_path / "p.toml"
    path.write_bytes(content)
    with pytest.raises(ProfileError, match=words):
        load_profile(path)
    with pytest.raises(ConfigError, match=words):
        load_config_file(path)


@pytest.mark.parametrize("content", [NOT_UTF8, DEEP], ids=["not-utf8", "deep"])
def test_check_and_daemon_exit_2_on_a_bad_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "p.toml"
    path.write_bytes(content)
    r = qprof("check", "--profile", str(path), "--quiet")
    assert r.returncode == 2
    assert str(path) in one_line(r.stderr)
    r = qprof("daemon", "--config", str(path), "--state-dir", str(tmp_path / "s"))
    assert r.returncode == 2
    assert "config error" in one_line(r.stderr)


def test_profile_nan_inf_directly(tmp_path: Path) -> None:
    base = ('name = "t"\nunit_suite = "ML-DSA-44"\nmax_block_verify_units = 200000\n'
            '[verify_units]\n"ML-DSA-44" = 100\n')
    for extra in ("target_block_interval_s = nan\n", "target_block_interval_s = inf\n"):
        path = tmp_path / "p.toml"
        path.write_text(extra + base)
        with pytest.raises(ProfileError, match="target_block_interval_s"):
            load_profile(path)
    path = tmp_path / "p.toml"
    path.write_text(base + '[[reference_cores]]\nname = "c"\n'
                    '[reference_cores.verify_median_ns]\n"ML-DSA-44" = inf\n')
    with pytest.raises(ProfileError, match="verify_median_ns"):
        load_profile(path)


@pytest.mark.parametrize("kind", ["dir", "fifo"])
def test_profile_path_that_is_a_directory_or_fifo_says_so(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "p.toml"
    if kind == "dir":
        path.mkdir()
    else:
        os.mkfifo(path)
    r = qprof("check", "--profile", str(path), "--quiet", timeout=30)
    assert r.returncode == 2
    assert ("a directory" if kind == "dir" else "a FIFO") in one_line(r.stderr)
    r = qprof("daemon", "--config", str(path), timeout=30)
    assert r.returncode == 2
    assert ("a directory" if kind == "dir" else "a FIFO") in one_line(r.stderr)
