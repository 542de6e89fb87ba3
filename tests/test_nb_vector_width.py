"""The numba kernels compile for 512-bit vectors on AVX-512 hosts (qprof.verify.nb): LLVM's
Intel tuning prefers 256-bit vectors, which made ML-DSA verify 1.34-1.65x liboqs where
512-bit gave 1.14-1.22x (docs/NUMBA.md; set by qprof/verify/nb_cache.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

_PROBE = ("import json, qprof.verify.nb; from numba.core import config; "
          "from numba.core.codegen import get_host_cpu_features as f; "
          "print(json.dumps([config.CPU_FEATURES, '+avx512f' in f().split(',')]))")


def _features(**env: str) -> tuple[str | None, bool]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CPU_")}
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**clean, **env},
                         capture_output=True, text=True, check=True).stdout
    features, avx512 = json.loads(out.strip().splitlines()[-1])
    return features, avx512


@pytest.mark.parametrize("env", [{}, {"NUMBA_CPU_NAME": "sapphirerapids"}],
                         ids=["host", "cpu-name-set"])
def test_avx512_hosts_compile_for_512_bit_vectors(env: dict[str, str]) -> None:
    features, avx512 = _features(**env)
    if avx512:
        assert features is not None and features.endswith(",-prefer-256-bit")
        assert "+avx512f" in features.split(",")
    else:
        assert features is None  # numba's own choice: nothing to widen


def test_a_feature_string_the_user_set_is_left_as_set() -> None:
    features, _avx512 = _features(NUMBA_CPU_NAME="generic", NUMBA_CPU_FEATURES="+sse2")
    assert features == "+sse2"


def test_keccak_kernel_is_512_bit_code_on_avx512_hosts() -> None:
    # The issue-51 check in the generated assembly (bench/nb_keccak_asm.py prints it):
    # one zmm register per lane of the eight-way permutation, rotations and chi as
    # single AVX-512 instructions.
    import numpy as np
    from numba import njit
    from numba.core.codegen import get_host_cpu_features

    from qprof.verify.nb import keccak_xn

    if "+avx512f" not in get_host_cpu_features().split(","):
        pytest.skip("no AVX-512F on this host")
    kernel = njit(nogil=True)(keccak_xn.keccak_f1600_xn.py_func)  # uncached: inspectable
    kernel(np.zeros(25 * keccak_xn.WAYS, dtype=np.uint64))
    asm = kernel.inspect_asm(kernel.signatures[0])
    assert keccak_xn.WAYS == 8
    assert asm.count("%zmm") > 100 * max(1, asm.count("%ymm"))
    assert "vprolq" in asm and "vpternlogq" in asm
