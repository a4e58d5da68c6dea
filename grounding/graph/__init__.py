r"""The graph type: :class:`TypedGraph`, a typed directed multigraph with reliabilities.

It is the retrieved snapshot :math:`G_R = (\mathcal V_R, \mathcal R_R, \mathcal E_R)` of Sec. 3.2:
integer arrays ``head``, ``relation``, ``tail`` and edge reliabilities :math:`w_e \in (0, 1]`
(Eq. (8)), with entity names, relation names and optional node texts as static metadata. It is
the one graph type of the package: the core grounds against it and the retrievers search it
(reachability and hop distances come from the path engine, :mod:`grounding.semiring`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from grounding._checks import check_reliability, frozen_array
from grounding._names import checked_names, nfc
from grounding.graph import _build as _graph_build
from grounding.semiring import EdgeIndex, Reachability
from grounding.semiring.reach import csr_slices

__all__ = ["TypedGraph", "Triple", "inverse_relation"]

Triple = tuple[str, str, str]

#: How a relation read backwards is named: the package's one convention for inverse relations.
INVERSE_SUFFIX = "^-1"


def inverse_relation(name: str) -> str:
    """The name of relation ``name`` read backwards, and back: ``"P27" <-> "P27^-1"``.

    Example:
        >>> inverse_relation("mascot_of"), inverse_relation("mascot_of^-1")
        ('mascot_of^-1', 'mascot_of')
    """
    return name[: -len(INVERSE_SUFFIX)] if name.endswith(INVERSE_SUFFIX) else name + INVERSE_SUFFIX


def _index(names: Sequence[str]) -> dict[str, int]:
    return dict(zip(names, range(len(names))))


def _edges_of(csr: tuple[np.ndarray, np.ndarray], nodes) -> tuple[np.ndarray, np.ndarray]:
    """The edges of ``nodes`` in a memoized ``(order, indptr)`` CSR, and their owners."""
    order, indptr = csr
    nodes = np.asarray(nodes, np.int64)
    owner = np.repeat(np.arange(len(nodes)), indptr[nodes + 1] - indptr[nodes])
    return order[csr_slices(indptr, nodes)], owner


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TypedGraph:
    r"""Typed directed multigraph with edge reliabilities (a pytree).

    Attributes:
        head, relation, tail: ``[n_edges]`` int32 indices into ``entities`` / ``relations``.
        reliability: ``[n_edges]`` edge reliabilities :math:`w_e \in (0, 1]` (Eq. (8)).
        entities: entity names (static); ``len(entities)`` is the number of nodes.
        relations: relation names (static), the schema :math:`\mathcal R_R`.
        texts: optional node texts (static; what text retrievers embed and index), one per
            entity, or ``()``: then :attr:`node_texts` reads the names with ``_`` as a space.

    Parallel edges and self-loops are allowed (a multigraph); direction matters. The same type
    serves the core (energies, paths) and the retrievers (reachability, node texts). A graph
    is immutable: NumPy edge arrays are kept as read-only copies (writing into them raises),
    so results cached per graph never go stale; build a new graph to change the evidence.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (8).

    Example:
        >>> g = TypedGraph.from_triples([("lou_seal", "mascot_of", "giants")])
        >>> g.n_nodes, g.n_edges, g.relations
        (2, 1, ('mascot_of',))
    """

    head: jax.Array
    relation: jax.Array
    tail: jax.Array
    reliability: jax.Array
    entities: tuple[str, ...] = dataclasses.field(metadata=dict(static=True), default=())
    relations: tuple[str, ...] = dataclasses.field(metadata=dict(static=True), default=())
    texts: tuple[str, ...] = dataclasses.field(metadata=dict(static=True), default=())

    def __post_init__(self) -> None:
        for f in ("head", "relation", "tail", "reliability"):
            object.__setattr__(self, f, frozen_array(getattr(self, f)))
        shapes = {jnp.shape(a) for a in (self.head, self.relation, self.tail, self.reliability)}
        if len(shapes) != 1 or len(next(iter(shapes))) != 1:
            raise ValueError(
                "head, relation, tail and reliability must be 1-D arrays of one length, got "
                f"shapes {[jnp.shape(a) for a in (self.head, self.relation, self.tail)]} and "
                f"{jnp.shape(self.reliability)}"
            )
        if isinstance(self.head, jax.core.Tracer):
            return
        for name, arr, bound in (
            ("head", self.head, len(self.entities)),
            ("tail", self.tail, len(self.entities)),
            ("relation", self.relation, len(self.relations)),
        ):
            a = np.asarray(arr)
            if a.size and (a.min() < 0 or a.max() >= bound):
                raise ValueError(
                    f"{name} indices must lie in [0, {bound}), got [{a.min()}, {a.max()}]"
                )
        check_reliability(self.reliability, "reliability")
        for kind, field in (("entity", "entities"), ("relation", "relations")):  # one rule
            object.__setattr__(self, field, checked_names(kind, getattr(self, field)))
        if len(set(self.entities)) != len(self.entities):
            raise ValueError("entities contains duplicate names")
        if len(set(self.relations)) != len(self.relations):
            raise ValueError("relations contains duplicate names")
        if self.texts:
            if len(self.texts) != len(self.entities):
                raise ValueError(f"{len(self.entities)} entities but {len(self.texts)} texts")
            if not all(isinstance(t, str) for t in self.texts):
                raise TypeError("node texts must be str")

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_triples(
        cls,
        triples: Iterable[Triple],
        reliability: Sequence[float] | None = None,
        *,
        entities: Sequence[str] | None = None,
        relations: Sequence[str] | None = None,
        texts: Sequence[str] | None = None,
    ) -> TypedGraph:
        """Build from ``(head, relation, tail)`` name triples.

        Args:
            triples: iterable of name triples.
            reliability: optional per-triple reliabilities in ``(0, 1]`` (default 1).
            entities, relations: optional fixed vocabularies (e.g. to share indices across
                evidence states, or to keep isolated nodes); names not in a given vocabulary
                raise ``ValueError``. Without them, names are indexed in order of first
                appearance.
            texts: optional node texts, one per entity (requires ``entities``).

        Example:
            >>> g = TypedGraph.from_triples([("a", "r", "b")], entities=["a", "b", "c"],
            ...                             texts=["A.", "B.", "C."])
            >>> g.n_nodes, g.node_texts, g.reachable(0).tolist()
            (3, ('A.', 'B.', 'C.'), [0, 1])
        """
        triples = [tuple(map(nfc, t)) for t in triples]  # names in their one spelling
        for i, t in enumerate(triples):
            if len(t) != 3 or not all(isinstance(x, str) for x in t):
                raise ValueError(f"triples[{i}] must be a (head, relation, tail) of strings: {t!r}")
        if texts is not None and entities is None:
            raise ValueError("texts needs the entities they belong to (pass entities=)")
        # dicts keep first-appearance order: linear in the number of triples
        ents = list(map(nfc, entities)) if entities is not None else []
        rels = list(map(nfc, relations)) if relations is not None else []
        if entities is None:
            ents = list(dict.fromkeys(x for h, _, t in triples for x in (h, t)))
        if relations is None:
            rels = list(dict.fromkeys(r for _, r, _ in triples))
        e_ix, r_ix = _index(ents), _index(rels)
        for i, (h, r, t) in enumerate(triples):
            for kind, name, ix in (("entity", h, e_ix), ("relation", r, r_ix), ("entity", t, e_ix)):
                if name not in ix:
                    raise ValueError(f"triples[{i}]: unknown {kind} {name!r}")
        if reliability is None:
            rel_arr = np.ones(len(triples))
        else:
            rel_arr = np.asarray(reliability, dtype=float)
            if rel_arr.shape != (len(triples),):
                raise ValueError(
                    f"reliability must have one value per triple ({len(triples)}), got shape "
                    f"{rel_arr.shape}"
                )
        # device_put, not jnp.asarray: no program compiled (and kept) per number of triples
        ix = np.asarray([(e_ix[h], r_ix[r], e_ix[t]) for h, r, t in triples], np.int32)
        ix = ix.reshape(-1, 3)
        return cls(
            head=jax.device_put(ix[:, 0].copy()),
            relation=jax.device_put(ix[:, 1].copy()),
            tail=jax.device_put(ix[:, 2].copy()),
            reliability=jax.device_put(rel_arr),
            entities=tuple(ents),
            relations=tuple(rels),
            texts=tuple(texts) if texts is not None else (),
        )

    @classmethod
    def from_edges(
        cls,
        entities: Sequence[str],
        edges: Iterable[tuple[str, str] | Triple],
        *,
        texts: Sequence[str] | None = None,
        relations: Sequence[str] | None = None,
        default_relation: str = "related_to",
    ) -> TypedGraph:
        """Build over a fixed node list from ``(source, target)`` pairs (relation
        ``default_relation``) or ``(source, relation, target)`` triples; errors name the edge.

        Example:
            >>> g = TypedGraph.from_edges(["a", "b"], [("a", "b")], texts=["A.", "B."])
            >>> g.triples(), g.texts
            ([('a', 'related_to', 'b')], ('A.', 'B.'))
        """
        entities = tuple(entities)
        triples = _graph_build.edge_triples(entities, edges, default_relation)
        rels = relations if relations is not None else list(dict.fromkeys(r for _, r, _ in triples))
        return cls.from_triples(
            triples, entities=entities, relations=tuple(rels) or (default_relation,), texts=texts
        )

    @classmethod
    def _trusted(cls, head, relation, tail, reliability, entities, relations, texts=()):
        """A graph from parts known to be valid (derived from a validated graph: immutable
        JAX edge arrays, names and texts taken from it), built without the checks of
        :meth:`__post_init__` (which cost a pass over the names)."""
        g = object.__new__(cls)
        g.__dict__.update(
            head=head, relation=relation, tail=tail, reliability=reliability,
            entities=tuple(entities), relations=tuple(relations), texts=tuple(texts),
        )  # fmt: skip
        return g

    def __repr__(self) -> str:  # the size: TypedGraph(nodes=24, edges=31, relations=5)
        n, r = (self.n_nodes, self.n_edges), len(self.relations)
        return f"TypedGraph(nodes={n[0]}, edges={n[1]}, relations={r})"

    # ---------------------------------------------------------------- views
    @property
    def n_nodes(self) -> int:
        return len(self.entities)

    @property
    def n_edges(self) -> int:
        return int(jnp.shape(self.head)[0])

    def edge_index(self) -> EdgeIndex:
        """The incoming-edge layout (:class:`grounding.semiring.EdgeIndex`) of this graph, for
        repeated energy fields, edge usages and hop distances without rebuilding it.

        Needs concrete edge arrays (build it outside ``jit`` and pass it in as an argument)."""
        return EdgeIndex.from_edges(self.head, self.tail, self.n_nodes)

    @functools.cached_property
    def node_texts(self) -> tuple[str, ...]:
        """:attr:`texts`, or the entity names with ``_`` read as a space when none are given
        (so ``amino_acid`` embeds as ``amino acid``); built once per graph."""
        return self.texts or tuple(n.replace("_", " ") for n in self.entities)

    @functools.cached_property
    def _host_edges(self) -> tuple[np.ndarray, ...]:  # (NumPy views of CPU arrays: no copy)
        return tuple(np.asarray(x) for x in (self.head, self.relation, self.tail, self.reliability))

    @functools.cached_property
    def _entity_ix(self) -> dict[str, int]:
        return _index(self.entities)

    @functools.cached_property
    def _relation_ix(self) -> dict[str, int]:
        return _index(self.relations)

    def entity_index(self, name: str) -> int:
        """Index of entity ``name`` (in Unicode NFC); ``KeyError`` naming an unknown one."""
        try:
            return self._entity_ix[name]
        except (KeyError, TypeError):
            if isinstance(name, str) and nfc(name) in self._entity_ix:  # another spelling
                return self._entity_ix[nfc(name)]
            raise KeyError(f"unknown entity {name!r} (the graph has {self.n_nodes})") from None

    def relation_index(self, name: str) -> int:
        """Index of relation ``name``; ``KeyError`` naming it if it is not in the schema."""
        try:
            return self._relation_ix[name]
        except (KeyError, TypeError):
            raise KeyError(f"unknown relation {name!r}") from None

    def has_entity(self, name: object) -> bool:
        """Whether ``name`` (in Unicode NFC) is an entity (``None``, non-strings: no)."""
        return isinstance(name, str) and (name in self._entity_ix or nfc(name) in self._entity_ix)

    # ---------------------------------------------------------------- reachability
    @functools.cached_property
    def _reach(self) -> Reachability:
        return Reachability(self.head, self.tail, self.n_nodes)

    def reachable(
        self, anchors: int | Sequence[int] | np.ndarray, max_hops: int | None = None
    ) -> np.ndarray:
        """Sorted node indices reachable from any of ``anchors`` (indices, themselves
        included) within ``max_hops`` edges (``None``: any number); see
        :class:`grounding.semiring.Reachability`, memoized per graph."""
        return self._reach.reachable(anchors, max_hops)

    @functools.cached_property
    def _in_csr(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(np.asarray(self.tail), kind="stable")
        indptr = np.searchsorted(np.asarray(self.tail)[order], np.arange(self.n_nodes + 1))
        return order, indptr

    def in_edges(self, node: int) -> np.ndarray:
        """Indices of the edges into ``node``, in edge order (memoized CSR of the tails)."""
        order, indptr = self._in_csr
        return order[indptr[node] : indptr[node + 1]]

    @functools.cached_property
    def _out_csr(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(np.asarray(self.head), kind="stable")
        indptr = np.searchsorted(np.asarray(self.head)[order], np.arange(self.n_nodes + 1))
        return order, indptr

    def edges_from(self, nodes: Sequence[int] | np.ndarray) -> np.ndarray:
        """Sorted indices of the edges leaving any of ``nodes`` (memoized CSR of the heads;
        the cost is their out-degree, not the graph's size)."""
        order, indptr = self._out_csr
        return np.sort(order[csr_slices(indptr, np.unique(np.asarray(nodes, np.int64)))])

    def distances_to_nearest(
        self,
        anchor_sets: Sequence[Sequence[int]],
        max_hops: int | None = None,
        *,
        compact: bool = False,
        pairs: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``[Q, N]`` hop distance from the nearest anchor index of each set (one set per query),
        :meth:`grounding.semiring.Reachability.distances_to_nearest` (``compact`` and
        ``pairs`` likewise)."""
        return self._reach.distances_to_nearest(anchor_sets, max_hops, compact=compact, pairs=pairs)

    def in_edges_of(self, nodes: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`in_edges` of each of ``nodes`` (repeats allowed), concatenated in the order of
        ``nodes``, and for each edge the position in ``nodes`` of the node it enters."""
        return _edges_of(self._in_csr, nodes)

    def out_edges_of(self, nodes: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The edges leaving each of ``nodes`` (repeats allowed), in edge order per node,
        concatenated in the order of ``nodes``, and for each edge the position in ``nodes`` of
        the node it leaves."""
        return _edges_of(self._out_csr, nodes)

    def distances(
        self, anchors: int | Sequence[int] | np.ndarray, max_hops: int | None = None
    ) -> np.ndarray:
        """``[A, N]`` directed hop distances from each anchor index
        (:data:`grounding.semiring.recursion.UNREACHABLE` when not reached within ``max_hops``)."""
        return self._reach.distances(anchors, max_hops)

    def triples(self) -> list[Triple]:
        """The edges as name triples, in edge order."""
        h, r, t = (np.asarray(a) for a in (self.head, self.relation, self.tail))
        return [(self.entities[a], self.relations[b], self.entities[c]) for a, b, c in zip(h, r, t)]

    def has_triple(self, triple: Triple) -> bool:
        return tuple(triple) in set(self.triples())

    def edge_mask(self, triples: Iterable[Triple]) -> np.ndarray:
        """Boolean mask over edges selecting the given triples (all parallel copies)."""
        wanted = {tuple(t) for t in triples}
        return np.array([t in wanted for t in self.triples()], dtype=bool)

    def subgraph(self, keep: np.ndarray) -> TypedGraph:
        """The same vocabulary with only the edges where ``keep`` is true (a boolean mask over
        the edges), or only the edges ``keep`` lists (increasing edge indices)."""
        keep = np.asarray(keep)
        if keep.dtype.kind in "iu":
            if keep.ndim != 1 or (len(keep) and (keep[0] < 0 or keep[-1] >= self.n_edges)):
                raise ValueError(f"edge indices must lie in [0, {self.n_edges})")
            if (keep[1:] <= keep[:-1]).any():  # (np.diff costs 5x more on a small array)
                raise ValueError("edge indices must be strictly increasing")
        else:
            keep = keep.astype(bool)
            if keep.shape != (self.n_edges,):
                raise ValueError(f"keep must have shape ({self.n_edges},), got {keep.shape}")
        # NumPy indexing, kept on the host as read-only arrays (no transfer per subgraph: a
        # batch reaches the device once, stacked, when it is grounded). A subset of valid edges
        # over the same vocabulary is valid: no checks; the name lookups are this graph's.
        parts = [x[keep] for x in self._host_edges]
        for part in parts:
            part.setflags(write=False)
        sub = TypedGraph._trusted(*parts, self.entities, self.relations, self.texts)
        sub.__dict__.update(_entity_ix=self._entity_ix, _relation_ix=self._relation_ix)
        return sub

    def add_triples(self, triples: Iterable[Triple], reliability: float = 1.0) -> TypedGraph:
        """A new graph with extra edges over the same vocabulary (names must exist)."""
        extra = TypedGraph.from_triples(
            list(triples), None, entities=self.entities, relations=self.relations
        )

        def joined(mine, theirs):  # on the host: no program compiled per size
            return jax.device_put(np.concatenate([np.asarray(mine), np.asarray(theirs)]))

        w = np.asarray(self.reliability)
        return dataclasses.replace(
            self,
            head=joined(self.head, extra.head),
            relation=joined(self.relation, extra.relation),
            tail=joined(self.tail, extra.tail),
            reliability=joined(w, np.full(extra.n_edges, reliability, w.dtype)),
        )

    def with_entities(self, names: Iterable[str], texts: Sequence[str] | None = None) -> TypedGraph:
        """This graph with ``names`` added as entities without edges, after its own (a name it
        already holds, or a repeat, is added once): e.g. the answers a model may give, so that
        they are graph entities with indices, or one vocabulary shared by several graphs.
        Edges, relations and existing indices are unchanged; checked as any graph is, in
        time linear in its size (no triple is read again). ``texts``: one per name (the
        added ones keep theirs); a graph with texts gives an added name its own, ``_`` read
        as a space, when none is given.

        Example:
            >>> g = TypedGraph.from_triples([("a", "r", "b")]).with_entities(["c", "a"])
            >>> g.entities, g.n_edges
            (('a', 'b', 'c'), 1)
        """
        entities, texts = _graph_build.new_entities(self, names, texts)
        return TypedGraph(
            self.head, self.relation, self.tail, self.reliability, entities, self.relations, texts
        )

    # ---------------------------------------------------------------- NetworkX interop
    def to_networkx(self) -> Any:
        """A ``networkx.MultiDiGraph`` with ``relation`` and ``reliability`` edge attributes."""
        return _graph_build.to_networkx(self)

    @classmethod
    def from_networkx(
        cls,
        g: Any,
        relation_attr: str = "relation",
        default_relation: str = "related_to",
        reliability_attr: str = "reliability",
    ) -> TypedGraph:
        """From any NetworkX (multi)(di)graph; undirected edges become both ordered arcs."""
        triples, rel, nodes, relations = _graph_build.networkx_triples(
            g, relation_attr, default_relation, reliability_attr
        )
        return cls.from_triples(triples, rel, entities=nodes, relations=relations)
