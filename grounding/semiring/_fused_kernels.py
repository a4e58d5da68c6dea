r"""The numba kernels of the fused CPU hop (:mod:`grounding.semiring.fused`; intrinsics,
``exp``, ``log``: ``_fused_math``).

- :func:`_forward`: one hop, row by row over the in-edges of each destination, with the
  factored log-sum-exp (one ``exp`` per reached in-edge, vectorized over the row's list of
  them; rows few sources reach summed source by source) and its exact per-``(v, s)``
  fallback, the min-plus reduction, unreached in-neighbors skipped, and (per-hop values
  kept) the sum over hops accumulated;
- :func:`_backward`: the cotangents of one log-semiring hop over the out-edge rows;
- :func:`_add_rows`: a semiring sum into a few rows.

Their host wrappers on NumPy arrays are in :mod:`grounding.semiring._fused_host`.
"""

from __future__ import annotations

import numpy as np

from grounding.semiring._fused_math import AVAILABLE

if AVAILABLE:
    import numba

    from grounding.semiring._fused_math import (
        _ctz,
        _exp,
        _jit,
        _log,
        _lost,
        _popcount,
        _prefetch,
    )

_AHEAD = 8  # in-edges prefetched ahead of the one being reduced
_SPARSE = 8  # a row is summed source by source when at most 1/_SPARSE of them reach it
_FRONTIER = 8  # rows are found from the reached nodes when their out-edges are < |E|/8


