"""Values derived from a graph, kept for the last few graphs: a retriever or a solver works
on one graph for many questions, so what it derives from the graph's edges (an index, padded
arrays) is built once, and forgotten when the graph is gone or has not been seen for a while."""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from typing import Any


class GraphMemo:
    """A value per graph (and ``key``), for the last ``size`` graphs stored. Graphs are told
    apart by identity, checked through a weak reference (an id can be reused once a graph is
    freed); a graph's edge arrays cannot change in place (JAX arrays are immutable, and
    :class:`~grounding.TypedGraph` keeps read-only copies of NumPy ones), so a value stays
    right for as long as its graph lives. The caller builds the value (no callback: the
    memo sits below the floors that use it)::

        value = memo.find(graph, key)
        if value is None:
            value = memo.keep(graph, key, build(graph))
    """

    def __init__(self, size: int = 8):
        self.size = size
        self._entries: dict[int, tuple[weakref.ref, Hashable, Any]] = {}

    def find(self, graph: object, key: Hashable = None) -> Any:
        """The value kept for this graph and ``key``, else ``None``."""
        hit = self._entries.get(id(graph))
        return hit[2] if hit is not None and hit[0]() is graph and hit[1] == key else None

    def keep(self, graph: object, key: Hashable, value: Any) -> Any:
        """Keep ``value`` for this graph and ``key`` (dropping the oldest graph's beyond
        ``size``); returns ``value``."""
        self._entries.pop(id(graph), None)
        if len(self._entries) >= self.size:
            self._entries.pop(next(iter(self._entries)))
        self._entries[id(graph)] = (weakref.ref(graph), key, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, graph: object) -> bool:
        hit = self._entries.get(id(graph))
        return hit is not None and hit[0]() is graph

    def clear(self) -> None:
        self._entries.clear()
