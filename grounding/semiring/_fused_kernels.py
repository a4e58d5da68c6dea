r"""The numba side of the fused CPU hop (:mod:`grounding.semiring.fused`): the kernels and
their host wrappers on NumPy arrays (intrinsics, ``exp``, ``log``: ``_fused_math``).

- :func:`_forward`: one hop, row by row over the in-edges of each destination, with the
  factored log-sum-exp (one ``exp`` per edge; rows few sources reach summed source by
  source) and its exact per-``(v, s)`` fallback, the min-plus reduction, unreached
  in-neighbours skipped, and the sum over hops accumulated;
- :func:`_backward`: the cotangents of one log-semiring hop over the out-edge rows.

The host functions (``*_host``) take the callback's arrays, hold :data:`_LOCK`, choose the
thread count by the size of the call and reuse buffers.
"""

from __future__ import annotations

import contextlib
import sys
import threading

import numpy as np

from grounding.semiring._fused_math import AVAILABLE

if AVAILABLE:
    import numba

    from grounding.semiring._fused_math import (
        _ctz,
        _exp,
        _gather,
        _jit,
        _log,
        _lost,
        _popcount,
        _prefetch,
        _transpose,
    )

_LOCK = threading.RLock()  # several CPU devices may call back at once; numba's pool is shared
_AHEAD = 8  # in-edges prefetched ahead of the one being reduced
_SPARSE = 8  # a row is summed source by source when at most 1/_SPARSE of them reach it
_FRONTIER = 8  # rows are found from the reached nodes when their out-edges are < |E|/8
_PARALLEL_WORK = 1 << 20  # entries (edges x sources) from which a call uses every thread


if AVAILABLE:

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
            else:
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

    @_jit
    def _frontier(c, out_ptr, out_dst, active, n_edges):
        """Mark in ``active`` the rows with a reached in-neighbour (``c[u] > -inf``), from the
        out-edges of the reached nodes, when those are fewer than ``n_edges / _FRONTIER``
        (and out-edge rows are given); returns whether it did (else every row is scanned)."""
        if out_ptr.shape[0] == 0:
            return False
        n, reached_out = c.shape[0], 0
        for u in range(n):
            if c[u] > -np.inf:
                reached_out += out_ptr[u + 1] - out_ptr[u]
        if reached_out * _FRONTIER >= n_edges:
            return False
        active[:] = False
        for u in range(n):
            if c[u] > -np.inf:
                for k in range(out_ptr[u], out_ptr[u + 1]):
                    active[out_dst[k]] = True
        return True

    @_jit(parallel=True)
    def _forward(ptr, src, edge, w, a, out, scratch, tropical, factored, total, out_ptr,
                 out_dst):  # fmt: skip
        """``out[v] = (+)_{e=(u->v)} a[u] (x) w[e]`` per row, and ``total[v] (+)= out[v]``
        when ``total`` (``[N, S]``) has rows (the sum over hops, while the row is in cache;
        :func:`forward_hops_host` transposes it once at the end). ``w`` is
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
        of a few sources is a small part of a large graph); where the reached nodes have few
        out-edges (``out_ptr``, ``out_dst``: the out-edge rows, or empty), only the rows they
        lead to are scanned (:func:`_frontier`), the others are ``-inf``.
        """
        n, width = out.shape
        b, c, reach, active = scratch
        words = reach.shape[1]
        _node_scaled(a, b, c, reach, factored)
        frontier = _frontier(c, out_ptr, out_dst, active, src.shape[0])
        n_chunks = (n + 63) // 64
        for chunk in numba.prange(n_chunks):
            m = np.empty(width, a.dtype)
            acc = np.empty(width, a.dtype)
            row_reach = np.empty(words, np.uint64)
            for v in range(64 * chunk, min(n, 64 * chunk + 64)):
                if frontier and not active[v]:  # no in-neighbour is reached
                    for s in range(width):
                        out[v, s] = -np.inf
                    continue
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
_RESULTS: list = []  # arrays handed back to JAX, which copies them; reused once released
_MAX_RESULTS = 4


def _buffer(name: str, shape: tuple, dtype) -> np.ndarray:
    """A reused array of ``shape`` (contents undefined, under ``_LOCK``); only the latest
    shape per name is kept."""
    x = _BUFFERS.get(name)
    if x is None or x.shape != shape or x.dtype != dtype:
        _BUFFERS[name] = None  # release the old one first
        x = _BUFFERS[name] = np.empty(shape, dtype)
    return x


