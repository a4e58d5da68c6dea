"""Relation chains followed over a knowledge graph's triples (the answers of a templated
question)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _adjacency(triples: np.ndarray, n_rel: int) -> list[dict[int, np.ndarray]]:
    """Per augmented relation (``r`` then ``r + n_rel`` for the inverse): head -> tails."""
    out: list[dict[int, np.ndarray]] = []
    for inverse in (False, True):
        src, dst = (2, 0) if inverse else (0, 2)
        for r in range(n_rel):
            t = triples[triples[:, 1] == r]
            order = np.argsort(t[:, src], kind="stable")
            heads, starts = np.unique(t[order, src], return_index=True)
            groups = np.split(t[order, dst], starts[1:])
            out.append({int(h): np.unique(g) for h, g in zip(heads, groups)})
    return out


def chain_answers(
    adjacency: Sequence[dict[int, np.ndarray]],
    topic: int,
    chain: Sequence[int],
    max_frontier: int | None = None,
) -> np.ndarray | None:
    """Entities reached from ``topic`` by following ``chain`` (augmented relation ids) in
    ``adjacency``, the topic excluded; ``None`` when a frontier exceeds ``max_frontier``."""
    frontier = np.array([topic])
    for r in chain:
        nxt = [adjacency[r][int(v)] for v in frontier if int(v) in adjacency[r]]
        frontier = np.unique(np.concatenate(nxt)) if nxt else np.zeros(0, np.int64)
        if max_frontier is not None and len(frontier) > max_frontier:
            return None
    return frontier[frontier != topic]
