r"""The fused CPU backend of the path engine: a hop as one pass per destination row over its
in-edges, compiled with numba (kernels: :mod:`grounding.semiring._fused_kernels`, called on
the host by :mod:`grounding.semiring._fused_host`).

The XLA layouts (:class:`~grounding.semiring.kernels.SegmentEdges`, the ELL blocks of
:class:`~grounding.semiring.layout.EdgeIndex`) materialize gathered ``[rows, S]`` blocks and
reduce them afterwards; on a CPU the random-row gather of those blocks, not arithmetic, bounds
a hop (``docs/performance.md``). The fused kernel walks the in-edges of each destination ``v``
(compressed sparse rows sorted by tail) and reduces them in registers. With edge weights
shared by all sources (log semiring) it factors each term of Eq. (13)'s recursion,

.. math::
    e^{a(u, s) + w(e) - m'(v)} = e^{w(e) + c(u) - m'(v)}\, b(u, s), \qquad
    b(u, s) = e^{a(u, s) - c(u)},\quad c(u) = \max_s a(u, s),\quad
    m'(v) = \max_{e=(u\to v)} w(e) + c(u),

one ``exp`` per edge instead of one per edge and source; a row where a term may have been
lost to float32 underflow (a source far below its node's best, as at small ``tau``) is
recomputed with every term shifted by its own ``(v, s)`` maximum, exactly as the XLA
reference does. Per-source weights and the min-plus semiring (Eq. (11)) take that exact
path. Nodes no source has reached yet are skipped, the rows of the in-edges to come are
prefetched (``llvm.prefetch``), and ``exp``/``log`` are branch-free float32 polynomials that
vectorize over sources (relative error ~1e-7; float64 values use libm's).

The backward pass (the edge usage of Prop. 2) is a second kernel over the out-edge rows:
``p(e, s) = g(v, s) exp(a(u, s) + w(e, s) - a'(v, s))`` summed per head ``u`` (the cotangent of
``a``) and per edge (of ``w``), with no scatter. The min-plus backward splits each ``(v, s)``
cotangent equally among tied maximizers, in XLA.

:func:`hop` (one hop) and :func:`recursion` (``K`` hops and their sum in one host call, the
path :func:`~grounding.semiring.recursion.forward` takes) wrap the kernels in
:func:`jax.pure_callback` under a :func:`jax.custom_vjp`, so ``jit``, ``vmap`` (sequentially),
and ``grad`` work. Sharded fields (``mesh=``) run on the XLA segment hop instead: inside
``shard_map`` over several devices a callback receives device arrays whose reading can deadlock
(:func:`grounding.semiring.recursion.fields`). :data:`AVAILABLE` is false when numba is missing;
the layouts then use XLA.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from grounding._numerics import logaddexp
from grounding.semiring import _fused_host as kernels
from grounding.semiring._fused_kernels import AVAILABLE

__all__ = ["AVAILABLE", "CSR", "DTYPES", "hop", "recursion"]

DTYPES = (jnp.float32, jnp.float64)
"""The value dtypes the kernels are compiled for (the layouts send others to XLA)."""


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class CSR:
    """In-edge and out-edge rows of a directed multigraph (a pytree of int arrays).

    Attributes:
        in_ptr, in_src, in_edge: edges sorted by tail: ``in_src[in_ptr[v]:in_ptr[v+1]]`` are
            the heads of ``v``'s in-edges, ``in_edge`` their edge ids.
        out_ptr, out_dst, out_edge: the same sorted by head (tails and edge ids).
    """

    in_ptr: jax.Array
    in_src: jax.Array
    in_edge: jax.Array
    out_ptr: jax.Array
    out_dst: jax.Array
    out_edge: jax.Array

    @classmethod
    def from_edges(cls, head: np.ndarray, tail: np.ndarray, n_nodes: int) -> CSR:
        """Both row orders of validated concrete edge arrays (NumPy, ``O(|E| log |E|)``)."""
        if len(head) >= 2**31:
            raise ValueError(f"the fused layout indexes edges with int32; got {len(head)} edges")

        def rows(key, other):
            order = np.argsort(key, kind="stable")
            ptr = np.zeros(n_nodes + 1, np.int32)
            np.cumsum(np.bincount(key, minlength=n_nodes), out=ptr[1:])
            return ptr, other[order], order

        fields = (*rows(tail, head), *rows(head, tail))
        return cls(*(jnp.asarray(x, jnp.int32) for x in fields))


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _hop(csr: CSR, edges, a: jax.Array, logw: jax.Array, tropical: bool) -> jax.Array:
    fn = functools.partial(kernels.forward_host, tropical=tropical)
    args = (csr.in_ptr, csr.in_src, csr.in_edge, logw, a, csr.out_ptr, csr.out_dst)
    return _callback(fn, jax.ShapeDtypeStruct(a.shape, a.dtype), args)


def _hop_fwd(csr, edges, a, logw, tropical):
    out = _hop(csr, edges, a, logw, tropical)
    return out, (csr, edges, a, logw, out)


def _hop_bwd(tropical, res, g):
    csr, (head, tail), a, logw, out = res
    if tropical:  # subgradient: each (v, s) cotangent split equally among tied maximizers
        w = logw if logw.ndim == 2 else logw[:, None]
        hit = (a[head] + w == out[tail]) & (out[tail] > -jnp.inf)
        ties = jax.ops.segment_sum(hit.astype(a.dtype), tail, a.shape[0])
        p = jnp.where(hit, g[tail] / jnp.where(ties[tail] > 0, ties[tail], 1.0), 0.0)
        ga = jax.ops.segment_sum(p, head, a.shape[0])
        return None, None, ga, p if logw.ndim == 2 else p.sum(axis=1)
    shapes = (jax.ShapeDtypeStruct(a.shape, a.dtype), jax.ShapeDtypeStruct(logw.shape, a.dtype))
    args = (csr.out_ptr, csr.out_dst, csr.out_edge, logw, a, out, g)
    return None, None, *_callback(kernels.backward_host, shapes, args)


def _callback(fn, shapes, args):
    """``fn(*args)`` on the host by :func:`jax.pure_callback` (``vmap`` sequential), its
    results typed like ``args`` on a mesh (:func:`_varying`).

    float64 arguments and results travel as pairs of uint32 words: JAX converts a callback's
    arrays on its own thread, where a scoped ``jax.enable_x64`` of the caller does not hold,
    and would cast float64 to float32."""
    flat, tree = jax.tree.flatten(shapes)
    wide_in = [x.dtype == jnp.float64 for x in args]
    wide = [s.dtype == jnp.float64 for s in flat]
    sent = [jax.ShapeDtypeStruct((*s.shape, 2), jnp.uint32) if w else s for s, w in zip(flat, wide)]

    def host(*xs):
        xs = [_from_words(x) if w else x for x, w in zip(xs, wide_in)]
        outs = jax.tree.leaves(fn(*xs))
        return [_to_words(y) if w else y for y, w in zip(outs, wide)]

    args = [jax.lax.bitcast_convert_type(x, jnp.uint32) if w else x
            for x, w in zip(args, wide_in)]  # fmt: skip
    got = jax.pure_callback(host, sent, *args, vmap_method="sequential")
    got = [jax.lax.bitcast_convert_type(y, jnp.float64) if w else y for y, w in zip(got, wide)]
    return _varying(jax.tree.unflatten(tree, got), args)


def _to_words(x) -> np.ndarray:
    """A float64 array as uint32 words ``[..., 2]`` (no copy when contiguous)."""
    x = np.ascontiguousarray(x, np.float64)
    return x.view(np.uint32).reshape(*x.shape, 2)


def _from_words(x) -> np.ndarray:
    """The float64 array of :func:`_to_words`'s words."""
    x = np.ascontiguousarray(x, np.uint32)
    return x.view(np.float64).reshape(x.shape[:-1])


