r"""All-walks path aggregation by sparse semiring dynamic programming (Eqs. (10), (11), (13)).

When the path prior factorises over steps, :math:`\omega(\gamma)=\prod_{e\in\gamma}\omega(e)`,
and the path energy is additive over edges (Eq. (10)), the entropic aggregate of Eq. (13)
over *all walks* from a source ``s`` to a node ``v`` with ``1..K`` hops is a ``K``-step
forward recursion in the log semiring:

.. math::
    a_0(u) = \log\delta_{u,s}, \qquad
    a_t(v) = \log\!\!\sum_{e=(u\to v)}\! \exp\big(a_{t-1}(u) + \log\omega(e) - c(e)/\tau\big),
    \qquad
    E(s, v) = -\tau \log \sum_{t=1}^{K} e^{a_t(v)} ,

and for :math:`\tau = 0` the min-plus (Viterbi) recursion of Eq. (11) with
:math:`a_t(v) = \max_e [a_{t-1}(u) - c(e)]` over edges of non-zero prior weight. The work is
``O(K |E|)`` per source instead of the ``O(deg^K)`` of enumeration, every step is
differentiable, and the gradient of :math:`E(s, v)` with respect to the edge costs is the
expected edge usage under the optimiser :math:`\nu^*` of Prop. 2 (:func:`edge_usage`).

The recursion runs over *walks* (nodes may repeat). Simple paths — the family
:func:`grounding.simple_paths` enumerates — have no such factorisation; on a DAG the two
families coincide.

Layout. Values are kept node-major, ``[n_nodes, n_sources]``, so one gather moves a
contiguous row of source values. Incoming edges are grouped by in-degree into a few
dense blocks (:class:`EdgeIndex`, an ELL layout with widths ``1, 2, 3, 4, 6, ..., 32``;
hubs are split into rows of 32 whose partial sums are combined at a second level), so a
hop is a sequence of row gathers and dense reductions with no scatter. The index is built
from concrete edge arrays; for traced edge arrays (inside ``jit``) and for graphs below
``_ELL_MIN_EDGES`` edges (where its compile time is not repaid) a segment-reduction
recursion computes the same field. Measured speed: ``docs/performance.md``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import as_float_array, check_nonnegative_scalar, is_concrete
from grounding._numerics import logaddexp, scaled_energy

__all__ = [
    "EdgeIndex",
    "energy_field",
    "hop_energy_fields",
    "edge_usage",
    "hop_distances",
    "UNREACHABLE",
]

UNREACHABLE = -1
"""Hop distance reported by :func:`hop_distances` for nodes not reached."""

_WIDTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)  # ELL row widths: padding below 1/3
_MAX_WIDTH = _WIDTHS[-1]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class EdgeIndex:
    """Incoming-edge layout of a directed multigraph for the semiring recursion (a pytree).

    Built once from concrete edge arrays with :meth:`from_edges`; reusable for any edge
    costs, priors and sources on the same graph, and passable through ``jit`` as an
    argument. Rows of a value pool ``[1 + n_nodes + n_partial, S]`` are gathered: row ``0``
    is the semiring zero (``-inf``), rows ``1..n_nodes`` are the previous hop's values, the
    rest are partial reductions of hub nodes.

    Attributes:
        head, tail: ``[n_edges]`` int32 edge endpoints.
        srcs: per level, per block: ``[rows, width]`` pool rows to reduce (``0`` pads).
        slots: per level-0 block: ``[rows, width]`` edge ids whose weight is added.
        final_row: ``[n_nodes]`` pool row holding each node's reduction (``0``: no in-edge).
        n_nodes: number of nodes (static).
    """

    head: jax.Array
    tail: jax.Array
    srcs: tuple[tuple[jax.Array, ...], ...]
    slots: tuple[jax.Array, ...]
    final_row: jax.Array
    n_nodes: int = dataclasses.field(metadata=dict(static=True))

    @property
    def n_edges(self) -> int:
        return int(self.head.shape[0])

    @classmethod
    def from_edges(cls, head: ArrayLike, tail: ArrayLike, n_nodes: int) -> EdgeIndex:
        """Build the layout (NumPy, ``O(|E| log |E|)``) from concrete edge arrays."""
        h, t = _check_edges(head, tail, n_nodes)
        h, t = np.asarray(h, np.int64), np.asarray(t, np.int64)
        srcs: list[tuple[jax.Array, ...]] = []
        slots: list[jax.Array] = []
        final_row = np.zeros(n_nodes, np.int64)
        item_src, item_dest, item_slot = h + 1, t, np.arange(len(h))
        pool = 1 + n_nodes
        while len(item_src):
            order = np.argsort(item_dest, kind="stable")
            deg = np.bincount(item_dest, minlength=n_nodes)
            first = np.concatenate([[0], np.cumsum(deg)[:-1]])
            # rows: each node with in-degree <= 32 is one row; hubs are cut into rows of 32
            n_rows = -(-deg // _MAX_WIDTH)
            row_node = np.repeat(np.arange(n_nodes), n_rows)
            within = np.arange(len(row_node)) - np.repeat(np.cumsum(n_rows) - n_rows, n_rows)
            row_lo = first[row_node] + _MAX_WIDTH * within
            row_len = np.minimum(deg[row_node] - _MAX_WIDTH * within, _MAX_WIDTH)
            row_width = np.asarray(_WIDTHS)[np.searchsorted(_WIDTHS, row_len)]
            level_srcs, level_slots, row_pos = [], [], np.empty(len(row_node), np.int64)
            for width in _WIDTHS:
                rows = np.flatnonzero(row_width == width)
                if not len(rows):
                    continue
                j = np.arange(width)[None, :]
                valid = j < row_len[rows, None]
                item = order[np.minimum(row_lo[rows, None] + j, len(order) - 1)]
                level_srcs.append(jnp.asarray(np.where(valid, item_src[item], 0), jnp.int32))
                level_slots.append(jnp.asarray(np.where(valid, item_slot[item], 0), jnp.int32))
                row_pos[rows] = pool + np.arange(len(rows))
                pool += len(rows)
            srcs.append(tuple(level_srcs))
            if not slots:
                slots = level_slots
            single = n_rows[row_node] == 1
            final_row[row_node[single]] = row_pos[single]
            # partial rows of hubs become the items of the next level (weight 0)
            item_src, item_dest = row_pos[~single], row_node[~single]
            item_slot = np.zeros(len(item_src), np.int64)
        return cls(
            head=jnp.asarray(h, jnp.int32),
            tail=jnp.asarray(t, jnp.int32),
            srcs=tuple(srcs),
            slots=tuple(slots),
            final_row=jnp.asarray(final_row, jnp.int32),
            n_nodes=int(n_nodes),
        )

    # the array-level API on this prebuilt index (no rebuild)
    def energy_field(self, edge_cost, sources, *, max_hops, tau, log_step_prior=None, mesh=None):
        """:func:`grounding.energy_field` on this index."""
        return _fields(self, self.n_nodes, edge_cost, sources, max_hops, tau, log_step_prior,
                       mesh, False)  # fmt: skip

    def hop_energy_fields(
        self, edge_cost, sources, *, max_hops, tau, log_step_prior=None, mesh=None
    ):
        """:func:`grounding.hop_energy_fields` on this index."""
        return _fields(self, self.n_nodes, edge_cost, sources, max_hops, tau, log_step_prior,
                       mesh, True)  # fmt: skip

    def edge_usage(self, edge_cost, sources, targets, *, max_hops, tau, log_step_prior=None):
        """:func:`grounding.edge_usage` on this index."""
        return _edge_usage(self, self.n_nodes, edge_cost, sources, targets, max_hops, tau,
                           log_step_prior)  # fmt: skip

    def hop_distances(self, anchors, *, max_hops=None):
        """:func:`grounding.hop_distances` on this index."""
        return _hop_distances(self, self.n_nodes, anchors, max_hops)


# ---------------------------------------------------------------------------- validation


def _check_edges(head: ArrayLike, tail: ArrayLike, n_nodes: int) -> tuple[jax.Array, jax.Array]:
    _check_positive_int(n_nodes, "n_nodes")
    h, t = jnp.asarray(head), jnp.asarray(tail)
    for name, a in (("head", h), ("tail", t)):
        if a.ndim != 1 or not jnp.issubdtype(a.dtype, jnp.integer):
            raise ValueError(f"{name} must be a 1-D integer array, got {a.dtype}{list(a.shape)}")
    if h.shape != t.shape:
        raise ValueError(f"head and tail must have the same length, got {h.shape} and {t.shape}")
    if is_concrete(h, t) and h.size:
        hn, tn = np.asarray(h), np.asarray(t)  # NumPy: jnp reductions would be staged under jit
        lo, hi = min(int(hn.min()), int(tn.min())), max(int(hn.max()), int(tn.max()))
        if lo < 0 or hi >= n_nodes:
            raise ValueError(f"edge endpoints must lie in [0, {n_nodes}), got [{lo}, {hi}]")
    return h, t


def _check_positive_int(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


def _check_sources(sources: ArrayLike, n_nodes: int, name: str = "sources") -> jax.Array:
    s = jnp.asarray(sources)
    if s.ndim != 1 or not jnp.issubdtype(s.dtype, jnp.integer):
        raise ValueError(f"{name} must be a 1-D integer array, got {s.dtype}{list(s.shape)}")
    if is_concrete(s) and s.size:
        sn = np.asarray(s)
        if sn.min() < 0 or sn.max() >= n_nodes:
            raise ValueError(f"{name} must lie in [0, {n_nodes}), got {sn.tolist()}")
    return s.astype(jnp.int32)


def _per_edge(x: ArrayLike, name: str, n_edges: int, n_sources: int, *, bad: float) -> jax.Array:
    """An edge array of shape ``[E]`` or ``[S, E]``, returned edge-major (``[E]`` / ``[E, S]``)."""
    arr = as_float_array(x, name)
    if arr.shape not in ((n_edges,), (n_sources, n_edges)):
        raise ValueError(
            f"{name} must have shape [{n_edges}] or [{n_sources}, {n_edges}], got {arr.shape}"
        )
    if is_concrete(arr):
        a = np.asarray(arr)
        if np.isnan(a).any():
            raise ValueError(f"{name} contains NaN")
        if (a == bad).any():
            raise ValueError(f"{name} contains {bad}")
    return arr.T if arr.ndim == 2 else arr


def _check_tau(tau: ArrayLike) -> tuple[jax.Array, bool]:
    """``tau`` and whether the min-plus semiring applies (``tau == 0``, which must be concrete)."""
    concrete = is_concrete(tau)  # decided on the argument: jnp.asarray stages it under jit
    t = check_nonnegative_scalar(tau, "tau")
    if t.ndim:
        raise ValueError(f"tau must be a scalar, got shape {t.shape}")
    return t, bool(concrete and float(np.asarray(tau)) == 0.0)


# ------------------------------------------------------------------------------ one hop


def _reduce_rows(pool: jax.Array, srcs: jax.Array, weight: Callable | None, tropical: bool):
    """``out[r] = (+)_j pool[srcs[r, j]] (x) weight(r, j)`` with ``(+)`` logsumexp or max.

    Columns are gathered one at a time: XLA's CPU gather of ``[rows, S]`` row blocks is
    several times faster than one ``[rows, width, S]`` gather.
    """

    def column(j):
        x = pool[srcs[:, j]]
        return x if weight is None else x + weight(j)

    width = srcs.shape[1]
    m = column(0)
    for j in range(1, width):
        m = jnp.maximum(m, column(j))
    if tropical:
        return m
    m = _shift(m)
    s = jnp.exp(column(0) - m)
    for j in range(1, width):
        s = s + jnp.exp(column(j) - m)
    return _log_shifted_sum(s, m)


def _shift(m: jax.Array) -> jax.Array:
    """The max shift of a log-sum-exp: ``0`` on empty (all ``-inf``) rows, no gradient."""
    return jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0.0))


def _log_shifted_sum(s: jax.Array, m: jax.Array) -> jax.Array:
    """``log(s) + m`` with ``-inf`` (and a zero gradient) where ``s == 0``."""
    positive = s > 0
    return jnp.where(positive, jnp.log(jnp.where(positive, s, 1.0)) + m, -jnp.inf)


def _hop_ell(index: EdgeIndex, a: jax.Array, logw: jax.Array, tropical: bool) -> jax.Array:
    """One hop ``[n_nodes, S] -> [n_nodes, S]`` on the ELL layout."""
    pool = jnp.concatenate([jnp.full((1, a.shape[1]), -jnp.inf, a.dtype), a])
    w = logw if logw.ndim == 2 else logw[:, None]  # [E, S] or [E, 1]
    for level, blocks in enumerate(index.srcs):
        outs = []
        for b, srcs in enumerate(blocks):
            weight = None if level else (lambda j, slot=index.slots[b]: w[slot[:, j]])
            outs.append(_reduce_rows(pool, srcs, weight, tropical))
        pool = jnp.concatenate([pool, *outs])
    # materialise the hop once for its consumers (next hop's gathers, the accumulator)
    return jax.lax.optimization_barrier(pool[index.final_row])


def _hop_segment(head, tail, n_nodes, a, logw, tropical):
    """The same hop by segment reductions (works with traced edge arrays)."""
    x = a[head] + (logw if logw.ndim == 2 else logw[:, None])
    m = jax.ops.segment_max(x, tail, n_nodes)
    if tropical:
        return m
    m = _shift(m)
    return _log_shifted_sum(jax.ops.segment_sum(jnp.exp(x - m[tail]), tail, n_nodes), m)


def _hop_fn(graph, n_nodes: int, tropical: bool) -> Callable:
    if isinstance(graph, EdgeIndex):
        return lambda a, logw: _hop_ell(graph, a, logw, tropical)
    head, tail = graph
    return lambda a, logw: _hop_segment(head, tail, n_nodes, a, logw, tropical)


def _edge_log_weights(cost: jax.Array, log_prior: jax.Array | None, tau, tropical: bool):
    """Per-edge log weights ``log omega(e) - c(e)/tau`` (``-c(e)`` on the prior's support at
    ``tau = 0``); ``+inf`` costs give ``-inf``."""
    if log_prior is not None and log_prior.ndim != cost.ndim:  # one of them per source
        cost, log_prior = (x[:, None] if x.ndim == 1 else x for x in (cost, log_prior))
    if tropical:
        lw = -cost
        return lw if log_prior is None else jnp.where(log_prior == -jnp.inf, -jnp.inf, lw)
    lw = -cost / tau
    return lw if log_prior is None else lw + log_prior


# ----------------------------------------------------------------------------- recursion


def _forward(hop, a0, n_hops: int, tropical: bool, *, logw=None, hop_logw=None, node_logw=None):
    """Run ``n_hops`` hops from ``a0`` (``[N, S]``) with ``lax.scan`` (one compiled hop body).

    Edge log weights are ``logw`` (shared by all hops) or ``hop_logw`` (leading hop axis);
    ``node_logw`` (``[T, N]``) is added to the values after each hop. Returns the
    ``(+)``-sum over hops ``1..n_hops`` (``[N, S]``) and every hop's values ``[T, N, S]``.
    """

    def step(carry, xs):
        a, acc = carry
        lw, nw = xs
        a = hop(a, logw if lw is None else lw)
        if nw is not None:
            a = a + nw[:, None]
        acc = jnp.maximum(acc, a) if tropical else logaddexp(acc, a)
        return (a, acc), a

    init = (a0, jnp.full_like(a0, -jnp.inf))
    (_, acc), per_hop = jax.lax.scan(step, init, (hop_logw, node_logw), length=n_hops)
    return acc, per_hop


_ELL_MIN_EDGES = 65_536
"""Edge count from which :func:`energy_field` & co. build an :class:`EdgeIndex` by
themselves. Below it the segment recursion is as fast and compiles in a fraction of the
time (the ELL hop unrolls one gather per column: ~3 s to compile at 1,000 edges, ~6 s at
1M; the segment hop ~0.3 s). An explicit index is always used as given."""


def _resolve(head, tail, n_nodes):
    """An :class:`EdgeIndex` for large concrete edge arrays, the raw arrays (segment path)
    for small or traced ones."""
    h, t = _check_edges(head, tail, n_nodes)
    if is_concrete(h, t) and h.shape[0] >= _ELL_MIN_EDGES:
        return EdgeIndex.from_edges(h, t, n_nodes)
    return (h, t)


def _n_edges(graph) -> int:
    return graph.n_edges if isinstance(graph, EdgeIndex) else int(graph[0].shape[0])


def _one_hot_log(sources: jax.Array, n_nodes: int, dtype) -> jax.Array:
    """``a_0 = log delta_{u, s}`` as ``[n_nodes, S]``."""
    a0 = jnp.full((n_nodes, sources.shape[0]), -jnp.inf, dtype)
    return a0.at[sources, jnp.arange(sources.shape[0])].set(0.0)


def _fields(graph, n_nodes, edge_cost, sources, max_hops, tau, log_step_prior, mesh, per_hop):
    """Validated energies: ``E_{<=K}`` ``[S, N]``, or with ``per_hop`` ``E_k`` ``[K, S, N]``."""
    max_hops = _check_positive_int(max_hops, "max_hops")
    tau, tropical = _check_tau(tau)
    sources = _check_sources(sources, n_nodes)
    n_src, n_e = sources.shape[0], _n_edges(graph)
    cost = _per_edge(edge_cost, "edge_cost", n_e, n_src, bad=-np.inf)
    prior = None
    if log_step_prior is not None:
        prior = _per_edge(log_step_prior, "log_step_prior", n_e, n_src, bad=np.inf)
        prior = prior.astype(cost.dtype)

    statics = (n_nodes, max_hops, tropical, per_hop)
    if mesh is None or n_src == 0:
        return _run(graph, cost, prior, sources, tau, *statics)
    return _sharded(mesh, statics, graph, cost, prior, sources, tau)


_STATIC = ("n_nodes", "max_hops", "tropical", "per_hop")


# jitted: one compilation per graph layout and shapes, instead of hundreds of eager gathers
@functools.partial(jax.jit, static_argnums=(5, 6, 7, 8), static_argnames=_STATIC)
def _run(graph, cost, prior, sources, tau, n_nodes, max_hops, tropical, per_hop):
    hop = _hop_fn(graph, n_nodes, tropical)
    logw = _edge_log_weights(cost, prior, tau, tropical)  # log omega(e) - c(e)/tau
    a0 = _one_hot_log(sources, n_nodes, cost.dtype)
    acc, hops = _forward(hop, a0, max_hops, tropical, logw=logw)
    scale = 1.0 if tropical else tau
    # Eq. (13): E = -tau * logsumexp over walks; Eq. (11) (max-plus on -c) at tau = 0
    if per_hop:
        return jnp.swapaxes(scaled_energy(scale, -hops), -1, -2)
    return scaled_energy(scale, -acc).T


def _sharded(mesh, statics, graph, cost, prior, sources, tau):
    """:func:`_run` with the source batch split over every device of ``mesh`` and the graph
    and shared edge arrays replicated: no communication, each device runs the recursion on
    its block of sources."""
    n_src, n_dev = sources.shape[0], mesh.devices.size
    pad = -n_src % n_dev
    if pad:  # pad the batch with copies of the first source; sliced off below
        sources = jnp.concatenate([sources, jnp.repeat(sources[:1], pad)])
        cost, prior = (
            x if x is None or x.ndim == 1 else jnp.pad(x, ((0, 0), (0, pad)), mode="edge")
            for x in (cost, prior)
        )
    ndims = tuple(None if x is None else x.ndim for x in (cost, prior))
    out = _sharded_fn(mesh, statics, ndims)(graph, cost, prior, sources, tau)
    if not pad:
        return out
    return out[:, :n_src] if statics[-1] else out[:n_src]


@functools.lru_cache(maxsize=32)
def _sharded_fn(mesh, statics, ndims):
    """Jitted ``shard_map`` of :func:`_run` (cached: one compilation per configuration)."""
    from jax.sharding import PartitionSpec as P

    axes = tuple(mesh.axis_names)
    edge = [None if nd is None else (P(None, axes) if nd == 2 else P()) for nd in ndims]
    fn = jax.shard_map(
        functools.partial(
            _run, n_nodes=statics[0], max_hops=statics[1], tropical=statics[2], per_hop=statics[3]
        ),
        mesh=mesh,
        in_specs=(P(), edge[0], edge[1], P(axes), P()),
        out_specs=P(None, axes) if statics[3] else P(axes),
    )
    return jax.jit(fn)


_FIELD_ARGS = r"""
    Args:
        head, tail: ``[n_edges]`` edge endpoints (parallel edges and self-loops allowed).
        edge_cost: ``[n_edges]`` additive edge costs :math:`c(e)` (e.g. ``alpha`` times the
            typed residuals of Eq. (8)), or ``[len(sources), n_edges]`` per-source costs;
            ``+inf`` removes an edge; ``-inf``/NaN are rejected.
        sources: ``[S]`` source node indices.
        n_nodes: number of nodes.
        max_hops: ``K >= 1``, the longest walk.
        tau: temperature :math:`\tau \ge 0`; ``tau == 0`` (concrete) is the min-plus limit.
        log_step_prior: optional ``[n_edges]`` (or ``[S, n_edges]``) step log-weights
            :math:`\log\omega(e)` of a factorised path prior (``-inf`` removes an edge);
            ``None`` is the counting prior :math:`\omega \equiv 1`.
        mesh: optional :class:`jax.sharding.Mesh`; the source batch is split over all its
            devices (edge arrays replicated) and the result is the same as without it.
