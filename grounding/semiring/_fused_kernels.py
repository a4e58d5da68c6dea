r"""The numba side of the fused CPU hop (:mod:`grounding.semiring.fused`): the kernels and
their host wrappers on NumPy arrays.

- :func:`_forward`: one hop, row by row over the in-edges of each destination, with the
  factored log-sum-exp (one ``exp`` per edge) and its exact per-``(v, s)`` fallback, the
  min-plus reduction, unreached in-neighbours skipped, and the sum over hops accumulated;
- :func:`_backward`: the cotangents of one log-semiring hop over the out-edge rows;
- branch-free float32 ``exp``/``log`` polynomials that vectorise over sources, and
  ``llvm.prefetch`` of the rows of the in-edges to come.

The host functions (``*_host``) take the callback's arrays, hold :data:`_LOCK`, choose the
thread count by the size of the call and reuse scratch buffers.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading

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

_LOCK = threading.RLock()  # several CPU devices may call back at once; numba's pool is shared
_AHEAD = 8  # in-edges prefetched ahead of the one being reduced
_SPARSE = 8  # a row is summed source by source when at most 1/_SPARSE of them reach it
_PARALLEL_WORK = 1 << 20  # entries (edges x sources) from which a call uses every thread
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
            branch-free, vectorisable."""
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
            no division, branch-free, vectorisable. Sums here are ``0`` or at least
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

    @_jit(inline="always")
    def _exact_row(lo, hi, src, edge, w, a, c, m, acc, tropical):
        """Row ``[lo, hi)`` with every term shifted by its own ``(v, s)`` maximum: ``m`` gets
        the maxima (``0`` where ``-inf``, unless ``tropical``), ``acc`` the shifted sums.
        In-neighbours with ``c[u] = -inf`` (no source reaches them) are skipped."""
        width, n_e, shared = a.shape[1], src.shape[0], w.shape[1] == 1
        flat, wflat = a.reshape(-1), w.reshape(-1)
        m[:] = -np.inf
        for k in range(lo, hi):
            ahead = min(k + _AHEAD, n_e - 1)
            if c[src[ahead]] > -np.inf:
                for q in range(0, width, 16):  # 64-byte lines of the rows to come
                    _prefetch(flat, src[ahead] * width + q)
                    if not shared:
                        _prefetch(wflat, edge[ahead] * width + q)
            u = src[k]
            if c[u] == -np.inf:
                continue
            if shared:
                we = w[k, 0]
                for s in range(width):
                    m[s] = max(m[s], a[u, s] + we)
            else:
                e = edge[k]
                for s in range(width):
                    m[s] = max(m[s], a[u, s] + w[e, s])
        if tropical:
            return
        for s in range(width):
            m[s] = m[s] if m[s] > -np.inf else a.dtype.type(0.0)
            acc[s] = 0.0
        for k in range(lo, hi):  # the rows are in cache from the first pass
            u = src[k]
            if c[u] == -np.inf:
                continue
            if shared:
                we = w[k, 0]
                for s in range(width):
                    acc[s] += _exp(a[u, s] + we - m[s])
            else:
                e = edge[k]
                for s in range(width):
                    acc[s] += _exp(a[u, s] + w[e, s] - m[s])

    @_jit(parallel=True)
    def _node_scaled(a, b, c, reach, factored):
        """``c[u] = max_s a[u, s]`` (``-inf``: no source reaches ``u``); with ``factored``,
        for reached ``u`` only (the others are never read), also ``b[u, s] =
        exp(a[u, s] - c[u])`` and ``reach[u]``: bit ``s`` set where ``a[u, s]`` is finite
        (64 sources a word)."""
        n, width = a.shape
        for u in numba.prange(n):
            top = a.dtype.type(-np.inf)
            for s in range(width):
                top = max(top, a[u, s])
            c[u] = top
            if not factored or top == -np.inf:
                continue
            for s in range(width):
                b[u, s] = _exp(a[u, s] - top)
            for word in range(reach.shape[1]):  # branch-free: half-reached rows mispredict
                bits = np.uint64(0)
                for s in range(64 * word, min(width, 64 * word + 64)):
                    bits |= np.uint64(a[u, s] > -np.inf) << np.uint64(s & 63)
                reach[u, word] = bits

    @_jit(inline="always")
    def _accumulate_row(total, row, v, tropical):
        """``total[v] <- total[v] (+) row``: ``max``, or ``log(e^total + e^row)``
        (branch-free; ``-inf`` with ``-inf`` stays ``-inf``)."""
        for s in range(row.shape[0]):
            r, t = row[s], total[v, s]
            hi, lo = max(t, r), min(t, r)
            d = lo - hi if hi > -np.inf else row.dtype.type(-np.inf)
            total[v, s] = hi if tropical else _log(row.dtype.type(1.0) + _exp(d)) + hi

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

    @_jit(inline="always")
    def _sparse_row(lo, hi, src, w, b, c, reach, row_reach, acc, out, v, top):
        """The factored row (:func:`_forward`) where few sources reach an in-neighbour: only
        the sources set in ``row_reach`` (and, per edge, in ``reach[u]``) are read, summed
        and written (one float of a row of ``b`` instead of all). ``False``: a sum is below
        the fallback bound and the row needs the exact path (nothing written then)."""
        one = np.uint64(1)
        for word in range(row_reach.shape[0]):
            bits = row_reach[word]
            while bits:
                acc[64 * word + _ctz(bits)] = 0.0
                bits &= bits - one
        for k in range(lo, hi):
            u = src[k]
            if c[u] == -np.inf:
                continue
            coef = _exp(w[k, 0] + c[u] - top)
            for word in range(row_reach.shape[0]):
                bits = reach[u, word]
                while bits:
                    s = 64 * word + _ctz(bits)
                    acc[s] += coef * b[u, s]
                    bits &= bits - one
        bound = _lost(top) * (hi - lo)
        for word in range(row_reach.shape[0]):
            bits = row_reach[word]
            while bits:
                if acc[64 * word + _ctz(bits)] < bound:
                    return False
                bits &= bits - one
        for s in range(out.shape[1]):
            out[v, s] = -np.inf
        for word in range(row_reach.shape[0]):
            bits = row_reach[word]
            while bits:
                s = 64 * word + _ctz(bits)
                out[v, s] = _log(acc[s]) + top
                bits &= bits - one
        return True

    @_jit(inline="always")
    def _forward_row(ptr, src, edge, w, a, out, b, c, reach, m, acc, row_reach, v, tropical,
                     factored):  # fmt: skip
        """Row ``v`` of :func:`_forward` (``m``, ``acc``, ``row_reach``: per-thread rows)."""
        lo, hi = ptr[v], ptr[v + 1]
        width, n_e, bflat = a.shape[1], src.shape[0], b.reshape(-1)
        if factored:
            top = a.dtype.type(-np.inf)
            row_reach[:] = 0
            for k in range(lo, hi):
                u = src[k]
                if c[u] > -np.inf:  # reach[u] is written for reached u only
                    top = max(top, w[k, 0] + c[u])
                    for word in range(row_reach.shape[0]):
                        row_reach[word] |= reach[u, word]
            if top == -np.inf:  # no in-neighbour reached by any source
                for s in range(width):
                    out[v, s] = -np.inf
                return False
            n_reached = 0
            for word in range(row_reach.shape[0]):
                n_reached += _popcount(row_reach[word])
            if n_reached * _SPARSE <= width:
                if _sparse_row(lo, hi, src, w, b, c, reach, row_reach, acc, out, v, top):
                    return True
                _exact_row(lo, hi, src, edge, w, a, c, m, acc, tropical)
                for s in range(width):
                    out[v, s] = _log(acc[s]) + m[s]
                return True
            acc[:] = 0.0
            for k in range(lo, hi):
                ahead = min(k + _AHEAD, n_e - 1)
                if c[src[ahead]] > -np.inf:
                    for q in range(0, width, 16):
                        _prefetch(bflat, src[ahead] * width + q)
                u = src[k]
                if c[u] == -np.inf:  # unreached rows are skipped, not read
                    continue
                coef = _exp(w[k, 0] + c[u] - top)
                for s in range(width):
                    acc[s] += coef * b[u, s]
            bound, lost = _lost(top) * (hi - lo), 0
            for s in range(width):  # branch-free: is a reached source's sum below bound?
                bit = (row_reach[s >> 6] >> np.uint64(s & 63)) & np.uint64(1)
                lost |= np.int64(acc[s] < bound) & np.int64(bit)
            if lost == 0:
                for s in range(width):
                    out[v, s] = _log(acc[s]) + top
                return True
        _exact_row(lo, hi, src, edge, w, a, c, m, acc, tropical)
        if tropical:
            out[v] = m
        else:
            for s in range(width):
                out[v, s] = _log(acc[s]) + m[s]
        return True

    @_jit(parallel=True)
    def _forward(ptr, src, edge, w, a, out, scratch, tropical, factored, total):
        """``out[v] = (+)_{e=(u->v)} a[u] (x) w[e]`` per row, and ``total[:, v] (+)= out[v]``
        when ``total`` (``[S, N]``) has rows (the sum over hops, while the row is in cache,
        written sources-first as callers read it). ``w`` is
        ``[E, S]`` in edge order or ``[E, 1]`` in row order (shared by all sources);
        ``scratch``: :func:`_scratch`.

        ``factored`` (shared weights, log semiring): ``exp(a[u,s] + w - m'[v]) =
        exp(w + c[u] - m'[v]) b[u, s]`` with a per-node shift ``c`` and a per-row shift
        ``m'[v] = max_e w + c[u]``: one ``exp`` per edge instead of one per edge and source,
        one pass. Each term lost to underflow is below ``e^-87 < 2^-125`` in float32 (both
        factors bound it), so a row where some source reached from an in-neighbour sums
        below ``deg 2^-101`` (relative error possibly above ``2^-24``) is recomputed with the
        exact per-``(v, s)`` shift (float64: below ``deg 2^-969``, :func:`_lost`); sources
        reached by no in-neighbour are exactly ``-inf``. In
        every path, in-neighbours no source has reached are skipped, not read (the frontier
        of a few sources is a small part of a large graph).
        """
        n, width = out.shape
        b, c, reach = scratch
        words = reach.shape[1]
        _node_scaled(a, b, c, reach, factored)
        n_chunks = (n + 63) // 64
        for chunk in numba.prange(n_chunks):
            m = np.empty(width, a.dtype)
            acc = np.empty(width, a.dtype)
            row_reach = np.empty(words, np.uint64)
            for v in range(64 * chunk, min(n, 64 * chunk + 64)):
                live = _forward_row(ptr, src, edge, w, a, out, b, c, reach, m, acc, row_reach,
                                    v, tropical, factored)  # fmt: skip
                if live and total.shape[0]:
                    _accumulate_row(total, out[v], v, tropical)

    @_jit(parallel=True)
    def _backward(ptr, dst, edge, w, a, out, g, ga, gw):
        """Log semiring: ``p = g[v] exp(a[u] + w[e] - out[v])`` over the out-edges of each
        ``u``, summed into ``ga[u]`` and into ``gw`` (per edge and source for ``[E, S]``
        weights in edge order; summed over sources for ``[E, 1]`` weights in row order)."""
        n, width = a.shape
        shared, zero = w.shape[1] == 1, a.dtype.type(0.0)
        gflat, oflat, wflat, n_e = g.reshape(-1), out.reshape(-1), w.reshape(-1), dst.shape[0]
        n_chunks = (n + 63) // 64
        for chunk in numba.prange(n_chunks):
            acc = np.empty(width, a.dtype)
            p = np.empty(width, a.dtype)
            for u in range(64 * chunk, min(n, 64 * chunk + 64)):
                acc[:] = 0.0
                for k in range(ptr[u], ptr[u + 1]):
                    ahead = min(k + _AHEAD, n_e - 1)
                    for q in range(0, width, 16):
                        _prefetch(gflat, dst[ahead] * width + q)
                        _prefetch(oflat, dst[ahead] * width + q)
                        if not shared:
                            _prefetch(wflat, edge[ahead] * width + q)
                    v = dst[k]
                    if shared:
                        we = w[k, 0]
                        for s in range(width):
                            x = a[u, s] + we - out[v, s]  # <= 0 up to rounding
                            p[s] = g[v, s] * _exp(min(x, zero))
                    else:
                        e = edge[k]
                        for s in range(width):
                            x = a[u, s] + w[e, s] - out[v, s]
                            p[s] = g[v, s] * _exp(min(x, zero))
                    for s in range(width):  # -inf (no walk to v): nothing flows back
                        p[s] = p[s] if out[v, s] > -np.inf else zero
                        acc[s] += p[s]
                    if shared:
                        gw[k, 0] = p.sum()
                    else:
                        gw[edge[k]] = p
                ga[u] = acc


