r"""The best supporting walks of a report: a k-best max-plus recursion with back-pointers and
backtracking (NumPy), and the exact number of optimal walks (the ``tau -> 0`` weights).

A walk's score is :math:`\sum_t s_t(e_t) + \sum_t n_t(v_t)` (hop scores, node scores, and a
start score of its first node): ``log omega - cost / tau`` for ``tau > 0``, ``-cost`` at
``tau = 0``. Each hop keeps, per node, the ``k`` best partial walks,
``O(T |E| k log(|E| k))``. Two ways to finish: at a ``target`` node after every hop (walks of
``1..T`` edges ending there: :func:`top_paths`), or at any node after the last hop (walks of
exactly ``T`` edges: claim chains).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from jax.typing import ArrayLike

from grounding._checks import (
    check_edge_values,
    check_edges,
    check_int,
    check_nodes,
    check_tau,
)

__all__ = ["TopPaths", "top_paths", "kbest_walks", "count_optimal_walks"]


class Walks(NamedTuple):
    """``k`` best walks, best first: edge indices per walk and their scores."""

    edges: list[np.ndarray]
    score: np.ndarray


def kbest_walks(
    head: np.ndarray,
    tail: np.ndarray,
    hop_score: np.ndarray,
    start: np.ndarray,
    k: int,
    *,
    node_score: np.ndarray | None = None,
    target: int | None = None,
) -> Walks:
    """The ``k`` highest-scoring walks (see the module docstring).

    Args:
        head, tail: ``[E]`` int64 edge endpoints.
        hop_score: ``[T, E]`` per-hop edge scores (``-inf``: edge not usable at that hop).
        start: ``[N]`` score of starting at each node (``-inf``: not a start).
        k: how many walks.
        node_score: optional ``[T, N]`` scores of the node reached at hop ``t = 1..T``.
        target: ``None``: walks of exactly ``T`` edges ending anywhere; a node: walks of
            ``1..T`` edges ending at ``target``.

    Returns:
        :class:`Walks` (fewer than ``k`` when fewer walks have a finite score).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Prop. 2 (the best walks of its optimizer).
    """
    n_nodes = len(start)
    best = np.full((n_nodes, k), -np.inf)
    best[:, 0] = start
    pointers, finals = [], []
    for hop in range(hop_score.shape[0]):
        flat = (best[head] + hop_score[hop][:, None]).ravel()  # extend each kept walk by each edge
        dest = np.repeat(tail, k)
        if node_score is not None:
            flat = flat + node_score[hop][dest]
        ids = np.flatnonzero(np.isfinite(flat))
        order = ids[np.lexsort((-flat[ids], dest[ids]))]  # by node, then best first
        first = np.searchsorted(dest[order], np.arange(n_nodes))
        rank = np.arange(len(order)) - first[dest[order]]
        order, rank = order[rank < k], rank[rank < k]
        best = np.full((n_nodes, k), -np.inf)
        ptr = np.full((n_nodes, k), -1)
        best[dest[order], rank] = flat[order]
        ptr[dest[order], rank] = order  # flat index = edge * k + previous rank
        pointers.append(ptr)
        if target is not None:
            finals += [
                (best[target, r], hop, target, r) for r in range(k) if best[target, r] > -np.inf
            ]
    if target is None and pointers:
        v, r = np.nonzero(best > -np.inf)
        finals = [(best[a, b], len(pointers) - 1, a, b) for a, b in zip(v, r)]
    finals = sorted(finals, key=lambda f: -f[0])[:k]
    edges = []
    for _, hop, v, r in finals:  # backtrack through the back-pointers
        walk, v = [], int(v)
        for step in range(hop, -1, -1):
            e, r = divmod(int(pointers[step][v, r]), k)
            walk.append(e)
            v = int(head[e])
        edges.append(np.asarray(walk[::-1], np.int64))
    return Walks(edges, np.asarray([f[0] for f in finals], float))


def _log_partition(h, t, score, start, max_hops: int, target: int) -> float:
    """``log Z``: the log-sum over walks of ``1..max_hops`` edges ending at ``target`` of
    their summed scores (the forward recursion of Eq. (13) in float64 NumPy)."""
    a, log_z = start, -np.inf
    for _ in range(max_hops):
        nxt = np.full_like(a, -np.inf)
        np.logaddexp.at(nxt, t, a[h] + score)
        log_z, a = np.logaddexp(log_z, nxt[target]), nxt
    return float(log_z)


def _check_precision(score: np.ndarray, max_hops: int, tau: float) -> None:
    """Weights ``exp(score(w) - log Z)`` are differences of numbers as large as
    ``max_hops * max|score|``; refuse a ``tau`` so small that float64 cannot resolve them."""
    finite = score[np.isfinite(score)]
    scale = max_hops * float(np.max(np.abs(finite))) if finite.size else 0.0
    if 4 * (max_hops + 1) * np.finfo(np.float64).eps * scale > 1e-6:  # relative weight error
        raise FloatingPointError(
            f"top_paths: tau={tau:g} is too small for float64 weights (walk scores "
            f"log(omega) - cost/tau reach {scale:.3g}); use a larger tau, or tau=0 for the "
            "limit (the minimum-cost walks, see count_optimal_walks)"
        )


def count_optimal_walks(
    head: np.ndarray,
    tail: np.ndarray,
    hop_score: np.ndarray,
    start: np.ndarray,
    *,
    node_score: np.ndarray | None = None,
    target: int | None = None,
) -> tuple[float, int]:
    r"""``(best score, number of walks attaining it)`` over the same walk family as
    :func:`kbest_walks` (ties by exact floating equality); ``(-inf, 0)`` if none is finite.
    The ``tau -> 0`` limit of :math:`\nu^*` (Prop. 2) is uniform over these walks.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 2.
    """
    n_nodes = len(start)
    val = np.asarray(start, float).copy()
    cnt = np.where(val > -np.inf, 1.0, 0.0)
    out_val, out_cnt = -np.inf, 0.0
    for hop in range(hop_score.shape[0]):
        cand = val[head] + hop_score[hop]
        new_val = np.full(n_nodes, -np.inf)
        np.maximum.at(new_val, tail, cand)
        if node_score is not None:
            cand, new_val = cand + node_score[hop][tail], new_val + node_score[hop]
        hit = (cand == new_val[tail]) & (cand > -np.inf)
        new_cnt = np.zeros(n_nodes)
        np.add.at(new_cnt, tail[hit], cnt[head[hit]])
        val, cnt = new_val, new_cnt
        if target is not None and val[target] > -np.inf:
            if val[target] > out_val:
                out_val, out_cnt = val[target], cnt[target]
            elif val[target] == out_val:
                out_cnt += cnt[target]
    if target is None and (val > -np.inf).any():
        out_val = float(val.max())
        out_cnt = float(cnt[val == out_val].sum())
    return float(out_val), int(out_cnt)


class TopPaths(NamedTuple):
    r"""Best supporting walks of a ``(source, target)`` pair, best first.

    Attributes:
        edges: one int64 array of edge indices per walk.
        nodes: one int64 array of node indices per walk (``len(edges) + 1``).
        cost: ``[k]`` summed edge costs :math:`c(w)`.
        weight: ``[k]`` posterior weights :math:`\nu^*(w)` of Prop. 2 among all walks of
            ``1..max_hops`` edges (``tau > 0``), or ``None`` at ``tau == 0``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 2.
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
    score :math:`\log\omega(w) - c(w)/\tau` (lowest cost at ``tau == 0``), by the k-best
    max-plus recursion of :func:`kbest_walks` (NumPy; for reports).

    With ``tau > 0`` the weights :math:`\nu^*(w) = \omega(w)e^{-c(w)/\tau}/Z` use the exact
    partition function :math:`Z` over every walk (the forward recursion of
    :func:`grounding.semiring.energy_field`, in float64 whatever JAX's precision), so ``weight.sum()``
    is the share of the posterior the reported walks carry.

    Args:
        head, tail: ``[E]`` integer edge endpoints.
        edge_cost: ``[E]`` (or ``[1, E]``) edge costs :math:`c(e)` in ``(-inf, +inf]``.
        source, target: node indices.
        n_nodes: number of nodes.
        max_hops: longest walk, in edges.
        k: number of walks returned.
        tau: path temperature ``>= 0``.
        log_step_prior: optional ``[E]`` (or ``[1, E]``) step log-priors
            :math:`\log\omega(e)` in ``[-inf, +inf)`` (``-inf``: the edge is never taken).

    Raises:
        ValueError: on malformed input (shapes, NaN, a ``-inf`` cost, a ``+inf`` log-prior,
            node indices out of range).
        FloatingPointError: when ``tau > 0`` is so small against the costs that float64
            cannot resolve the weights to a relative 1e-6 (use ``tau = 0`` for the limit).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Prop. 2, Eq. (11).

    Example:
        >>> import numpy as np
        >>> tp = top_paths(np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([1.0, 1.0, 3.0]), 0, 2,
        ...                n_nodes=3, max_hops=2, k=2)
        >>> [e.tolist() for e in tp.edges], tp.cost.tolist()
        ([[0, 1], [2]], [2.0, 3.0])

    Prop. 2 (the optimizer :math:`\nu^*`) and Eq. (11) (its ``tau -> 0`` limit) of the paper.
    """
    h, t = (np.asarray(a, np.int64) for a in check_edges(head, tail, n_nodes))
    max_hops = check_int(max_hops, "max_hops")
    k = check_int(k, "k")
    tropical = check_tau(tau).tropical
    tau = float(np.asarray(tau, np.float64))  # not via a float32 JAX array
    for name, v in (("source", source), ("target", target)):
        check_nodes(np.asarray([v]), n_nodes, name)
    # one source: [E] or [1, E]; host arithmetic in float64 whatever JAX's mode
    check_edge_values(edge_cost, "edge_cost", len(h), 1, bad=-np.inf)
    cost = np.asarray(edge_cost, np.float64).reshape(len(h))
    prior = np.zeros_like(cost)
    if log_step_prior is not None:
        check_edge_values(log_step_prior, "log_step_prior", len(h), 1, bad=np.inf)
        prior = np.asarray(log_step_prior, np.float64).reshape(len(h))
    # costs in (-inf, +inf], log-priors in [-inf, +inf), tau > 0: no NaN and no warning
    score = np.where(prior == -np.inf, -np.inf, -cost) if tropical else prior - cost / tau
    start = np.full(n_nodes, -np.inf)
    start[int(source)] = 0.0  # hop 0: the empty walk at the source
    walks = kbest_walks(
        h, t, np.broadcast_to(score, (max_hops, len(h))), start, k, target=int(target)
    )
    nodes = [np.concatenate([[h[w[0]]], t[w]]) for w in walks.edges]
    total = np.asarray([cost[w].sum() for w in walks.edges], float)
    weight = None
    if not tropical:
        log_z = _log_partition(h, t, score, start, max_hops, int(target))
        _check_precision(score, max_hops, tau)
        weight = np.exp(walks.score - log_z)  # Prop. 2: nu*(w) = omega(w) e^{-c(w)/tau} / Z
    return TopPaths(walks.edges, nodes, total, weight)
