r"""The host side of the fused CPU hop (:mod:`grounding.semiring.fused`): the kernels of
:mod:`grounding.semiring._fused_kernels` on the callback's NumPy arrays. The functions
``*_host`` hold :data:`_LOCK`, choose the thread count by the size of the call and reuse
buffers.
"""

from __future__ import annotations

import contextlib
import sys
import threading

import numpy as np
from numpy.typing import ArrayLike

from grounding.semiring._fused_kernels import AVAILABLE

if AVAILABLE:
    import numba

    from grounding.semiring._fused_kernels import _add_rows, _backward, _forward
    from grounding.semiring._fused_math import _gather, _transpose

_LOCK = threading.RLock()  # several CPU devices may call back at once; numba's pool is shared
_PARALLEL_WORK = 1 << 20  # entries (edges x sources) from which a call uses every thread


@contextlib.contextmanager
def _threads(work: int):
    """Hold the kernel lock and run on one thread when ``work`` (entries touched) is small:
    waking the worker threads costs more than such a call, and under load a parallel region
    waits for a scheduler slice (milliseconds) to get its second core."""
    with _LOCK:
        numba.set_num_threads(1 if work < _PARALLEL_WORK else numba.config.NUMBA_NUM_THREADS)
        yield


def _host(*arrays) -> list[np.ndarray]:
    """Callback arguments as C-contiguous, read-only NumPy arrays (numba types those only)."""
    return [_readonly(np.ascontiguousarray(np.asarray(x))) for x in arrays]


def _readonly(x: np.ndarray) -> np.ndarray:
    """A read-only view of ``x``: every array a kernel only reads is passed read-only, so that
    numba compiles one specialization per kernel and dtype, not one per mix of read-only
    (callback arguments) and writable (reused buffers) inputs: ``_forward`` alone takes
    15-18 s to compile here."""
    view = x.view()
    view.flags.writeable = False
    return view


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
    ``reuse``, under ``_LOCK``; a read-only view of it); ``[E, S > 1]`` stay."""
    if w.ndim > 1 and w.shape[1] > 1:
        return w
    shape = (len(edge), 1)
    out = _buffer("w", shape, w.dtype) if reuse else np.empty(shape, w.dtype)
    with _threads(8 * len(edge)):  # a random read an entry: worth both cores sooner
        _gather(w.reshape(-1), edge, out.reshape(-1))
    return _readonly(out)


_NO_ROWS = np.zeros(0, np.int32)


def forward_host(
    ptr: ArrayLike,
    src: ArrayLike,
    edge: ArrayLike,
    w: ArrayLike,
    a: ArrayLike,
    out_ptr: ArrayLike = _NO_ROWS,
    out_dst: ArrayLike = _NO_ROWS,
    *,
    tropical: bool,
    out: np.ndarray | None = None,
    rows: bool = False,
    total: np.ndarray | None = None,
):
    """One hop on host arrays into ``out`` (new if ``None``), added into ``total`` if given;
    ``rows``: ``w`` is already :func:`_row_weights`; ``out_ptr``, ``out_dst``: the out-edge
    rows, for the frontier (see :func:`_forward`)."""
    ptr, src, edge, w, a, out_ptr, out_dst = _host(ptr, src, edge, w, a, out_ptr, out_dst)
    w = w if rows else _row_weights(w, edge)
    out = np.empty_like(a) if out is None else out
    total = np.empty((0, 0), a.dtype) if total is None else total
    factored = w.shape[1] == 1 and not tropical
    if a.size == 0:  # no sources (or no nodes): nothing to reduce
        return out
    with _threads(len(src) * a.shape[1]):
        _forward(ptr, src, edge, w, a, out, _scratch(a), bool(tropical), factored, total,
                 out_ptr, out_dst)  # fmt: skip
    return out


def backward_host(
    ptr: ArrayLike,
    dst: ArrayLike,
    edge: ArrayLike,
    w: ArrayLike,
    a: ArrayLike,
    out: ArrayLike,
    g: ArrayLike,
):
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


def forward_hops_host(
    ptr: ArrayLike,
    src: ArrayLike,
    edge: ArrayLike,
    w: ArrayLike,
    a0: ArrayLike,
    out_ptr: ArrayLike,
    out_dst: ArrayLike,
    n_hops: int,
    tropical: bool,
    keep_hops: bool,
):
    """``n_hops`` hops from ``a0`` (``[N, S]``) on the host: the ``(+)``-sum over hops
    ``1..n_hops``, sources-first (``[S, N]``, a pooled array, :func:`_result`: callers copy
    it, as JAX does), and, with ``keep_hops``, every hop's values ``[n_hops, N, S]``.

    Without ``keep_hops`` the sum is taken in Horner's form, ``y_1 = A a0``, ``y_{t+1} =
    A (a0 (+) y_t)`` (the hop distributes over ``(+)``), so ``y_{n_hops}`` is the sum:
    ``a0`` is added into the few rows it occupies instead of every hop into the total.
    With ``keep_hops`` each hop's values ``A^t a0`` are kept and summed as they come."""
    if n_hops < 1:
        raise ValueError(f"n_hops must be >= 1, got {n_hops}")
    ptr, src, edge, w, a0, out_ptr, out_dst = _host(ptr, src, edge, w, a0, out_ptr, out_dst)
    a, acc = a0, None
    with _LOCK:  # the buffers below are shared by all calls
        w = _row_weights(w, edge, reuse=True)  # once for all hops
        if keep_hops:
            acc = _buffer("total", a0.shape, a0.dtype)
            acc.fill(-np.inf)
            hops = np.empty((n_hops, *a0.shape), a0.dtype)
        else:  # values ping-pong between two buffers
            hops = _buffer("hops", (2, *a0.shape), a0.dtype)
        for t in range(n_hops):
            buffer = hops[t if keep_hops else t % 2]
            a = forward_host(
                ptr, src, edge, w, a, out_ptr, out_dst, tropical=tropical, out=buffer,
                rows=True, total=acc,
            )  # fmt: skip
            if not keep_hops and t < n_hops - 1 and a0.size:
                if t == 0:  # the rows of a0 with values: the first hop's row maxima
                    start = np.flatnonzero(_scratch(a0)[1] > -np.inf)
                _add_rows(a, a0, start, tropical)  # the next hop's input: a0 (+) y_t
        total = _result(a0.shape[::-1], a0.dtype)
        with _threads(a0.size):
            _transpose(_readonly(a if acc is None else acc), total)
    return (total, hops) if keep_hops else total


def forward_hops_one_hot_host(
    ptr: ArrayLike,
    src: ArrayLike,
    edge: ArrayLike,
    w: ArrayLike,
    sources: ArrayLike,
    out_ptr: ArrayLike,
    out_dst: ArrayLike,
    n_hops: int,
    tropical: bool,
    keep_hops: bool,
):
    """:func:`forward_hops_host` from ``a0 = log delta_{u, s}`` of ``sources`` (``[S]``),
    built here in ``w``'s dtype (into a reused buffer) instead of sent from JAX."""
    sources = np.asarray(sources)
    with _LOCK:  # a0's buffer is shared by all calls
        a0 = _buffer("a0", (len(ptr) - 1, len(sources)), np.asarray(w).dtype)
        a0.fill(-np.inf)
        a0[sources, np.arange(len(sources))] = 0.0
        return forward_hops_host(ptr, src, edge, w, a0, out_ptr, out_dst, n_hops, tropical,
                                 keep_hops)  # fmt: skip
