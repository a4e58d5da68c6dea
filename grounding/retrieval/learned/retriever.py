r"""Learned triple retrievers: scoring, retrieval, training, checkpoints.

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
import functools
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm import tqdm

from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph
from grounding.language import Encoder
from grounding.learn.checkpoint import check_leaves, read_archive, write_archive
from grounding.learn.early_stopping import EarlyStopping, check_finite
from grounding.query import Query
from grounding.retrieval.base import Retrieval, check_k
from grounding.retrieval.learned._checkpoint import (
    CHECKPOINT_VERSION,
    check_compatible,
    check_meta,
    data_tag,
    graph_sha256,
    resume,
    save_state,
)
from grounding.retrieval.learned.candidates import QuestionCandidates
from grounding.retrieval.learned.features import FactGraph, QuestionSubgraph
from grounding.retrieval.learned.gnn import Batch, GNNConfig, init_params, logits
from grounding.retrieval.learned.prepared import Bucket, PreparedQuestions, gather
from grounding.retrieval.learned.schedule import RetrieverTrainConfig, TrainLog

__all__ = ["TripleRetriever"]


class TripleRetriever(QuestionCandidates):
    """A learned triple retriever over one graph (module docstring): a scorer over the
    candidate facts of :class:`~grounding.retrieval.learned.QuestionCandidates`.

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
        super().__init__(
            graph,
            encoder=encoder,
            relation_texts=relation_texts,
            n_anchors=n_anchors,
            hops=hops,
            anchor_hops=anchor_hops,
            max_facts=max_facts,
            facts=facts,
        )
        config = config if config is not None else GNNConfig()
        self.config = config
        if not isinstance(anchor_tags, bool):
            raise TypeError(f"anchor_tags must be a bool, got {anchor_tags!r}")
        self.anchor_tags = anchor_tags
        self.name = name or f"gnn-{config.gate}-L{config.n_layers}" + (
            "" if n_anchors and anchor_tags else "-noanchor"
        )
        self.params = init_params(
            jax.random.PRNGKey(seed), config, self.encoder.dim, len(graph.relations)
        )
        self._entity_text = jnp.asarray(self.entity_text)

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
        score = programs(self.config, 1e-3, self.anchor_tags)[1]
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
        config = config if config is not None else RetrieverTrainConfig()
        log = TrainLog()
        t0 = time.perf_counter()
        tp = train if isinstance(train, PreparedQuestions) else self.prepare(train, config.labels)
        self._check_prepared(tp, config.labels)
        vp = None
        if isinstance(valid, PreparedQuestions):
            vp = valid
        elif len(valid):
            vp = self.prepare(valid)
        if vp is not None:
            self._check_prepared(vp)
        keep = tp.has_path
        log.n_train, log.n_skipped = int(keep.sum()), int((~keep).sum())
        if not keep.any():
            raise ValueError(
                "no training question has a topic-answer path in its candidate subgraph"
            )
        step = programs(self.config, float(config.lr), self.anchor_tags)[0]
        opt = optax.adam(config.lr)
        state = opt.init(self.params)
        rng = np.random.default_rng(config.seed)
        stop = EarlyStopping(config.patience)
        stop.best_state = self.params
        start = 0
        tag = data_tag(tp, vp)
        if checkpoint is not None and Path(checkpoint).exists():
            state, rng, start = resume(self, checkpoint, config, tag, opt, log, stop)
        local = [np.flatnonzero(keep[rows]) for rows in tp.rows]  # trainable rows per bucket
        B = config.batch_size
        t1 = time.perf_counter()
        for epoch in tqdm(range(start, config.epochs), disable=not progress, desc=self.name):
            if log.stopped:
                break
            te = time.perf_counter()
            batches = []
            for b, rows in enumerate(local):
                perm = rng.permutation(rows)
                batches += [(b, perm[lo : lo + B]) for lo in range(0, len(perm), B)]
            losses = []
            for j in rng.permutation(len(batches)):
                b, idx = batches[j]
                live = np.arange(B) < len(idx)
                full = np.resize(idx, B) if len(idx) else np.zeros(B, np.int64)
                self.params, state, loss = step(
                    self.params, state, tp.buckets[b], jnp.asarray(full), jnp.asarray(live),
                    self._entity_text, self.relation_text,
                )  # fmt: skip
                losses.append(loss)
            mean = float(np.mean(np.asarray(jnp.stack(losses))))
            check_finite(mean, self.params, epoch, self.name)
            log.loss.append(mean)
            if vp is None:
                stop.best_state, stop.best_epoch = self.params, epoch
            else:
                log.valid_recall.append(self.valid_recall(vp, config.eval_k))
                log.stopped = stop.update(epoch, log.valid_recall[-1], self.params)
            log.best_epoch = stop.best_epoch
            log.epoch_seconds.append(time.perf_counter() - te)
            if checkpoint is not None:
                save_state(self, checkpoint, config, tag, state, rng, log, stop)
        self.params = stop.best_state
        log.train_seconds = time.perf_counter() - t1
        log.seconds = time.perf_counter() - t0
        return log

    def valid_recall(self, prepared: PreparedQuestions, k: int = 100) -> float:
        """Mean over the questions with a shortest-path fact among their candidates of the
        share of those facts in the top ``k`` (the stopping criterion; ties broken by
        candidate order)."""
        self._check_prepared(prepared)
        recalls = []
        for bucket in prepared.buckets:
            z = self._bucket_logits(bucket)
            gold = np.asarray(bucket.gold)
            n_gold = gold.sum(1)
            kk = min(k, z.shape[1])
            top = np.argsort(-z, axis=1, kind="stable")[:, :kk]  # ties: candidate order
            hits = np.take_along_axis(gold, top, 1).sum(1)
            recalls += (hits / np.maximum(n_gold, 1))[n_gold > 0].tolist()
        return float(np.mean(recalls)) if recalls else 0.0

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


@functools.lru_cache(maxsize=64)
def programs(config: GNNConfig, lr: float, anchor_tags: bool):
    """The compiled training step and scorer of an architecture (shared by every retriever and
    seed of it; one compilation per bucket shape)."""
    opt = optax.adam(lr)

    def loss_fn(p, b: Batch, rel):
        z = logits(p, config, b, rel)
        z = jnp.where(b.fact_mask, z, 0.0)
        bce = optax.sigmoid_binary_cross_entropy(z, b.labels) * b.fact_mask
        per_q = jnp.sum(bce, 1) / jnp.maximum(jnp.sum(b.fact_mask, 1), 1)
        real = jnp.any(b.fact_mask, 1)
        return jnp.sum(per_q * real) / jnp.maximum(jnp.sum(real), 1)

    @jax.jit
    def step(p, s, bucket: Bucket, idx, live, ent, rel):
        b = gather(bucket, idx, live, ent, anchor_tags)
        loss, g = jax.value_and_grad(loss_fn)(p, b, rel)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss

    @jax.jit
    def score(p, bucket: Bucket, idx, live, ent, rel):
        return logits(p, config, gather(bucket, idx, live, ent, anchor_tags), rel)

    return step, score
