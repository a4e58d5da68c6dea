"""The bodies of :class:`grounding.TypedGraph`'s other constructors and of its NetworkX interop
(kept apart so that ``graph.py`` holds the type and its views)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import networkx as nx
import numpy as np

from grounding._names import checked_names

Triple = tuple[str, str, str]
TypedGraph = Any  # grounding.graph.TypedGraph (not imported: the package imports this module)


def edge_triples(
    entities: tuple[str, ...], edges: Iterable[tuple[str, str] | Triple], default_relation: str
) -> list[Triple]:
    """The triples of ``(source, target)`` pairs or triples over a fixed node list (errors
    name the edge: its shape, or a node the list lacks)."""
    if not entities:
        raise ValueError("the graph has no nodes")
    known = set(entities)
    triples = []
    for j, e in enumerate(edges):
        e = tuple(e)
        if len(e) not in (2, 3):
            raise ValueError(f"edge {j} ({e!r}) must be (source, target) or a triple")
        t = (e[0], default_relation, e[1]) if len(e) == 2 else e
        for end in (t[0], t[2]):
            if end not in known:
                raise ValueError(f"edge {j} ({e!r}) names an unknown node {end!r}")
        triples.append(t)
    return triples


def to_networkx(graph: TypedGraph) -> Any:
    g = nx.MultiDiGraph()
    g.add_nodes_from(graph.entities)
    for (h, r, t), w in zip(graph.triples(), np.asarray(graph.reliability)):
        g.add_edge(h, t, relation=r, reliability=float(w))
    return g


def networkx_triples(
    g: Any, relation_attr: str, default_relation: str, reliability_attr: str
) -> tuple[list[Triple], list[float], list[str], list[str]]:
    """Triples, reliabilities, nodes and relations of a NetworkX graph (undirected edges give
    both ordered arcs)."""
    triples, rel = [], []
    directed = g.is_directed()
    for u, v, data in g.edges(data=True):
        r = str(data.get(relation_attr, default_relation))
        w = float(data.get(reliability_attr, 1.0))
        for a, b in [(u, v)] if directed else [(u, v), (v, u)]:
            triples.append((str(a), r, str(b)))
            rel.append(w)
    relations = list(dict.fromkeys(t[1] for t in triples))
    return triples, rel, [str(n) for n in g.nodes], relations


def new_entities(
    graph: TypedGraph, names: Iterable[str], texts: Sequence[str] | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The entities and texts of ``graph`` with ``names`` added after its own (a name it holds,
    or a repeat, is added once; ``texts``: one per name, kept for the added ones)."""
    if isinstance(names, (str, bytes)):
        raise TypeError(f"names must be a sequence of entity names, not a string: {names!r:.100}")
    names = list(names)
    if texts is not None and len(texts) != len(names):
        raise ValueError(f"{len(names)} names but {len(texts)} texts")
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"entity names must be str, got {bad[0]!r:.100}")
    names = list(checked_names("added entity", names))  # the one rule, named by its place here
    added: dict[str, str] = {}
    for i, n in enumerate(names):
        if not graph.has_entity(n) and n not in added:
            added[n] = texts[i] if texts is not None else n.replace("_", " ")
    entities = graph.entities + tuple(added)
    if graph.texts or texts is not None:
        return entities, graph.node_texts + tuple(added.values())
    return entities, ()
