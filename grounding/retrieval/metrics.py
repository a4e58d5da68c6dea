r"""Retrieval metrics of the PCR paper (*Path-Constrained Retrieval*, arXiv:2511.18313,
Sec. 4) and an evaluation loop.

For one query with retrieved nodes :math:`r_1..r_n` (best first), relevant set :math:`G`,
anchor :math:`a`, and hop distance :math:`d(a, \cdot)` (unlimited depth, ``-1`` if
unreachable):

- Relevance@k :math:`= |\{r_1..r_k\}\cap G| / \min(k, |G|)`;
- Recall@k :math:`= |\{r_1..r_k\}\cap G| / |G|`;
- structural consistency :math:`= 1 - |\{i : r_i \text{ unreachable}\}| / n` (``1`` for an
  empty retrieval: nothing inconsistent was returned);
- graph-distance penalty :math:`= \frac1n\sum_i \big(0.1\,d(a, r_i)` if reachable else
  :math:`1\big)` (``0`` for an empty retrieval), the paper's "average graph distance".
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

import numpy as np

from grounding.graph import TypedGraph
from grounding.retrieval.base import Query, Retriever, check_k
from grounding.semiring.recursion import UNREACHABLE

__all__ = [
    "relevance_at_k",
    "recall_at_k",
    "structural_consistency",
    "distance_penalty",
    "evaluate_retrieval",
    "summarize_retrieval",
    "answer_recall_at_k",
]


def _hits(retrieved: Sequence[int], relevant: Collection[int], k: int) -> int:
    k = check_k(k)
    if len(relevant) == 0:
        raise ValueError("the query has no relevant nodes; relevance is undefined")
    rel = set(int(x) for x in relevant)  # duplicates count once (as in the paper's code)
    return sum(int(x) in rel for x in list(retrieved)[:k])


def relevance_at_k(retrieved: Sequence[int], relevant: Collection[int], k: int) -> float:
    """Relevance@k as the PCR paper defines it: hits in the top ``k`` over ``min(k, |G|)``.

    References:
        Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM Agent
            Reasoning Through Graph-Scoped Semantic Search", 2025 (arXiv:2511.18313): Sec. 4.

    Example:
        >>> relevance_at_k([3, 1, 7], {1, 2}, k=2)
        0.5
    """
    return _hits(retrieved, relevant, k) / min(k, len(set(relevant)))


def recall_at_k(retrieved: Sequence[int], relevant: Collection[int], k: int) -> float:
    """Recall@k: hits in the top ``k`` over ``|G|``.

    Example:
        >>> recall_at_k([3, 1, 7], {1, 2, 7}, k=3)
        0.6666666666666666
    """
    return _hits(retrieved, relevant, k) / len(set(relevant))


def _dist_of(retrieved: Sequence[int], dist: np.ndarray) -> np.ndarray:
    return np.asarray(dist)[np.asarray(retrieved, np.int64)]


def structural_consistency(retrieved: Sequence[int], dist: np.ndarray) -> float:
    """Fraction of retrieved nodes reachable from the anchor (``dist >= 0``).

    References:
        Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM Agent
            Reasoning Through Graph-Scoped Semantic Search", 2025 (arXiv:2511.18313): Sec. 4.

    Example:
        >>> structural_consistency([0, 2], dist=np.array([0, 1, -1]))
        0.5
    """
    if len(retrieved) == 0:
        return 1.0
    return float(np.mean(_dist_of(retrieved, dist) >= 0))


def distance_penalty(
    retrieved: Sequence[int], dist: np.ndarray, per_hop: float = 0.1, unreachable: float = 1.0
) -> float:
    """Mean of ``per_hop * d`` over retrieved nodes, ``unreachable`` for unreachable ones.

    References:
        Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM Agent
            Reasoning Through Graph-Scoped Semantic Search", 2025 (arXiv:2511.18313): Sec. 4
            (its "average graph distance").

    Example:
        >>> round(distance_penalty([1, 2], dist=np.array([0, 3, -1])), 6)
        0.65
    """
    if len(retrieved) == 0:
        return 0.0
    d = _dist_of(retrieved, dist)
    return float(np.mean(np.where(d >= 0, per_hop * d, unreachable)))


def evaluate_retrieval(
    retriever: Retriever,
    graph: TypedGraph,
    queries: Sequence[Query],
    k: int = 10,
    ks: Sequence[int] = (1, 5, 10),
) -> list[dict]:
    """Run ``retriever`` on every query and score it; one row (a dict) per query.

    Rows hold ``relevance@j`` for ``j`` in ``ks``, ``recall@k``, ``consistency``,
    ``distance`` (the penalty), ``latency_ms`` (wall time of the ``retrieve`` call; the
    first call, which may compile, is repeated once untimed beforehand), ``fallback``, and
    ``n`` (number of nodes returned) and ``retrieved`` (their indices, best first).
    Consistency and distance use unlimited-depth reachability from the anchors (the nearest
    one when there are several; as in the paper's code); queries without a known anchor count
    every retrieved node as unreachable. :func:`summarize_retrieval` aggregates the rows.

    References:
        Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM Agent
            Reasoning Through Graph-Scoped Semantic Search", 2025 (arXiv:2511.18313): Sec. 4.
    """
    if not queries:
        raise ValueError("no queries to evaluate")
    anchors = [
        tuple(graph.entity_index(a) for a in q.anchors if graph.has_entity(a)) for q in queries
    ]
    known = sorted({a for qa in anchors for a in qa})
    table = dict(zip(known, graph.distances(known))) if known else {}
    no_anchor = np.full(graph.n_nodes, UNREACHABLE)
    retriever.retrieve(queries[0], k)  # warm-up (JIT compilation), not timed
    rows = []
    for q, qa in zip(queries, anchors):
        t0 = time.perf_counter()
        res = retriever.retrieve(q, k)
        ms = 1e3 * (time.perf_counter() - t0)
        rel = [_node(graph, x) for x in q.relevant]
        dist = _nearest([table[a] for a in qa]) if qa else no_anchor
        row = {"query": q.id, "retriever": retriever.name, "n": len(res.index)}
        for j in ks:
            row[f"relevance@{j}"] = relevance_at_k(res.index, rel, j)
        row[f"recall@{k}"] = recall_at_k(res.index, rel, k)
        row["consistency"] = structural_consistency(res.index, dist)
        row["distance"] = distance_penalty(res.index, dist)
        row["latency_ms"] = ms
        row["fallback"] = res.fallback or ""
        row["retrieved"] = res.index.tolist()
        rows.append(row)
    return rows


def summarize_retrieval(rows: Sequence[dict]) -> dict:
    """The aggregate of :func:`evaluate_retrieval`'s rows: the mean of every metric
    (``relevance@j``, ``recall@k``, ``consistency``, ``distance``, ``latency_ms``, ``n``),
    the number of queries, and how many needed a fallback.

    Example:
        >>> summarize_retrieval([{"query": "a", "retriever": "pcr", "n": 2, "recall@10": 1.0,
        ...     "fallback": "", "retrieved": [0, 1]}, {"query": "b", "retriever": "pcr", "n": 1,
        ...     "recall@10": 0.5, "fallback": "no anchor given", "retrieved": [3]}])
        {'retriever': 'pcr', 'n_queries': 2, 'n_fallback': 1, 'n': 1.5, 'recall@10': 0.75}
    """
    if not rows:
        raise ValueError("no rows to summarize")
    names = sorted({r["retriever"] for r in rows})
    out = {"retriever": names[0] if len(names) == 1 else names, "n_queries": len(rows)}
    out["n_fallback"] = sum(bool(r.get("fallback")) for r in rows)
    skip = {"query", "retriever", "fallback", "retrieved"}
    for key in (k for k in rows[0] if k not in skip):
        out[key] = float(np.mean([r[key] for r in rows]))
    return out


def _node(graph: TypedGraph, name: str) -> int:
    if not graph.has_entity(name):
        raise ValueError(f"unknown node {name!r} (the graph has {graph.n_nodes} nodes)")
    return graph.entity_index(name)


def _nearest(dists: list[np.ndarray]) -> np.ndarray:
    """Hop distance to the nearest of several anchors (``UNREACHABLE`` if none reaches)."""
    d = np.stack(dists).astype(float)
    d = np.where(d >= 0, d, np.inf).min(axis=0)
    return np.where(np.isfinite(d), d, UNREACHABLE).astype(np.int64)


def answer_recall_at_k(
    head: np.ndarray, tail: np.ndarray, answers: Collection[int], k: int
) -> float:
    """Share of ``answers`` that are the head or tail of one of the first ``k`` ranked facts
    (SubgraphRAG's answer recall; ``head``/``tail`` in rank order).

    References:
        Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
            Knowledge-Graph-Based Retrieval-Augmented Generation", 2025.
    """
    answers = set(int(a) for a in answers)
    if not answers:
        raise ValueError("no answers: answer recall is undefined")
    k = check_k(k)
    found = set(np.asarray(head[:k]).tolist()) | set(np.asarray(tail[:k]).tolist())
    return len(answers & found) / len(answers)
