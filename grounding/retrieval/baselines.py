r"""The PCR paper's baselines over all nodes (no graph constraint).

- :class:`VectorRetriever`: cosine top-k;
- :class:`BM25Retriever`: Okapi BM25 (:math:`k_1 = 1.5, b = 0.75`);
- :class:`HybridRetriever`: ``0.7`` vector ``+ 0.3`` BM25, each min-max normalized over its
  own top ``2k``, as in the PCR paper's code.
"""

from __future__ import annotations

import numpy as np

from grounding.retrieval.base import (
    BaseRetriever,
    Query,
    Retrieval,
    TextIndex,
    check_k,
    minmax,
    top_k,
)

__all__ = ["VectorRetriever", "BM25Retriever", "HybridRetriever"]


class VectorRetriever(BaseRetriever):
    """Global cosine top-k over all nodes (the PCR paper's "vector" baseline).

    References:
        Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM Agent
            Reasoning Through Graph-Scoped Semantic Search", 2025 (arXiv:2511.18313): a baseline.
    """

    name = "vector"

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        idx, s = top_k(self.index.cosine(query), check_k(k))
        return self._result(query, idx, s)


class BM25Retriever(BaseRetriever):
    """Okapi BM25 top-k over all nodes (``k1 = 1.5``, ``b = 0.75``).

    References:
        - Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM Agent
          Reasoning Through Graph-Scoped Semantic Search", 2025 (arXiv:2511.18313): a baseline.
        - Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009.
    """

    name = "bm25"

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        idx, s = top_k(self.index.bm25.scores(query.text), check_k(k))
        return self._result(query, idx, s)


class HybridRetriever(BaseRetriever):
    """``alpha * vector + (1 - alpha) * BM25``, as the PCR paper's code computes it: each
    method's top ``2k`` list is min-max normalized on its own; a node absent from one list
    scores 0 there.

    References:
        Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM Agent
            Reasoning Through Graph-Scoped Semantic Search", 2025 (arXiv:2511.18313): a baseline.
    """

    name = "hybrid"

    def __init__(self, index: TextIndex, alpha: float = 0.7):
        super().__init__(index)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        self.alpha = float(alpha)

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        k = check_k(k)
        combined, pool = np.zeros(self.graph.n_nodes), []
        for weight, s in (
            (self.alpha, self.index.cosine(query)),
            (1.0 - self.alpha, self.index.bm25.scores(query.text)),
        ):
            idx, top = top_k(s, 2 * k)
            combined[idx] += weight * minmax(top)
            pool.append(idx)
        idx, s = top_k(combined, k, among=np.unique(np.concatenate(pool)))
        return self._result(query, idx, s)
