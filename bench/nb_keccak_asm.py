"""Vector width of the numba multi-way Keccak kernel as compiled on this host.

Usage: .venv/bin/python bench/nb_keccak_asm.py

Compiles ``keccak_xn.keccak_f1600_xn`` afresh (numba's cached machine code cannot be
inspected) with the feature string ``qprof.verify.nb`` chose, and counts the 512-bit
(zmm) and 256-bit (ymm) register operands and the AVX-512 instructions a Keccak round
wants (vprolq rotations, vpternlogq for chi): the check issue 51 asks for on hosts
where the ratio is measured (one zmm per lane on AVX-512, ymm on AVX2).
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    import numpy as np
    from numba import njit
    from numba.core import config

    import qprof.verify.nb  # noqa: F401 - sets the cache directory and vector width
    from qprof.verify.nb import keccak_xn

    kernel = njit(nogil=True)(keccak_xn.keccak_f1600_xn.py_func)
    kernel(np.zeros(25 * keccak_xn.WAYS, dtype=np.uint64))
    asm = kernel.inspect_asm(kernel.signatures[0])
    ops = collections.Counter(
        line.split()[0] for line in asm.splitlines()
        if line.startswith("\t") and not line.strip().startswith(".")
    )
    name = config.CPU_NAME or "host"  # type: ignore[attr-defined]
    features = config.CPU_FEATURES or ""  # type: ignore[attr-defined]
    wide = "-prefer-256-bit set" if "-prefer-256-bit" in features else "default"
    print(f"numba CPU name {name}; features {wide}; {keccak_xn.WAYS}-way Keccak")
    print(f"zmm operands {len(re.findall(r'%zmm', asm))}, ymm {len(re.findall(r'%ymm', asm))}, "
          f"xmm {len(re.findall(r'%xmm', asm))}")
    for op in ("vprolq", "vpternlogq", "vpxorq", "vpxor", "vpsllq", "vpsrlq"):
        print(f"  {op:11s} {ops.get(op, 0)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
