r"""Path families by explicit enumeration (small graphs), and grounding a claim chain.

A trajectory asserting ``z_0 -r_1-> z_1 ... -r_T-> z_T`` is grounded against every
``T``-hop walk :math:`\gamma = (v_0, e_1, v_1, \dots, e_T, v_T)` of :math:`G_R` with the
monotone one-to-one assignment (mention ``t`` ↔ node ``v_t``), which makes Eq. (10)
additive along the walk:

.. math::
    e_\gamma = \sum_{t=0}^T d_{\mathcal M}(\psi_t, \eta(v_t))
             + \sum_{t=1}^T \big[\alpha\,c_{\mathrm{rel}}(e_t; R) + \mathrm{mismatch}(r_t, r_{e_t})\big].

Eq. (11) is the minimum over walks and Eq. (13) the entropic aggregate. :func:`chain_energy`
computes them over all walks with the semiring recursion of :mod:`grounding.semiring`
(``O(T |E|)``); :func:`chain_path_energies` enumerates them (``O(deg^T)``, the test oracle,
and the only way to restrict to simple paths). Walks may repeat nodes (cycles);
:func:`simple_paths` filters to node-distinct paths. :func:`top_paths` recovers the best
supporting walks of a report by a k-best recursion with backtracking.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding import semiring
from grounding._checks import as_float_array, check_nonnegative_scalar
from grounding._numerics import logsumexp, scaled_energy
from grounding.energy import aggregate_paths
from grounding.evidence import TypedGraph
from grounding.geometry import Metric, edge_residuals, get_metric

__all__ = [
    "enumerate_walks",
    "walk_nodes",
    "simple_paths",
    "chain_path_energies",
    "chain_energy",
    "TopPaths",
    "top_paths",
]


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
    node, step = _chain_costs(
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


def chain_energy(
    graph: TypedGraph,
    embeddings: ArrayLike,
    relation_map,
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
    """
    tau_arr, tropical = semiring._check_tau(tau)
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
        return aggregate_paths(e, jnp.full(e.shape, -jnp.log(e.shape[0])), tau_arr)
    node, step = _chain_costs(
        graph, embeddings, relation_map, psi, claimed_relations, alpha, xi, mismatch_cost, metric
    )
    scale = 1.0 if tropical else tau_arr
    index = semiring._resolve(graph.head, graph.tail, graph.n_nodes)

    def log_mass(node, step):  # log sum over T-hop walks of exp(-e_gamma / tau)
        a_t = semiring._exact_hops_log(
            index,
            graph.n_nodes,
            (-node[0] / scale)[:, None],
            -step / scale,
            -node[1:] / scale,
            tropical,
        )
        return jnp.max(a_t) if tropical else logsumexp(a_t[:, 0], axis=0)

    log_z = log_mass(node, step)
    if not tropical:  # uniform prior over T-hop walks: subtract log W_T
        log_z = log_z - log_mass(jnp.zeros_like(node), jnp.zeros_like(step))
    return scaled_energy(scale, -log_z)  # Eq. (13) / Eq. (11)


def _chain_costs(
    graph, embeddings, relation_map, psi, claimed_relations, alpha, xi, mismatch_cost, metric
):
    """Node costs ``[T + 1, N]`` (Eq. (9) per mention) and per-hop edge costs ``[T, E]``
    (Eq. (8) scaled by ``alpha`` plus the claimed-relation mismatch) of a claim chain."""
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
    mismatch = (rels[:, None] >= 0) & (np.asarray(graph.relation)[None, :] != rels[:, None])
    step = alpha * res[None, :] + jnp.where(jnp.asarray(mismatch), mismatch_cost, 0.0)
    return node, step


class TopPaths(NamedTuple):
    r"""Best supporting walks of a ``(source, target)`` pair, best first.

    Attributes:
        edges: one int array of edge indices per walk.
        nodes: one int array of node indices per walk (``len(edges) + 1``).
        cost: ``[k]`` summed edge costs :math:`c(w)`.
        weight: ``[k]`` posterior weights :math:`\nu^*(w)` of Prop. 2 among all walks of
            ``1..max_hops`` edges (``tau > 0``), or ``None`` at ``tau == 0``.
    """

    edges: list[np.ndarray]
    nodes: list[np.ndarray]
    cost: np.ndarray
    weight: np.ndarray | None