"""


def energy_field(
    head: ArrayLike,
    tail: ArrayLike,
    edge_cost: ArrayLike,
    sources: ArrayLike,
    *,
    n_nodes: int,
    max_hops: int,
    tau: ArrayLike,
    log_step_prior: ArrayLike | None = None,
    mesh=None,
) -> jax.Array:
    r"""Entropic path energy (Eq. (13)) from each source to every node, over all walks of
    ``1..max_hops`` edges, by the semiring recursion (no enumeration).

    .. math::
        E(s, v) = -\tau \log \sum_{w:\, s \leadsto v,\ 1\le|w|\le K}
                  \exp\big(\log\omega(w) - c(w)/\tau\big),

    with :math:`c(w)` and :math:`\log\omega(w)` summed along the walk; the minimum of
    :math:`c(w)` over walks of positive prior weight (Eq. (11)) at ``tau == 0``; ``+inf``
    where no walk exists. Differentiable in ``edge_cost``, ``log_step_prior`` and ``tau``.
    The end node's entity-alignment cost (Eq. (9)) is additive: ``field + c_end[None, :]``;
    per-hop claim and node costs of a claim chain are in :func:`grounding.chain_energy`.
    {args}
    Returns:
        ``[S, n_nodes]`` energies.

    Example:
        >>> import jax.numpy as jnp
        >>> head, tail, cost = jnp.array([0, 1, 0]), jnp.array([1, 2, 2]), jnp.array([1.0, 1.0, 3.0])
        >>> energy_field(head, tail, cost, jnp.array([0]), n_nodes=3, max_hops=2, tau=0.0).tolist()
        [[inf, 1.0, 2.0]]

    Eq. (13) (Eq. (11) at ``tau == 0``) of the paper, for a step-factorised prior.
    """
    graph = _resolve(head, tail, n_nodes)
    return _fields(graph, n_nodes, edge_cost, sources, max_hops, tau, log_step_prior, mesh, False)


def hop_energy_fields(
    head: ArrayLike,
    tail: ArrayLike,
    edge_cost: ArrayLike,
    sources: ArrayLike,
    *,
    n_nodes: int,
    max_hops: int,
    tau: ArrayLike,
    log_step_prior: ArrayLike | None = None,
    mesh=None,
) -> jax.Array:
    r"""The energy field restricted to walks of *exactly* ``k`` edges, for ``k = 1..max_hops``.

    Entry ``[k - 1, s, v]`` is :func:`energy_field`'s quantity over walks with ``|w| = k``;
    :func:`energy_field` is their ``-tau * logsumexp(-E_k / tau)`` (``min`` at ``tau == 0``).
    {args}
    Returns:
        ``[max_hops, S, n_nodes]`` energies.
    """
    graph = _resolve(head, tail, n_nodes)
    return _fields(graph, n_nodes, edge_cost, sources, max_hops, tau, log_step_prior, mesh, True)


energy_field.__doc__ = energy_field.__doc__.replace("{args}", _FIELD_ARGS)
hop_energy_fields.__doc__ = hop_energy_fields.__doc__.replace("{args}", _FIELD_ARGS)


def _edge_usage(graph, n_nodes, edge_cost, sources, targets, max_hops, tau, log_step_prior):
    sources = _check_sources(sources, n_nodes)
    targets = _check_sources(targets, n_nodes, "targets")
    if targets.shape != sources.shape:
        raise ValueError(f"targets must match sources' shape {sources.shape}, got {targets.shape}")
    n_src, n_e = sources.shape[0], _n_edges(graph)
    cost = as_float_array(edge_cost, "edge_cost")
    cost = jnp.broadcast_to(cost, (n_src, n_e)) if cost.shape == (n_e,) else cost

    def total(c):  # sum_s E(s, t_s) over reachable pairs; rows are independent
        f = _fields(graph, n_nodes, c, sources, max_hops, tau, log_step_prior, None, False)
        f = f[jnp.arange(n_src), targets]
        return jnp.sum(jnp.where(jnp.isfinite(f), f, 0.0))

    return jax.grad(total)(cost)  # Prop. 2: dE/dc(e) = E_{nu*}[# uses of e]


def edge_usage(
    head: ArrayLike,
    tail: ArrayLike,
    edge_cost: ArrayLike,
    sources: ArrayLike,
    targets: ArrayLike,
    *,
    n_nodes: int,
    max_hops: int,
    tau: ArrayLike,
    log_step_prior: ArrayLike | None = None,
) -> jax.Array:
    r"""Expected edge usage under the optimiser :math:`\nu^*` of Prop. 2, for each
    ``(sources[s], targets[s])`` pair: the gradient of :math:`E(s, t_s)` (Eq. (13)) w.r.t.
    the edge costs,

    .. math::
        \frac{\partial E(s, t)}{\partial c(e)} = \sum_{w: s\leadsto t} \nu^*(w)\, n_e(w),
        \qquad \nu^*(w) \propto \omega(w)\, e^{-c(w)/\tau},

    with :math:`n_e(w)` the number of times walk :math:`w` traverses ``e``. At ``tau == 0``
    it is the usage of the best walk (ties share the mass). Rows of unreachable pairs are zero.

    Returns:
        ``[S, n_edges]`` expected usages; each row sums to the expected walk length.

    Prop. 2 of the paper (the optimiser of the variational form of Eq. (13)).
    """
    graph = _resolve(head, tail, n_nodes)
    return _edge_usage(graph, n_nodes, edge_cost, sources, targets, max_hops, tau, log_step_prior)


def _hop_distances(graph, n_nodes, anchors, max_hops):
    anchors = _check_sources(anchors, n_nodes, "anchors")
    limit = max(n_nodes - 1, 1) if max_hops is None else _check_positive_int(max_hops, "max_hops")
    return _bfs(graph, anchors, n_nodes, limit)


@functools.partial(jax.jit, static_argnums=(2, 3))
def _bfs(graph, anchors, n_nodes, limit):
    hop = _hop_fn(graph, n_nodes, tropical=True)
    zero = jnp.zeros((_n_edges(graph),), jnp.float32)
    reached = _one_hot_log(anchors, n_nodes, jnp.float32)  # 0 on visited nodes, -inf elsewhere
    dist = jnp.where(reached == 0, 0, UNREACHABLE).astype(jnp.int32)

    def cond(state):
        t, _, _, grew = state
        return grew & (t < limit)

    def body(state):  # breadth-first frontier expansion in the Boolean (max-plus 0/-inf) semiring
        t, reached, dist, _ = state
        new = (hop(reached, zero) == 0) & (dist == UNREACHABLE)
        dist = jnp.where(new, t + 1, dist)
        return t + 1, jnp.where(dist >= 0, 0.0, -jnp.inf).astype(jnp.float32), dist, jnp.any(new)

    state = (jnp.int32(0), reached, dist, jnp.bool_(anchors.shape[0] > 0))
    return jax.lax.while_loop(cond, body, state)[2].T


def hop_distances(
    head: ArrayLike,
    tail: ArrayLike,
    anchors: ArrayLike,
    *,
    n_nodes: int,
    max_hops: int | None = None,
) -> jax.Array:
    """Directed hop distance from each anchor to every node by breadth-first search.

    Args:
        head, tail: ``[n_edges]`` edge endpoints.
        anchors: ``[A]`` anchor nodes.
        n_nodes: number of nodes.
        max_hops: depth limit ``d_max`` (``None``: unlimited).

    Returns:
        ``[A, n_nodes]`` int32 distances: ``0`` at the anchor, :data:`UNREACHABLE` (``-1``)
        for nodes not reached within ``max_hops``.

    Example:
        >>> import jax.numpy as jnp
        >>> hop_distances(jnp.array([0, 1]), jnp.array([1, 2]), jnp.array([0, 2]), n_nodes=3).tolist()
        [[0, 1, 2], [-1, -1, 0]]
    """
    graph = _resolve(head, tail, n_nodes)
    return _hop_distances(graph, n_nodes, anchors, max_hops)


@functools.partial(jax.jit, static_argnums=(1, 5))
def _exact_hops_log(graph, n_nodes, init_log, hop_edge_logw, hop_node_logw, tropical):
    """``a_T`` ``[N, S]`` of the recursion with per-hop edge and node log weights (claim chains)."""
    hop = _hop_fn(graph, n_nodes, tropical)
    _, per_hop = _forward(
        hop,
        init_log,
        hop_edge_logw.shape[0],
        tropical,
        hop_logw=hop_edge_logw,
        node_logw=hop_node_logw,
    )
    return per_hop[-1]
