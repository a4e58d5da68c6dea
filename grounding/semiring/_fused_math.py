r"""Numeric building blocks of the fused CPU kernels (:mod:`grounding.semiring._fused_kernels`):
LLVM intrinsics (prefetch, bit casts, trailing zeros, population count), the branch-free
``exp``/``log`` (typed per precision) that vectorize over sources, a parallel gather and a
blocked transpose."""

from __future__ import annotations

import functools
import math

import numpy as np

try:  # numba ships wheels for the platforms JAX supports; without it the XLA layouts are used
    import numba
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic, overload
except ImportError:  # pragma: no cover - exercised only where numba is absent
    numba = None

AVAILABLE = numba is not None
"""Whether the kernels can be compiled (numba imports)."""

_FLAGS = {"contract", "afn", "arcp", "nsz"}  # fast math without no-inf/no-nan: -inf is data


if AVAILABLE:

    @intrinsic
    def _prefetch(typingctx, arr, idx):
        """``llvm.prefetch`` (read, high locality) of ``arr.flat[idx]``."""

        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
            fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
            ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), i8p)
            builder.call(fn, [ptr, *(ir.Constant(i32, k) for k in (0, 3, 1))])
            return context.get_dummy_value()

        return types.void(arr, idx), codegen

    @intrinsic
    def _as_float32(typingctx, bits):
        """The float32 with the bit pattern of an int32."""

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.FloatType())

        return types.float32(types.int32), codegen

    @intrinsic
    def _as_int32(typingctx, x):
        """The int32 with the bit pattern of a float32."""

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(32))

        return types.int32(types.float32), codegen

    @intrinsic
    def _ctz(typingctx, bits):
        """Trailing zero bits of a nonzero uint64 (``llvm.cttz``): the lowest set bit."""

        def codegen(context, builder, signature, args):
            return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

        return types.int64(types.uint64), codegen

    @intrinsic
    def _popcount(typingctx, bits):
        """Set bits of a uint64 (``llvm.ctpop``)."""

        def codegen(context, builder, signature, args):
            return builder.ctpop(args[0])

        return types.int64(types.uint64), codegen

    _jit = functools.partial(numba.njit, fastmath=_FLAGS, cache=True)

    def _exp(d):
        """``exp(d)`` for ``d <= 0`` inside the kernels (typed per precision below)."""
        raise NotImplementedError  # pragma: no cover - replaced by the overload when jitted

    @overload(_exp, fastmath=_FLAGS)
    def _exp_typed(d):
        if d != types.float32:  # float64: libm
            return lambda d: math.exp(d)

        def exp32(d):
            """float32: ``0`` below ``-87`` (including ``-inf``), else ``2^k e^r`` with
            ``k = round(d / ln 2)``, ``r = d - k ln 2`` (Cody-Waite: ``ln 2`` in two parts, so
            ``r`` is exact to rounding), ``|r| <= 0.347``, ``e^r`` by its degree-7 Taylor
            polynomial (truncation < 1e-8 relative) and ``2^k`` built from its exponent bits:
            branch-free, vectorizable."""
            c = max(d, np.float32(-87.0))
            k = np.floor(c * np.float32(1.4426950408889634) + np.float32(0.5))
            x = (c - k * np.float32(0.693359375)) + k * np.float32(2.12194440e-4)
            p = np.float32(1 / 5040) * x + np.float32(1 / 720)
            p = ((p * x + np.float32(1 / 120)) * x + np.float32(1 / 24)) * x + np.float32(1 / 6)
            p = ((p * x + np.float32(0.5)) * x + np.float32(1.0)) * x + np.float32(1.0)
            scaled = p * _as_float32((np.int32(k) + np.int32(127)) << 23)
            return scaled if d >= np.float32(-87.0) else np.float32(0.0)

        return exp32

    def _lost(x):
        """Above the mass of one term the factored sum may have lost, times ``2^p`` (``p``
        the mantissa bits): ``2^-101`` in float32 (:func:`_exp` is ``0`` below
        ``e^-87 < 2^-125``), ``2^-969`` in float64 (a product of factors ``<= 1`` loses
        relative precision only below the smallest normal, ``2^-1022``)."""
        raise NotImplementedError  # pragma: no cover - replaced by the overload when jitted

    @overload(_lost)
    def _lost_typed(x):
        if x != types.float32:
            return lambda x: 2.0**-969
        return lambda x: np.float32(2.0**-101)

    def _log(x):
        """``log(x)`` for ``x == 0`` (``-inf``) or normal ``x > 0`` inside the kernels."""
        raise NotImplementedError  # pragma: no cover - replaced by the overload when jitted

    @overload(_log, fastmath=_FLAGS)
    def _log_typed(x):
        if x != types.float32:  # float64: libm
            return lambda x: math.log(x) if x > 0 else -math.inf

        def log32(x):
            """float32: ``x = 2^e m`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` from the bits;
            ``log m = f - f^2/2 + f^3 P(f)``, ``f = m - 1``, with the degree-8 minimax ``P`` of
            Cephes' ``logf`` (S. L. Moshier, Cephes Mathematical Library; < 1 ulp here):
            no division, branch-free, vectorizable. Sums here are ``0`` or at least
            ``2^-102``, never subnormal."""
            f32 = np.float32
            bits = _as_int32(x)
            # the exponent as a float with no int -> float conversion (numba widens int32
            # arithmetic to int64, which AVX2 cannot convert): bits 0x4B000000 | k are 2^23 + k
            e = _as_float32((bits >> 23) | np.int32(0x4B000000)) - f32(8388608 + 127)
            m = _as_float32((bits & np.int32(0x007FFFFF)) | np.int32(0x3F800000))
            big = m > f32(1.4142135)
            m = m * f32(0.5) if big else m
            e = e + f32(1.0) if big else e
            f = m - f32(1.0)
            z = f * f
            p = f32(7.0376836292e-2) * f + f32(-1.1514610310e-1)
            p = (p * f + f32(1.1676998740e-1)) * f + f32(-1.2420140846e-1)
            p = (p * f + f32(1.4249322787e-1)) * f + f32(-1.6668057665e-1)
            p = (p * f + f32(2.0000714765e-1)) * f + f32(-2.4999993993e-1)
            p = p * f + f32(3.3333331174e-1)
            y = (p * f * z - f32(0.5) * z) + f + e * f32(0.6931471805599453)
            return y if x > f32(0.0) else f32(-np.inf)

        return log32

    @_jit(parallel=True)
    def _gather(x, index, out):
        """``out = x[index]``."""
        for k in numba.prange(index.shape[0]):
            out[k] = x[index[k]]

    @_jit(parallel=True)
    def _transpose(x, out):
        """``out = x.T`` in 64 x 64 blocks."""
        n, width = x.shape
        for chunk in numba.prange((n + 63) // 64):
            for s0 in range(0, width, 64):
                for v in range(64 * chunk, min(n, 64 * chunk + 64)):
                    for s in range(s0, min(width, s0 + 64)):
                        out[s, v] = x[v, s]