def _result(shape: tuple, dtype) -> np.ndarray:
    """An array for a callback's result (under ``_LOCK``): JAX copies it after the callback
    returns, outside the lock, so a pooled array is reused only when nothing but the pool
    refers to it (reference count: the pool's slot, ``x`` and the count's argument)."""
    for x in _RESULTS:
        if x.shape == shape and x.dtype == dtype and sys.getrefcount(x) <= 3:
            return x
    if len(_RESULTS) >= _MAX_RESULTS:
        _RESULTS.pop(0)
    _RESULTS.append(np.empty(shape, dtype))
    return _RESULTS[-1]


def _scratch(a: np.ndarray) -> tuple[np.ndarray, ...]:
    """Buffers of a hop for values like ``a`` (under ``_LOCK``): ``b`` like ``a``, per-node
    shifts ``[n]``, reach bits ``[n, ceil(S / 64)]`` and active-row marks ``[n]``."""
    n, width = a.shape
    return (
        _buffer("b", a.shape, a.dtype),
        _buffer("c", (n,), a.dtype),
        _buffer("reach", (n, (width + 63) // 64), np.uint64),
        _buffer("active", (n,), np.bool_),
    )


def _row_weights(w: np.ndarray, edge: np.ndarray, reuse: bool = False) -> np.ndarray:
    """Edge-order weights for the kernels: ``[E]`` or ``[E, 1]`` (shared by all sources, or
    one source) become ``[E, 1]`` in row order (read in sequence; into a reused buffer with
    ``reuse``, under ``_LOCK``); ``[E, S > 1]`` stay."""
    if w.ndim > 1 and w.shape[1] > 1:
        return w
    shape = (len(edge), 1)
    out = _buffer("w", shape, w.dtype) if reuse else np.empty(shape, w.dtype)
    with _threads(8 * len(edge)):  # a random read an entry: worth both cores sooner
        _gather(w.reshape(-1), edge, out.reshape(-1))
    return out


_NO_ROWS = np.zeros(0, np.int32)


def forward_host(
    ptr, src, edge, w, a, out_ptr=_NO_ROWS, out_dst=_NO_ROWS, *, tropical, out=None,
    rows=False, total=None
):  # fmt: skip
    """One hop on host arrays into ``out`` (new if ``None``), added into ``total`` if given;
    ``rows``: ``w`` is already :func:`_row_weights`; ``out_ptr``, ``out_dst``: the out-edge
    rows, for the frontier (see :func:`_forward`)."""
    ptr, src, edge, w, a, out_ptr, out_dst = _host(ptr, src, edge, w, a, out_ptr, out_dst)
    w = w if rows else _row_weights(w, edge)
    out = np.empty_like(a) if out is None else out
    total = np.empty((0, 0), a.dtype) if total is None else total
    factored = w.shape[1] == 1 and not tropical
    with _threads(len(src) * a.shape[1]):
        _forward(ptr, src, edge, w, a, out, _scratch(a), bool(tropical), factored, total,
                 out_ptr, out_dst)  # fmt: skip
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


def forward_hops_host(ptr, src, edge, w, a0, out_ptr, out_dst, n_hops, tropical, keep_hops):
    """``n_hops`` hops from ``a0`` (``[N, S]``) on the host: the ``(+)``-sum over hops
    ``1..n_hops``, sources-first (``[S, N]``, a pooled array, :func:`_result`: callers copy
    it, as JAX does), and, with ``keep_hops``, every hop's values ``[n_hops, N, S]``."""
    ptr, src, edge, w, a, out_ptr, out_dst = _host(ptr, src, edge, w, a0, out_ptr, out_dst)
    with _LOCK:  # the buffers below are shared by all calls
        w = _row_weights(w, edge, reuse=True)  # once for all hops
        acc = _buffer("total", a.shape, a.dtype)
        acc.fill(-np.inf)
        if keep_hops:
            hops = np.empty((n_hops, *a.shape), a.dtype)
        else:  # values ping-pong between two buffers
            hops = _buffer("hops", (2, *a.shape), a.dtype)
        for t in range(n_hops):
            buffer = hops[t if keep_hops else t % 2]
            a = forward_host(
                ptr, src, edge, w, a, out_ptr, out_dst, tropical=tropical, out=buffer,
                rows=True, total=acc,
            )  # fmt: skip
        total = _result(a.shape[::-1], a.dtype)
        with _threads(a.size):
            _transpose(acc, total)
    return (total, hops) if keep_hops else total
