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
    n = max(1, *(g.n_nodes for g in graphs))
    step = max(1, _CELLS // n) if n <= _DENSE_NODES else len(graphs)  # questions per pass
    parts = [_renumber(graphs[s : s + step], named[s : s + step], n)
             for s in range(0, len(graphs), step)]  # fmt: skip
    old = [x for part in parts for x in part[0]]
    edges = [x for part in parts for x in part[1]]
    size = bucket(max([1, min_size, *map(len, old)]), floor=1)
    pads: dict[int, tuple[str, ...]] = {}
    out = []
    for state, g, kept, (head, tail) in zip(states, graphs, old, edges):
        if id(g.entities) not in pads:  # derived graphs share their vocabulary tuple
            pads[id(g.entities)] = _padding(g, size)
        pad = pads[id(g.entities)][: size - len(kept)]
        graph = TypedGraph._trusted(
            head,
            g.relation,
            tail,
            g.reliability,
            tuple(map(g.entities.__getitem__, kept)) + pad,
            g.relations,
            tuple(map(g.texts.__getitem__, kept)) + ("",) * len(pad) if texts and g.texts else (),
        )
        graph.__dict__["_relation_ix"] = g._relation_ix  # one schema: one relation lookup
        out.append(state._over(graph))
    return out


#: Cells (questions x nodes) of one marking pass of :func:`_renumber` (16 MB of flags), and
#: the largest graph renumbered by marking (larger: by sorting the batch's entities).
_CELLS, _DENSE_NODES = 1 << 24, 1 << 18


def _renumber(graphs: list[TypedGraph], named: list[np.ndarray], n: int) -> tuple[list, list]:
    """Per graph, the sorted indices of the entities its edges touch or ``named`` names, and
    its ``(head, tail)`` renumbered to positions among them (read-only ``int32``). Entity
    ``v`` of question ``q`` is the key ``q * n + v``. Over graphs of at most
    :data:`_DENSE_NODES` entities each key is a flag in one ``[len(graphs) * n]`` array: one
    pass lists every question's entities in order and one gather renumbers every edge (linear;
    a sort of the batch's keys cost three times as much at 2 hops). Over larger graphs, the
    keys are sorted (a pass over ``n`` cells a question would cost more)."""
    offset = np.arange(len(graphs), dtype=np.int64) * n
    n_edges = [g.n_edges for g in graphs]
    by_edge = np.repeat(offset, n_edges)
    head = np.concatenate([np.asarray(g.head) for g in graphs]).astype(np.int64) + by_edge
    tail = np.concatenate([np.asarray(g.tail) for g in graphs]).astype(np.int64) + by_edge
    names = np.concatenate(named) + np.repeat(offset, [len(x) for x in named])
    dense = n <= _DENSE_NODES
    if dense:
        used = np.zeros(len(graphs) * n, bool)
        used[head] = used[tail] = used[names] = True
        nodes = np.flatnonzero(used)
    else:
        nodes = np.unique(np.concatenate([head, tail, names]))
    start = np.searchsorted(nodes, offset)
    counts = np.diff(np.append(start, len(nodes)))
    local = nodes - np.repeat(offset, counts)  # each entity's index in its graph
    if dense:
        rank = np.empty(len(graphs) * n, np.int32)  # (read only where written)
        rank[nodes] = np.arange(len(nodes)) - np.repeat(start, counts)  # among its question's
        head, tail = rank[head], rank[tail]
    else:
        first = np.repeat(start, n_edges)  # where each edge's question's entities start
        head, tail = ((np.searchsorted(nodes, x) - first).astype(np.int32) for x in (head, tail))
    head.setflags(write=False)  # (each graph's edges are read-only views of these)
    tail.setflags(write=False)
    local_ids, at = local.tolist(), np.cumsum([0, *n_edges]).tolist()
    bounds = np.append(start, len(nodes)).tolist()
    kept = [local_ids[bounds[q] : bounds[q + 1]] for q in range(len(graphs))]
    edges = [(head[at[q] : at[q + 1]], tail[at[q] : at[q + 1]]) for q in range(len(graphs))]
    return kept, edges


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