if AVAILABLE:

    @_jit(inline="always")
    def _exact_row(lo, hi, src, edge, w, a, c, m, acc, tropical):
        """Row ``[lo, hi)`` with every term shifted by its own ``(v, s)`` maximum: ``m`` gets
        the maxima (``0`` where ``-inf``, unless ``tropical``), ``acc`` the shifted sums.
        In-neighbors with ``c[u] = -inf`` (no source reaches them) are skipped."""
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
        also ``reach[u]``: bit ``s`` set where ``a[u, s]`` is finite (64 sources a word;
        zero for unreached ``u``), and, for reached ``u`` only (the others are never read),
        ``b[u, s] = exp(a[u, s] - c[u])``."""
        n, width = a.shape
        for u in numba.prange(n):
            top = a.dtype.type(-np.inf)
            for s in range(width):
                top = max(top, a[u, s])
            c[u] = top
            if not factored:
                continue
            if top == -np.inf:
                reach[u] = 0  # or-ed unconditionally by the rows
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
    def _sparse_row(n_live, live_u, coef, b, reach, row_reach, acc, out, v, top, degree):
        """The factored row (:func:`_forward`) where few sources reach an in-neighbor: only
        the sources set in ``row_reach`` (and, per edge, in ``reach[u]``) are read, summed
        and written (one float of a row of ``b`` instead of all). ``False``: a sum is below
        the fallback bound and the row needs the exact path (nothing written then)."""
        one = np.uint64(1)
        for word in range(row_reach.shape[0]):
            bits = row_reach[word]
            while bits:
                acc[64 * word + _ctz(bits)] = 0.0
                bits &= bits - one
        for j in range(n_live):
            u, cj = live_u[j], coef[j]
            for word in range(row_reach.shape[0]):
                bits = reach[u, word]
                while bits:
                    s = 64 * word + _ctz(bits)
                    acc[s] += cj * b[u, s]
                    bits &= bits - one
        bound = _lost(top) * degree
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
    def _forward_row(ptr, src, edge, w, a, out, b, c, reach, m, acc, row_reach, live_u,
                     coef, v, tropical, factored):  # fmt: skip
        """Row ``v`` of :func:`_forward` (``m``, ``acc``, ``row_reach``, ``live_u``,
        ``coef``: per-thread rows)."""
        lo, hi = ptr[v], ptr[v + 1]
        width, bflat, zero = a.shape[1], b.reshape(-1), np.uint64(0)
        if factored:
            top = a.dtype.type(-np.inf)
            n_live, words = 0, row_reach.shape[0]
            first = zero  # the first word in a register (64 sources or fewer: the only one)
            row_reach[:] = 0
            for k in range(lo, hi):  # branch-free: the reached in-neighbors, listed
                u = src[k]
                x = w[k, 0] + c[u] if c[u] > -np.inf else c[u]  # select: no inf - inf
                live = x > -np.inf
                live_u[n_live] = u
                coef[n_live] = x
                n_live += np.int64(live)
                top = max(top, x)
                first |= reach[u, 0]  # zero where u is not reached
                for word in range(1, words):
                    row_reach[word] |= reach[u, word]
            row_reach[0] = first
            if top == -np.inf:  # no in-neighbor reached by any source
                for s in range(width):
                    out[v, s] = -np.inf
                return False
            for j in range(n_live):  # vectorized
                coef[j] = _exp(coef[j] - top)
            n_reached = 0
            for word in range(row_reach.shape[0]):
                n_reached += _popcount(row_reach[word])
            if n_reached * _SPARSE <= width:
                if _sparse_row(n_live, live_u, coef, b, reach, row_reach, acc, out, v, top,
                               hi - lo):  # fmt: skip
                    return True
            else:
                acc[:] = 0.0
                for j in range(n_live):
                    ahead = live_u[min(j + _AHEAD, n_live - 1)]
                    for q in range(0, width, 16):
                        _prefetch(bflat, ahead * width + q)
                    u, cj = live_u[j], coef[j]
                    for s in range(width):
                        acc[s] += cj * b[u, s]
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
        """Mark in ``active`` the rows with a reached in-neighbor (``c[u] > -inf``), from the
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
        the host transposes it once at the end). ``w`` is ``[E, S]`` in edge order or
        ``[E, 1]`` in row order (shared by all sources); ``scratch``: the buffers ``b``,
        ``c``, ``reach`` and ``active`` (``grounding.semiring._fused_host._scratch``).

        ``factored`` (shared weights, log semiring): ``exp(a[u,s] + w - m'[v]) =
        exp(w + c[u] - m'[v]) b[u, s]`` with a per-node shift ``c`` and a per-row shift
        ``m'[v] = max_e w + c[u]``: one ``exp`` per edge instead of one per edge and source.
        A first, branch-free pass over the row's in-edges lists the reached in-neighbors
        ``u`` with ``w + c[u]`` (and finds ``m'[v]``); their coefficients are exponentiated
        in one vectorized loop, and the multiply-add over sources runs down that list. Each
        term lost to underflow is below ``e^-87 < 2^-125`` in float32 (both factors bound
        it), so a row where some source reached from an in-neighbor sums below
        ``deg 2^-101`` (relative error possibly above ``2^-24``) is recomputed with the exact
        per-``(v, s)`` shift (float64: below ``deg 2^-969``, :func:`_lost`); sources reached
        by no in-neighbor are exactly ``-inf``. In every path, in-neighbors no source has
        reached are skipped, not read (the frontier of a few sources is a small part of a
        large graph); where the reached nodes have few out-edges (``out_ptr``, ``out_dst``:
        the out-edge rows, or empty), only the rows they lead to are scanned
        (:func:`_frontier`), the others are ``-inf``.
        """
        n, width = out.shape
        b, c, reach, active = scratch
        words = reach.shape[1]
        _node_scaled(a, b, c, reach, factored)
        frontier = _frontier(c, out_ptr, out_dst, active, src.shape[0])
        n_chunks, max_degree = (n + 63) // 64, 1
        for v in range(n):  # the longest list of reached in-neighbors a row can have
            max_degree = max(max_degree, ptr[v + 1] - ptr[v])
        for chunk in numba.prange(n_chunks):
            m = np.empty(width, a.dtype)
            acc = np.empty(width, a.dtype)
            row_reach = np.empty(words, np.uint64)
            live_u = np.empty(max_degree, np.int32)
            coef = np.empty(max_degree, a.dtype)
            for v in range(64 * chunk, min(n, 64 * chunk + 64)):
                if frontier and not active[v]:  # no in-neighbor is reached
                    for s in range(width):
                        out[v, s] = -np.inf
                    continue
                live = _forward_row(ptr, src, edge, w, a, out, b, c, reach, m, acc, row_reach,
                                    live_u, coef, v, tropical, factored)  # fmt: skip
                if live and total.shape[0]:
                    _accumulate_row(total, out[v], v, tropical)

    @_jit
    def _add_rows(y, a, rows, tropical):
        """``y[v] <- y[v] (+) a[v]`` for ``v`` in ``rows``."""
        for v in rows:
            _accumulate_row(y, a[v], v, tropical)

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
