"""Daemon settings: defaults < TOML file < flags, and clear errors for bad input."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from gen_run_json import qprof_env

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


# -- 18. the daemon's numbers are bounded ---------------------------------------------------

@pytest.mark.parametrize("option,value", [
    ("--watch-interval", "1e300"), ("--interval", "1e300"), ("--retry", "inf"),
    ("--alert-timeout", "1e300"), ("--store-wait", "1e300"), ("--keep-days", "1e300"),
    ("--first-cycle-delay", "1e300"), ("--cap-hold-seconds", "1e300"),
    ("--max-busy", "1e300"), ("--cap-hold-samples", str(10 ** 30)),
])
def test_18_daemon_refuses_huge_numbers(tmp_path: Path, option: str, value: str) -> None:
    r = qprof_env("daemon", option, value, "--state-dir", str(tmp_path / "st"), "--listen",
                  "none", timeout=30)
    assert "Traceback" not in r.stderr and r.returncode == 2, r.stderr[-2000:]
    assert option.lstrip("-").replace("-", "_") in r.stderr


def test_18_daemon_config_file_huge_integer(tmp_path: Path) -> None:
    from qprof.service.config import ConfigError, load_config_file

    cfg = tmp_path / "qprof.toml"
    cfg.write_text(f"watch_interval = {10 ** 400}\n")
    with pytest.raises(ConfigError, match="at most"):
        load_config_file(cfg)


QPROF = [sys.executable, "-m", "qprof"]


# -- 10. an alert command that cannot be split ----------------------------------------------

def test_unterminated_alert_command_is_one_line_and_exit_2(tmp_path: Path) -> None:
    r = subprocess.run([*QPROF, "daemon", "--alert-command", '"unterminated', "--state-dir",
                        str(tmp_path / "s"), "--listen", "none"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert "alert-command" in lines[0] and "No closing quotation" in lines[0]
    conf = tmp_path / "qprof.toml"
    conf.write_text("[daemon]\nalert_command = 'notify \"oops'\n")
    r = subprocess.run([*QPROF, "daemon", "--config", str(conf), "--state-dir",
                        str(tmp_path / "s"), "--listen", "none"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert str(conf) in r.stderr and "alert_command" in r.stderr
    assert not (tmp_path / "s").exists()  # refused before anything was created


@pytest.mark.parametrize("value", ["0", "-5"])
def test_interval_zero_and_negative_say_the_same(tmp_path: Path, value: str) -> None:
    r = subprocess.run([*QPROF, "daemon", "--interval", value, "--state-dir",
                        str(tmp_path / "s")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    [line] = r.stderr.strip().splitlines()
    assert line.endswith(f"config error: --interval: interval must be a number above 0, got "
                         f"{value}")
