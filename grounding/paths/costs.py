r"""The additive costs of a claim chain against a graph (Eqs. (8)-(10) with the monotone
one-to-one assignment): per-mention node costs and per-hop edge costs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import as_float_array, check_nonnegative_scalar
from grounding.geometry import Metric, RelationMap, edge_residuals, get_metric
from grounding.graph import TypedGraph

__all__ = ["chain_costs", "step_costs"]


def step_costs(
    edge_cost: ArrayLike,
    edge_relation: ArrayLike,
    claimed_relations: ArrayLike,
    mismatch_cost: ArrayLike,
) -> jax.Array:
    """Per-hop edge costs ``[T, E]``: ``edge_cost`` plus ``mismatch_cost`` on every edge whose
    relation differs from hop ``t``'s claimed relation (``-1``: unspecified, no mismatch)."""
    rels = jnp.asarray(claimed_relations).reshape(-1)
    mismatch = (rels[:, None] >= 0) & (jnp.asarray(edge_relation)[None, :] != rels[:, None])
    return jnp.asarray(edge_cost)[None, :] + jnp.where(mismatch, mismatch_cost, 0.0)


def chain_costs(
    graph: TypedGraph,
    embeddings: ArrayLike,
    relation_map: RelationMap,
    psi: ArrayLike,
    claimed_relations: ArrayLike,
    alpha: float,
    xi: float,
    mismatch_cost: float,
    metric: str | Metric,
) -> tuple[jax.Array, jax.Array]:
    """Node costs ``[T + 1, N]`` (Eq. (9) per mention) and per-hop edge costs ``[T, E]``
    (Eq. (8) scaled by ``alpha`` plus the claimed-relation mismatch) of a claim chain.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eqs. (8)-(9).
    """
    psi = as_float_array(psi, "psi", min_ndim=2)
    rels = np.asarray(claimed_relations, dtype=np.int64).reshape(-1)
    if psi.shape[0] != rels.shape[0] + 1:
        raise ValueError(f"psi must have T + 1 = {rels.shape[0] + 1} rows, got {psi.shape[0]}")
    if rels.shape[0] < 1:
        raise ValueError("a claim chain needs at least one claimed relation (T >= 1)")
    check_nonnegative_scalar(mismatch_cost, "mismatch_cost", allow_inf=True)
    emb = jnp.asarray(embeddings)
    node = get_metric(metric)(psi[:, None, :], emb[None, :, :])  # Eq. (9), [T + 1, N]
    res = edge_residuals(graph, emb, relation_map, xi, metric)  # Eq. (8), [E]
    step = step_costs(alpha * res, graph.relation, rels, mismatch_cost)  # Eq. (10), [T, E]
    return node, step
