"""The retrieval baselines (:mod:`grounding.retrieval.baselines`) against brute force and the
paper's dictionary formulation of the hybrid."""

from __future__ import annotations

import numpy as np
import pytest
from _retrieval import _brute_top

from grounding import TypedGraph
from grounding.retrieval import (
    BM25Retriever,
    HybridRetriever,
    Query,
    TextIndex,
    VectorRetriever,
)


def test_baselines_match_brute_force_and_the_papers_hybrid():
    rng = np.random.default_rng(3)
    words = ["cloud", "scale", "graph", "node", "edge", "cache", "query", "index"]
    texts = [" ".join(rng.choice(words, size=rng.integers(2, 6))) for _ in range(25)]
    ids = [f"d{i}" for i in range(25)]
    g = TypedGraph.from_edges(ids, [], texts=texts)
    index = TextIndex(g)
    q = Query("cloud graph query", anchor="d0")
    cos = index.embeddings @ index.embed_queries([q.text])[0]
    bm = index.bm25.scores(q.text)
    assert VectorRetriever(index).retrieve(q, 5).index.tolist() == _brute_top(cos, range(25), 5)
    assert BM25Retriever(index).retrieve(q, 5).index.tolist() == _brute_top(bm, range(25), 5)

    def paper_hybrid(k, alpha=0.7):  # the dictionary formulation of the PCR paper's code
        out = {}
        for w, s in ((alpha, cos), (1 - alpha, bm)):
            top = _brute_top(s, range(25), 2 * k)
            lo, hi = min(s[top]), max(s[top])
            for i in top:
                out[i] = out.get(i, 0.0) + w * (s[i] - lo) / ((hi - lo) or 1.0)
        return sorted(out, key=lambda i: (-out[i], i))[:k]

    assert HybridRetriever(index).retrieve(q, 5).index.tolist() == paper_hybrid(5)
    with pytest.raises(ValueError, match="alpha"):
        HybridRetriever(index, alpha=1.5)
    with pytest.raises(ValueError, match="no tokens"):
        VectorRetriever(index).retrieve(Query("?!"), 3)


def test_hybrid_returns_k_nodes_even_when_scores_are_zero():
    ids = [f"d{i}" for i in range(6)]
    texts = ["alpha beta", "gamma", "delta", "epsilon", "zeta", "eta"]
    index = TextIndex(TypedGraph.from_edges(ids, [], texts=texts))
    res = HybridRetriever(index).retrieve(Query("alpha"), 2)
    assert len(res.index) == 2 and res.index[0] == 0
