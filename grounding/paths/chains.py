r"""Grounding a claim chain over *all* walks by the semiring recursion (Eqs. (10), (11), (13)).

A trajectory asserting ``z_0 -r_1-> z_1 ... -r_T-> z_T`` is grounded against every
``T``-hop walk :math:`\gamma = (v_0, e_1, v_1, \dots, e_T, v_T)` of :math:`G_R` with the
monotone one-to-one assignment (mention ``t`` <-> node ``v_t``), which makes Eq. (10)
additive along the walk (costs: :mod:`grounding.paths.costs`). The forward recursion of
:mod:`grounding.semiring` then computes Eq. (11) (``tau = 0``) or Eq. (13) in ``O(T |E|)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from grounding._checks import check_tau
from grounding._numerics import logsumexp, neg_scaled, scaled_energy
from grounding.energy import aggregate_paths
from grounding.geometry import Metric, RelationMap
from grounding.graph import TypedGraph
from grounding.paths.costs import chain_costs
from grounding.paths.walks import chain_path_energies
from grounding.semiring import as_graph
from grounding.semiring.kernels import GraphLayout
from grounding.semiring.recursion import by_temperature, exact_hops

__all__ = [
    "chain_energy",
    "chain_energy_from_costs",
    "chain_energy_and_log_mass",
    "chain_log_mass",
]


def chain_energy(
    graph: TypedGraph,
    embeddings: ArrayLike,
    relation_map: RelationMap,
    psi: ArrayLike,
    claimed_relations: ArrayLike,
    *,
    tau: float = 0.0,
    alpha: float = 1.0,
    xi: float = 1.0,
    mismatch_cost: float = jnp.inf,
    metric: str | Metric = "euclidean",
    simple: bool = False,
) -> jax.Array:
    r"""Path energy of a claim chain over all ``T``-hop walks: Eq. (11) at ``tau == 0``,
    Eq. (13) with the uniform path prior over ``T``-hop walks otherwise; ``+inf`` when the
    graph has no ``T``-hop walk. Arguments as in :func:`chain_path_energies`.

    Computed by the forward recursion of :mod:`grounding.semiring` with per-hop edge costs
    (the claimed relation of hop ``t``) and node costs (mention ``t``), in ``O(T |E|)``:

    .. math::
        a_0(v) = -c_0(v)/\tau,\quad
        a_t(v) = \log\sum_{e=(u\to v)} e^{a_{t-1}(u) - c_t(e)/\tau} - c_t(v)/\tau,\quad
        E = -\tau\big(\log\sum_v e^{a_T(v)} - \log W_T\big),

    with :math:`W_T` the number of ``T``-hop walks (the same recursion with zero costs).
    ``simple=True`` restricts to simple paths, which only enumeration can do.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Def. 2; Eqs. (11) and (13).
    """
    tau_checked = check_tau(tau)
    if simple:
        _, e = chain_path_energies(
            graph,
            embeddings,
            relation_map,
            psi,
            claimed_relations,
            alpha=alpha,
            xi=xi,
            mismatch_cost=mismatch_cost,
            metric=metric,
            simple=True,
        )
        if e.shape[0] == 0:
            return jnp.asarray(jnp.inf, e.dtype)
        return aggregate_paths(e, jnp.full(e.shape, -jnp.log(e.shape[0])), tau_checked.value)
    node, step = chain_costs(
        graph, embeddings, relation_map, psi, claimed_relations, alpha, xi, mismatch_cost, metric
    )
    layout = as_graph(graph.head, graph.tail, graph.n_nodes)
    return by_temperature(
        tau_checked, lambda t, trop: chain_energy_from_costs(layout, node, step, t, trop)
    )


def chain_energy_from_costs(
    layout: GraphLayout,
    node_cost: jax.Array,
    step_cost: jax.Array,
    tau: jax.Array,
    tropical: bool,
    edge_exists: jax.Array | None = None,
) -> jax.Array:
    r"""The claim-chain energy from its costs (pure arrays; ``jit``/``vmap``-able):
    ``node_cost`` ``[T + 1, N]`` (Eq. (9) per mention), ``step_cost`` ``[T, E]`` (Eq. (8)
    scaled, plus mismatches), over every ``T``-hop walk of ``layout`` (a graph layout of
    :mod:`grounding.semiring`). Eq. (11) when ``tropical``, else Eq. (13) with the uniform prior
    over ``T``-hop walks; ``+inf`` when no walk has finite cost. ``edge_exists`` (``[E]``
    bools, default all) says which edges exist, for the walk count of the uniform prior.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (11) and (13) (costs from Eqs. (8)-(9)).
    """
    return chain_energy_and_log_mass(layout, node_cost, step_cost, tau, tropical, edge_exists)[0]


def chain_energy_and_log_mass(
    layout: GraphLayout,
    node_cost: jax.Array,
    step_cost: jax.Array,
    tau: ArrayLike,
    tropical: bool,
    edge_exists: jax.Array | None = None,
):
    r""":func:`chain_energy_from_costs` and the unnormalized log mass
    :func:`chain_log_mass` it is computed from (the normalizer of :math:`\nu^*`, Prop. 2).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (11) and (13), Prop. 2.
    """
    scale = 1.0 if tropical else tau
    log_z = chain_log_mass(layout, node_cost, step_cost, scale, tropical)
    if tropical:
        return scaled_energy(1.0, -log_z), log_z  # Eq. (11)
    # uniform prior over T-hop walks: subtract log W_T, W_T = the walks with zero costs
    zero_step = jnp.zeros_like(step_cost)
    if edge_exists is not None:
        zero_step = jnp.where(edge_exists, zero_step, jnp.inf)
    log_w = chain_log_mass(layout, jnp.zeros_like(node_cost), zero_step, scale, tropical)
    return scaled_energy(scale, -(log_z - log_w)), log_z  # Eq. (13)


def chain_log_mass(
    layout: GraphLayout,
    node_cost: jax.Array,
    step_cost: jax.Array,
    scale: ArrayLike,
    tropical: bool,
) -> jax.Array:
    """``log sum`` over ``T``-hop walks of ``exp(-e_gamma / scale)`` (``max`` when tropical)."""
    a_t = exact_hops(
        layout,
        neg_scaled(node_cost[0], scale)[:, None],
        neg_scaled(step_cost, scale),
        neg_scaled(node_cost[1:], scale),
        tropical,
    )
    return jnp.max(a_t) if tropical else logsumexp(a_t[:, 0], axis=0)
