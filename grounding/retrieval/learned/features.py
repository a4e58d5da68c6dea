r"""Question subgraphs for learned triple retrievers: facts, candidate subgraphs, structural
tags, directional distance encodings (DDE) and shortest-path labels.

A *fact* is one edge of the searched :class:`~grounding.TypedGraph`; when the graph stores
every fact twice (``(h, r, t)`` and its inverse ``(t, r^-1, h)``, as the question-answering
benchmark's evidence does) the inverse copy is dropped and remembered
(:class:`FactGraph`), so a fact is ranked once. Everything here is NumPy preprocessing done
once per question; the learned part is :mod:`grounding.retrieval.learned.gnn`.

Definitions (SubgraphRAG: "Simple is Effective: The Roles of Graphs and Large Language Models
in Knowledge-Graph-Based Retrieval-Augmented Generation", Li, Miao and Li, 2025):

* **DDE.** With the topic indicator :math:`x^{(0)}_v = [1 - \mathbb 1_{v \in T},
  \mathbb 1_{v \in T}]`, forward rounds :math:`x^{(k+1)}_v = \mathrm{mean}_{(u, r, v)}
  x^{(k)}_u` (over facts *into* ``v``; 0 without any) and reverse rounds the same along facts
  *out of* ``v``, both started from :math:`x^{(0)}`; the encoding is
  :math:`[x^{(0)} \| x^{(1)} \| x^{(2)} \| \bar x^{(1)} \| \bar x^{(2)}]` (10 numbers).
* **Labels.** A fact is positive iff it lies on a shortest path between a topic entity and an
  answer. Paths ignore direction: on a graph storing every fact in both directions this is
  SubgraphRAG's rule (directed shortest paths topic → answer and answer → topic, the shorter
  kept when both exist). Unlike its ``networkx.DiGraph``, which keeps one of several parallel
  facts between two entities, every parallel fact on such a path is positive by default;
  ``one_per_pair=True`` (:func:`shortest_path_labels`) keeps SubgraphRAG's exact labels: one
  fact per entity pair, the last of the pair's facts in candidate order (a simple graph keeps
  one edge per pair, with the attributes of the last one added).
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from grounding.graph import INVERSE_SUFFIX, TypedGraph
from grounding.semiring import Reachability

__all__ = [
    "FactGraph",
    "QuestionSubgraph",
    "hop_distances",
    "dde",
    "structural_tags",
    "shortest_path_labels",
    "one_fact_per_pair",
    "gold_facts",
    "N_DDE",
    "N_TAGS",
]

N_DDE = 10  # topic one-hot (2) + 2 forward + 2 reverse rounds (2 each)
TOPIC_BINS = 5  # hop distance from the topic: 0, 1, 2, 3, >= 4 or unreachable
ANCHOR_BINS = 4  # hop distance from the nearest anchor entity: 0, 1, 2, >= 3 or none
N_TAGS = TOPIC_BINS + ANCHOR_BINS + 1  # + on a shortest topic-anchor path
_FAR = np.iinfo(np.int64).max


@dataclasses.dataclass(frozen=True, eq=False)
class FactGraph:
    """The facts of a graph (inverse copies dropped) with an undirected adjacency.

    Attributes:
        graph: the searched graph.
        edge: ``[M]`` edge index (in ``graph``) of each fact.
        inverse_edge: ``[M]`` edge index of the fact's stored inverse copy, or -1.
        head, relation, tail: ``[M]`` the facts (entity and relation indices of ``graph``).
        adjacency: ``[n, n]`` CSR, 1 where some fact joins two entities (either direction).
    """

    graph: TypedGraph = dataclasses.field(repr=False)
    edge: np.ndarray
    inverse_edge: np.ndarray
    head: np.ndarray
    relation: np.ndarray
    tail: np.ndarray
    adjacency: sp.csr_matrix = dataclasses.field(repr=False)

    @classmethod
    def from_graph(cls, graph: TypedGraph, inverse_suffix: str = INVERSE_SUFFIX) -> FactGraph:
        """Facts of ``graph``: an edge ``(t, r + inverse_suffix, h)`` whose forward edge
        ``(h, r, t)`` is stored too is the same fact read backwards and is dropped."""
        if graph.n_edges == 0:
            raise ValueError("the graph has no edges (no facts to retrieve)")
        head, rel, tail = (
            np.asarray(a, np.int64) for a in (graph.head, graph.relation, graph.tail)
        )
        names = graph.relations
        base = {
            i: names.index(n[: -len(inverse_suffix)])
            for i, n in enumerate(names)
            if inverse_suffix and n.endswith(inverse_suffix) and n[: -len(inverse_suffix)] in names
        }
        forward = {
            (int(h), int(r), int(t)): e
            for e, (h, r, t) in enumerate(zip(head, rel, tail))
            if int(r) not in base
        }
        inverse = np.full(len(head), -1, np.int64)
        drop = np.zeros(len(head), bool)
        for e in range(len(head)):
            r = int(rel[e])
            if r in base:
                f = forward.get((int(tail[e]), base[r], int(head[e])))
                if f is not None:  # the same fact as edge f, stored backwards
                    drop[e] = True
                    inverse[f] = e
        keep = np.flatnonzero(~drop)
        n = graph.n_nodes
        A = sp.coo_matrix((np.ones(len(keep)), (head[keep], tail[keep])), shape=(n, n)).tocsr()
        A = ((A + A.T) > 0).astype(np.int8).tocsr()
        return cls(graph, keep, inverse[keep], head[keep], rel[keep], tail[keep], A)

    @property
    def n_facts(self) -> int:
        return len(self.edge)

    @property
    def n_entities(self) -> int:
        return self.graph.n_nodes

    def incident(self, entities: np.ndarray) -> np.ndarray:
        """Facts with at least one endpoint in ``entities`` (a boolean ``[n]`` mask)."""
        return np.flatnonzero(entities[self.head] | entities[self.tail])

    def candidates(
        self,
        topics: Sequence[int],
        anchor_facts: Sequence[int] = (),
        hops: int = 2,
        anchor_hops: int = 1,
        max_facts: int = 3000,
        seed: int = 0,
    ) -> np.ndarray:
        """Candidate facts of a question: every fact met by a breadth-first walk of ``hops``
        from the topic entities and of ``anchor_hops`` from the anchor facts' entities (plus
        the anchor facts). Beyond ``max_facts``, facts met in an earlier round go first (at
        equal rounds, the topic's before the anchors'); ties at the cut are broken by a random
        order fixed by ``seed``. Sorted fact indices."""
        if len(topics) == 0:
            raise ValueError("a question needs at least one topic entity")
        level = _level(self.adjacency, np.asarray(topics, np.int64), hops, self.head, self.tail)
        level = np.where(level < _FAR, 2 * level, _FAR)  # topic facts before anchor facts
        anchor_facts = np.asarray(anchor_facts, np.int64)
        if len(anchor_facts):
            ents = np.unique(np.concatenate([self.head[anchor_facts], self.tail[anchor_facts]]))
            alevel = _level(self.adjacency, ents, anchor_hops, self.head, self.tail)
            alevel[anchor_facts] = 0
            level = np.minimum(level, np.where(alevel < _FAR, 2 * alevel + 1, _FAR))
        chosen = np.flatnonzero(level < _FAR)
        if len(chosen) > max_facts:
            tie = np.random.default_rng(seed).permutation(self.n_facts)[chosen]
            chosen = chosen[np.lexsort((tie, level[chosen]))[:max_facts]]
        return np.sort(chosen)


def _level(A: sp.csr_matrix, sources: np.ndarray, hops: int, head, tail) -> np.ndarray:
    """Per fact: the BFS round (0-based) in which a walk from ``sources`` first crosses it,
    int64 max when not within ``hops`` rounds."""
    d = hop_distances(A, sources, max_hops=max(hops - 1, 0))
    d = np.where(d >= 0, d, _FAR)
    near = np.minimum(d[head], d[tail])
    return np.where(near < hops, near, _FAR)


def hop_distances(A: sp.spmatrix, sources: np.ndarray, max_hops: int | None = None) -> np.ndarray:
    """``[n]`` hop distance from the nearest of ``sources`` over the (symmetric) adjacency
    ``A``, :data:`~grounding.semiring.recursion.UNREACHABLE` (-1) where unreachable (or beyond
    ``max_hops``): the path engine's multi-source breadth-first search
    (:meth:`grounding.semiring.Reachability.distances_to_nearest`)."""
    A = sp.coo_matrix(A)
    reach = Reachability(A.row, A.col, A.shape[0])
    return reach.distances_to_nearest([np.asarray(sources, np.int64)], max_hops)[0]


@dataclasses.dataclass(frozen=True, eq=False)
class QuestionSubgraph:
    """One question's candidate subgraph in local indices (entities ``0..n-1``).

    Attributes:
        facts: ``[m]`` fact indices of the :class:`FactGraph`.
        entities: ``[n]`` entity indices of the graph (local ``i`` is ``entities[i]``).
        head, relation, tail: ``[m]`` local head / tail, graph relation index.
        topic: ``[n]`` bool, the topic entities.
        anchor: ``[n]`` bool, the anchor facts' entities.
        answer: ``[n]`` bool, the answers present in the subgraph (empty when unknown).
        labels: ``[m]`` float32 shortest-path labels (zeros when no answer is known).
        dde: ``[n, N_DDE]`` float32 DDE.
        tags: ``[n, N_TAGS]`` float32 structural tags.
    """

    facts: np.ndarray
    entities: np.ndarray
    head: np.ndarray
    relation: np.ndarray
    tail: np.ndarray
    topic: np.ndarray
    anchor: np.ndarray
    answer: np.ndarray
    labels: np.ndarray
    dde: np.ndarray
    tags: np.ndarray

    @property
    def n_facts(self) -> int:
        return len(self.facts)

    @property
    def n_entities(self) -> int:
        return len(self.entities)

    @property
    def has_path(self) -> bool:
        """Whether some topic–answer shortest path exists (else SubgraphRAG skips the question
        in training)."""
        return bool(self.labels.any())

    @classmethod
    def build(
        cls,
        facts: FactGraph,
        candidates: np.ndarray,
        topics: Sequence[int],
        answers: Sequence[int] = (),
        anchor_facts: Sequence[int] = (),
    ) -> QuestionSubgraph:
        """Local arrays, DDE, tags and labels of the candidate facts (graph entity indices for
        ``topics`` and ``answers``; fact indices for ``anchor_facts``)."""
        candidates = np.asarray(candidates, np.int64)
        if len(candidates) == 0:
            raise ValueError("the candidate subgraph is empty (no fact near the topic entities)")
        gh, gt = facts.head[candidates], facts.tail[candidates]
        entities, inv = np.unique(np.concatenate([gh, gt]), return_inverse=True)
        m, n = len(candidates), len(entities)
        h, t = inv[:m], inv[m:]

        def mask(ids):
            out = np.zeros(n, bool)
            ids = np.asarray(ids, np.int64)
            pos = np.searchsorted(entities, ids)
            ok = (pos < n) & (entities[np.minimum(pos, n - 1)] == ids)
            out[pos[ok]] = True
            return out

        topic = mask(topics)
        if not topic.any():
            raise ValueError("no topic entity is in the candidate subgraph")
        anchor_facts = np.asarray(anchor_facts, np.int64)
        anchor = mask(np.concatenate([facts.head[anchor_facts], facts.tail[anchor_facts]]))
        answer = mask(answers)
        return cls(
            facts=candidates,
            entities=entities,
            head=h,
            relation=facts.relation[candidates],
            tail=t,
            topic=topic,
            anchor=anchor,
            answer=answer,
            labels=shortest_path_labels(h, t, n, topic, answer),
            dde=dde(h, t, topic),
            tags=structural_tags(h, t, topic, anchor),
        )


def _undirected(head: np.ndarray, tail: np.ndarray, n: int) -> sp.csr_matrix:
    A = sp.coo_matrix((np.ones(len(head)), (head, tail)), shape=(n, n)).tocsr()
    return ((A + A.T) > 0).astype(np.int8).tocsr()


def dde(
    head: np.ndarray, tail: np.ndarray, topic: np.ndarray, rounds: int = 2, reverse_rounds: int = 2
) -> np.ndarray:
    """``[n, 2 (1 + rounds + reverse_rounds)]`` DDE (module docstring): parameter-free mean
    propagation of the topic one-hot along the facts, then against them.

    References:
        Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
            Knowledge-Graph-Based Retrieval-Augmented Generation", 2025: DDE.
    """
    n = len(topic)
    x0 = np.stack([1.0 - topic, topic.astype(float)], axis=1)

    def propagate(x, src, dst):
        total = np.zeros_like(x)
        np.add.at(total, dst, x[src])
        count = np.bincount(dst, minlength=n)[:, None]
        return np.where(count > 0, total / np.maximum(count, 1), 0.0)

    out, x = [x0], x0
    for _ in range(rounds):
        x = propagate(x, head, tail)
        out.append(x)
    x = x0
    for _ in range(reverse_rounds):
        x = propagate(x, tail, head)
        out.append(x)
    return np.concatenate(out, axis=1).astype(np.float32)


def structural_tags(
    head: np.ndarray, tail: np.ndarray, topic: np.ndarray, anchor: np.ndarray
) -> np.ndarray:
    """``[n, N_TAGS]`` where each entity sits, with no word of its content: one-hot hop
    distance from the topic entities (0, 1, 2, 3, >= 4 or unreachable), one-hot hop distance
    from the nearest anchor entity (0, 1, 2, >= 3 or no anchors), and 1 when the entity lies
    on a shortest path from the topic to the anchor set
    (:math:`d_T(v) + d_A(v) = \\min_{a \\in A} d_T(a)`).

    References:
        An unpublished project write-up on the structurally gated GNN retriever (untitled; no
            code released), n.d.: its structural tags.
    """
    n = len(topic)
    A = _undirected(head, tail, n)
    d_t = hop_distances(A, np.flatnonzero(topic))
    out = np.zeros((n, N_TAGS), np.float32)
    out[np.arange(n), np.where(d_t >= 0, np.minimum(d_t, TOPIC_BINS - 1), TOPIC_BINS - 1)] = 1
    if anchor.any():
        d_a = hop_distances(A, np.flatnonzero(anchor))
        bins = np.where(d_a >= 0, np.minimum(d_a, ANCHOR_BINS - 1), ANCHOR_BINS - 1)
        out[np.arange(n), TOPIC_BINS + bins] = 1
        reach = d_t[anchor]
        if (reach >= 0).any():
            best = reach[reach >= 0].min()
            out[:, -1] = (d_t >= 0) & (d_a >= 0) & (d_t + d_a == best)
    else:
        out[:, TOPIC_BINS + ANCHOR_BINS - 1] = 1
    return out


def shortest_path_labels(
    head: np.ndarray,
    tail: np.ndarray,
    n: int,
    topic: np.ndarray,
    answer: np.ndarray,
    one_per_pair: bool = False,
) -> np.ndarray:
    """``[m]`` float32: 1 for every fact on a shortest (undirected) path between a topic
    entity and an answer, pair by pair (module docstring); a fact ``(u, v)`` lies on one iff
    :math:`d_q(u) + 1 + d_a(v) = d_q(a)` or the same with ``u``, ``v`` swapped. With
    ``one_per_pair``, of several such facts joining the same two entities only the last (the
    highest index) stays positive: SubgraphRAG's exact labels.

    References:
        Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
            Knowledge-Graph-Based Retrieval-Augmented Generation", 2025: shortest-path labels.
    """
    labels = np.zeros(len(head), np.float32)
    topics, answers = np.flatnonzero(topic), np.flatnonzero(answer)
    if len(topics) == 0 or len(answers) == 0:
        return labels
    A = _undirected(head, tail, n)
    d_q = csgraph.shortest_path(A, unweighted=True, indices=topics, directed=False)
    d_a = csgraph.shortest_path(A, unweighted=True, indices=answers, directed=False)
    for i, q in enumerate(topics):
        for j, a in enumerate(answers):
            length = d_q[i, a]
            if q == a or not np.isfinite(length):
                continue
            fwd = d_q[i, head] + 1 + d_a[j, tail] == length
            bwd = d_q[i, tail] + 1 + d_a[j, head] == length
            labels[fwd | bwd] = 1.0
    return one_fact_per_pair(labels, head, tail) if one_per_pair else labels


def one_fact_per_pair(labels: np.ndarray, head: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """``[m]`` float32: of the positive facts joining the same two entities (either
    direction), only the last (highest index) stays positive (SubgraphRAG's exact labels,
    module docstring).

    Example:
        >>> one_fact_per_pair(np.ones(3), np.array([0, 1, 1]), np.array([1, 0, 2])).tolist()
        [0.0, 1.0, 1.0]
    """
    out = np.zeros(len(labels), np.float32)
    pos = np.flatnonzero(labels)
    if len(pos):
        h, t = np.asarray(head)[pos].astype(np.int64), np.asarray(tail)[pos].astype(np.int64)
        pair = np.stack([np.minimum(h, t), np.maximum(h, t)], 1)[::-1]
        _, last = np.unique(pair, axis=0, return_index=True)  # the last fact of each pair
        out[pos[len(pos) - 1 - last]] = 1.0
    return out


def stable_seed(text: str) -> int:
    """A seed from a string that does not change between runs (crc32)."""
    return zlib.crc32(text.encode())


def gold_facts(facts: FactGraph, topics: Sequence[int], answers: Sequence[int]) -> np.ndarray:
    """Fact indices on a shortest path between a topic and an answer in the *whole* graph
    (the labels of :mod:`grounding.retrieval.learned.features` without a candidate cut): one target
    set per question, the same for every retriever.

    References:
        Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
            Knowledge-Graph-Based Retrieval-Augmented Generation", 2025: shortest-path labels.
    """
    n = facts.n_entities
    topic, answer = np.zeros(n, bool), np.zeros(n, bool)
    topic[np.asarray(topics, np.int64)] = True
    answer[np.asarray(answers, np.int64)] = True
    return np.flatnonzero(shortest_path_labels(facts.head, facts.tail, n, topic, answer))
