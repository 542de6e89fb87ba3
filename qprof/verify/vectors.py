"""Known-answer verification vectors as typed cases.

Two formats: Wycheproof's ML-DSA verify tests (pure and external-mu cases) and qprof's
SLH-DSA files (one liboqs signature, checked by a second library, and tampered
variants). The tests and scripts/aarch64_kernels.py read the same cases.
:func:`shipped_cases` reads the vectors shipped in the package
(``qprof/data/kat-*.json.gz``, sources and licences in ``qprof/data/KAT-SOURCES.txt``)
for the functional check on a user's machine (:mod:`qprof.verify.functional`).
"""

from __future__ import annotations

import functools
import gzip
import json
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from qprof.userfile import read_json

MAX_VECTOR_FILE = 256 << 20  # NIST's ACVP sigVer files: a few MiB

_FIELDS = ("public_key", "message", "context", "signature")


@dataclass(frozen=True)
class VerifyCase:
    """One verification and its expected verdict. ``mu`` set: an external-mu case
    (``message`` and ``context`` unused)."""

    label: str
    suite: str
    public_key: bytes
    message: bytes
    signature: bytes
    context: bytes
    expected: bool
    mu: bytes | None = None


def wycheproof_mldsa(path: Path) -> list[VerifyCase]:
    """Every test of a Wycheproof ML-DSA verify file (result "valid" -> True)."""
    data = read_json(path, MAX_VECTOR_FILE, "test vector file")
    suite = data["algorithm"]
    out = []
    for group in data["testGroups"]:
        pk = bytes.fromhex(group["publicKey"])
        for test in group["tests"]:
            if test["result"] not in ("valid", "invalid"):
                raise ValueError(f"{path}: tc{test['tcId']} has result {test['result']!r}")
            out.append(
                VerifyCase(
                    label=f"tc{test['tcId']} {test.get('comment', '')} {test.get('flags', [])}",
                    suite=suite,
                    public_key=pk,
                    message=bytes.fromhex(test.get("msg", "")),
                    signature=bytes.fromhex(test["sig"]),
                    context=bytes.fromhex(test.get("ctx", "")),
                    expected=test["result"] == "valid",
                    mu=bytes.fromhex(test["mu"]) if "msg" not in test else None,
                )
            )
    return out


def slhdsa_cases(path: Path) -> list[VerifyCase]:
    """The valid signature of a qprof SLH-DSA vector file, then each tampered variant."""
    return slhdsa_cases_of(read_json(path, MAX_VECTOR_FILE, "test vector file"), str(path))


def slhdsa_cases_of(data: dict[str, Any], path: str = "SLH-DSA vectors") -> list[VerifyCase]:
    """:func:`slhdsa_cases` of an already decoded file."""
    valid = VerifyCase(
        label=f"{data['params']} valid",
        suite=data["params"],
        expected=True,
        **{key: bytes.fromhex(data[key]) for key in _FIELDS},
    )
    out = [valid]
    for flip in data.get("tampered", []):
        part, offset, xor = flip["part"], int(flip["offset"]), int(flip["xor"])
        if part not in _FIELDS:
            raise ValueError(f"{path}: unknown tampered part {part!r}")
        changed = bytearray(getattr(valid, part))
        changed[offset] ^= xor
        field_change: dict[str, Any] = {part: bytes(changed)}
        out.append(
            replace(
                valid,
                label=f"{data['params']} {part}[{offset}] ^= {xor:#x}",
                expected=False,
                **field_change,
            )
        )
    return out


# The shipped files, each gzip'd JSON: qprof's SLH-DSA format ("files") or cases as hex.
SHIPPED = ("kat-wycheproof-mldsa.json.gz", "kat-acvp-sigver.json.gz", "kat-qprof-slhdsa.json.gz")


class ShippedVectorsError(ValueError):
    """A shipped vector file is damaged (truncated, not gzip or JSON, a case malformed):
    one line naming the file."""


def _case_of(d: dict[str, Any]) -> VerifyCase:
    return VerifyCase(label=str(d["label"]), suite=str(d["suite"]),
                      public_key=bytes.fromhex(d["public_key"]),
                      message=bytes.fromhex(d["message"]),
                      signature=bytes.fromhex(d["signature"]),
                      context=bytes.fromhex(d.get("context", "")),
                      expected=bool(d["expected"]))


def shipped_file_cases(name: str, raw: bytes) -> list[tuple[str, VerifyCase]]:
    """(source tag, case) of one shipped file's bytes; the tag is the word after "kat-"
    in ``name`` ("wycheproof", "acvp", "qprof"). Damage raises ShippedVectorsError."""
    tag = name.split("-")[1] if "-" in name else name
    try:
        data = json.loads(gzip.decompress(raw))
        if "files" in data:
            return [(tag, c) for f in data["files"] for c in slhdsa_cases_of(f, name)]
        return [(tag, _case_of(c)) for c in data["cases"]]
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError,
            AttributeError) as exc:  # gzip.BadGzipFile is an OSError, truncation EOFError
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ShippedVectorsError(f"shipped vectors qprof/data/{name} are damaged "
                                  f"({type(exc).__name__}: {why}); reinstall qprof") from None


@functools.cache
def _shipped() -> tuple[tuple[str, VerifyCase], ...]:
    """(source tag, case) of every shipped file present (a file missing from a broken
    install leaves its cases out; the check says how many it ran and from which sources).
    A damaged file raises ShippedVectorsError."""
    out: list[tuple[str, VerifyCase]] = []
    base = resources.files("qprof") / "data"
    for name in SHIPPED:
        try:
            raw = (base / name).read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ShippedVectorsError(f"shipped vectors qprof/data/{name} cannot be read "
                                      f"({exc.strerror or exc})") from None
        out += shipped_file_cases(name, raw)
    return tuple(out)


def shipped_cases(suite: str) -> list[tuple[str, VerifyCase]]:
    """(source, case) of the vectors shipped in the package for ``suite``
    (ShippedVectorsError if a shipped file is damaged)."""
    return [(tag, c) for tag, c in _shipped() if c.suite == suite]
