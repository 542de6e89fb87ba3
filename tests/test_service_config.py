"""Daemon settings: defaults < TOML file < flags, and clear errors for bad input."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from qprof.commands import daemon as daemon_cmd
from qprof.hw.sysfs import parse_cpu_arg
from qprof.service.config import ConfigError, build_config, parse_listen


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    daemon_cmd.add_parser(p)
    return p.parse_args(list(argv))


def test_defaults() -> None:
    cfg = build_config(parse())
    assert cfg.listen_address() == ("127.0.0.1", 9464)
    assert cfg.cpus == "clusters" and cfg.backend == "auto" and cfg.state_dir is None


def test_file_then_flags_win(tmp_path: Path) -> None:
    conf = tmp_path / "qprof.toml"
    conf.write_text('[daemon]\ninterval = 600\nlisten = "none"\ncpus = "0,4"\n'
                    'max-load = 2.5\nsuites = ["ML-DSA-44"]\nquick = true\n')
    cfg = build_config(parse("--config", str(conf), "--interval", "30"))
    assert cfg.interval == 30.0  # the flag wins
    assert cfg.listen_address() is None and cfg.cpus == "0,4" and cfg.max_load == 2.5
    assert cfg.suites == ["ML-DSA-44"] and cfg.quick is True
    cfg = build_config(parse("--suites", "ML-DSA-44,ML-DSA-87", "--listen", "0.0.0.0:9"))
    assert cfg.suites == ["ML-DSA-44", "ML-DSA-87"]
    assert cfg.listen_address() == ("0.0.0.0", 9)


@pytest.mark.parametrize(("text", "match"), [
    ("interval = ", "not valid TOML"),
    ("interval = 'soon'", "interval must be a number above 0, got 'soon'"),
    ("interval = 0", "interval must be a number above 0, got 0"),
    ("bogus = 1", "unknown key 'bogus'"),
    ("listen = '127.0.0.1'", "HOST:PORT"),
    ("quick = 1", "quick must be true or false"),
    ("dual = 'yes'", "dual must be true or false"),
    ("keep-days = -1", "keep_days must be a non-negative number"),
    ("cpus = 'big'", "cpus: expected 'clusters', 'all' or a list"),
])
def test_bad_file_names_the_key(tmp_path: Path, text: str, match: str) -> None:
    conf = tmp_path / "bad.toml"
    conf.write_text(text + "\n")
    with pytest.raises(ConfigError, match=match) as info:
        build_config(parse("--config", str(conf)))
    assert str(conf) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nope.toml: cannot read"):
        build_config(parse("--config", str(tmp_path / "nope.toml")))


def test_listen_and_cpu_lists() -> None:
    assert parse_listen("none") is None
    assert parse_listen("[::1]:9464") == ("::1", 9464)
    with pytest.raises(ConfigError):
        parse_listen("localhost:http")
    assert parse_cpu_arg("0,2-3,3") == [0, 2, 3]
    for bad in ("x", "3-1", ""):
        with pytest.raises(ValueError):
            parse_cpu_arg(bad)


def test_example_config_in_systemd_dir_parses() -> None:
    example = Path(__file__).resolve().parents[1] / "systemd" / "qprof.toml"
    cfg = build_config(parse("--config", str(example)))
    assert cfg.profile == "qanum" and cfg.listen_address() == ("127.0.0.1", 9464)


def test_every_key_of_the_example_config_is_a_setting_and_retention_follows() -> None:
    from dataclasses import fields

    from qprof.service.config import DaemonConfig, load_config_file

    example = Path(__file__).resolve().parents[1] / "systemd" / "qprof.toml"
    text = example.read_text()
    # Every setting is documented in the example (set or commented out).
    for f in fields(DaemonConfig):
        if f.name != "root":
            assert f"{f.name} =" in text, f"systemd/qprof.toml does not mention {f.name}"
    assert load_config_file(example)["dual"] is True
    cfg = build_config(parse("--keep-days", "0", "--keep-samples-days", "2", "--no-dual"))
    ret = cfg.retention()
    assert ret.keep_s == 0 and ret.keep_samples_s == 2 * 86400 and cfg.dual is False


def test_systemd_configuration_directory_is_read_by_default(tmp_path: Path) -> None:
    """ConfigurationDirectory=qprof sets $CONFIGURATION_DIRECTORY=/etc/qprof: its qprof.toml
    is read without --config; --config and flags still win; no file, no error."""
    (tmp_path / "qprof.toml").write_text("interval = 120\nmax_load = 2.0\n")
    env = {"CONFIGURATION_DIRECTORY": str(tmp_path)}
    cfg = build_config(parse("--max-load", "3"), environ=env)
    assert (cfg.interval, cfg.max_load) == (120.0, 3.0)
    other = tmp_path / "other.toml"
    other.write_text("interval = 60\n")
    assert build_config(parse("--config", str(other)), environ=env).interval == 60.0
    assert build_config(parse(), environ={}).interval == 3600.0
    empty = {"CONFIGURATION_DIRECTORY": str(tmp_path / "nothing-here")}
    assert build_config(parse(), environ=empty).interval == 3600.0
    unit = (Path(__file__).resolve().parents[1] / "systemd" / "qprof.service").read_text()
    assert "ConfigurationDirectory=qprof\n" in unit
    assert "Documentation=file:/opt/qprof/share/doc/qprof/README.md\n" in unit
