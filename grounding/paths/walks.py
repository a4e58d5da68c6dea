r"""Path families by explicit enumeration (small graphs): walks, simple paths, and the energy
of a claim chain against every walk (the test oracle of the dynamic programme, and the only
way to restrict to simple paths).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding.geometry import Metric, RelationMap
from grounding.graph import TypedGraph
from grounding.paths.costs import chain_costs

__all__ = ["enumerate_walks", "walk_nodes", "simple_paths", "chain_path_energies"]


def enumerate_walks(graph: TypedGraph, n_hops: int, sources: ArrayLike | None = None) -> np.ndarray:
    """All directed walks with exactly ``n_hops`` edges, as ``[n_walks, n_hops]`` edge indices.

    Args:
        graph: the evidence graph.
        n_hops: number of edges, ``>= 1``.
        sources: optional entity indices the walks must start from (default: any node).
    """
    if n_hops < 1:
        raise ValueError(f"n_hops must be >= 1, got {n_hops}")
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    start = np.arange(graph.n_edges)
    if sources is not None:
        start = start[np.isin(head, np.asarray(sources))]
    walks = start[:, None]
    out_edges = [np.flatnonzero(head == v) for v in range(graph.n_nodes)]
    for _ in range(n_hops - 1):
        ext = [
            np.column_stack([np.repeat(w[None], len(nxt), 0), nxt])
            for w in walks
            for nxt in [out_edges[tail[w[-1]]]]
            if len(nxt)
        ]
        walks = np.concatenate(ext) if ext else np.zeros((0, walks.shape[1] + 1), dtype=int)
    return walks.astype(np.int64)


def walk_nodes(graph: TypedGraph, walks: np.ndarray) -> np.ndarray:
    """Node sequences ``[n_walks, n_hops + 1]`` (int64) of ``[n_walks, n_hops]`` edge-index
    walks."""
    head, tail = np.asarray(graph.head, np.int64), np.asarray(graph.tail, np.int64)
    return np.column_stack([head[walks[:, 0]], tail[walks]])


def simple_paths(graph: TypedGraph, walks: np.ndarray) -> np.ndarray:
    """The walks that visit no node twice (simple paths)."""
    nodes = walk_nodes(graph, walks)
    distinct = np.array([len(set(row)) == len(row) for row in nodes], dtype=bool)
    return walks[distinct]


def chain_path_energies(
    graph: TypedGraph,
    embeddings: ArrayLike,
    relation_map: RelationMap,
    psi: ArrayLike,
    claimed_relations: ArrayLike,
    *,
    alpha: float = 1.0,
    xi: float = 1.0,
    mismatch_cost: float = jnp.inf,
    metric: str | Metric = "euclidean",
    simple: bool = False,
) -> tuple[np.ndarray, jax.Array]:
    r"""Energies :math:`e_\gamma` (Eq. (10)) of a claim chain against every ``T``-hop walk.

    Args:
        graph: evidence graph :math:`G_R`.
        embeddings: ``[n_nodes, d]`` entity map :math:`\eta`.
        relation_map: relation maps :math:`T_r` (see :mod:`grounding.geometry`).
        psi: ``[T + 1, d]`` mention representations :math:`\psi_t(\rho)`.
        claimed_relations: ``[T]`` relation indices asserted by the chain (``-1``: unspecified).
        alpha: relation-residual scale (Eq. (10)).
        xi: reliability-cost scale (Eq. (8)).
        mismatch_cost: cost of aligning a claimed relation with an edge of another type
            (``+inf``: typed claims must match exactly).
        metric: :math:`d_{\mathcal M}`.
        simple: restrict to simple paths.

    Returns:
        ``(walks, energies)``: ``[W, T]`` edge indices and ``[W]`` energies.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Def. 2, Eq. (10) (typed residuals of Eq. (8)).
    """
    node, step = chain_costs(
        graph, embeddings, relation_map, psi, claimed_relations, alpha, xi, mismatch_cost, metric
    )
    walks = enumerate_walks(graph, step.shape[0])
    if simple:
        walks = simple_paths(graph, walks)
    if walks.shape[0] == 0:
        return walks, jnp.zeros((0,), node.dtype)
    hops = np.arange(step.shape[0])
    ent = jnp.sum(node[np.arange(node.shape[0]), walk_nodes(graph, walks)], axis=-1)  # Eq. (9)
    return walks, ent + jnp.sum(step[hops, walks], axis=-1)  # Eq. (10)
