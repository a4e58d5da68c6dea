r"""The candidate facts of a question over one graph, and what they are built from: the
question's embedding, its ``n_anchors`` anchor facts (cosine between the question and each
fact's text embedding, the normalized sum of its head, relation and tail embeddings), and the
facts ``hops`` from the topic and ``anchor_hops`` from the anchors
(:meth:`~grounding.retrieval.learned.FactGraph.candidates`, at most ``max_facts``), prepared
once for training and scoring (:class:`~grounding.retrieval.learned.PreparedQuestions`).
:class:`QuestionCandidates` is what every learned retriever of a graph with the same candidate
settings shares; :class:`~grounding.retrieval.TripleRetriever` scores its facts.

References:
    Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
    Knowledge-Graph-Based Retrieval-Augmented Generation", 2025.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from grounding._checks import check_int
from grounding.graph import TypedGraph
from grounding.language import Encoder, HashingEncoder
from grounding.query import Query
from grounding.retrieval.learned.features import FactGraph, QuestionSubgraph, stable_seed
from grounding.retrieval.learned.gnn import Batch, make_batch
from grounding.retrieval.learned.prepared import PreparedQuestions

__all__ = ["QuestionCandidates"]


class QuestionCandidates:
    """The candidate facts of questions over one graph (module docstring).

    Args:
        graph: the searched graph (its node texts are embedded).
        encoder: text encoder; default a :class:`~grounding.language.HashingEncoder` of 256
            buckets with idf fitted on the node and relation texts.
        relation_texts: one text per relation of ``graph`` (default: the names).
        n_anchors: anchor facts per question (0: anchors off).
        hops, anchor_hops, max_facts: the candidate subgraph
            (:meth:`~grounding.retrieval.learned.FactGraph.candidates`).
        facts: the graph's :class:`~grounding.retrieval.learned.FactGraph`, to share one
            between retrievers of a graph.

    References:
        Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
        Knowledge-Graph-Based Retrieval-Augmented Generation", 2025 (the candidate subgraph).
    """

    name = "candidates"

    def __init__(
        self,
        graph: TypedGraph,
        *,
        encoder: Encoder | None = None,
        relation_texts: Sequence[str] | None = None,
        n_anchors: int = 20,
        hops: int = 2,
        anchor_hops: int = 1,
        max_facts: int = 3000,
        facts: FactGraph | None = None,
    ):
        for label, v, lo in (
            ("n_anchors", n_anchors, 0),
            ("hops", hops, 1),
            ("anchor_hops", anchor_hops, 0),
            ("max_facts", max_facts, 1),
        ):
            check_int(v, label, lo)
        self.graph = graph
        self.facts = facts if facts is not None else FactGraph.from_graph(graph)
        rel_texts = list(relation_texts) if relation_texts is not None else list(graph.relations)
        if len(rel_texts) != len(graph.relations):
            raise ValueError(
                f"relation_texts must have {len(graph.relations)} entries, got {len(rel_texts)}"
            )
        texts = list(graph.node_texts)
        self.encoder = (
            encoder if encoder is not None else HashingEncoder(dim=256).fit(texts + rel_texts)
        )
        self.entity_text = np.asarray(self.encoder.encode(texts), np.float32)
        self.relation_text = jnp.asarray(self.encoder.encode(rel_texts), jnp.float32)
        self.n_anchors, self.hops, self.anchor_hops, self.max_facts = (
            n_anchors,
            hops,
            anchor_hops,
            max_facts,
        )
        self._fact_norm = self._fact_norms()

    def _fact_norms(self) -> np.ndarray:
        E, R = self.entity_text, np.asarray(self.relation_text)
        f = self.facts
        out = np.empty(f.n_facts, np.float32)
        for lo in range(0, f.n_facts, 65536):
            s = slice(lo, lo + 65536)
            out[s] = np.linalg.norm(E[f.head[s]] + R[f.relation[s]] + E[f.tail[s]], axis=1)
        return np.maximum(out, 1e-12)

    def anchor_facts(self, q: np.ndarray) -> np.ndarray:
        """The ``n_anchors`` facts most cosine-similar to the question embedding ``q``."""
        if self.n_anchors == 0:
            return np.zeros(0, np.int64)
        f = self.facts
        qe, qr = self.entity_text @ q, np.asarray(self.relation_text) @ q
        cos = (qe[f.head] + qr[f.relation] + qe[f.tail]) / self._fact_norm
        n = min(self.n_anchors, f.n_facts)
        top = np.argpartition(-cos, n - 1)[:n]
        return top[np.lexsort((top, -cos[top]))]

    def _topics(self, query: Query) -> list[int]:
        topics = [self.graph.entity_index(a) for a in query.anchors if self.graph.has_entity(a)]
        if not topics:
            raise ValueError(
                f"query {query.id or query.text!r}: no topic entity in the graph "
                f"(anchors {list(query.anchors)})"
            )
        return topics

    def subgraph(self, query: Query, q: np.ndarray | None = None) -> QuestionSubgraph:
        """The query's candidate subgraph (answers from ``query.relevant`` when given, for the
        labels only). What the candidates are depends on the query's text and anchors alone
        (the tie-break at the cap is seeded by them, not by the query's id), so a question
        gets the same candidates in training, in evaluation and in use."""
        q = self.embed([query])[0] if q is None else q
        topics = self._topics(query)
        anchors = self.anchor_facts(q)
        cand = self.facts.candidates(
            topics,
            anchors,
            self.hops,
            self.anchor_hops,
            self.max_facts,
            seed=stable_seed("\x1f".join((query.text, *query.anchors))),
        )
        answers = [self.graph.entity_index(a) for a in query.relevant if self.graph.has_entity(a)]
        return QuestionSubgraph.build(self.facts, cand, topics, answers, anchors)

    def embed(self, queries: Sequence[Query]) -> np.ndarray:
        """``[Q, dim]`` question embeddings."""
        return np.asarray(self.encoder.encode([q.text for q in queries]), np.float32)

    def subgraphs(self, queries: Sequence[Query]) -> list[QuestionSubgraph]:
        """:meth:`subgraph` of each query."""
        qs = self.embed(queries)
        return [self.subgraph(query, q) for query, q in zip(queries, qs)]

    def batch(
        self, subs: Sequence[QuestionSubgraph], qs: np.ndarray, n_rows: int | None = None
    ) -> Batch:
        """The model input of subgraphs ``subs`` with question embeddings ``qs`` (``n_rows``:
        pad to that many rows, :func:`~grounding.retrieval.learned.gnn.make_batch`)."""
        return make_batch(subs, qs, self.entity_text, n_rows=n_rows)

    def candidate_settings(self, labels: str = "all") -> dict:
        """What prepared questions must agree on to serve this retriever: the candidate
        settings, the encoder and the label mode (``anchor_tags`` and the architecture are
        not among them: retrievers that differ only there share prepared questions)."""
        return dict(
            n_anchors=self.n_anchors,
            hops=self.hops,
            anchor_hops=self.anchor_hops,
            max_facts=self.max_facts,
            encoder=self.encoder.name,
            text_dim=self.encoder.dim,
            n_facts=self.facts.n_facts,
            labels=labels,
        )

    def prepare(self, queries: Sequence[Query], labels: str = "all") -> PreparedQuestions:
        """The queries' candidate subgraphs and features, built once and padded into the
        buckets of :func:`~grounding.retrieval.learned.prepared.bucket_shapes` (answers, for
        the labels, from ``query.relevant``; ``labels``: ``"all"`` or ``"pair"``)."""
        if len(queries) == 0:
            raise ValueError("no questions to prepare")
        qs = self.embed(queries)
        subs = [self.subgraph(query, q) for query, q in zip(queries, qs)]
        return self.prepare_subgraphs(subs, qs, [x.id or x.text for x in queries], labels)

    def prepare_subgraphs(
        self,
        subs: Sequence[QuestionSubgraph],
        qs: np.ndarray,
        ids: Sequence[str] | None = None,
        labels: str = "all",
    ) -> PreparedQuestions:
        """:class:`PreparedQuestions` of subgraphs already built (question embeddings ``qs``)."""
        settings = self.candidate_settings(labels)
        return PreparedQuestions.build(subs, qs, self.max_facts, settings, ids, labels)

    def _check_prepared(self, prepared: PreparedQuestions, labels: str | None = None) -> None:
        mine = self.candidate_settings(prepared.settings.get("labels", "all"))
        if labels is not None:
            mine["labels"] = labels
        if prepared.settings != mine:
            diff = sorted(k for k in set(mine) | set(prepared.settings)
                          if mine.get(k) != prepared.settings.get(k))  # fmt: skip
            raise ValueError(
                f"{self.name}: the prepared questions were built with other settings ("
                + ", ".join(f"{k}={prepared.settings.get(k)!r} vs {mine.get(k)!r}" for k in diff)
                + ")"
            )
