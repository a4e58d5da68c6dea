r"""Path families by explicit enumeration (small graphs), and grounding a claim chain.

A trajectory asserting ``z_0 -r_1-> z_1 ... -r_T-> z_T`` is grounded against every
``T``-hop walk :math:`\gamma = (v_0, e_1, v_1, \dots, e_T, v_T)` of :math:`G_R` with the
monotone one-to-one assignment (mention ``t`` ↔ node ``v_t``), which makes Eq. (10)
additive along the walk:

.. math::
    e_\gamma = \sum_{t=0}^T d_{\mathcal M}(\psi_t, \eta(v_t))
             + \sum_{t=1}^T \big[\alpha\,c_{\mathrm{rel}}(e_t; R) + \mathrm{mismatch}(r_t, r_{e_t})\big].

Eq. (11) is the minimum over walks and Eq. (13) the entropic aggregate. Enumeration is the
obviously-correct oracle; it is exponential in ``T`` and meant for small graphs.
Walks may repeat nodes (cycles); :func:`simple_paths` filters to node-distinct paths.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import as_float_array, check_nonnegative_scalar
from grounding.energy import aggregate_paths, best_path_energy
from grounding.evidence import TypedGraph
from grounding.geometry import Metric, edge_residuals, get_metric

__all__ = ["enumerate_walks", "walk_nodes", "simple_paths", "chain_path_energies", "chain_energy"]


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
    """Node sequences ``[n_walks, n_hops + 1]`` of edge-index walks."""
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    if walks.shape[0] == 0:
        return np.zeros((0, walks.shape[1] + 1), dtype=np.int64)
    return np.column_stack([head[walks[:, 0]], tail[walks]])


def simple_paths(graph: TypedGraph, walks: np.ndarray) -> np.ndarray:
    """The walks that visit no node twice (simple paths)."""
    nodes = walk_nodes(graph, walks)
    distinct = np.array([len(set(row)) == len(row) for row in nodes], dtype=bool)
    return walks[distinct] if len(walks) else walks


def chain_path_energies(
    graph: TypedGraph,
    embeddings: ArrayLike,
    relation_map,
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
    """
    psi = as_float_array(psi, "psi", min_ndim=2)
    rels = np.asarray(claimed_relations, dtype=np.int64).reshape(-1)
    if psi.shape[0] != rels.shape[0] + 1:
        raise ValueError(f"psi must have T + 1 = {rels.shape[0] + 1} rows, got {psi.shape[0]}")
    check_nonnegative_scalar(mismatch_cost, "mismatch_cost", allow_inf=True)
    walks = enumerate_walks(graph, len(rels))
    if simple:
        walks = simple_paths(graph, walks)
    emb = jnp.asarray(embeddings)
    if walks.shape[0] == 0:
        return walks, jnp.zeros((0,), psi.dtype)
    nodes = walk_nodes(graph, walks)
    ent = jnp.sum(get_metric(metric)(psi[None, :, :], emb[nodes]), axis=-1)  # Eq. (9)
    res = edge_residuals(graph, emb, relation_map, xi, metric)[walks]  # Eq. (8), [W, T]
    edge_rel = np.asarray(graph.relation)[walks]
    mismatch = (rels[None, :] >= 0) & (edge_rel != rels[None, :])
    step = alpha * res + jnp.where(jnp.asarray(mismatch), mismatch_cost, 0.0)
    return walks, ent + jnp.sum(step, axis=-1)  # Eq. (10)


def chain_energy(
    graph: TypedGraph,
    embeddings: ArrayLike,
    relation_map,
    psi: ArrayLike,
    claimed_relations: ArrayLike,
    *,
    tau: float = 0.0,
    **kwargs,
) -> jax.Array:
    r"""Path energy of a claim chain: Eq. (11) at ``tau == 0``, Eq. (13) with a uniform path
    prior over ``T``-hop walks otherwise; ``+inf`` when the graph has no ``T``-hop walk."""
    _, e = chain_path_energies(graph, embeddings, relation_map, psi, claimed_relations, **kwargs)
    if e.shape[0] == 0:
        return best_path_energy(e)
    log_w = jnp.full(e.shape, -jnp.log(e.shape[0]))
    return aggregate_paths(e, log_w, tau)
