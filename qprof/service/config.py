"""Daemon settings: built-in defaults < TOML config file < command-line flags."""

from __future__ import annotations

import argparse
import math
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from qprof.hw.sysfs import parse_cpu_arg
from qprof.service.metrics_http import DEADLINE_S, MAX_CONNECTIONS, ServerLimits
from qprof.service.retention import Retention
from qprof.tomlfile import TomlFileError, read_toml

DEFAULT_LISTEN = "127.0.0.1:9464"


class ConfigError(ValueError):
    """Bad config file or option; the message names the file/key and what was expected."""


@dataclass
class DaemonConfig:
    state_dir: Path | None = None  # None: default_state_dir()
    listen: str | None = DEFAULT_LISTEN  # "HOST:PORT"; None = metrics off
    # The metrics port: connections held at once (past it the longest idle is closed),
    # and the seconds a client has to send its request head, and again to take the answer.
    metrics_max_connections: int = MAX_CONNECTIONS
    metrics_deadline: float = DEADLINE_S
    interval: float = 3600.0  # seconds between measurement cycles
    retry: float = 300.0  # after a skipped cycle, try again this soon
    cpus: str = "clusters"  # "clusters" (one CPU per cluster) | "all" | "0,4-5"
    profile: str | None = None
    backend: str = "auto"
    suites: list[str] = field(default_factory=list)  # empty: the engine's default
    quick: bool = False  # shorter measurements (the engine's quick mode)
    # With liboqs: also time the shadow pair (liboqs + a second verifier on each sample),
    # which is what detects a verifier disagreement. 12 timed tasks per round, not 4.
    dual: bool = True
    # After each finished cycle, verify each profile suite's worst-case block on all
    # online CPUs (qprof block; exported as qprof_block_verify_seconds). Off by
    # default: it loads every core for a moment and signs the blocks once per process.
    block: bool = False
    max_load: float = 0.5  # 1-minute load average per online CPU, at most
    max_busy: float = 30.0  # percent of all CPUs busy over the last watch window, at most
    alert_command: str | None = None
    alert_timeout: float = 10.0
    # A standing NOT covered (or a block over its time bound) is alerted again this often
    # while it lasts (seconds; 0: only at first sight and after a restart).
    renotify: float = 86400.0
    cap_hold_samples: int = 3  # a cap must be seen this many samples in a row...
    cap_hold_seconds: float = 5.0  # ...and for this long, to start (and gone as long to end)
    watch_interval: float = 1.0
    root: Path = Path("/")
    first_cycle_delay: float = 60.0  # let the machine settle after boot/restart
    # A store locked by another process at start (a backup, a VACUUM) is waited for this
    # long, then the daemon exits for its supervisor to retry (under TimeoutStartSec=).
    store_wait: float = 60.0
    log_level: str = "info"
    # Retention (days; 0 keeps for ever): runs and alerts, the per-sample timings inside
    # runs, frequency history. The runs behind the newest results are always kept.
    keep_days: float = 90.0
    keep_samples_days: float = 2.0
    keep_freq_days: float = 30.0
    # The node's cgroup (its CPU quota bounds its worst-case block; qprof.hw.cgroup):
    # a directory, or a systemd unit NAME.service. Neither: the daemon's own quota.
    node_cgroup: str | None = None
    node_unit: str | None = None

    def retention(self) -> Retention:
        day = 24 * 3600.0
        return Retention(keep_s=self.keep_days * day,
                         keep_samples_s=self.keep_samples_days * day,
                         keep_freq_s=self.keep_freq_days * day)

    def metrics_limits(self) -> ServerLimits:
        return ServerLimits(self.metrics_max_connections, self.metrics_deadline)

    def listen_address(self) -> tuple[str, int] | None:
        if self.listen is None:
            return None
        return parse_listen(self.listen)


_NUMBERS = {"interval", "retry", "max_load", "max_busy", "alert_timeout", "cap_hold_seconds",
            "renotify",
            "watch_interval", "first_cycle_delay", "store_wait", "keep_days",
            "keep_samples_days", "keep_freq_days", "metrics_deadline"}
_ABOVE_ZERO = {"interval", "watch_interval", "alert_timeout",  # 0 would spin or kill at once
               "metrics_deadline"}
_DAY = 86400.0
# The largest value of each number: beyond it a setting means nothing (a 1e300 s watch
# interval overflowed the timer's wait and killed the daemon) or breaks arithmetic.
_AT_MOST = {"interval": 365 * _DAY, "retry": 365 * _DAY, "max_load": 1e6, "max_busy": 100.0,
            "alert_timeout": _DAY, "cap_hold_seconds": _DAY, "watch_interval": 3600.0,
            "renotify": 365 * _DAY,
            "first_cycle_delay": 365 * _DAY, "store_wait": _DAY, "keep_days": 100 * 365.0,
            "keep_samples_days": 100 * 365.0, "keep_freq_days": 100 * 365.0,
            "cap_hold_samples": 1_000_000, "metrics_deadline": 3600.0,
            "metrics_max_connections": 65536}
