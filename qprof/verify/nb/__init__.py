"""qprof's own numba verifiers ("second verifier" next to liboqs).

Submodules are imported on demand (importing numba costs ~0.5 s):
``keccak`` (Keccak-f[1600], SHAKE128/256), ``keccak_ir`` (the permutation as LLVM IR,
scalar and 4-way), ``slhdsa`` (SLH-DSA-SHAKE verify, FIPS 205) and the ML-DSA kernels.
"""
