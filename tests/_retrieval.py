"""Shared cases of the retrieval tests: fixed-vector encoders, random graphs, the chain
example, and the comparison of batched and one-at-a-time retrievals."""

from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np
from _tol import F64
from hypothesis import strategies as st

from grounding import TypedGraph
from grounding.retrieval import TextIndex


@dataclasses.dataclass(frozen=True)
class TableEncoder:
    """Fixed vectors per text (so rankings are known exactly)."""

    vectors: dict
    name: str = "table"

    @property
    def dim(self) -> int:
        return len(next(iter(self.vectors.values())))

    def encode(self, texts):
        x = np.stack([np.asarray(self.vectors[t], float) for t in texts]).reshape(len(texts), -1)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


@st.composite
def graphs(draw, max_nodes=10):
    n = draw(st.integers(1, max_nodes))
    m = draw(st.integers(0, 3 * n))
    edges = [(draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))) for _ in range(m)]
    ids = [f"n{i}" for i in range(n)]
    g = TypedGraph.from_edges(ids, [(ids[a], ids[b]) for a, b in edges], texts=ids)
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    vecs = {t: rng.normal(size=4) for t in [*ids, "q"]}
    return g, TableEncoder(vecs)


def _nx(g: TypedGraph) -> nx.MultiDiGraph:
    G = nx.MultiDiGraph()
    G.add_nodes_from(range(g.n_nodes))
    G.add_edges_from(zip(g.head.tolist(), g.tail.tolist()))
    return G


def _brute_top(scores, allowed, k):
    order = sorted(allowed, key=lambda i: (-scores[i], i))
    return order[:k]


def _chain():
    # a -> b -> c, d isolated; the query is closest to d, then c
    ids = ["a", "b", "c", "d"]
    g = TypedGraph.from_edges(ids, [("a", "b"), ("b", "c")], texts=ids)
    vecs = {"a": [1, 0, 0], "b": [0.6, 0.8, 0], "c": [0, 1, 0.3], "d": [0, 1, 0.1], "q": [0, 1, 0]}
    return g, TextIndex(g, TableEncoder({k: np.array(v, float) for k, v in vecs.items()}))


def _same_answers(single, batch):
    assert len(batch) == len(single)
    for a, b in zip(single, batch):
        assert b.index.tolist() == a.index.tolist()
        np.testing.assert_allclose(b.scores, a.scores, **F64)
        assert (b.fallback, b.anchors.tolist()) == (a.fallback, a.anchors.tolist())
