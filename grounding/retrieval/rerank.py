r"""Dependency-aware reranking (PankRAG, Sec. 2.3.1): validate what a sub-question retrieved
against the answers of the sub-questions it depends on.

For retrieved item :math:`i` of a sub-question with resolved dependencies:

.. math::
    s_i = \alpha\,R_i + \beta\,M_i, \qquad \beta = 1 - \alpha,

with the definitions this package chose (the paper names :math:`R_i` "retrieval quality" and
:math:`M_i` a cosine similarity to the resolved answers, without normalization):

- :math:`R_i\in[0,1]`: the retriever's own score, min-max normalized over the retrieved
  pool (:func:`~grounding.retrieval.base.minmax`; 0 for every item when all scores are
  equal, so the agreement alone orders them);
- :math:`M_i\in[0,1]`: agreement with the resolved dependency answers :math:`d` weighted by
  their answer probabilities :math:`w_d` (:math:`\sum_d w_d \le 1`), either
  *graph* agreement :math:`M_i = \sum_d w_d\,[i = d \text{ or } i \sim d]` (the mass of the
  resolved answers that item :math:`i` is, or is joined to by an edge:
  :func:`graph_agreement`), or *embedding* agreement
  :math:`M_i = \sum_d w_d \max(0, \cos(\phi_i, \phi_d))` (:func:`embedding_agreement`);
- :math:`\alpha` = 0.6 for specific and 0.75 for abstract sub-questions (the paper's
  Sec. 3.4 values, :data:`ALPHA`).

A sub-question without dependencies is not reranked (there is nothing to validate against).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from grounding.graph import TypedGraph
from grounding.retrieval.base import Retrieval, minmax

__all__ = [
    "ALPHA",
    "dependency_score",
    "graph_agreement",
    "embedding_agreement",
    "dependency_rerank",
]

#: The paper's reranking weight :math:`\alpha` by sub-question kind (Sec. 3.4).
ALPHA = {"specific": 0.6, "abstract": 0.75}


def dependency_score(relevance: ArrayLike, agreement: ArrayLike, alpha: float) -> np.ndarray:
    r""":math:`\alpha R + (1 - \alpha) M` (PankRAG's combined score), elementwise.

    References:
        Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally Aware
            Query Resolution and Dependency-Aware Reranking Mechanism", 2025 (arXiv:2506.11106):
            Sec. 2.3.1.

    Example:
        >>> dependency_score([0.8], [0.3], 0.75).round(3).tolist()  # the paper's quick check
        [0.675]
    """
    a = float(alpha)
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    r, m = np.asarray(relevance, np.float64), np.asarray(agreement, np.float64)
    if r.shape != m.shape:
        raise ValueError(f"relevance {r.shape} and agreement {m.shape} differ in shape")
    if not (np.isfinite(r).all() and np.isfinite(m).all()):
        raise ValueError("relevance and agreement must be finite")
    return a * r + (1.0 - a) * m


def _weights(dependencies: Sequence[int] | np.ndarray, weights) -> tuple[np.ndarray, np.ndarray]:
    d = np.asarray(dependencies, np.int64)
    w = np.asarray(weights, np.float64)
    if d.ndim != 1 or w.shape != d.shape:
        raise ValueError(f"{d.shape} dependency nodes but weights of shape {w.shape}")
    if (w < 0).any() or not np.isfinite(w).all() or w.sum() > 1 + 1e-9:
        raise ValueError(f"dependency weights must be >= 0 with sum <= 1, got {w}")
    return d, w


def graph_agreement(
    graph: TypedGraph, nodes: ArrayLike, dependencies: ArrayLike, weights: ArrayLike
) -> np.ndarray:
    r""":math:`M_i = \sum_d w_d [i = d \text{ or an edge joins } i \text{ and } d]` per node.

    References:
        Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally Aware
            Query Resolution and Dependency-Aware Reranking Mechanism", 2025 (arXiv:2506.11106):
            Sec. 2.3.1.

    Example:
        >>> g = TypedGraph.from_triples([("a", "r", "b"), ("c", "r", "b")])
        >>> graph_agreement(g, [1, 2], [0, 2], [0.7, 0.3]).tolist()  # b ~ a and c; c is c
        [1.0, 0.3]
    """
    nodes = np.asarray(nodes, np.int64)
    deps, w = _weights(dependencies, weights)
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    out = np.zeros(len(nodes))
    for d, wd in zip(deps, w):
        near = np.zeros(graph.n_nodes, bool)
        near[d] = True
        near[tail[graph.edges_from([d])]] = True
        near[head[graph.in_edges(int(d))]] = True
        out += wd * near[nodes]
    return out


def embedding_agreement(
    embeddings: np.ndarray, nodes: ArrayLike, dependencies: ArrayLike, weights: ArrayLike
) -> np.ndarray:
    r""":math:`M_i = \sum_d w_d \max(0, \cos(\phi_i, \phi_d))` (rows of unit norm).

    References:
        Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally Aware
            Query Resolution and Dependency-Aware Reranking Mechanism", 2025 (arXiv:2506.11106):
            Sec. 2.3.1.
    """
    deps, w = _weights(dependencies, weights)
    emb = np.asarray(embeddings)
    cos = emb[np.asarray(nodes, np.int64)] @ emb[deps].T  # [n, D]
    return np.maximum(cos, 0.0) @ w


def dependency_rerank(
    retrieval: Retrieval,
    agreement: np.ndarray,
    alpha: float,
    k: int,
) -> Retrieval:
    """The retrieval's items re-ordered by :func:`dependency_score` and cut to ``k``.

    The pool is :attr:`Retrieval.index` (nodes) with :attr:`Retrieval.scores`; ``agreement``
    is :math:`M` per pooled node. The returned retrieval's scores are the combined scores;
    its provenance records ``R``, ``M`` and ``alpha``. Ties keep the retriever's order.

    References:
        Li, Liu, Shan, Huang, Gong & Li, "PankRAG: Enhancing Graph Retrieval via Globally Aware
            Query Resolution and Dependency-Aware Reranking Mechanism", 2025 (arXiv:2506.11106):
            Sec. 2.3.1.
    """
    m = np.asarray(agreement, np.float64)
    if m.shape != retrieval.index.shape:
        raise ValueError(f"{len(retrieval.index)} retrieved nodes but agreement {m.shape}")
    if not np.isfinite(np.asarray(retrieval.scores)).all():
        raise ValueError("retrieval scores must be finite to be reranked")
    r = minmax(retrieval.scores)
    s = dependency_score(r, m, alpha)
    order = np.argsort(-s, kind="stable")[:k]
    out = dataclasses.replace(
        retrieval,
        index=retrieval.index[order],
        scores=s[order],
        retriever=f"{retrieval.retriever}+rerank",
    )
    out.provenance.update(relevance=r[order].tolist(), agreement=m[order].tolist(), alpha=alpha)
    return out
