r"""Learned triple retrievers: training, retrieval, checkpoints.

:class:`TripleRetriever` is SubgraphRAG (``GNNConfig(gate="none")``, no anchors) or the
structurally gated GNN retriever (anchors + ``gate="structural"``) or any ablation between
them. For a query it (1) picks ``n_anchors`` anchor facts by cosine between the question and
each fact's text embedding (the normalized sum of its head, relation and tail embeddings),
(2) collects the candidate facts (:meth:`FactGraph.candidates`: ``hops`` from the topic,
``anchor_hops`` from the anchors), (3) scores them (:mod:`grounding.retrieval.learned.gnn`) and
returns the top ``k`` as a :class:`~grounding.retrieval.Retrieval` whose evidence state holds
those facts (and their stored inverse copies) for :func:`grounding.ground`.

Training (:meth:`TripleRetriever.fit`) follows SubgraphRAG: binary cross-entropy with logits
against the shortest-path labels (every fact on a shortest path, or SubgraphRAG's exact labels,
one fact per entity pair: ``RetrieverTrainConfig.labels``), Adam (learning rate ``1e-3``),
early stopping on validation shortest-path triple recall@100 with patience 10; training
questions without a topic–answer path in their candidate subgraph are skipped and counted.
Questions are prepared once (:class:`~grounding.retrieval.learned.PreparedQuestions`:
candidate subgraphs and features, padded into a few fixed shapes) and a batch holds questions
of one shape, so one compiled step per shape serves every epoch, seed and retriever of the
same architecture. With a ``checkpoint`` path, :meth:`TripleRetriever.fit` writes its whole
state after every epoch (atomically) and resumes from it when started again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from grounding._checks import check_int
from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph
from grounding.language import Encoder, HashingEncoder
from grounding.learn.checkpoint import check_leaves, read_archive, write_archive
from grounding.query import Query
from grounding.retrieval.base import Retrieval, check_k
from grounding.retrieval.learned import _training
from grounding.retrieval.learned._checkpoint import (
    CHECKPOINT_VERSION,
    check_compatible,
    check_meta,
    graph_sha256,
)
from grounding.retrieval.learned._training import RetrieverTrainConfig, TrainLog
from grounding.retrieval.learned.features import (
    FactGraph,
    QuestionSubgraph,
    stable_seed,
)
from grounding.retrieval.learned.gnn import Batch, GNNConfig, init_params, logits, make_batch
from grounding.retrieval.learned.prepared import Bucket, PreparedQuestions

__all__ = [
    "RetrieverTrainConfig",
    "TrainLog",
    "TripleRetriever",
]


class TripleRetriever:
    """A learned triple retriever over one graph (module docstring).

    Args:
        graph: the searched graph (its node texts are embedded).
        config: the scorer's architecture.
        encoder: text encoder; default a :class:`HashingEncoder` of 256 buckets with idf
            fitted on the node and relation texts.
        relation_texts: one text per relation of ``graph`` (default: the names).
        n_anchors: anchor facts per question (0: anchors off).
        hops, anchor_hops, max_facts: the candidate subgraph (:meth:`FactGraph.candidates`).
        anchor_tags: whether the structural tags see the anchor facts (``False``: the anchors
            still bring their facts into the candidate subgraph, but the tags read as if there
            were none; an ablation on a candidate set shared with anchored retrievers).
        name: the retriever's name (default from the configuration).
        seed: parameter initialization.
        facts: the graph's :class:`FactGraph`, to share one between retrievers of a graph.

    References:
        - Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
          Knowledge-Graph-Based Retrieval-Augmented Generation", 2025.
        - An unpublished project write-up on the structurally gated GNN retriever (untitled;
          no code released), n.d.: the anchors, structural tags and gated GNN.
    """

    def __init__(
        self,
        graph: TypedGraph,
        config: GNNConfig | None = None,
        *,
        encoder: Encoder | None = None,
        relation_texts: Sequence[str] | None = None,
        n_anchors: int = 20,
        hops: int = 2,
        anchor_hops: int = 1,
        max_facts: int = 3000,
        anchor_tags: bool = True,
        name: str | None = None,
        seed: int = 0,
        facts: FactGraph | None = None,
    ):
        for label, v, lo in (
            ("n_anchors", n_anchors, 0),
            ("hops", hops, 1),
            ("anchor_hops", anchor_hops, 0),
            ("max_facts", max_facts, 1),
        ):
            check_int(v, label, lo)
        config = config if config is not None else GNNConfig()
        self.graph, self.config = graph, config
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
        if not isinstance(anchor_tags, bool):
            raise TypeError(f"anchor_tags must be a bool, got {anchor_tags!r}")
        self.anchor_tags = anchor_tags
        self.name = name or f"gnn-{config.gate}-L{config.n_layers}" + (
            "" if n_anchors and anchor_tags else "-noanchor"
        )
        self.params = init_params(
            jax.random.PRNGKey(seed), config, self.encoder.dim, len(rel_texts)
        )
        self._fact_norm = self._fact_norms()
        self._entity_text = jnp.asarray(self.entity_text)
        self._score = jax.jit(lambda p, b: logits(p, config, b, self.relation_text))

    # ------------------------------------------------------------------ question subgraphs
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

    # ------------------------------------------------------------------------- scoring
    def scores(
        self,
        subs: Sequence[QuestionSubgraph] | PreparedQuestions,
        qs: np.ndarray | None = None,
        batch_size: int = 8,
    ) -> list[np.ndarray]:
        """``[m_i]`` logits of every candidate fact of each question: prepared questions, or
        subgraphs with their question embeddings ``qs`` (prepared here)."""
        prepared = subs if isinstance(subs, PreparedQuestions) else None
        if prepared is None:
            if qs is None:
                raise ValueError("scores of subgraphs need their question embeddings qs")
            prepared = self.prepare_subgraphs(list(subs), qs)
        self._check_prepared(prepared)
        out: list[np.ndarray] = [np.zeros(0)] * len(prepared)
        for bucket, rows in zip(prepared.buckets, prepared.rows):
            z = self._bucket_logits(bucket, batch_size)
            if not np.all(np.isfinite(z[np.asarray(bucket.fact_mask)])):
                raise FloatingPointError(f"{self.name}: non-finite fact scores")
            for j, i in enumerate(rows):
                out[i] = z[j, : prepared.subgraphs[i].n_facts]
        return out

    def _bucket_logits(self, bucket: Bucket, rows: int = 8) -> np.ndarray:
        """``[Q, M]`` logits of a bucket's questions, ``rows`` at a time (a last, smaller
        batch padded with empty rows: one compiled scorer per bucket shape)."""
        score = _training.programs(self.config, 1e-3, self.anchor_tags)[1]
        Q = bucket.q.shape[0]
        out = []
        for lo in range(0, Q, rows):
            idx = np.arange(lo, lo + rows)
            live = idx < Q
            z = score(self.params, bucket, jnp.asarray(np.minimum(idx, Q - 1)), jnp.asarray(live),
                      self._entity_text, self.relation_text)  # fmt: skip
            out.append(np.asarray(z)[: int(live.sum())])
        return np.concatenate(out)

    def rank(
        self, subs: Sequence[QuestionSubgraph] | PreparedQuestions, qs: np.ndarray | None = None
    ) -> list[np.ndarray]:
        """Fact indices of each question's candidates, best first (ties: lower index)."""
        subgraphs = subs.subgraphs if isinstance(subs, PreparedQuestions) else subs
        return [
            sub.facts[np.lexsort((sub.facts, -s))]
            for sub, s in zip(subgraphs, self.scores(subs, qs))
        ]

    def retrieve(self, query: Query, k: int = 100) -> Retrieval:
        return self.retrieve_batch([query], k)[0]

    def retrieve_batch(self, queries: Sequence[Query], k: int = 100) -> list[Retrieval]:
        """The top ``k`` facts of each query, as triples of the graph (edge indices, with their
        logits) and an evidence state holding them and their inverse copies; ``index`` lists
        the facts' entities, each scored by its best fact."""
        k = check_k(k)
        prepared = self.prepare(queries)
        out = []
        for query, sub, s in zip(queries, prepared.subgraphs, self.scores(prepared)):
            order = np.lexsort((sub.facts, -s))[:k]
            top = sub.facts[order]
            edges = self.facts.edge[top]
            inv = self.facts.inverse_edge[top]
            keep = np.union1d(edges, inv[inv >= 0])
            ends = np.stack([self.facts.head[top], self.facts.tail[top]], 1).ravel()
            nodes, first = np.unique(ends, return_index=True)  # a node ranks by its best fact
            order_nodes = np.argsort(first, kind="stable")
            nodes, node_scores = nodes[order_nodes], s[order][first[order_nodes] // 2]
            prov = dict(
                retriever=self.name, query=query.text, anchors=query.anchors, n_facts=len(top)
            )
            state = EvidenceState(graph=self.graph.subgraph(keep), provenance=prov)
            out.append(
                Retrieval(
                    query,
                    nodes,
                    node_scores,
                    self.graph,
                    self.name,
                    anchors=np.asarray(self._topics(query), np.int64),
                    triples=edges,
                    triple_scores=s[order],
                    given_evidence=state,
                )
            )
        return out

    # ------------------------------------------------------------------------- training
    def fit(
        self,
        train: Sequence[Query] | PreparedQuestions,
        valid: Sequence[Query] | PreparedQuestions,
        config: RetrieverTrainConfig | None = None,
        progress: bool = False,
        checkpoint: str | Path | None = None,
    ) -> TrainLog:
        """Train on ``train`` (queries with ``relevant`` answers, or questions prepared by
        :meth:`prepare` with ``config.labels``), stop early on ``valid`` (keep the parameters
        of the best validation epoch); with no ``valid`` questions, train every epoch and keep
        the last parameters.

        Each epoch shuffles the training questions within each bucket shape, cuts them into
        batches of ``config.batch_size`` (a bucket's last batch padded with empty rows) and
        visits the batches in a random order; validation recall@``eval_k`` counts every fact on
        a shortest path in the candidate subgraph (:meth:`valid_recall`).

        Args:
            checkpoint: a file for the training state (parameters, optimizer state, best
                parameters, shuffling state, log), written atomically after every epoch; when
                it exists, training resumes after its last epoch (``config.epochs`` may be
                larger than the state's run; a state of another retriever, schedule or
                question set is refused with a ``ValueError``).
        """
        return _training.train(self, train, valid, config, progress, checkpoint)

    def valid_recall(self, prepared: PreparedQuestions, k: int = 100) -> float:
        """Mean over the questions with a shortest-path fact among their candidates of the
        share of those facts in the top ``k`` (the stopping criterion; ties broken by
        candidate order)."""
        return _training.valid_recall(self, prepared, k)

    # ------------------------------------------------------------------------ checkpoints
    def _fingerprint(self) -> dict:
        """What a checkpoint must agree on: the graph (counts and a sha256 of its names, node
        texts and sorted id triples) and the encoder."""
        return dict(
            n_entities=self.graph.n_nodes,
            n_relations=len(self.graph.relations),
            n_facts=self.facts.n_facts,
            sha256=graph_sha256(self.graph),
            text_dim=self.encoder.dim,
            encoder=self.encoder.name,
        )

    def _settings(self) -> dict:
        """The candidate-subgraph settings the parameters were trained with."""
        return {k: getattr(self, k) for k in _SETTINGS}

    def save(self, path: str | Path) -> Path:
        """Write the parameters, the configuration, the retrieval settings and the graph's
        fingerprint to ``path`` (``.npz``, atomically: an interrupted write keeps the old file)."""
        leaves, treedef = jax.tree_util.tree_flatten(self.params)
        meta = dict(
            version=CHECKPOINT_VERSION,
            config=dataclasses.asdict(self.config),
            graph=self._fingerprint(),
            treedef=str(treedef),
            name=self.name,
            **{k: int(v) for k, v in self._settings().items()},
        )
        return write_archive(path, meta, leaves)

    def load(self, path: str | Path) -> TripleRetriever:
        """Load parameters saved by :meth:`save` into this retriever. Returns ``self``.

        Raises:
            FileNotFoundError: no file at ``path``.
            ValueError: naming ``path``, for a file that is not a readable checkpoint (empty,
                truncated, corrupt, pickled arrays), bad or missing metadata (naming the field),
                another graph (naming both fingerprints) or encoder, another architecture,
                other retrieval settings (``n_anchors``, ``hops``, ``anchor_hops``,
                ``max_facts``: construct the retriever with the checkpoint's), or parameters
                that are not finite float arrays of the architecture's shapes.
        """
        meta, leaves = read_archive(path, "TripleRetriever checkpoint")
        check_meta(path, meta, _SETTINGS)
        check_compatible(path, meta, self._fingerprint(), self.config, self._settings())
        ref = jax.tree_util.tree_leaves(self.params)
        arrays = check_leaves(path, leaves, ref)
        treedef = jax.tree_util.tree_structure(self.params)
        self.params = jax.tree_util.tree_unflatten(treedef, [jnp.asarray(x) for x in arrays])
        return self


_SETTINGS = ("n_anchors", "hops", "anchor_hops", "max_facts", "anchor_tags")