def _varying_axes(aval) -> frozenset:
    """Mesh axes an abstract value varies over (``manual_axis_type`` from JAX 0.10, ``vma``
    before)."""
    manual = getattr(aval, "manual_axis_type", None)
    return manual.varying if manual is not None else getattr(aval, "vma", frozenset())


def _varying(outputs, inputs):
    """Mark callback outputs as varying over the mesh axes their inputs vary over: inside
    ``shard_map`` a callback's result is otherwise typed as replicated (``scan`` then rejects
    the hop's carry)."""
    axes = set().union(*(_varying_axes(jax.typeof(x)) for x in inputs))
    if not axes:
        return outputs
    return jax.tree.map(lambda y: jax.lax.pcast(y, tuple(sorted(axes)), to="varying"), outputs)


_hop.defvjp(_hop_fwd, _hop_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5, 6))
def _recursion(csr, edges, a0, logw, n_hops, tropical, keep_hops):
    fn = functools.partial(
        kernels.forward_hops_host, n_hops=n_hops, tropical=tropical, keep_hops=keep_hops
    )
    acc = jax.ShapeDtypeStruct(a0.shape[::-1], a0.dtype)  # sources-first
    shapes = (acc, jax.ShapeDtypeStruct((n_hops, *a0.shape), a0.dtype)) if keep_hops else acc
    args = (csr.in_ptr, csr.in_src, csr.in_edge, logw, a0, csr.out_ptr, csr.out_dst)
    return _callback(fn, shapes, args)


