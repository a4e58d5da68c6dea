"""Deprecated names of the retrieval layer, kept for one release.

``TextGraph`` was a second graph type; retrieval graphs are :class:`grounding.TypedGraph` s
with node texts now. ``TextGraph(...)``, ``TextGraph.from_edges`` and
``TextGraph.from_typed_graph`` warn and return a :class:`~grounding.TypedGraph`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

import numpy as np

from grounding.graph import TypedGraph

__all__ = ["TextGraph"]


def _warn(what: str) -> None:
    warnings.warn(
        f"grounding.retrieval.{what} is deprecated and will be removed in the next release; "
        "use grounding.TypedGraph (with texts=) instead",
        DeprecationWarning,
        stacklevel=3,
    )


def _typed(ids, texts, head, tail, relation, relations) -> TypedGraph:
    if not tuple(ids):
        raise ValueError("the graph has no nodes")
    head, tail, relation = (np.asarray(a, np.int32) for a in (head, tail, relation))
    return TypedGraph(
        head=head,
        relation=relation,
        tail=tail,
        reliability=np.ones(len(head)),
        entities=tuple(ids),
        relations=tuple(relations),
        texts=tuple(texts),
    )


class TextGraph:
    """Deprecated: a :class:`~grounding.TypedGraph` with node texts."""

    def __new__(cls, ids, texts, head, tail, relation, relations=("related_to",)) -> TypedGraph:
        _warn("TextGraph")
        return _typed(ids, texts, head, tail, relation, relations)

    @staticmethod
    def from_edges(
        ids: Sequence[str],
        texts: Sequence[str],
        edges: Iterable[tuple[str, str] | tuple[str, str, str]],
        relations: Sequence[str] | None = None,
    ) -> TypedGraph:
        """``(source, target)`` or ``(source, relation, target)`` id tuples; untyped edges get
        the relation ``"related_to"``."""
        _warn("TextGraph.from_edges")
        return TypedGraph.from_edges(ids, edges, texts=texts, relations=relations)

    @staticmethod
    def from_typed_graph(graph: TypedGraph, texts: Sequence[str] | None = None) -> TypedGraph:
        """The graph itself (with ``texts`` when given)."""
        _warn("TextGraph.from_typed_graph")
        if texts is None:
            return graph
        return TypedGraph(
            graph.head, graph.relation, graph.tail, graph.reliability, graph.entities,
            graph.relations, tuple(texts),
        )  # fmt: skip
