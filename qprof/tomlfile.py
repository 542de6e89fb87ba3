"""A user's TOML file (a chain profile, a daemon --config): every way it can be
unusable (missing, a directory or FIFO, huge, not UTF-8, nested past the parser's
recursion limit, not TOML) is one ``TomlFileError`` line naming the file."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path
from typing import Any

# Profiles and settings are a few kB; anything much larger is not one of them.
MAX_BYTES = 1 << 20


class TomlFileError(ValueError):
    """The file cannot be read as TOML; the message starts with its path."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_toml(path: Path) -> dict[str, Any]:
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            raise TomlFileError(f"{path}: is {_kind(mode)}, not a TOML file")
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise TomlFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise TomlFileError(f"{path}: larger than {MAX_BYTES >> 10} KiB, not a TOML file "
                            "qprof reads")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TomlFileError(f"{path}: not UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
                            f"{exc.start}); TOML files are UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlFileError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise TomlFileError(f"{path}: not valid TOML here: arrays or tables nested too "
                            "deeply") from None
