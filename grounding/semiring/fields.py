r"""The path engine's public functions on edge arrays: energy fields (Eqs. (11), (13)), exact-hop
fields, edge usage (Prop. 2) and breadth-first hop distances. Each builds the graph layout with
:func:`~grounding.semiring.layout.as_graph`; to reuse one layout across calls, build an
:class:`~grounding.semiring.layout.EdgeIndex` once and call its methods.
"""

from __future__ import annotations

import jax
from jax.typing import ArrayLike

from grounding.semiring import recursion
from grounding.semiring.layout import as_graph
from grounding.semiring.recursion import bfs, fields

__all__ = ["energy_field", "hop_energy_fields", "edge_usage", "hop_distances"]

_FIELD_ARGS = r"""
    Args:
        head, tail: ``[n_edges]`` edge endpoints (parallel edges and self-loops allowed).
        edge_cost: ``[n_edges]`` additive edge costs :math:`c(e)` (e.g. ``alpha`` times the
            typed residuals of Eq. (8)), or ``[len(sources), n_edges]`` per-source costs;
            ``+inf`` removes an edge; ``-inf``/NaN are rejected.
        sources: ``[S]`` source node indices.
        n_nodes: number of nodes.
        max_hops: ``K >= 1``, the longest walk (:func:`energy_field` also takes ``None`` at
            ``tau == 0``: walks of any length, non-negative costs).
        tau: temperature :math:`\tau \ge 0`; ``tau == 0`` is the min-plus limit, also when
            ``tau`` is traced (``jit``/``vmap``/``grad`` over it: the semiring is then chosen
            at run time, and a ``tau`` batch mixing 0 and positive values runs both).
        log_step_prior: optional ``[n_edges]`` (or ``[S, n_edges]``) step log-weights
            :math:`\log\omega(e)` of a factorized path prior (``-inf`` removes an edge);
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
    max_hops: int | None,
    tau: ArrayLike,
    log_step_prior: ArrayLike | None = None,
    mesh: jax.sharding.Mesh | None = None,
) -> jax.Array:
    r"""Entropic path energy (Eq. (13)) from each source to every node, over all walks of
    ``1..max_hops`` edges, by the semiring recursion (no enumeration).

    .. math::
        E(s, v) = -\tau \log \sum_{w:\, s \leadsto v,\ 1\le|w|\le K}
                  \exp\big(\log\omega(w) - c(w)/\tau\big),

    with :math:`c(w)` and :math:`\log\omega(w)` summed along the walk; the minimum of
    :math:`c(w)` over walks of positive prior weight (Eq. (11)) at ``tau == 0``; ``+inf``
    where no walk exists. Walks have at least one edge, so a source's energy to itself is
    ``+inf`` unless a cycle leads back to it (entry ``[0, 0]`` in the example below).
    Differentiable in ``edge_cost``, ``log_step_prior`` and ``tau``. The end node's
    entity-alignment cost (Eq. (9)) is additive: ``field + c_end[None, :]``; per-hop claim
    and node costs of a claim chain are in :func:`grounding.paths.chain_energy`.
    {args}
    Returns:
        ``[S, n_nodes]`` energies.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (11) and (13) (edge costs from Eqs. (8)-(9)).

    Example:
        >>> import jax.numpy as jnp
        >>> head, tail, cost = jnp.array([0, 1, 0]), jnp.array([1, 2, 2]), jnp.array([1.0, 1.0, 3.0])
        >>> energy_field(head, tail, cost, jnp.array([0]), n_nodes=3, max_hops=2, tau=0.0).tolist()
        [[inf, 1.0, 2.0]]

    Eq. (13) (Eq. (11) at ``tau == 0``) of the paper, for a step-factorized prior.
    """
    graph = as_graph(head, tail, n_nodes)
    return fields(graph, edge_cost, sources, max_hops, tau, log_step_prior, mesh, False)


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
    mesh: jax.sharding.Mesh | None = None,
) -> jax.Array:
    r"""The energy field restricted to walks of *exactly* ``k`` edges, for ``k = 1..max_hops``.

    Entry ``[k - 1, s, v]`` is :func:`energy_field`'s quantity over walks with ``|w| = k``;
    :func:`energy_field` is their ``-tau * logsumexp(-E_k / tau)`` (``min`` at ``tau == 0``).
    {args}
    Returns:
        ``[max_hops, S, n_nodes]`` energies.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (13) per walk length (Eq. (11) at tau = 0).
    """
    graph = as_graph(head, tail, n_nodes)
    return fields(graph, edge_cost, sources, max_hops, tau, log_step_prior, mesh, True)


energy_field.__doc__ = energy_field.__doc__.replace("{args}", _FIELD_ARGS)
hop_energy_fields.__doc__ = hop_energy_fields.__doc__.replace("{args}", _FIELD_ARGS)


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
    r"""Expected edge usage under the optimizer :math:`\nu^*` of Prop. 2, for each
    ``(sources[s], targets[s])`` pair: the gradient of :math:`E(s, t_s)` (Eq. (13)) w.r.t.
    the edge costs,

    .. math::
        \frac{\partial E(s, t)}{\partial c(e)} = \sum_{w: s\leadsto t} \nu^*(w)\, n_e(w),
        \qquad \nu^*(w) \propto \omega(w)\, e^{-c(w)/\tau},

    with :math:`n_e(w)` the number of times walk :math:`w` traverses ``e``. At ``tau == 0``
    it is the usage of the best walk (ties share the mass). Rows of unreachable pairs are zero.

    Returns:
        ``[S, n_edges]`` expected usages; each row sums to the expected walk length.

    Prop. 2 of the paper (the optimizer of the variational form of Eq. (13)).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Prop. 2, Eq. (13).
    """
    graph = as_graph(head, tail, n_nodes)
    return recursion.edge_usage(graph, edge_cost, sources, targets, max_hops, tau, log_step_prior)


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
    return bfs(as_graph(head, tail, n_nodes), anchors, max_hops)
