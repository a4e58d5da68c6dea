r"""Text-bearing directed graphs, queries, and reachability for retrieval.

A :class:`TextGraph` is what a text retriever searches: directed (optionally typed) edges
whose nodes carry text. Reachability from an anchor is the hard constraint of
Path-Constrained Retrieval (seed ``000``): :math:`C(a) = \{v : a \leadsto v,\ |path| \le
d_{\max}\}`, the anchor included. Three exact implementations agree (tested):

- :meth:`TextGraph.distances`: batched breadth-first search in the Boolean semiring
  (:func:`grounding.semiring.hop_distances`, JAX), ``[A, N]`` hop distances;
- :meth:`TextGraph.reachable` with ``max_hops=None``: the condensation of the graph into
  strongly connected components, built once; every anchor in one component shares one
  reachable set, computed once per component and memoised (what makes unlimited-depth
  PCR cheap on large graphs);
- :meth:`TextGraph.reachable` with a depth limit: frontier expansion over a CSR adjacency,
  touching only the edges leaving the frontier (cheap for small ``d_max``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from grounding.evidence import EvidenceState, TypedGraph

__all__ = ["TextGraph", "Query", "UNREACHABLE"]

#: Hop distance of a node that is not reachable (within the depth limit).
UNREACHABLE = -1


@dataclasses.dataclass(frozen=True)
class Query:
    """One retrieval query.

    Attributes:
        text: the query text.
        anchor: id of the anchor node (``None``: no anchor; anchored retrievers then apply
            their fallback policy).
        relevant: ids of the relevant nodes (for evaluation; may be empty at run time).
        id: an identifier for reports.
    """

    text: str
    anchor: str | None = None
    relevant: tuple[str, ...] = ()
    id: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"query text must be a str, got {type(self.text).__name__}")
        if isinstance(self.relevant, str):
            raise TypeError("relevant must be a sequence of node ids, not one str")
        object.__setattr__(self, "relevant", tuple(self.relevant))


@dataclasses.dataclass(frozen=True, eq=False)
class TextGraph:
    """A directed multigraph whose nodes carry text (self-loops and parallel edges allowed).

    Attributes:
        ids: node identifiers (unique).
        texts: one text per node (what retrievers embed and index).
        head, tail: ``[n_edges]`` int node indices of each directed edge.
        relation: ``[n_edges]`` int relation ids into ``relations``.
        relations: relation names (untyped graphs use one relation, ``"related_to"``).

    Example:
        >>> g = TextGraph.from_edges(["a", "b", "c"], ["A", "B", "C"], [("a", "b"), ("b", "c")])
        >>> g.reachable(g.index("a")).tolist(), g.reachable(g.index("a"), max_hops=1).tolist()
        ([0, 1, 2], [0, 1])
    """

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    head: np.ndarray
    tail: np.ndarray
    relation: np.ndarray
    relations: tuple[str, ...] = ("related_to",)

    def __post_init__(self) -> None:
        ids, texts = tuple(self.ids), tuple(self.texts)
        if not ids:
            raise ValueError("the graph has no nodes")
        if len(texts) != len(ids):
            raise ValueError(f"{len(ids)} node ids but {len(texts)} texts")
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("node texts must be str")
        if len(set(ids)) != len(ids):
            raise ValueError("node ids must be unique")
        arrays = [np.asarray(a) for a in (self.head, self.tail, self.relation)]
        if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
            raise ValueError(
                f"head, tail, relation must be 1-D of one length, got {[a.shape for a in arrays]}"
            )
        head, tail, rel = (a.astype(np.int64) for a in arrays)
        for name, a, bound in (("head", head, len(ids)), ("tail", tail, len(ids))):
            if a.size and (a.min() < 0 or a.max() >= bound):
                raise ValueError(f"{name} indices must lie in [0, {bound})")
        if rel.size and (rel.min() < 0 or rel.max() >= len(self.relations)):
            raise ValueError(f"relation ids must lie in [0, {len(self.relations)})")
        for name, a in (("ids", ids), ("texts", texts), ("head", head), ("tail", tail)):
            object.__setattr__(self, name, a)
        object.__setattr__(self, "relation", rel)
        object.__setattr__(self, "relations", tuple(self.relations))

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_edges(
        cls,
        ids: Sequence[str],
        texts: Sequence[str],
        edges: Iterable[tuple[str, str] | tuple[str, str, str]],
        relations: Sequence[str] | None = None,
    ) -> TextGraph:
        """Build from node ids, texts and ``(source, target)`` or ``(source, relation,
        target)`` id tuples (relation names are collected in order of first appearance
        unless ``relations`` is given)."""
        ix = {n: i for i, n in enumerate(ids)}
        rels = list(relations) if relations is not None else []
        h, r, t = [], [], []
        for j, e in enumerate(edges):
            s, rel, d = (e[0], "related_to", e[1]) if len(e) == 2 else e
            for end in (s, d):
                if end not in ix:
                    raise ValueError(f"edge {j} ({e!r}) names an unknown node {end!r}")
            if rel not in rels:
                if relations is not None:
                    raise ValueError(f"edge {j} has an unknown relation {rel!r}")
                rels.append(rel)
            h.append(ix[s]), r.append(rels.index(rel)), t.append(ix[d])
        return cls(
            ids=tuple(ids),
            texts=tuple(texts),
            head=np.asarray(h, np.int64),
            tail=np.asarray(t, np.int64),
            relation=np.asarray(r, np.int64),
            relations=tuple(rels) or ("related_to",),
        )

    @classmethod
    def from_typed_graph(cls, graph: TypedGraph, texts: Sequence[str] | None = None) -> TextGraph:
        """From a :class:`~grounding.TypedGraph`; default texts are the entity names with
        ``_`` read as a space (so ``amino_acid`` embeds as ``amino acid``)."""
        names = graph.entities
        return cls(
            ids=names,
            texts=tuple(texts) if texts is not None else tuple(n.replace("_", " ") for n in names),
            head=np.asarray(graph.head),
            tail=np.asarray(graph.tail),
            relation=np.asarray(graph.relation),
            relations=graph.relations,
        )

    # ------------------------------------------------------------------ views
    @property
    def n_nodes(self) -> int:
        return len(self.ids)

    @property
    def n_edges(self) -> int:
        return int(self.head.shape[0])

    @functools.cached_property
    def _ix(self) -> Mapping[str, int]:
        return {n: i for i, n in enumerate(self.ids)}

    def index(self, node: str) -> int:
        """Index of node ``node``; ``ValueError`` naming it if it is not in the graph."""
        try:
            return self._ix[node]
        except (KeyError, TypeError):
            raise ValueError(
                f"unknown node {node!r} (the graph has {self.n_nodes} nodes)"
            ) from None

    def has(self, node: str | None) -> bool:
        return node is not None and node in self._ix

    def to_typed_graph(self) -> TypedGraph:
        """The whole graph as a :class:`~grounding.TypedGraph` (reliability 1)."""
        return self._typed(np.ones(self.n_edges, bool))

    def _typed(self, keep: np.ndarray) -> TypedGraph:
        import jax.numpy as jnp

        return TypedGraph(
            head=jnp.asarray(self.head[keep], jnp.int32),
            relation=jnp.asarray(self.relation[keep], jnp.int32),
            tail=jnp.asarray(self.tail[keep], jnp.int32),
            reliability=jnp.ones(int(keep.sum())),
            entities=self.ids,
            relations=self.relations,
        )

    # ------------------------------------------------------------------ reachability
    def distances(self, anchors: Sequence[int] | np.ndarray, max_hops: int | None = None):
        """``[A, N]`` hop distances from each anchor (``UNREACHABLE`` = -1), by the batched
        Boolean-semiring BFS of :func:`grounding.semiring.hop_distances` (JAX)."""
        from grounding.semiring import hop_distances

        anchors = np.asarray(anchors, np.int64).reshape(-1)
        if anchors.size and (anchors.min() < 0 or anchors.max() >= self.n_nodes):
            raise ValueError(f"anchor indices must lie in [0, {self.n_nodes}), got {anchors}")
        if max_hops is not None and max_hops < 0:
            raise ValueError(f"max_hops must be >= 0 or None, got {max_hops}")
        if self.n_edges == 0 or max_hops == 0:  # nothing to traverse: only the anchors
            out = np.full((len(anchors), self.n_nodes), UNREACHABLE, np.int64)
            out[np.arange(len(anchors)), anchors] = 0
            return out
        return np.asarray(
            hop_distances(self.head, self.tail, anchors, n_nodes=self.n_nodes, max_hops=max_hops)
        )

    @functools.cached_property
    def _csr(self) -> sp.csr_matrix:
        data = np.ones(self.n_edges, bool)
        return sp.csr_matrix((data, (self.head, self.tail)), shape=(self.n_nodes,) * 2)

    @functools.cached_property
    def _condensation(self) -> tuple[np.ndarray, sp.csr_matrix, np.ndarray, np.ndarray, dict]:
        n_comp, label = csgraph.connected_components(self._csr, directed=True, connection="strong")
        cross = label[self.head] != label[self.tail]
        dag = sp.csr_matrix(
            (np.ones(int(cross.sum()), bool), (label[self.head][cross], label[self.tail][cross])),
            shape=(n_comp, n_comp),
        )
        order = np.argsort(label, kind="stable")  # members of component c: order[start[c]:...]
        start = np.searchsorted(label[order], np.arange(n_comp + 1))
        return label, dag, order, start, {}

    def reachable(self, anchor: int, max_hops: int | None = None) -> np.ndarray:
        """Sorted indices of the nodes reachable from node ``anchor`` (itself included)
        within ``max_hops`` edges (``None``: any number)."""
        if not 0 <= int(anchor) < self.n_nodes:
            raise ValueError(f"anchor index {anchor} out of range [0, {self.n_nodes})")
        if max_hops is None:
            label, dag, order, start, memo = self._condensation
            c = int(label[anchor])
            if c not in memo:  # one BFS on the condensation DAG per component, then reused
                comps = csgraph.breadth_first_order(
                    dag, c, directed=True, return_predecessors=False
                )
                reach = np.sort(np.concatenate([order[start[j] : start[j + 1]] for j in comps]))
                reach.setflags(write=False)  # shared by every anchor of the component
                memo[c] = reach
            return memo[c]
        if max_hops < 0:
            raise ValueError(f"max_hops must be >= 0 or None, got {max_hops}")
        seen = np.zeros(self.n_nodes, bool)
        seen[anchor] = True
        frontier = np.array([anchor])
        indptr, indices = self._csr.indptr, self._csr.indices
        for _ in range(max_hops):
            if not len(frontier):
                break
            nxt = np.concatenate([indices[indptr[u] : indptr[u + 1]] for u in frontier])
            nxt = np.unique(nxt[~seen[nxt]])
            seen[nxt] = True
            frontier = nxt
        return np.flatnonzero(seen)

    # ------------------------------------------------------------------ evidence
    def evidence(
        self, anchor: int | None, nodes: Sequence[int], provenance: Mapping[str, Any] | None = None
    ) -> EvidenceState:
        """The evidence state a retrieval hands to the core: the subgraph induced on the
        anchor, the retrieved nodes and one shortest path from the anchor to each reachable
        retrieved node (so path support of Eq. (10) is present), over the full vocabulary."""
        keep = np.zeros(self.n_nodes, bool)
        keep[np.asarray(nodes, np.int64)] = True
        if anchor is not None:
            keep[anchor] = True
            dist = self.distances([anchor])[0]
            for v in np.asarray(nodes, np.int64):
                while dist[v] > 0:  # walk back along any in-edge that is one hop closer
                    into = np.flatnonzero((self.tail == v) & (dist[self.head] == dist[v] - 1))
                    v = int(self.head[into[0]])
                    keep[v] = True
        edges = keep[self.head] & keep[self.tail]
        return EvidenceState(graph=self._typed(edges), provenance=dict(provenance or {}))
