r"""The ``K``-hop forward recursion of Eqs. (11)/(13) on any graph layout (see
:mod:`grounding.semiring.kernels`): energy fields, exact-hop fields, their gradient (Prop. 2),
breadth-first distances, and the claim-chain recursion with per-hop weights.

Inputs here are validated once by :func:`fields` / :func:`edge_usage` / :func:`bfs`; the
jitted bodies assume valid arrays. The public, documented entry points are in
:mod:`grounding.semiring.fields`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike

from grounding._checks import (
    Tau,
    as_float_array,
    check_edge_values,
    check_int,
    check_nodes,
    check_tau,
    is_concrete,
)
from grounding._numerics import logaddexp, neg_scaled, scaled_energy
from grounding.semiring.kernels import GraphLayout, SegmentEdges

# Kernels are jitted by assignment (``f = jax.jit(f, ...)``) rather than by decorator, so that
# mutation testing (scripts/mutation.sh; mutmut skips decorated functions) reaches their bodies.

__all__ = ["by_temperature", "fields", "run", "edge_usage", "bfs", "exact_hops"]

UNREACHABLE = -1
"""Hop distance reported for nodes not reached (the package's one such constant)."""


def edge_log_weights(cost: jax.Array, log_prior: jax.Array | None, tau: ArrayLike, tropical: bool):
    """Per-edge log weights ``log omega(e) - c(e)/tau`` (``-c(e)`` on the prior's support at
    ``tau = 0``); ``+inf`` costs give ``-inf``."""
    if log_prior is not None and log_prior.ndim != cost.ndim:  # one of them per source
        cost, log_prior = (x[:, None] if x.ndim == 1 else x for x in (cost, log_prior))
    if tropical:
        lw = -cost
        return lw if log_prior is None else jnp.where(log_prior == -jnp.inf, -jnp.inf, lw)
    lw = neg_scaled(cost, tau)  # finite gradients in tau where a cost is +inf
    return lw if log_prior is None else lw + log_prior


def by_temperature(tau: Tau, fn: Callable[[Any, bool], Any]):
    """``fn(tau, tropical)`` with the semiring chosen by the checked temperature: min-plus
    (Eq. (11)) iff a concrete ``tau == 0``; for a traced ``tau`` (under ``jit``/``vmap``/
    ``grad``) at run time, so that traced and concrete calls agree: min-plus at ``tau == 0``,
    the log semiring (Eq. (13)) above it.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (11) and (13).
    """
    if not tau.traced:
        return fn(tau.value, tau.tropical)
    positive = tau.value > 0
    safe = jnp.where(positive, tau.value, 1.0)  # the log semiring never divides by 0
    return jax.lax.cond(positive, lambda t: fn(t, False), lambda t: fn(t, True), safe)


def forward(
    graph: GraphLayout,
    a0: jax.Array,
    n_hops: int,
    tropical: bool,
    *,
    logw: jax.Array | None = None,
    hop_logw: jax.Array | None = None,
    node_logw: jax.Array | None = None,
    keep_hops: bool = True,
    sources_first: bool = False,
    sources: jax.Array | None = None,
):
    """Run ``n_hops`` hops from ``a0`` (``[N, S]``) with ``lax.scan`` (one compiled hop body),
    or in one call of the layout's own ``recursion`` where it has one (the fused CPU kernel).

    Edge log weights are ``logw`` (shared by all hops) or ``hop_logw`` (leading hop axis);
    ``node_logw`` (``[T, N]``) is added to the values after each hop. Returns the
    ``(+)``-sum over hops ``1..n_hops`` (``[N, S]``; ``[S, N]`` with ``sources_first``) and
    every hop's values ``[T, N, S]`` (may be ``None`` without ``keep_hops``). ``sources``
    (``[S]``) says that ``a0`` is their :func:`one_hot_log`, which a layout's own recursion
    then builds itself.
    """
    if logw is not None and node_logw is None and hasattr(graph, "recursion"):
        out = graph.recursion(a0, logw, n_hops, tropical, keep_hops, sources=sources)
        if out is not None:  # the layout's sum is sources-first
            acc, hops = out
            return (acc if sources_first else acc.T), hops

    def step(carry, xs):
        a, acc = carry
        lw, nw = xs
        a = graph.hop(a, logw if lw is None else lw, tropical)
        if nw is not None:
            a = a + nw[:, None]
        acc = jnp.maximum(acc, a) if tropical else logaddexp(acc, a)
        return (a, acc), a

    init = (a0, jnp.full_like(a0, -jnp.inf))
    (_, acc), per_hop = jax.lax.scan(step, init, (hop_logw, node_logw), length=n_hops)
    return (acc.T if sources_first else acc), per_hop


def closure(graph: GraphLayout, a0: jax.Array, logw: jax.Array, limit: int):
    """Max-plus values over walks of ``1..limit`` edges by relaxation to a fixed point
    (Bellman-Ford): ``d = max(a0, hop(d))`` until no value changes, then one more hop. Exact
    (and stopping early) when no cycle has positive max-plus weight, i.e. costs ``>= 0``."""

    def cond(state):
        t, _, changed = state
        return changed & (t < limit)

    def body(state):
        t, d, _ = state
        new = jnp.maximum(d, graph.hop(d, logw, True))
        return t + 1, new, jnp.any(new > d)

    _, d, _ = jax.lax.while_loop(cond, body, (jnp.int32(0), a0, jnp.bool_(True)))
    return graph.hop(d, logw, True)  # walks of >= 1 edge: one hop out of the 0..inf closure


def one_hot_log(sources: jax.Array, n_nodes: int, dtype: DTypeLike) -> jax.Array:
    """``a_0 = log delta_{u, s}`` as ``[n_nodes, S]``."""
    a0 = jnp.full((n_nodes, sources.shape[0]), -jnp.inf, dtype)
    return a0.at[sources, jnp.arange(sources.shape[0])].set(0.0)


def fields(
    graph: GraphLayout,
    edge_cost: ArrayLike,
    sources: ArrayLike,
    max_hops: int | None,
    tau: ArrayLike,
    log_step_prior: ArrayLike | None,
    mesh: jax.sharding.Mesh | None,
    per_hop: bool,
):
    """Validated energies: ``E_{<=K}`` ``[S, N]``, or with ``per_hop`` ``E_k`` ``[K, S, N]``.

    ``max_hops=None`` (min-plus only, ``per_hop`` False): walks of any length, by relaxation
    to a fixed point (at most ``n_nodes`` hops).
    """
    tau = check_tau(tau)
    if max_hops is None:
        if not tau.tropical or per_hop:
            raise ValueError("max_hops=None (walks of any length) needs tau == 0 and a total")
    else:
        max_hops = check_int(max_hops, "max_hops")
    n_nodes = graph.n_nodes
    sources = check_nodes(sources, n_nodes)
    n_src, n_e = sources.shape[0], graph.n_edges
    cost = check_edge_values(edge_cost, "edge_cost", n_e, n_src, bad=-np.inf)
    if max_hops is None and is_concrete(cost) and (np.asarray(cost) < 0).any():
        raise ValueError("max_hops=None needs non-negative edge costs (no negative cycles)")
    prior = None
    if log_step_prior is not None:
        prior = check_edge_values(log_step_prior, "log_step_prior", n_e, n_src, bad=np.inf)
        prior = prior.astype(cost.dtype)

    def go(t, trop):
        statics = (max_hops, trop, per_hop)
        if mesh is None or n_src == 0:
            return run(graph, cost, prior, sources, t, *statics)
        return _sharded(mesh, statics, graph, cost, prior, sources, t)

    return by_temperature(tau, go)


_STATIC = ("max_hops", "tropical", "per_hop")


# jitted (below): one compilation per graph layout and shapes, instead of hundreds of eager gathers
def run(
    graph: GraphLayout,
    cost: jax.Array,
    prior: jax.Array | None,
    sources: jax.Array,
    tau: ArrayLike,
    max_hops: int | None,
    tropical: bool,
    per_hop: bool,
):
    """The field computation on validated, edge-major arrays (no checks; ``jit``/``vmap``-able):
    ``[S, N]`` energies (``[K, S, N]`` with ``per_hop``); ``tropical`` decides the semiring."""
    logw = edge_log_weights(cost, prior, tau, tropical)  # log omega(e) - c(e)/tau
    a0 = one_hot_log(sources, graph.n_nodes, cost.dtype)
    if max_hops is None:  # Eq. (11) over walks of any length
        return scaled_energy(1.0, -closure(graph, a0, logw, max(graph.n_nodes, 1))).T
    acc, hops = forward(
        graph, a0, max_hops, tropical, logw=logw, keep_hops=per_hop, sources_first=True,
        sources=sources,
    )  # fmt: skip
    scale = 1.0 if tropical else tau
    # Eq. (13): E = -tau * logsumexp over walks; Eq. (11) (max-plus on -c) at tau = 0
    if per_hop:
        return jnp.swapaxes(scaled_energy(scale, -hops), -1, -2)
    return scaled_energy(scale, -acc)


run = jax.jit(run, static_argnums=(5, 6, 7), static_argnames=_STATIC)


def _sharded(mesh, statics, graph, cost, prior, sources, tau):
    """:func:`run` with the source batch split over every device of ``mesh`` and the graph
    and shared edge arrays replicated: no communication, each device runs the recursion on
    its block of sources."""
    n_src, n_dev = sources.shape[0], mesh.devices.size
    if getattr(graph, "backend", None) == "fused":
        # a host callback inside shard_map receives device arrays, and reading them waits on
        # the other devices' threads, blocked in their own callbacks (a deadlock from about a
        # million entries up, JAX 0.10): sharded fields use the XLA segment hop instead
        graph = SegmentEdges(graph.head, graph.tail, graph.n_nodes)
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
    """Jitted ``shard_map`` of :func:`run` (cached: one compilation per configuration)."""
    P = jax.sharding.PartitionSpec
    axes = tuple(mesh.axis_names)
    edge = [None if nd is None else (P(None, axes) if nd == 2 else P()) for nd in ndims]
    fn = jax.shard_map(
        functools.partial(run, max_hops=statics[0], tropical=statics[1], per_hop=statics[2]),
        mesh=mesh,
        in_specs=(P(), edge[0], edge[1], P(axes), P()),
        out_specs=P(None, axes) if statics[2] else P(axes),
    )
    return jax.jit(fn)


def edge_usage(
    graph: GraphLayout,
    edge_cost: ArrayLike,
    sources: ArrayLike,
    targets: ArrayLike,
    max_hops: int,
    tau: ArrayLike,
    log_step_prior: ArrayLike | None,
):
    """``[S, n_edges]``: the gradient of ``E(s, t_s)`` w.r.t. the edge costs (Prop. 2).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 2.
    """
    sources = check_nodes(sources, graph.n_nodes)
    targets = check_nodes(targets, graph.n_nodes, "targets")
    if targets.shape != sources.shape:
        raise ValueError(f"targets must match sources' shape {sources.shape}, got {targets.shape}")
    n_src, n_e = sources.shape[0], graph.n_edges
    cost = as_float_array(edge_cost, "edge_cost")
    cost = jnp.broadcast_to(cost, (n_src, n_e)) if cost.shape == (n_e,) else cost

    def total(c):  # sum_s E(s, t_s) over reachable pairs; rows are independent
        f = fields(graph, c, sources, max_hops, tau, log_step_prior, None, False)
        f = f[jnp.arange(n_src), targets]
        return jnp.sum(jnp.where(jnp.isfinite(f), f, 0.0))

    return jax.grad(total)(cost)  # Prop. 2: dE/dc(e) = E_{nu*}[# uses of e]


def bfs(graph: GraphLayout, anchors: ArrayLike, max_hops: int | None):
    """``[A, n_nodes]`` int32 hop distances from each anchor (:data:`UNREACHABLE` if not
    reached within ``max_hops``; ``None``: unlimited)."""
    n_nodes = graph.n_nodes
    anchors = check_nodes(anchors, n_nodes, "anchors")
    limit = max(n_nodes - 1, 1) if max_hops is None else check_int(max_hops, "max_hops")
    return _bfs(graph, anchors, limit)


def _bfs(graph, anchors, limit):
    n_nodes = graph.n_nodes
    zero = jnp.zeros((graph.n_edges,), jnp.float32)
    reached = one_hot_log(anchors, n_nodes, jnp.float32)  # 0 on visited nodes, -inf elsewhere
    dist = jnp.where(reached == 0, 0, UNREACHABLE).astype(jnp.int32)

    def cond(state):
        t, _, _, grew = state
        return grew & (t < limit)

    def body(state):  # breadth-first frontier expansion in the Boolean (max-plus 0/-inf) semiring
        t, reached, dist, _ = state
        new = (graph.hop(reached, zero, True) == 0) & (dist == UNREACHABLE)
        dist = jnp.where(new, t + 1, dist)
        return t + 1, jnp.where(dist >= 0, 0.0, -jnp.inf).astype(jnp.float32), dist, jnp.any(new)

    state = (jnp.int32(0), reached, dist, jnp.bool_(anchors.shape[0] > 0))
    return jax.lax.while_loop(cond, body, state)[2].T


_bfs = jax.jit(_bfs, static_argnums=2)


def exact_hops(
    graph: GraphLayout,
    init_log: jax.Array,
    hop_edge_logw: jax.Array,
    hop_node_logw: jax.Array,
    tropical: bool,
) -> jax.Array:
    r"""Values ``a_T`` (``[N, S]``) of the recursion with per-hop edge log weights
    ``[T, E]`` and per-hop node log weights ``[T, N]`` from ``init_log`` ``[N, S]``:
    :math:`a_t(v) = (+)_{e=(u\to v)} [a_{t-1}(u) + w_t(e)] + n_t(v)` (claim chains)."""
    _, per_hop = forward(
        graph,
        init_log,
        hop_edge_logw.shape[0],
        tropical,
        hop_logw=hop_edge_logw,
        node_logw=hop_node_logw,
    )
    return per_hop[-1]


exact_hops = jax.jit(exact_hops, static_argnums=4)