def top_paths(
    head: ArrayLike,
    tail: ArrayLike,
    edge_cost: ArrayLike,
    source: int,
    target: int,
    *,
    n_nodes: int,
    max_hops: int,
    k: int = 5,
    tau: float = 0.0,
    log_step_prior: ArrayLike | None = None,
) -> TopPaths:
    r"""The ``k`` walks ``source -> target`` (``1..max_hops`` edges) of highest posterior
    score :math:`\log\omega(w) - c(w)/\tau` (lowest cost at ``tau == 0``), by a k-best
    max-plus recursion with back-pointers and backtracking (NumPy; for reports).

    Each hop keeps, per node, the ``k`` best partial walks, ``O(max_hops * |E| k log(|E| k))``.
    With ``tau > 0`` the weights :math:`\nu^*(w) = \omega(w)e^{-c(w)/\tau}/Z` use the exact
    partition function :math:`Z` of :func:`grounding.energy_field`, so ``weight.sum()`` is the
    share of the posterior the reported walks carry.

    Example:
        >>> import numpy as np
        >>> tp = top_paths(np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([1.0, 1.0, 3.0]), 0, 2,
        ...                n_nodes=3, max_hops=2, k=2)
        >>> [e.tolist() for e in tp.edges], tp.cost.tolist()
        ([[0, 1], [2]], [2.0, 3.0])

    Prop. 2 (the optimiser :math:`\nu^*`) and Eq. (11) (its ``tau -> 0`` limit) of the paper.
    """
    h, t = (np.asarray(a, np.int64) for a in semiring._check_edges(head, tail, n_nodes))
    max_hops = semiring._check_positive_int(max_hops, "max_hops")
    k = semiring._check_positive_int(k, "k")
    _, tropical = semiring._check_tau(tau)
    for name, v in (("source", source), ("target", target)):
        semiring._check_sources(np.asarray([v]), n_nodes, name)
    cost = np.asarray(semiring._per_edge(edge_cost, "edge_cost", len(h), 1, bad=-np.inf))
    if cost.ndim != 1:
        raise ValueError(f"edge_cost must have shape [{len(h)}] here, got {cost.shape}")
    prior = (
        np.zeros_like(cost)
        if log_step_prior is None
        else np.asarray(semiring._per_edge(log_step_prior, "log_step_prior", len(h), 1, bad=np.inf))
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(prior == -np.inf, -np.inf, -cost) if tropical else prior - cost / tau
    best = np.full((n_nodes, k), -np.inf)  # hop 0: the empty walk at the source
    best[int(source), 0] = 0.0
    pointers, finals = [], []
    for hop in range(max_hops):
        cand = best[h] + score[:, None]  # [E, k]: extend each kept walk by each edge
        flat = cand.ravel()
        dest = np.repeat(t, k)
        keep = np.isfinite(flat)
        ids = np.flatnonzero(keep)
        order = ids[np.lexsort((-flat[ids], dest[ids]))]  # by node, then best first
        first = np.searchsorted(dest[order], np.arange(n_nodes))
        rank = np.arange(len(order)) - first[dest[order]]
        order, rank = order[rank < k], rank[rank < k]
        best = np.full((n_nodes, k), -np.inf)
        ptr = np.full((n_nodes, k), -1)
        best[dest[order], rank] = flat[order]
        ptr[dest[order], rank] = order  # flat index = edge * k + previous rank
        pointers.append(ptr)
        finals += [
            (best[int(target), r], hop, r) for r in range(k) if np.isfinite(best[int(target), r])
        ]
    finals = sorted(finals, key=lambda f: -f[0])[:k]
    edges = []
    for _, hop, r in finals:  # backtrack through the back-pointers
        walk, v = [], int(target)
        for step in range(hop, -1, -1):
            e, r = divmod(int(pointers[step][v, r]), k)
            walk.append(e)
            v = int(h[e])
        edges.append(np.asarray(walk[::-1], np.int64))
    nodes = [np.concatenate([[h[w[0]]], t[w]]) for w in edges]
    total = np.asarray([cost[w].sum() for w in edges], float)
    weight = None
    if not tropical:
        field = semiring.energy_field(
            h,
            t,
            cost,
            np.asarray([int(source)]),
            n_nodes=n_nodes,
            max_hops=max_hops,
            tau=tau,
            log_step_prior=prior,
        )
        log_z = -float(field[0, int(target)]) / tau
        weight = np.exp(np.asarray([f[0] for f in finals], float) - log_z)
    return TopPaths(edges, nodes, total, weight)
