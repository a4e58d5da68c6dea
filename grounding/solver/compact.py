"""Evidence compaction: each question's evidence state over a small vocabulary of its own, one
padded size for a batch, so that questions with evidence graphs of similar size share one
compiled program whatever the size of the graph they were retrieved from.

Grounding results are unchanged by compaction: walks only use edges, and every entity a problem
names is kept (:func:`grounding.ground_batch` compacts per-question evidence this way).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grounding._shapes import bucket
from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph

__all__ = ["compact_evidence"]


def compact_evidence(
    states: Sequence[EvidenceState], keep: Sequence[Sequence[str]], min_size: int = 64
) -> list[EvidenceState]:
    """Each state over a small vocabulary: the entities its edges touch and its ``keep`` names
    (the problem's entities), in their original order, padded with isolated entities
    ``<padding i>`` to one size for the whole batch, the next power of two of ``min_size`` and
    of every state's entity count; relations, reliabilities and the other fields
    of the state unchanged. Built from the arrays directly (no name validation: the names come
    from a validated graph).

    Raises:
        ValueError: ``states`` and ``keep`` of different lengths.
        KeyError: a ``keep`` name not in its state's graph.
    """
    if len(states) != len(keep):
        raise ValueError(f"{len(states)} evidence states but {len(keep)} keep lists")
    touched = [_touched(s.graph, k) for s, k in zip(states, keep)]
    size = bucket(max([1, min_size, *map(len, touched)]), floor=1)
    pads: dict[int, tuple[str, ...]] = {}
    out = []
    for state, old in zip(states, touched):
        g = state.graph
        if id(g.entities) not in pads:  # derived graphs share their vocabulary tuple
            pads[id(g.entities)] = _padding(g, size)
        pad = pads[id(g.entities)][: size - len(old)]
        head, tail = (
            np.searchsorted(old, np.asarray(x)).astype(np.int32) for x in (g.head, g.tail)
        )
        names = old.tolist()
        texts = tuple(map(g.texts.__getitem__, names)) + ("",) * len(pad) if g.texts else ()
        head.setflags(write=False)
        tail.setflags(write=False)
        graph = TypedGraph._trusted(
            head,
            g.relation,
            tail,
            g.reliability,
            tuple(map(g.entities.__getitem__, names)) + pad,
            g.relations,
            texts,
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


def _touched(g: TypedGraph, keep: Sequence[str]) -> np.ndarray:
    """Sorted indices of the entities the edges of ``g`` touch and of the ``keep`` names."""
    try:
        named = np.fromiter(map(g._entity_ix.__getitem__, keep), np.int64, len(keep))
    except (KeyError, TypeError):  # the message names the entity
        named = np.fromiter((g.entity_index(name) for name in keep), np.int64)
    return np.unique(np.concatenate([np.asarray(g.head), np.asarray(g.tail), named]))
