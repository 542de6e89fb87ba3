"""Regenerate the SLH-DSA-SHAKE test vectors (one file per parameter set) with liboqs.

Run from the repo root:  OQS_INSTALL_PATH=/root/_oqs .venv/bin/python \
    tests/data/slhdsa/make_vectors.py
Each file holds one valid signature and a list of tampered variants (one bit flipped
in the signature, message, context or public key). Every verdict is checked with the
pure-Python ``slhdsa`` package, and the tampered ones with liboqs too, before the
file is written, so the files do not depend on trusting a single implementation.
Files are read by tests/test_nb_slhdsa.py and scripts/aarch64_kernels.py
(``qprof.verify.vectors.slhdsa_cases``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import oqs
import slhdsa

HERE = Path(__file__).resolve().parent
SIZES = ("128s", "128f", "192s", "192f", "256s", "256f")


def _tampered(n: int, sig_len: int) -> list[dict[str, object]]:
    """Flips in R, the FORS part, the first hypertree layer, the last byte of the
    signature; in the message, the context and both halves of the public key."""
    fors = n + 1
    return [
        {"part": "signature", "offset": 0, "xor": 1},
        {"part": "signature", "offset": fors, "xor": 0x80},
        {"part": "signature", "offset": sig_len // 2, "xor": 4},
        {"part": "signature", "offset": sig_len - 1, "xor": 1},
        {"part": "message", "offset": 0, "xor": 1},
        {"part": "context", "offset": 0, "xor": 0x20},
        {"part": "public_key", "offset": 0, "xor": 1},
        {"part": "public_key", "offset": 2 * n - 1, "xor": 1},
    ]


def _apply(fields: dict[str, bytes], flip: dict[str, object]) -> dict[str, bytes]:
    out = dict(fields)
    data = bytearray(out[str(flip["part"])])
    data[int(flip["offset"])] ^= int(flip["xor"])  # type: ignore[call-overload]
    out[str(flip["part"])] = bytes(data)
    return out


def main() -> None:
    for size in SIZES:
        name = f"SLH-DSA-SHAKE-{size}"
        oqs_name = f"SLH_DSA_PURE_SHAKE_{size.upper()}"
        par = getattr(slhdsa, f"shake_{size}")
        message = f"qprof test vector for {name}".encode()
        context = b"qprof-ctx"
        with oqs.Signature(oqs_name) as signer:
            public_key = signer.generate_keypair()
            signature = signer.sign_with_ctx_str(message, context)
        fields = {
            "public_key": public_key,
            "message": message,
            "context": context,
            "signature": signature,
        }
        assert slhdsa.PublicKey.from_digest(public_key, par).verify_pure(
            message, signature, context
        )
        tampered = _tampered(len(public_key) // 2, len(signature))
        with oqs.Signature(oqs_name) as verifier:
            for flip in tampered:
                bad = _apply(fields, flip)
                reference = slhdsa.PublicKey.from_digest(bad["public_key"], par)
                assert not reference.verify_pure(bad["message"], bad["signature"], bad["context"])
                assert not verifier.verify_with_ctx_str(
                    bad["message"], bad["signature"], bad["context"], bad["public_key"]
                )
        vector = {
            "params": name,
            "source": f"liboqs {oqs.oqs_version()} {oqs_name}, checked with slhdsa",
            **{key: value.hex() for key, value in fields.items()},
            "tampered": tampered,
        }
        path = HERE / f"{name}.json"
        path.write_text(json.dumps(vector, indent=1) + "\n")
        print(path, os.path.getsize(path))


if __name__ == "__main__":
    main()