_INTS = {"cap_hold_samples", "metrics_max_connections"}
_STRINGS = {"cpus", "profile", "backend", "alert_command", "log_level", "listen",
            "node_cgroup", "node_unit"}
_PATHS = {"state_dir", "root"}


def parse_listen(text: str) -> tuple[str, int] | None:
    text = text.strip()
    if text.lower() in ("none", "off", ""):
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"expected HOST:PORT or 'none', got {text!r}")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _coerce(key: str, value: Any, where: str) -> Any:
    if key in _NUMBERS:
        number = not isinstance(value, bool) and isinstance(value, int | float)
        if number and isinstance(value, int) and abs(value) > 1 << 63:
            # An integer of 400 digits is no float (math.isfinite would raise on it).
            raise ConfigError(f"{where}: {key} must be at most {_AT_MOST[key]:g}, "
                              f"got {_shown(value)}")
        low_ok = number and math.isfinite(value) and (
            value > 0 if key in _ABOVE_ZERO else value >= 0)
        if not low_ok:
            shown = f"{value:g}" if number else _shown(value)
            rule = "a number above 0" if key in _ABOVE_ZERO else "a non-negative number"
            raise ConfigError(f"{where}: {key} must be {rule}, got {shown}")
        if value > _AT_MOST[key]:
            raise ConfigError(f"{where}: {key} must be at most {_AT_MOST[key]:g}, "
                              f"got {value:g}")
        return float(value)
    if key in _INTS:
        if (isinstance(value, bool) or not isinstance(value, int) or value < 1
                or value > _AT_MOST[key]):
            raise ConfigError(f"{where}: {key} must be a positive integer at most "
                              f"{_AT_MOST[key]:g}, got {_shown(value)}")
        return value
    if key in _PATHS:
        if not isinstance(value, str | Path) or not str(value):
            raise ConfigError(f"{where}: {key} must be a path string, got {value!r}")
        return Path(value)
    if key in ("quick", "dual", "block"):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be true or false, got {value!r}")
        return value
    if key == "suites":
        if isinstance(value, str):
            value = [s.strip() for s in value.split(",") if s.strip()]
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise ConfigError(f"{where}: suites must be a list of suite names, got {value!r}")
        return value
    if key in _STRINGS:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {key} must be a string, got {value!r}")
        if key == "listen":
            try:
                return value if parse_listen(value) is not None else None
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
        if key == "cpus" and value not in ("clusters", "all"):
            try:
                parse_cpu_arg(value)
            except ValueError as exc:
                raise ConfigError(f"{where}: cpus: expected 'clusters', 'all' or a list like "
                                  f"0,2-3 ({exc})") from None
        if key == "alert_command":
            try:
                argv = shlex.split(value)
            except ValueError as exc:  # "No closing quotation", "No escaped character"
                raise ConfigError(f"{where}: {key} {value!r} cannot be split into a command "
                                  f"and its arguments: {exc}") from None
            return value if argv else None  # empty: no command
        if key == "log_level" and value.lower() not in ("debug", "info", "warning", "error"):
            raise ConfigError(f"{where}: log_level must be debug, info, warning or error")
        return value
    raise ConfigError(f"{where}: unknown key {key!r}")


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a TOML file ([daemon] table or top-level keys) into checked settings."""
    try:
        data = read_toml(path)
    except TomlFileError as exc:
        raise ConfigError(str(exc)) from None
    table = data.get("daemon", data)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [daemon] must be a table")
    out: dict[str, Any] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("-", "_")
        out[key] = _coerce(key, value, f"{path}: {raw_key}")
    return out


def default_config_file(environ: Mapping[str, str]) -> Path | None:
    """Under systemd (the unit's ConfigurationDirectory=qprof): qprof.toml in
    $CONFIGURATION_DIRECTORY, i.e. /etc/qprof/qprof.toml, when it exists."""
    directory = environ.get("CONFIGURATION_DIRECTORY", "").split(":")[0]
    path = Path(directory) / "qprof.toml" if directory else None
    return path if path is not None and path.is_file() else None


def build_config(args: argparse.Namespace,
                 environ: Mapping[str, str] = os.environ) -> DaemonConfig:
    """Defaults, then the --config file (else the systemd default), then flags the user
    gave (not None)."""
    settings: dict[str, Any] = {}
    config = getattr(args, "config", None) or default_config_file(environ)
    if config:
        settings.update(load_config_file(Path(config)))
    names = {f.name for f in fields(DaemonConfig)}
    for key in names:
        value = getattr(args, key, None)
        if value is not None:
            settings[key] = _coerce(key, value, f"--{key.replace('_', '-')}")
    return DaemonConfig(**settings)

