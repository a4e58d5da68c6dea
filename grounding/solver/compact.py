"""Evidence compaction: each question's evidence state over a small vocabulary of its own, one
padded size for a batch, so that questions with evidence graphs of similar size share one
compiled program whatever the size of the graph they were retrieved from.

Grounding results are unchanged by compaction: walks only use edges, and every entity a problem
names is kept (:func:`grounding.ground_batch` compacts per-question evidence this way).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

import numpy as np

from grounding._shapes import bucket
from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph

__all__ = ["compact_evidence"]


def compact_evidence(
    states: Sequence[EvidenceState],
    keep: Sequence[Sequence[str]],
    min_size: int = 64,
    *,
    texts: bool = True,
    unknown: str = "raise",
) -> list[EvidenceState]:
    """Each state over a small vocabulary: the entities its edges touch and its ``keep`` names
    (the problem's entities), in their original order, padded with isolated entities
    ``<padding i>`` to one size for the whole batch, the next power of two of ``min_size`` and
    of every state's entity count; relations, reliabilities and the other fields
    of the state unchanged. Built from the arrays directly (no name validation: the names come
    from a validated graph), for the whole batch at once.

    Args:
        states: the evidence states (of one graph or several).
        keep: per state, the names to keep even without an edge.
        min_size: the smallest padded size.
        texts: keep the graphs' entity texts (``False``: the compacted graphs have none; the
            solver reads none).
        unknown: a ``keep`` name the state's graph lacks: ``"raise"`` a ``KeyError`` naming
            it, or ``"skip"`` it (left out, so a problem's name stays out of graph).

    Raises:
        ValueError: ``states`` and ``keep`` of different lengths, or ``unknown`` not one of
            ``"raise"``, ``"skip"``.
        KeyError: a ``keep`` name not in its state's graph (``unknown="raise"``).
    """
    if len(states) != len(keep):
        raise ValueError(f"{len(states)} evidence states but {len(keep)} keep lists")
    if unknown not in ("raise", "skip"):
        raise ValueError(f"unknown must be 'raise' or 'skip', got {unknown!r}")
    if not states:
        return []
    graphs = [s.graph for s in states]
    named = [_named(g, k, unknown == "skip") for g, k in zip(graphs, keep)]
    # Every question's nodes as keys q * n + node: one sort for the batch finds each question's
    # touched entities (its slice of the sorted keys) and renumbers its edges (their rank
    # there, minus where its slice starts).
    n = max(g.n_nodes for g in graphs)
    offset = np.arange(len(graphs), dtype=np.int64) * n
    n_edges = [g.n_edges for g in graphs]
    by_edge = np.repeat(offset, n_edges)
    head = np.concatenate([np.asarray(g.head) for g in graphs]).astype(np.int64) + by_edge
    tail = np.concatenate([np.asarray(g.tail) for g in graphs]).astype(np.int64) + by_edge
    names = np.concatenate(named) + np.repeat(offset, [len(x) for x in named])
    nodes = np.unique(np.concatenate([head, tail, names]))
    start = np.searchsorted(nodes, offset)
    stop = np.append(start[1:], len(nodes))
    size = bucket(max([1, min_size, *(stop - start).tolist()]), floor=1)
    ranks = np.repeat(start, n_edges)
    head = (np.searchsorted(nodes, head) - ranks).astype(np.int32)
    tail = (np.searchsorted(nodes, tail) - ranks).astype(np.int32)
    head.setflags(write=False)  # (each graph's edges are read-only views of these)
    tail.setflags(write=False)
    local = (nodes - np.repeat(offset, stop - start)).tolist()
    edge_at = np.cumsum([0, *n_edges]).tolist()
    pads: dict[int, tuple[str, ...]] = {}
    out = []
    for q, (state, g) in enumerate(zip(states, graphs)):
        if id(g.entities) not in pads:  # derived graphs share their vocabulary tuple
            pads[id(g.entities)] = _padding(g, size)
        old = local[start[q] : stop[q]]
        pad = pads[id(g.entities)][: size - len(old)]
        graph = TypedGraph._trusted(
            head[edge_at[q] : edge_at[q + 1]],
            g.relation,
            tail[edge_at[q] : edge_at[q + 1]],
            g.reliability,
            tuple(map(g.entities.__getitem__, old)) + pad,
            g.relations,
            tuple(map(g.texts.__getitem__, old)) + ("",) * len(pad) if texts and g.texts else (),
        )
        graph.__dict__["_relation_ix"] = g._relation_ix  # one schema: one relation lookup
        out.append(state._over(graph))
    return out


def _padding(graph: TypedGraph, count: int) -> tuple[str, ...]:
    """The first ``count`` names ``<padding i>`` that are not entities of ``graph``."""
    pad, i = [], 0
    while len(pad) < count:
        if not graph.has_entity(f"<padding {i}>"):
            pad.append(f"<padding {i}>")
        i += 1
    return tuple(pad)


def _named(g: TypedGraph, keep: Sequence[str], skip: bool) -> np.ndarray:
    """The indices of the ``keep`` names in ``g`` (``skip``: those it has; else every one, a
    ``KeyError`` naming the first it lacks)."""
    if skip:
        ix = np.fromiter(map(g._entity_ix.get, keep, repeat(-1)), np.int64, len(keep))
        return ix[ix >= 0]
    try:
        return np.fromiter(map(g._entity_ix.__getitem__, keep), np.int64, len(keep))
    except (KeyError, TypeError):  # the message names the entity
        return np.fromiter((g.entity_index(name) for name in keep), np.int64)
