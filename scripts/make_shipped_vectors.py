"""Build the known-answer vectors qprof ships for its functional check (qprof/data/kat-*).

Run from the repo root with ../shared beside the checkout:
    .venv/bin/python scripts/make_shipped_vectors.py
Wycheproof ML-DSA (Apache-2.0): every verify test whose (result, flags) is not yet taken,
plus one valid test per key, from ../shared/testvectors/wycheproof (pure cases only: the
external-mu ones are not pure verification). qprof's SLH-DSA files (tests/data/slhdsa):
whole, in their own form (a valid signature and its tampered variants as XORs).
Each file is gzip'd JSON: {"source", "license", "cases": [VerifyCase as hex]}.

NIST ACVP sigVer cases (public domain in the US) are built apart, from a directory holding
ACVP-Server's gen-val/json-files (only the two sigVer folders are read; their sha256 must
be the pinned ones):
    .venv/bin/python scripts/make_shipped_vectors.py --acvp DIR
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

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


# NIST ACVP-Server at v1.1.0.43: the sigVer files qprof's ACVP cases come from. Each
# file's sha256 is checked, so a different (regenerated) copy is refused.
ACVP_REPOSITORY = "https://github.com/usnistgov/ACVP-Server"
ACVP_COMMIT = "975de31eb83d87039ec88934fdc47d8c312b892d"
ACVP_RELEASE = "v1.1.0.43"
ACVP_FILES = {  # path under gen-val/json-files -> (bytes, sha256)
    "ML-DSA-sigVer-FIPS204/prompt.json":
        (3125947, "e2cba4589389756fa0bea1a7e6837138bf0a81f9d14234c9ee8f6d33caa1654e"),
    "ML-DSA-sigVer-FIPS204/expectedResults.json":
        (13956, "e1d84ef1b2f35196278ab0b0ed6a46ec62cc03d2dfa92c564199e1999bfb8ea6"),
    "SLH-DSA-sigVer-FIPS205/prompt.json":
        (30513796, "4e7beb1233e47baa0acdd36417c66c45811aa40a4e32ffdb1a35d93b13b289fb"),
    "SLH-DSA-sigVer-FIPS205/expectedResults.json":
        (39216, "259f5e2a0665de0adc0fefa45b5db3a2a6ed13c3c44d14bdaf64a80aee12c687"),
}
# The suites qprof judges that Wycheproof does not cover, each from its one
# external-interface pure group (the interface liboqs and every qprof backend verify).
# A group's every case is taken, except SLH-DSA-SHAKE-256s (29,792-byte signatures): its
# valid cases, one too long and one too short signature, and the four same-length
# invalid ones with the shortest messages.
ACVP_SUITES = {"ML-DSA-sigVer-FIPS204": ("ML-DSA-87",),
               "SLH-DSA-sigVer-FIPS205": ("SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")}
ACVP_TRIMMED = {"SLH-DSA-SHAKE-256s": 4}
NIST_NOTICE = (
    "NIST ACVP-Server (gen-val/json-files) is a work of the US government: not subject to "
    "copyright protection within the United States. NIST asks that it be acknowledged as "
    "the source and that modified works say what was changed: qprof keeps a subset of the "
    "cases (see selection), with hex in lower case; every byte of a case is NIST's.")


def _acvp_file(root: Path, name: str) -> Any:
    raw = (root / name).read_bytes()
    size, digest = ACVP_FILES[name]
    if (len(raw), hashlib.sha256(raw).hexdigest()) != (size, digest):
        raise SystemExit(f"{root / name}: not the pinned ACVP-Server {ACVP_RELEASE} file "
                         f"({len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()})")
    return json.loads(raw)


def _trimmed(tests: list[tuple[dict[str, str], bool]], same_length: int
             ) -> list[tuple[dict[str, str], bool]]:
    """The valid cases, the first too long and too short signatures, and the
    ``same_length`` same-length invalid ones with the shortest messages (in tcId order)."""
    length = max(len(t["signature"]) for t, ok in tests if ok)
    longer = [t for t, ok in tests if not ok and len(t["signature"]) > length][:1]
    shorter = [t for t, ok in tests if not ok and len(t["signature"]) < length][:1]
    same = sorted((t for t, ok in tests if not ok and len(t["signature"]) == length),
                  key=lambda t: (len(t["message"]), t["tcId"]))[:same_length]
    keep = {id(t) for t, ok in tests if ok} | {id(t) for t in longer + shorter + same}
    return [(t, ok) for t, ok in tests if id(t) in keep]


def acvp_cases(root: Path) -> list[VerifyCase]:
    """The ACVP sigVer cases qprof ships, from ACVP-Server's json-files under ``root``."""
    out: list[VerifyCase] = []
    for folder, suites in ACVP_SUITES.items():
        prompt = _acvp_file(root, f"{folder}/prompt.json")
        expected = _acvp_file(root, f"{folder}/expectedResults.json")
        passed = {t["tcId"]: t["testPassed"] for g in expected["testGroups"]
                  for t in g["tests"]}
        for group in prompt["testGroups"]:
            suite = group["parameterSet"]
            if (suite not in suites or group.get("signatureInterface") != "external"
                    or group.get("preHash") != "pure"):
                continue
            tests = [(t, bool(passed[t["tcId"]])) for t in group["tests"]]
            if suite in ACVP_TRIMMED:
                tests = _trimmed(tests, ACVP_TRIMMED[suite])
            for t, ok in tests:
                out.append(VerifyCase(
                    f"{folder} tg{group['tgId']} tc{t['tcId']}", suite,
                    bytes.fromhex(t["pk"]), bytes.fromhex(t["message"]),
                    bytes.fromhex(t["signature"]), bytes.fromhex(t.get("context", "")), ok))
    return out


def write_acvp(root: Path) -> None:
    cases = acvp_cases(root)
    data = {
        "source": f"NIST ACVP-Server {ACVP_RELEASE} ({ACVP_REPOSITORY}, commit {ACVP_COMMIT})",
        "license": NIST_NOTICE,
        # (no "files" key: it marks qprof's own SLH-DSA format to the reader)
        "acvp_files": {f"gen-val/json-files/{k}": {"bytes": b, "sha256": d}
                       for k, (b, d) in ACVP_FILES.items()},
        "selection": "the external-interface pure group of ML-DSA-87, SLH-DSA-SHAKE-128s "
                     "and SLH-DSA-SHAKE-256s; SHAKE-256s trimmed (make_shipped_vectors.py)",
        "cases": [_hex(c) for c in cases],
    }
    raw = json.dumps(data, separators=(",", ":")).encode()
    name = "kat-acvp-sigver.json.gz"
    (OUT / name).write_bytes(gzip.compress(raw, 9, mtime=0))
    counts = {s: sum(c.suite == s for c in cases) for s in dict.fromkeys(c.suite for c in cases)}
    print(f"{name}: {len(cases)} cases {counts}, {len((OUT / name).read_bytes())} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description="Build qprof's shipped known-answer vectors.")
    parser.add_argument("--acvp", type=Path, metavar="DIR",
                        help="build only the ACVP file, from ACVP-Server's gen-val/json-files")
    args = parser.parse_args()
    if args.acvp is not None:
        write_acvp(args.acvp)
        return
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
