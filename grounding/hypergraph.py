r"""Knowledge hypergraphs: n-ary facts as hyperedges over entities, each member with a role.

A *statement* ``(s, r, o, (q_1, v_1), ..., (q_m, v_m))`` (a Wikidata statement with its
qualifiers) is one hyperedge over the entities ``s``, ``o``, ``v_1 ... v_m``; a member's
*role* is its kind (subject, object, qualifier) and a relation (the statement's relation
``r`` for subject and object, the qualifier relation ``q_i`` for a qualifier value).

:class:`KnowledgeHypergraph` stores the incidence in CSR form (hyperedge -> members) with
its transpose (entity -> hyperedges). :meth:`~KnowledgeHypergraph.to_bipartite` is the
representation of HyperGraphRAG and of the path engine: one node per entity and per
hyperedge, an edge ``entity -role-> hyperedge`` with the statement's reliability and its
reverse ``hyperedge -role^-1-> entity`` with reliability 1, so a walk through ``k``
hyperedges is a walk of ``2k`` edges whose cost (Eqs. (8)-(10)) counts each statement's
reliability once, and :func:`grounding.ground` scores hyperedge paths as claim chains over
role relations (:func:`hop_relations`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from grounding.graph import INVERSE_SUFFIX, TypedGraph
from grounding.query import role_phrase

__all__ = [
    "KnowledgeHypergraph",
    "Statement",
    "ROLE_KINDS",
    "role_name",
    "parse_role",
    "hop_relations",
]

#: Member kinds, in the order of their codes.
ROLE_KINDS = ("subject", "object", "qualifier")
_NODE = "statement:"  # prefix of hyperedge nodes in the bipartite graph

Statement = tuple[str, str, str, tuple[tuple[str, str], ...]]


def role_name(kind: int, relation: str) -> str:
    """``"subject:P166"``, ``"object:P166"`` or ``"qualifier:P805"``."""
    return f"{ROLE_KINDS[kind]}:{relation}"


def parse_role(name: str) -> tuple[int, str]:
    """The inverse of :func:`role_name` (ValueError for anything else)."""
    kind, sep, rel = name.partition(":")
    if not sep or kind not in ROLE_KINDS or not rel:
        raise ValueError(f"not a role name: {name!r}")
    return ROLE_KINDS.index(kind), rel


def hop_relations(role_in: str, role_out: str) -> tuple[str, str]:
    """The two bipartite relations of one hyperedge hop: enter the statement in ``role_in``,
    leave it in ``role_out`` (a claim chain ``x -role_in-> h -role_out^-1-> y``)."""
    parse_role(role_in), parse_role(role_out)
    return role_in, role_out + INVERSE_SUFFIX


@dataclasses.dataclass(frozen=True, eq=False)
class KnowledgeHypergraph:
    """Hyperedges (statements) over entities with a role per member.

    Attributes:
        entities: entity names; relations: relation names (main and qualifier relations).
        relation: ``[H]`` each hyperedge's main relation.
        ptr: ``[H + 1]`` CSR offsets: hyperedge ``h``'s members are ``member[ptr[h]:ptr[h+1]]``.
        member, kind, role: ``[M]`` member entity, kind code (:data:`ROLE_KINDS`), role
            relation.
        reliability: ``[H]`` statement reliabilities in ``(0, 1]``.
        texts: optional entity texts; relation_labels: optional relation labels.
    """

    entities: tuple[str, ...]
    relations: tuple[str, ...]
    relation: np.ndarray
    ptr: np.ndarray
    member: np.ndarray
    kind: np.ndarray
    role: np.ndarray
    reliability: np.ndarray
    texts: tuple[str, ...] = ()
    relation_labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        H, M = len(self.relation), len(self.member)
        if self.ptr.shape != (H + 1,) or self.ptr[0] != 0 or self.ptr[-1] != M:
            raise ValueError(f"ptr must be [H + 1] offsets from 0 to {M}")
        if (np.diff(self.ptr) < 2).any():
            raise ValueError("every hyperedge needs at least two members")
        if not (self.kind.shape == self.role.shape == (M,)):
            raise ValueError("member, kind and role must have one length")
        if self.reliability.shape != (H,):
            raise ValueError(f"reliability must be [{H}]")
        if H and not ((self.reliability > 0) & (self.reliability <= 1)).all():
            raise ValueError("reliabilities must lie in (0, 1]")
        for name, arr, n in (("member", self.member, len(self.entities)),
                             ("role", self.role, len(self.relations)),
                             ("relation", self.relation, len(self.relations))):  # fmt: skip
            if arr.size and (arr.min() < 0 or arr.max() >= n):
                raise ValueError(f"{name} ids must lie in [0, {n})")
        if self.texts and len(self.texts) != len(self.entities):
            raise ValueError(f"{len(self.entities)} entities but {len(self.texts)} texts")
        if self.relation_labels and len(self.relation_labels) != len(self.relations):
            raise ValueError(
                f"{len(self.relations)} relations but {len(self.relation_labels)} labels"
            )

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_statements(
        cls,
        statements: Iterable[Statement],
        *,
        entities: Sequence[str] | None = None,
        relations: Sequence[str] | None = None,
        reliability: Sequence[float] | None = None,
        texts: Sequence[str] = (),
        relation_labels: Sequence[str] = (),
    ) -> KnowledgeHypergraph:
        """Build from statements ``(s, r, o, ((q, v), ...))`` (vocabularies in order of first
        appearance unless given; a statement naming an unknown entity or relation is a
        ValueError naming it).

        Example:
            >>> kh = KnowledgeHypergraph.from_statements(
            ...     [("ada", "award", "prize", (("for_work", "engine"),))])
            >>> kh.statement(0), kh.edges_of([kh.entity_index("engine")]).tolist()
            (('ada', 'award', 'prize', (('for_work', 'engine'),)), [0])
        """
        stmts = [(s, r, o, tuple(tuple(q) for q in quals)) for s, r, o, quals in statements]
        ents = list(entities) if entities is not None else list(
            dict.fromkeys(e for s, _, o, qs in stmts for e in (s, o, *(v for _, v in qs)))
        )  # fmt: skip
        rels = list(relations) if relations is not None else list(
            dict.fromkeys(x for _, r, _, qs in stmts for x in (r, *(q for q, _ in qs)))
        )  # fmt: skip
        e_ix, r_ix = {e: i for i, e in enumerate(ents)}, {r: i for i, r in enumerate(rels)}
        ptr, member, kind, role, relation = [0], [], [], [], []
        for j, (s, r, o, qs) in enumerate(stmts):
            rows = [(s, 0, r), (o, 1, r), *((v, 2, q) for q, v in qs)]
            for e, k, rel in rows:
                if e not in e_ix:
                    raise ValueError(f"statement {j} names an unknown entity {e!r}")
                if rel not in r_ix:
                    raise ValueError(f"statement {j} names an unknown relation {rel!r}")
                member.append(e_ix[e])
                kind.append(k)
                role.append(r_ix[rel])
            ptr.append(len(member))
            relation.append(r_ix[r])
        w = np.ones(len(stmts)) if reliability is None else np.asarray(reliability, np.float64)
        return cls(
            tuple(ents), tuple(rels), np.asarray(relation, np.int64), np.asarray(ptr, np.int64),
            np.asarray(member, np.int64), np.asarray(kind, np.int8), np.asarray(role, np.int64),
            w, tuple(texts), tuple(relation_labels),
        )  # fmt: skip

    # ------------------------------------------------------------------ views

    @property
    def n_entities(self) -> int:
        return len(self.entities)

    @property
    def n_edges(self) -> int:
        return len(self.relation)

    @property
    def entity_texts(self) -> tuple[str, ...]:
        return self.texts or tuple(e.replace("_", " ") for e in self.entities)

    def label(self, relation: str) -> str:
        """A relation's label (its name when none is known)."""
        if self.relation_labels:
            return self.relation_labels[self.relations.index(relation)]
        return relation

    def role_text(self, role: str) -> str:
        """A role in words: :func:`grounding.query.role_phrase` of its relation's label (the
        relation's name when the hypergraph does not hold it)."""
        kind, rel = parse_role(role)
        label = self.label(rel) if rel in self.relations else rel
        return role_phrase(label, ROLE_KINDS[kind])

    def entity_index(self, name: str) -> int:
        if name not in self._e_ix:
            raise KeyError(f"unknown entity {name!r}")
        return self._e_ix[name]

    def has_entity(self, name: object) -> bool:
        return isinstance(name, str) and name in self._e_ix

    @property
    def _e_ix(self) -> dict[str, int]:
        ix = self.__dict__.get("_e_ix_cache")
        if ix is None:
            ix = {e: i for i, e in enumerate(self.entities)}
            object.__setattr__(self, "_e_ix_cache", ix)
        return ix

    def members(self, h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Hyperedge ``h``'s member entities, kinds and role relations."""
        sl = slice(self.ptr[h], self.ptr[h + 1])
        return self.member[sl], self.kind[sl], self.role[sl]

    def statement(self, h: int) -> Statement:
        """Hyperedge ``h`` as the statement it came from (names)."""
        ents, kinds, roles = self.members(h)
        subj = next(self.entities[e] for e, k in zip(ents, kinds) if k == 0)
        obj = next(self.entities[e] for e, k in zip(ents, kinds) if k == 1)
        quals = tuple(
            (self.relations[r], self.entities[e]) for e, k, r in zip(ents, kinds, roles) if k == 2
        )
        return subj, self.relations[self.relation[h]], obj, quals

    def incidence(self) -> sp.csr_matrix:
        """``[H, N]`` 0/1 incidence (CSR), one row per hyperedge."""
        data = np.ones(len(self.member))
        inc = sp.csr_matrix((data, self.member, self.ptr), shape=(self.n_edges, self.n_entities))
        inc.sum_duplicates()
        inc.data[:] = 1.0
        return inc

    @property
    def _transpose(self) -> sp.csr_matrix:
        t = self.__dict__.get("_t_cache")
        if t is None:
            t = self.incidence().T.tocsr()
            object.__setattr__(self, "_t_cache", t)
        return t

    def edges_of(self, entities: Iterable[int]) -> np.ndarray:
        """Sorted hyperedges containing any of the given entities."""
        t = self._transpose
        rows = [t.indices[t.indptr[e] : t.indptr[e + 1]] for e in entities]
        return np.unique(np.concatenate(rows)) if rows else np.zeros(0, np.int64)

    def hyperedge_text(self, h: int) -> str:
        """``"<s> <relation label> <o>; <qualifier label> <value>; ..."`` (entity texts)."""
        s, r, o, quals = self.statement(h)
        t = self.entity_texts
        ix = self._e_ix
        parts = [f"{t[ix[s]]} {self.label(r)} {t[ix[o]]}"]
        parts += [f"{self.label(q)} {t[ix[v]]}" for q, v in quals]
        return "; ".join(parts)

    def restrict(self, edges: np.ndarray) -> KnowledgeHypergraph:
        """The hypergraph of the given hyperedges, over the same vocabularies."""
        edges = np.asarray(edges, np.int64)
        sizes = np.diff(self.ptr)[edges]
        idx = (
            np.concatenate([np.arange(self.ptr[h], self.ptr[h + 1]) for h in edges])
            if len(edges)
            else np.zeros(0, np.int64)
        )
        return dataclasses.replace(
            self,
            relation=self.relation[edges],
            ptr=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            member=self.member[idx],
            kind=self.kind[idx],
            role=self.role[idx],
            reliability=self.reliability[edges],
        )

    # ------------------------------------------------------------------ conversions

    def to_bipartite(self) -> TypedGraph:
        """The bipartite graph: entities, then one node ``"statement:<h>"`` per hyperedge;
        ``entity -role-> statement`` (the statement's reliability) and
        ``statement -role^-1-> entity`` (reliability 1) per member."""
        role_names = sorted(
            {role_name(int(k), self.relations[r]) for k, r in zip(self.kind, self.role)}
        )
        rel_names = [*role_names, *(n + INVERSE_SUFFIX for n in role_names)]
        r_ix = {n: i for i, n in enumerate(rel_names)}
        forward = np.array(
            [r_ix[role_name(int(k), self.relations[r])] for k, r in zip(self.kind, self.role)],
            np.int64,
        ).reshape(-1)
        h_of = np.repeat(np.arange(self.n_edges), np.diff(self.ptr)) + self.n_entities
        n_roles = len(role_names)
        head = np.concatenate([self.member, h_of])
        tail = np.concatenate([h_of, self.member])
        rel = np.concatenate([forward, forward + n_roles])
        w = np.concatenate([self.reliability[h_of - self.n_entities], np.ones(len(h_of))])
        nodes = (*self.entities, *(f"{_NODE}{h}" for h in range(self.n_edges)))
        texts = (*self.entity_texts, *(self.hyperedge_text(h) for h in range(self.n_edges)))
        return TypedGraph(
            head=jnp.asarray(head, jnp.int32), relation=jnp.asarray(rel, jnp.int32),
            tail=jnp.asarray(tail, jnp.int32), reliability=jnp.asarray(w),
            entities=nodes, relations=tuple(rel_names), texts=texts,
        )  # fmt: skip

    @classmethod
    def from_bipartite(
        cls, graph: TypedGraph, relation_labels: Mapping[str, str] | None = None
    ) -> KnowledgeHypergraph:
        """The inverse of :meth:`to_bipartite` (entity order, statements, roles and
        reliabilities are recovered; ValueError for a graph that is not such a bipartite
        graph)."""
        names = graph.entities
        stmt = [i for i, n in enumerate(names) if n.startswith(_NODE)]
        n_ent = len(names) - len(stmt)
        if stmt != list(range(n_ent, len(names))):
            raise ValueError("statement nodes must follow every entity node")
        head, tail = np.asarray(graph.head), np.asarray(graph.tail)
        rel, w = np.asarray(graph.relation), np.asarray(graph.reliability, np.float64)
        fwd = (head < n_ent) & (tail >= n_ent)
        order = np.lexsort((np.arange(len(head))[fwd], tail[fwd]))
        h_of, ents, rels = tail[fwd][order] - n_ent, head[fwd][order], rel[fwd][order]
        statements, reliab = [], np.ones(len(stmt))
        for h in range(len(stmt)):
            sel = h_of == h
            rows = [
                (names[e], parse_role(graph.relations[r])) for e, r in zip(ents[sel], rels[sel])
            ]
            subj = [(e, r) for e, (k, r) in rows if k == 0]
            obj = [(e, r) for e, (k, r) in rows if k == 1]
            if len(subj) != 1 or len(obj) != 1:
                raise ValueError(
                    f"statement node {names[n_ent + h]!r} needs one subject and one object"
                )
            quals = tuple((r, e) for e, (k, r) in rows if k == 2)
            statements.append((subj[0][0], subj[0][1], obj[0][0], quals))
            reliab[h] = w[fwd][order][sel].min()
        labels = dict(relation_labels or {})
        out = cls.from_statements(statements, entities=names[:n_ent], reliability=reliab,
                                  texts=graph.texts[:n_ent] if graph.texts else ())  # fmt: skip
        if labels:
            out = dataclasses.replace(
                out, relation_labels=tuple(labels.get(r, r) for r in out.relations)
            )
        return out

    def to_xgi(self):
        """An ``xgi.Hypergraph`` (edge ids = hyperedge ids; needs ``pip install xgi``)."""
        try:
            import xgi
        except ImportError as err:
            raise ImportError("to_xgi needs the xgi package: pip install xgi") from err
        return xgi.Hypergraph(
            {h: [self.entities[e] for e in self.members(h)[0]] for h in range(self.n_edges)}
        )
