r"""Evidence states: typed directed graphs with reliabilities, contradictions and coverage.

A :class:`TypedGraph` is the retrieved snapshot :math:`G_R = (\mathcal V_R, \mathcal R_R,
\mathcal E_R)` of Sec. 3.2: integer arrays ``head``, ``relation``, ``tail`` and edge
reliabilities :math:`w_e \in (0, 1]` (Eq. (8)), with entity and relation names as static
metadata. An :class:`EvidenceState` is the broader state :math:`R \supseteq G_R`: it adds
explicit counter-evidence, functional relation declarations, a coverage estimate
:math:`c_R` (Axiom 6) and provenance.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from grounding._checks import check_reliability

__all__ = ["TypedGraph", "EvidenceState", "EvidenceStatus", "Triple"]

Triple = tuple[str, str, str]


def _index(names: Sequence[str]) -> dict[str, int]:
    return {n: i for i, n in enumerate(names)}


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TypedGraph:
    r"""Typed directed multigraph with edge reliabilities (a pytree).

    Attributes:
        head, relation, tail: ``[n_edges]`` int32 indices into ``entities`` / ``relations``.
        reliability: ``[n_edges]`` edge reliabilities :math:`w_e \in (0, 1]` (Eq. (8)).
        entities: entity names (static); ``len(entities)`` is the number of nodes.
        relations: relation names (static), the schema :math:`\mathcal R_R`.

    Parallel edges and self-loops are allowed (a multigraph); direction matters.

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

    def __post_init__(self) -> None:
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
        if len(set(self.entities)) != len(self.entities):
            raise ValueError("entities contains duplicate names")
        if len(set(self.relations)) != len(self.relations):
            raise ValueError("relations contains duplicate names")

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_triples(
        cls,
        triples: Iterable[Triple],
        reliability: Sequence[float] | None = None,
        *,
        entities: Sequence[str] | None = None,
        relations: Sequence[str] | None = None,
    ) -> TypedGraph:
        """Build from ``(head, relation, tail)`` name triples.

        Args:
            triples: iterable of name triples.
            reliability: optional per-triple reliabilities in ``(0, 1]`` (default 1).
            entities, relations: optional fixed vocabularies (e.g. to share indices across
                evidence states); names not in a given vocabulary raise ``ValueError``.
                Without them, names are indexed in order of first appearance.
        """
        triples = [tuple(t) for t in triples]
        for i, t in enumerate(triples):
            if len(t) != 3 or not all(isinstance(x, str) for x in t):
                raise ValueError(f"triples[{i}] must be a (head, relation, tail) of strings: {t!r}")
        ents = list(entities) if entities is not None else []
        rels = list(relations) if relations is not None else []
        if entities is None:
            for h, _, t in triples:
                for x in (h, t):
                    if x not in ents:
                        ents.append(x)
        if relations is None:
            for _, r, _ in triples:
                if r not in rels:
                    rels.append(r)
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
        return cls(
            head=jnp.asarray([e_ix[h] for h, _, _ in triples], dtype=jnp.int32),
            relation=jnp.asarray([r_ix[r] for _, r, _ in triples], dtype=jnp.int32),
            tail=jnp.asarray([e_ix[t] for _, _, t in triples], dtype=jnp.int32),
            reliability=jnp.asarray(rel_arr),
            entities=tuple(ents),
            relations=tuple(rels),
        )

    # ---------------------------------------------------------------- views
    @property
    def n_nodes(self) -> int:
        return len(self.entities)

    @property
    def n_edges(self) -> int:
        return int(jnp.shape(self.head)[0])

    def edge_index(self):
        """The incoming-edge layout (:class:`grounding.semiring.EdgeIndex`) of this graph, for
        repeated energy fields, edge usages and hop distances without rebuilding it.

        Needs concrete edge arrays (build it outside ``jit`` and pass it in as an argument).
        """
        from grounding.semiring import EdgeIndex

        return EdgeIndex.from_edges(self.head, self.tail, self.n_nodes)

    def entity_index(self, name: str) -> int:
        try:
            return self.entities.index(name)
        except ValueError:
            raise KeyError(f"unknown entity {name!r}") from None

    def relation_index(self, name: str) -> int:
        try:
            return self.relations.index(name)
        except ValueError:
            raise KeyError(f"unknown relation {name!r}") from None

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
        """The same vocabulary with only the edges where ``keep`` is true."""
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (self.n_edges,):
            raise ValueError(f"keep must have shape ({self.n_edges},), got {keep.shape}")
        # NumPy indexing then one transfer per array: cheap inside Monte-Carlo loops
        return dataclasses.replace(
            self,
            head=jnp.asarray(np.asarray(self.head)[keep]),
            relation=jnp.asarray(np.asarray(self.relation)[keep]),
            tail=jnp.asarray(np.asarray(self.tail)[keep]),
            reliability=jnp.asarray(np.asarray(self.reliability)[keep]),
        )

    def add_triples(self, triples: Iterable[Triple], reliability: float = 1.0) -> TypedGraph:
        """A new graph with extra edges over the same vocabulary (names must exist)."""
        extra = TypedGraph.from_triples(
            list(triples), None, entities=self.entities, relations=self.relations
        )
        return dataclasses.replace(
            self,
            head=jnp.concatenate([self.head, extra.head]),
            relation=jnp.concatenate([self.relation, extra.relation]),
            tail=jnp.concatenate([self.tail, extra.tail]),
            reliability=jnp.concatenate(
                [self.reliability, jnp.full(extra.n_edges, reliability, self.reliability.dtype)]
            ),
        )

    # ---------------------------------------------------------------- NetworkX interop
    def to_networkx(self) -> Any:
        """A ``networkx.MultiDiGraph`` with ``relation`` and ``reliability`` edge attributes."""
        import networkx as nx

        g = nx.MultiDiGraph()
        g.add_nodes_from(self.entities)
        for (h, r, t), w in zip(self.triples(), np.asarray(self.reliability)):
            g.add_edge(h, t, relation=r, reliability=float(w))
        return g

    @classmethod
    def from_networkx(
        cls,
        g: Any,
        relation_attr: str = "relation",
        default_relation: str = "related_to",
        reliability_attr: str = "reliability",
    ) -> TypedGraph:
        """From any NetworkX (multi)(di)graph; undirected edges become both ordered arcs."""
        triples, rel = [], []
        directed = g.is_directed()
        for u, v, data in g.edges(data=True):
            r = str(data.get(relation_attr, default_relation))
            w = float(data.get(reliability_attr, 1.0))
            arcs = [(u, v)] if directed else [(u, v), (v, u)]
            for a, b in arcs:
                triples.append((str(a), r, str(b)))
                rel.append(w)
        nodes = [str(n) for n in g.nodes]
        relations = list(dict.fromkeys(t[1] for t in triples))
        return cls.from_triples(triples, rel, entities=nodes, relations=relations)


