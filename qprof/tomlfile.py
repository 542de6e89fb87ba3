"""A user's TOML file (a chain profile, a daemon --config): every way it can be
unusable (missing, a directory or FIFO, a kernel file under /proc or /sys, huge, not
UTF-8, nested past the parser's recursion limit, not TOML) is one ``TomlFileError`` line
naming the file. The bytes come from :func:`qprof.userfile.read_bounded`."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from qprof.userfile import UserFileError, read_bounded

# Profiles and settings are a few kB; anything much larger is not one of them.
MAX_BYTES = 1 << 20


class TomlFileError(ValueError):
    """The file cannot be read as TOML; the message starts with its path."""


def read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = read_bounded(path, MAX_BYTES, "TOML file")
    except UserFileError as exc:
        raise TomlFileError(str(exc)) from None
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
