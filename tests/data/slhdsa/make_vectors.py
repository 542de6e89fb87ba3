"""Regenerate the SLH-DSA "s" test vectors (one per parameter set) with liboqs.

Run from the repo root:  OQS_INSTALL_PATH=/root/_oqs .venv/bin/python \
    tests/data/slhdsa/make_vectors.py
Each vector is also checked with the pure-Python ``slhdsa`` package before it is
written, so the files do not depend on trusting a single implementation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import oqs
import slhdsa

HERE = Path(__file__).resolve().parent
SETS = {
    "SLH-DSA-SHAKE-128s": ("SLH_DSA_PURE_SHAKE_128S", slhdsa.shake_128s),
    "SLH-DSA-SHAKE-192s": ("SLH_DSA_PURE_SHAKE_192S", slhdsa.shake_192s),
    "SLH-DSA-SHAKE-256s": ("SLH_DSA_PURE_SHAKE_256S", slhdsa.shake_256s),
}


def main() -> None:
    for name, (oqs_name, par) in SETS.items():
        message = f"qprof test vector for {name}".encode()
        context = b"qprof-ctx"
        with oqs.Signature(oqs_name) as signer:
            public_key = signer.generate_keypair()
            signature = signer.sign_with_ctx_str(message, context)
        reference = slhdsa.PublicKey.from_digest(public_key, par)
        assert reference.verify_pure(message, signature, context)
        vector = {
            "params": name,
            "source": f"liboqs {oqs.oqs_version()} {oqs_name}, checked with slhdsa",
            "public_key": public_key.hex(),
            "message": message.hex(),
            "context": context.hex(),
            "signature": signature.hex(),
        }
        path = HERE / f"{name}.json"
        path.write_text(json.dumps(vector, indent=1) + "\n")
        print(path, os.path.getsize(path))


if __name__ == "__main__":
    main()