def _recursion_reference(csr, edges, a0, logw, n_hops, tropical, keep_hops):
    """The same recursion hop by hop through the differentiable :func:`hop` (the backward
    pass of :func:`_recursion` is its VJP: one recomputation, then the per-hop kernels)."""
    a, acc, hops = a0, jnp.full_like(a0, -jnp.inf), []
    for _ in range(n_hops):
        a = _hop(csr, edges, a, logw, tropical)
        acc = jnp.maximum(acc, a) if tropical else logaddexp(acc, a)
        hops.append(a)
    return (acc.T, jnp.stack(hops)) if keep_hops else acc.T


def _recursion_fwd(csr, edges, a0, logw, n_hops, tropical, keep_hops):
    out = _recursion(csr, edges, a0, logw, n_hops, tropical, keep_hops)
    return out, (csr, edges, a0, logw)


def _recursion_bwd(n_hops, tropical, keep_hops, res, g):
    csr, edges, a0, logw = res
    ref = functools.partial(
        _recursion_reference, n_hops=n_hops, tropical=tropical, keep_hops=keep_hops
    )
    _, vjp = jax.vjp(lambda a, w: ref(csr, edges, a, w), a0, logw)
    return None, None, *vjp(g)


_recursion.defvjp(_recursion_fwd, _recursion_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(5, 6, 7))
def _recursion_one_hot(csr, edges, a0, sources, logw, n_hops, tropical, keep_hops):
    """:func:`_recursion` where ``a0`` is the one-hot ``log delta_{u, s}`` of ``sources``
    (``[S]`` nodes), built by the host: ``S`` ints cross to the kernel instead of ``[N, S]``
    values. Only the VJP reads ``a0``, so under ``jit`` a forward pass does not compute it."""
    fn = functools.partial(
        kernels.forward_hops_one_hot_host, n_hops=n_hops, tropical=tropical, keep_hops=keep_hops
    )
    acc = jax.ShapeDtypeStruct(a0.shape[::-1], logw.dtype)  # sources-first
    hops = jax.ShapeDtypeStruct((n_hops, *a0.shape), logw.dtype)
    args = (csr.in_ptr, csr.in_src, csr.in_edge, logw, sources, csr.out_ptr, csr.out_dst)
    return _callback(fn, (acc, hops) if keep_hops else acc, args)


def _recursion_one_hot_fwd(csr, edges, a0, sources, logw, n_hops, tropical, keep_hops):
    out = _recursion_one_hot(csr, edges, a0, sources, logw, n_hops, tropical, keep_hops)
    return out, (csr, edges, a0, logw)


def _recursion_one_hot_bwd(n_hops, tropical, keep_hops, res, g):
    _, _, g_a0, g_logw = _recursion_bwd(n_hops, tropical, keep_hops, res, g)
    return None, None, g_a0, None, g_logw  # sources are integers: no cotangent


_recursion_one_hot.defvjp(_recursion_one_hot_fwd, _recursion_one_hot_bwd)


def recursion(
    csr: CSR,
    head: jax.Array,
    tail: jax.Array,
    a0: jax.Array,
    logw: jax.Array,
    n_hops: int,
    tropical: bool,
    keep_hops: bool,
    sources: jax.Array | None = None,
):
    """``n_hops`` hops from ``a0`` (``[N, S]``) in one host call: the ``(+)``-sum over hops
    ``1..n_hops``, sources-first (``[S, N]``: the kernel writes it so, sparing XLA a
    transpose), and (with ``keep_hops``, else ``None``) every hop's values ``[T, N, S]``.
    One callback instead of one per hop, with the accumulation in the kernel;
    differentiable in ``a0`` and ``logw`` (recomputed hop by hop for the gradient).

    ``sources`` (``[S]`` nodes; ``None``: unknown) says that ``a0`` is their one-hot
    ``log delta_{u, s}``: the host then builds it, and ``a0`` is not sent (nor, under
    ``jit`` without a gradient, computed)."""
    logw, edges = logw.astype(a0.dtype), (head, tail)
    if sources is None:
        out = _recursion(csr, edges, a0, logw, n_hops, tropical, keep_hops)
    else:
        out = _recursion_one_hot(csr, edges, a0, sources, logw, n_hops, tropical, keep_hops)
    return out if keep_hops else (out, None)


def hop(
    csr: CSR, head: jax.Array, tail: jax.Array, a: jax.Array, logw: jax.Array, tropical: bool
) -> jax.Array:
    """One hop ``[n_nodes, S] -> [n_nodes, S]`` by the fused kernel (``logw``: ``[E]`` or
    ``[E, S]``; float32 or float64 values); differentiable in ``a`` and ``logw``.
    ``head``/``tail`` (edge order) serve the min-plus backward pass."""
    return _hop(csr, (head, tail), a, logw.astype(a.dtype), tropical)