@contextlib.contextmanager
def _threads(work: int):
    """Hold the kernel lock and run on one thread when ``work`` (entries touched) is small:
    waking the worker threads costs more than such a call, and under load a parallel region
    waits for a scheduler slice (milliseconds) to get its second core."""
    with _LOCK:
        numba.set_num_threads(1 if work < _PARALLEL_WORK else numba.config.NUMBA_NUM_THREADS)
        yield


def _host(*arrays) -> list[np.ndarray]:
    """Callback arguments as C-contiguous NumPy arrays (numba types those only)."""
    return [np.ascontiguousarray(np.asarray(x)) for x in arrays]


_BUFFERS: dict = {}  # name -> array reused across calls (under _LOCK): fresh pages cost
_PER_THREAD = threading.local()  # name -> array handed back to JAX, which copies it


def _buffer(name: str, shape: tuple, dtype, per_thread: bool = False) -> np.ndarray:
    """A reused array of ``shape`` (contents undefined); only the latest shape per name is
    kept. ``per_thread`` buffers are for results returned to the callback: JAX copies them
    on the calling thread before that thread calls again, after ``_LOCK`` is released."""
    store = _PER_THREAD.__dict__ if per_thread else _BUFFERS
    x = store.get(name)
    if x is None or x.shape != shape or x.dtype != dtype:
        store[name] = None  # release the old one first
        x = store[name] = np.empty(shape, dtype)
    return x


