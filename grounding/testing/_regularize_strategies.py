"""Hypothesis strategies for the regularizers of Sec. 9 (:mod:`grounding.regularize`).

Every strategy draws a seed integer and builds its arrays with a numpy ``Generator``, so a
failing example shrinks to a seed and replays exactly (no JAX PRNG keys).

XLA compiles once per input *shape*. To keep property tests fast, the strategies can fix
the shapes and let only the values vary: ``all_pairs=True`` lists every pair ``u < v`` of
an undirected graph (absent edges get weight 0, which contributes nothing to any energy),
and ``typed_edge_lists(min_edges=m, max_edges=m)`` draws exactly ``m`` arcs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from hypothesis import strategies as st

__all__ = [
    "WeightedGraph",
    "TypedEdges",
    "undirected_graphs",
    "node_features",
    "graphs_with_features",
    "typed_edge_lists",
    "typed_graphs_with_features",
]


class WeightedGraph(NamedTuple):
    """Undirected weighted graph, each edge ``{u, v}`` (``u < v``) stored once."""

    n_nodes: int
    head: np.ndarray  # [m] int64
    tail: np.ndarray  # [m] int64
    weight: np.ndarray  # [m] float64, >= 0 (0 only for absent pairs when all_pairs=True)


class TypedEdges(NamedTuple):
    """Typed directed arcs ``(head, relation, tail)`` with positive weights."""

    head: np.ndarray  # [m] int64
    relation: np.ndarray  # [m] int64 in [0, n_relations)
    tail: np.ndarray  # [m] int64
    weight: np.ndarray  # [m] float64 in [0.1, 2]


def _rng(draw) -> np.random.Generator:
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


@st.composite
def undirected_graphs(
    draw: st.DrawFn,
    min_nodes: int = 2,
    max_nodes: int = 7,
    w_min: float = 0.1,
    w_max: float = 2.0,
    min_edges: int = 1,
    all_pairs: bool = False,
) -> WeightedGraph:
    """Random simple undirected graph on ``n`` nodes; each pair present with probability 1/2.

    At least ``min_edges`` edges (capped by the number of pairs); weights uniform in
    ``[w_min, w_max]``. ``all_pairs=True``: the list holds all ``n(n-1)/2`` pairs and the
    absent ones have weight exactly 0 (array shapes then depend on ``n`` only).
    """
    n = draw(st.integers(min_nodes, max_nodes))
    rng = _rng(draw)
    iu, iv = np.triu_indices(n, k=1)
    keep = rng.random(iu.size) < 0.5
    need = min(min_edges, iu.size)
    if keep.sum() < need:
        keep[rng.choice(iu.size, need, replace=False)] = True
    w = np.where(keep, rng.uniform(w_min, w_max, iu.size), 0.0)
    if not all_pairs:
        iu, iv, w = iu[keep], iv[keep], w[keep]
    return WeightedGraph(n, iu.astype(np.int64), iv.astype(np.int64), w)


@st.composite
def node_features(
    draw: st.DrawFn,
    n_nodes: int,
    min_dim: int = 1,
    max_dim: int = 4,
    scale: float = 3.0,
    even: bool = False,
) -> np.ndarray:
    """``[n_nodes, d]`` float64 features, entries uniform in ``[-scale, scale]``.

    ``even=True`` draws an even ``d`` (for rotation maps), ``2 <= d <= max(2, max_dim)``.
    """
    if even:
        d = 2 * draw(st.integers(max(1, (min_dim + 1) // 2), max(1, max_dim // 2)))
    else:
        d = draw(st.integers(min_dim, max_dim))
    return _rng(draw).uniform(-scale, scale, (n_nodes, d))


@st.composite
def graphs_with_features(
    draw: st.DrawFn,
    min_nodes: int = 2,
    max_nodes: int = 7,
    min_dim: int = 1,
    max_dim: int = 4,
    all_pairs: bool = False,
) -> tuple[WeightedGraph, np.ndarray]:
    """An :func:`undirected_graphs` graph and a matching :func:`node_features` matrix."""
    g = draw(undirected_graphs(min_nodes, max_nodes, all_pairs=all_pairs))
    return g, draw(node_features(g.n_nodes, min_dim=min_dim, max_dim=max_dim))


@st.composite
def typed_edge_lists(
    draw: st.DrawFn,
    n_nodes: int,
    n_relations: int = 3,
    min_edges: int = 1,
    max_edges: int = 12,
    self_loops: bool = False,
) -> TypedEdges:
    """Random typed directed arcs (parallel arcs and both directions allowed).

    Weights are uniform in ``[0.1, 2]``; no self-loops unless ``self_loops`` (or ``n = 1``).
    """
    m = draw(st.integers(min_edges, max_edges))
    rng = _rng(draw)
    head = rng.integers(0, n_nodes, m)
    tail = rng.integers(0, n_nodes, m)
    if not self_loops and n_nodes > 1:
        loop = head == tail
        tail[loop] = (head[loop] + rng.integers(1, n_nodes, int(loop.sum()))) % n_nodes
    rel = rng.integers(0, n_relations, m)
    return TypedEdges(
        head.astype(np.int64), rel.astype(np.int64), tail.astype(np.int64), rng.uniform(0.1, 2.0, m)
    )


@st.composite
def typed_graphs_with_features(
    draw: st.DrawFn,
    min_nodes: int = 2,
    max_nodes: int = 7,
    n_relations: int = 3,
    min_dim: int = 1,
    max_dim: int = 4,
    even: bool = False,
    min_edges: int = 1,
    max_edges: int = 12,
) -> tuple[TypedEdges, np.ndarray]:
    """Typed arcs on ``n`` nodes and matching ``[n, d]`` features (``even``: ``d`` even)."""
    n = draw(st.integers(min_nodes, max_nodes))
    edges = draw(typed_edge_lists(n, n_relations, min_edges, max_edges))
    return edges, draw(node_features(n, min_dim=min_dim, max_dim=max_dim, even=even))
