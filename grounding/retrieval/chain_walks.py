r"""Evidence along predicted relation chains: the edges of every walk that follows a chain from
the topic entity.

Given a topic :math:`z_0` and relation chains :math:`\pi = (r_1, \dots, r_T)`,
:class:`ChainWalks` keeps every edge :math:`(u, r_t, v)` of the graph with :math:`u` reached
from :math:`z_0` by :math:`r_1 \dots r_{t-1}`: the union, over the chains, of all walks that
follow them (the frontier of step :math:`t` is the set of nodes the walks reach, so the cost
is the edges kept, not the number of walks); with ``revisit=False``, only walks that do not
pass through the topic again before their last step. A claim ``topic -pi-> a`` of one of these chains
is supported in this evidence exactly when it is in the whole graph (Eq. (10)): the rest of the
graph carries no walk of the chain from the topic. A frontier that grows beyond ``max_nodes``
is cut to its first ``max_nodes`` nodes (by index), and the state's provenance says so.

References:
    Luo, Li, Haffari & Pan, "Reasoning on Graphs: Faithful and Interpretable Large Language
    Model Reasoning", 2024 (relation paths planned from the question, then retrieved by
    walking them in the graph).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grounding._checks import check_int
from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph

__all__ = ["ChainWalks"]

Chain = tuple[str, ...]


class ChainWalks:
    """The evidence state of a topic and its relation chains (see the module docstring).

    Args:
        graph: the evidence graph (inverse relations as edges of their own, e.g.
            :func:`grounding.datasets.metaqa_graph`).
        max_nodes: the largest frontier walked on from.
        revisit: whether a walk may pass through the topic again before its last step
            (``False``: ``movies whose writers also wrote X`` walks to the *other* movies of
            X's writers; MetaQA's answers are read that way).

    Example:
        >>> g = TypedGraph.from_triples([("a", "r", "b"), ("b", "s", "c"), ("b", "t", "d")])
        >>> ChainWalks(g).evidence("a", [("r", "s")]).graph.triples()
        [('a', 'r', 'b'), ('b', 's', 'c')]
    """

    def __init__(self, graph: TypedGraph, *, max_nodes: int = 10_000, revisit: bool = True):
        if not isinstance(graph, TypedGraph):
            raise TypeError(f"graph must be a TypedGraph, got {type(graph).__name__}")
        self.graph = graph
        self.max_nodes = check_int(max_nodes, "max_nodes")
        if not isinstance(revisit, bool):
            raise TypeError(f"revisit must be a bool, got {revisit!r:.100}")
        self.revisit = revisit
        self._relation = np.asarray(graph.relation)
        self._tail = np.asarray(graph.tail)

    def walk(
        self, topic: str, chains: Sequence[Chain]
    ) -> tuple[np.ndarray, list[tuple[str, ...]], bool]:
        """The sorted indices of the edges on the chains' walks from ``topic``, the entities
        each chain's walks end at (sorted by index), and whether a frontier was cut. An unknown
        topic raises a ``KeyError`` naming it; a relation the graph lacks walks nowhere."""
        g = self.graph
        start = np.array([g.entity_index(topic)])
        kept, ends, cut = [], [], False
        for chain in chains:
            frontier = start
            for t, r in enumerate(chain):
                if len(frontier) > self.max_nodes:
                    frontier, cut = frontier[: self.max_nodes], True
                out = g.edges_from(frontier)
                out = out[self._relation[out] == g._relation_ix.get(r, -1)]
                if not self.revisit and t < len(chain) - 1:
                    out = out[self._tail[out] != start[0]]  # not back through the topic
                kept.append(out)
                frontier = np.unique(self._tail[out])
            ends.append(tuple(g.entities[v] for v in frontier))
        edges = np.unique(np.concatenate(kept)) if kept else np.zeros(0, np.int64)
        return edges, ends, cut

    def edges(self, topic: str, chains: Sequence[Chain]) -> tuple[np.ndarray, bool]:
        """The sorted indices of the edges on the chains' walks from ``topic`` and whether a
        frontier was cut (:meth:`walk`)."""
        edges, _, cut = self.walk(topic, chains)
        return edges, cut

    def evidence(self, topic: str, chains: Sequence[Chain]) -> EvidenceState:
        """The evidence state: the graph's vocabulary with the walks' edges."""
        return self.state(chains, *self.edges(topic, chains))

    def state(self, chains: Sequence[Chain], edges: np.ndarray, cut: bool) -> EvidenceState:
        """The evidence state of walked ``edges`` (from :meth:`walk`)."""
        return EvidenceState(
            self.graph.subgraph(edges),
            provenance=dict(retriever="chain walks", chains=[list(c) for c in chains], cut=cut),
        )
