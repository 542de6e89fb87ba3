"""Build the known-answer vectors qprof ships for its functional check (qprof/data/kat-*).

Run from the repo root with ../shared beside the checkout:
    .venv/bin/python scripts/make_shipped_vectors.py
Wycheproof ML-DSA (Apache-2.0): every verify test whose (result, flags) is not yet taken,
plus one valid test per key, from ../shared/testvectors/wycheproof (pure cases only: the
external-mu ones are not pure verification). qprof's SLH-DSA files (tests/data/slhdsa):
whole, in their own form (a valid signature and its tampered variants as XORs).
NIST ACVP cases are not shipped yet (qprof/data/KAT-SOURCES.txt says why).
Each file is gzip'd JSON: {"source", "license", "cases": [VerifyCase as hex]}.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from qprof.verify.vectors import VerifyCase, wycheproof_mldsa

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "qprof" / "data"
WYCHEPROOF = ROOT.parent / "shared" / "testvectors" / "wycheproof"


def _hex(case: VerifyCase) -> dict[str, object]:
    return {"label": case.label, "suite": case.suite, "public_key": case.public_key.hex(),
            "message": case.message.hex(), "context": case.context.hex(),
            "signature": case.signature.hex(), "expected": case.expected}


def _write(name: str, source: str, licence: str, cases: list[VerifyCase]) -> None:
    data = {"source": source, "license": licence, "cases": [_hex(c) for c in cases]}
    raw = json.dumps(data, separators=(",", ":")).encode()
    (OUT / name).write_bytes(gzip.compress(raw, 9, mtime=0))
    print(f"{name}: {len(cases)} cases, {len((OUT / name).read_bytes())} bytes")


def _wycheproof_subset(path: Path) -> list[VerifyCase]:
    cases = [c for c in wycheproof_mldsa(path) if c.mu is None]
    seen: set[tuple[bool, str]] = set()
    keys: set[bytes] = set()
    out = []
    for c in cases:
        flags = c.label.split(" ", 1)[1].rsplit("[", 1)[-1]
        kind = (c.expected, flags)
        if kind not in seen or (c.expected and c.public_key not in keys):
            seen.add(kind)
            if c.expected:
                keys.add(c.public_key)
            out.append(c)
    return out


def main() -> None:
    OUT.mkdir(exist_ok=True)
    wy: list[VerifyCase] = []
    for level in (44, 65):
        wy += _wycheproof_subset(WYCHEPROOF / f"mldsa_{level}_verify_test.json")
    _write("kat-wycheproof-mldsa.json.gz", "Project Wycheproof, testvectors_v1/mldsa_44/65_"
           "verify_test.json (C2SP/wycheproof)", "Apache-2.0", wy)
    files = [json.loads(p.read_text())
             for p in sorted((ROOT / "tests" / "data" / "slhdsa").glob("SLH-DSA-*.json"))]
    data = {"source": "qprof tests/data/slhdsa: a liboqs signature checked with the "
            "pure-Python slhdsa package, and tampered variants (one XOR each)",
            "license": "Apache-2.0 (qprof)", "files": files}
    raw = json.dumps(data, separators=(",", ":")).encode()
    (OUT / "kat-qprof-slhdsa.json.gz").write_bytes(gzip.compress(raw, 9, mtime=0))
    print(f"kat-qprof-slhdsa.json.gz: {len(files)} files, "
          f"{len((OUT / 'kat-qprof-slhdsa.json.gz').read_bytes())} bytes")

if __name__ == "__main__":
    main()
