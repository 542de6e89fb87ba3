"""Keccak-f[1600] written directly in LLVM IR, as numba intrinsics.

``keccak_p1600`` permutes one state, ``keccak_x4`` four interleaved states at once.
Generating the IR here (a 24-iteration loop over one round on 25 SSA values) instead
of letting numba lower an unrolled Python round keeps the compiled code small, so
every kernel that inlines a permutation compiles in a fraction of the time.

SLH-DSA verification is ~2,000 independent-ish single-block SHAKE256 calls, and the
WOTS+ chains and FORS trees of one layer do not depend on each other.  Running four
of them side by side in 256-bit vectors (AVX2 on x86-64; LLVM splits the vectors on
targets without it, still correct) costs about 1.3 scalar permutations for four.
numba has no vector types, so the permutation is written directly in LLVM IR.

Layout: arrays are C-contiguous ``uint64``.  ``keccak_p1600``: 25 words.  ``keccak_x4``:
at least 100 words; lane ``l`` of instance ``j`` is word ``4 * l + j`` (one 32-byte
vector per lane).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core.errors import TypingError
from numba.extending import intrinsic

# Rotation offsets r[x + 5y] (FIPS 202, rho step).
_ROT = [0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39]
_ROT += [41, 45, 15, 21, 8, 18, 2, 61, 56, 14]
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_V4 = ir.VectorType(_I64, 4)
WAYS = 4


def _splat(ty: ir.Type, value: int) -> ir.Constant:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(_I64, value)] * ty.count)
    return ir.Constant(ty, value)


def _rotl(b: ir.IRBuilder, x: ir.Value, r: int) -> ir.Value:
    if r == 0:
        return x
    return b.or_(b.shl(x, _splat(x.type, r)), b.lshr(x, _splat(x.type, 64 - r)))


def _round(b: ir.IRBuilder, a: list[ir.Value]) -> list[ir.Value]:
    """theta, rho, pi, chi of one round (iota is added by the caller)."""
    c = []
    for x in range(5):
        t = a[x]
        for y in range(1, 5):
            t = b.xor(t, a[x + 5 * y])
        c.append(t)
    d = [b.xor(c[(x - 1) % 5], _rotl(b, c[(x + 1) % 5], 1)) for x in range(5)]
    moved: list[ir.Value] = [a[0]] * 25
    for x in range(5):
        for y in range(5):
            src = x + 5 * y
            moved[y + 5 * ((2 * x + 3 * y) % 5)] = _rotl(b, b.xor(a[src], d[x]), _ROT[src])
    out: list[ir.Value] = [a[0]] * 25
    for y in range(5):
        for x in range(5):
            row = 5 * y
            out[x + row] = b.xor(
                moved[x + row],
                b.and_(b.not_(moved[(x + 1) % 5 + row]), moved[(x + 2) % 5 + row]),
            )
    return out


def _emit_permutation(context, builder, signature, args, ty: ir.Type) -> None:
    """Load 25 lanes of type ``ty`` from src, run 24 rounds in a loop, store to dst."""
    s_arr = context.make_array(signature.args[0])(context, builder, args[0])
    d_arr = context.make_array(signature.args[1])(context, builder, args[1])
    rc_arr = context.make_array(signature.args[2])(context, builder, args[2])
    s_ptr = builder.bitcast(s_arr.data, ty.as_pointer())
    d_ptr = builder.bitcast(d_arr.data, ty.as_pointer())
    lanes = [builder.load(builder.gep(s_ptr, [ir.Constant(_I64, i)]), align=8) for i in range(25)]
    entry = builder.block
    loop = builder.append_basic_block("keccak_round")
    done = builder.append_basic_block("keccak_done")
    builder.branch(loop)

    builder.position_at_end(loop)
    phis = [builder.phi(ty) for _ in range(25)]
    counter = builder.phi(_I64)
    for phi, lane in zip(phis, lanes, strict=True):
        phi.add_incoming(lane, entry)
    counter.add_incoming(ir.Constant(_I64, 0), entry)
    new = _round(builder, list(phis))
    rc = builder.load(builder.gep(rc_arr.data, [counter]))
    if isinstance(ty, ir.VectorType):  # iota adds the same constant to every state
        rc = builder.insert_element(ir.Constant(ty, ir.Undefined), rc, ir.Constant(_I32, 0))
        zeros = ir.Constant(ir.VectorType(_I32, ty.count), [0] * ty.count)
        rc = builder.shuffle_vector(rc, ir.Constant(ty, ir.Undefined), zeros)
    new[0] = builder.xor(new[0], rc)
    following = builder.add(counter, ir.Constant(_I64, 1))
    body_end = builder.block
    for phi, lane in zip(phis, new, strict=True):
        phi.add_incoming(lane, body_end)
    counter.add_incoming(following, body_end)
    builder.cbranch(builder.icmp_unsigned("<", following, ir.Constant(_I64, 24)), loop, done)

    builder.position_at_end(done)
    for i, lane in enumerate(new):
        builder.store(lane, builder.gep(d_ptr, [ir.Constant(_I64, i)]), align=8)


def _check_arrays(name: str, *arrays: types.Type) -> None:
    """The IR reads lanes straight from the data pointer: demand contiguous uint64."""
    for arr in arrays:
        if not (isinstance(arr, types.Array) and arr.dtype == types.uint64 and arr.layout == "C"):
            raise TypingError(f"{name}: expected C-contiguous uint64 arrays, got {arr}")


@intrinsic
def keccak_p1600(typingctx, src, dst, round_constants):
    """Keccak-f[1600] of the 25 words at ``src`` into ``dst`` (may be the same array)."""
    _check_arrays("keccak_p1600", src, dst, round_constants)
    sig = types.void(src, dst, round_constants)

    def codegen(context, builder, signature, args):
        _emit_permutation(context, builder, signature, args, _I64)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def keccak_x4(typingctx, src, dst, round_constants):
    """Permute 4 interleaved states from ``src`` into ``dst`` (may be the same array).

    ``round_constants`` is the uint64[24] array ``keccak.ROUND_CONSTANTS``.
    """
    _check_arrays("keccak_x4", src, dst, round_constants)
    sig = types.void(src, dst, round_constants)

    def codegen(context, builder, signature, args):
        _emit_permutation(context, builder, signature, args, _V4)
        return context.get_dummy_value()

    return sig, codegen