class EvidenceStatus(enum.IntEnum):
    """The four evidence statuses of Sec. 3.3."""

    SUPPORTED = 0
    CONTRADICTED = 1
    UNSUPPORTED = 2
    OUT_OF_SCHEMA = 3


@dataclasses.dataclass(frozen=True)
class EvidenceState:
    r"""The observed evidence state :math:`R` (Sec. 3.2): snapshot plus what surrounds it.

    Attributes:
        graph: the retrieved snapshot :math:`G_R`.
        negative: explicit counter-evidence triples ("it is reliably not the case that ...").
        functional: relations declared functional (one object per subject), so a different
            observed object is counter-support for a claim (Sec. 3.3, "contradicted").
        coverage: declared coverage estimate :math:`c_R \in [0, 1]` (Axiom 6).
        provenance: free-form metadata (snapshot id, retriever, timestamps).
    """

    graph: TypedGraph
    negative: frozenset[Triple] = frozenset()
    functional: frozenset[str] = frozenset()
    coverage: float = 1.0
    provenance: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.coverage) <= 1.0:
            raise ValueError(f"coverage must lie in [0, 1], got {self.coverage}")
        object.__setattr__(self, "negative", frozenset(tuple(t) for t in self.negative))
        object.__setattr__(self, "functional", frozenset(self.functional))
        unknown = self.functional - set(self.graph.relations)
        if unknown:
            raise ValueError(f"functional names relations not in the schema: {sorted(unknown)}")

    def counter_support(self, claim: Triple, min_reliability: float = 0.0) -> bool:
        """Whether :math:`R` holds reliable counter-evidence for ``claim`` (Sec. 3.3)."""
        h, r, t = claim
        if (h, r, t) in self.negative:
            return True
        if r in self.functional:
            w = np.asarray(self.graph.reliability)
            for (a, b, c), we in zip(self.graph.triples(), w):
                if a == h and b == r and c != t and we >= min_reliability:
                    return True
        return False

    def in_schema(self, claim: Triple) -> bool:
        """A claim is expressible when its relation type is in the schema :math:`\\mathcal R_R`."""
        return claim[1] in self.graph.relations