def _scratch(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Buffers of the factored hop for values like ``a`` (under ``_LOCK``): ``b`` like ``a``,
    per-node shifts ``[n]`` and reach bits ``[n, ceil(S / 64)]``."""
    n, width = a.shape
    reach = _buffer("reach", (n, (width + 63) // 64), np.uint64)
    return _buffer("b", a.shape, a.dtype), _buffer("c", (n,), a.dtype), reach


def _row_weights(w: np.ndarray, edge: np.ndarray, out=None) -> np.ndarray:
    """Edge-order weights for the kernels: ``[E]`` or ``[E, 1]`` (shared by all sources, or
    one source) become ``[E, 1]`` in row order (read in sequence, gathered into ``out`` if
    given); ``[E, S > 1]`` stay."""
    if w.ndim > 1 and w.shape[1] > 1:
        return w
    out = np.empty((len(edge), 1), w.dtype) if out is None else out
    with _threads(len(edge)):
        _gather(w.reshape(-1), edge, out.reshape(-1))
    return out


def forward_host(ptr, src, edge, w, a, tropical, out=None, rows=False, total=None):
    """One hop on host arrays into ``out`` (new if ``None``), added into ``total`` if given;
    ``rows``: ``w`` is already :func:`_row_weights`."""
    ptr, src, edge, w, a = _host(ptr, src, edge, w, a)
    w = w if rows else _row_weights(w, edge)
    out = np.empty_like(a) if out is None else out
    total = np.empty((0, 0), a.dtype) if total is None else total
    factored = w.shape[1] == 1 and not tropical
    with _threads(len(src) * a.shape[1]):
        _forward(ptr, src, edge, w, a, out, _scratch(a), bool(tropical), factored, total)
    return out


def backward_host(ptr, dst, edge, w, a, out, g):
    ptr, dst, edge, w, a, out, g = _host(ptr, dst, edge, w, a, out, g)
    rows = _row_weights(w, edge)
    ga, gw = np.empty_like(a), np.empty(rows.shape, a.dtype)
    with _threads(len(dst) * a.shape[1]):
        _backward(ptr, dst, edge, rows, a, out, g, ga, gw)
    if rows.shape[1] > 1:
        return ga, gw
    gw_edges = np.empty(len(edge), a.dtype)  # back to edge order
    gw_edges[edge] = gw[:, 0]
    return ga, gw_edges.reshape(w.shape)


def forward_hops_host(ptr, src, edge, w, a0, n_hops, tropical, keep_hops):
    """``n_hops`` hops from ``a0`` (``[N, S]``) on the host: the ``(+)``-sum over hops
    ``1..n_hops``, sources-first (``[S, N]``, a per-thread buffer that the next call on this
    thread overwrites), and, with ``keep_hops``, every hop's values ``[n_hops, N, S]``."""
    ptr, src, edge, w, a = _host(ptr, src, edge, w, a0)
    with _LOCK:  # the buffers below are shared by all calls
        if w.ndim == 1 or w.shape[1] == 1:  # once for all hops
            w = _row_weights(w, edge, _buffer("w", (len(edge), 1), w.dtype))
        acc = _buffer("total", a.shape, a.dtype)
        acc.fill(-np.inf)
        if keep_hops:
            hops = np.empty((n_hops, *a.shape), a.dtype)
        else:  # values ping-pong between two buffers
            hops = _buffer("hops", (2, *a.shape), a.dtype)
        for t in range(n_hops):
            buffer = hops[t if keep_hops else t % 2]
            a = forward_host(ptr, src, edge, w, a, tropical, out=buffer, rows=True, total=acc)
        total = _buffer("sum", a.shape[::-1], a.dtype, per_thread=True)
        with _threads(a.size):
            _transpose(acc, total)
    return (total, hops) if keep_hops else total
