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
against the shortest-path labels, Adam (learning rate ``1e-3``), early stopping on validation
shortest-path triple recall@100 with patience 10; training questions without a topic–answer
path in their candidate subgraph are skipped and counted.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm import tqdm

from grounding._checks import check_int
from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph
from grounding.learn.checkpoint import check_leaves, read_archive, write_archive
from grounding.learn.loop import EarlyStopping, check_finite
from grounding.query import Query
from grounding.retrieval.base import Retrieval, check_k
from grounding.retrieval.learned._checkpoint import (
    CHECKPOINT_VERSION,
    check_compatible,
    check_meta,
    graph_sha256,
)
from grounding.retrieval.learned.features import (
    FactGraph,
    QuestionSubgraph,
    stable_seed,
)
from grounding.retrieval.learned.gnn import Batch, GNNConfig, init_params, logits, make_batch
from grounding.retrieval.metrics import recall_at_k
from grounding.retrieval.text import Encoder, HashingEncoder
from grounding.solver.prepare import bucket

__all__ = [
    "RetrieverTrainConfig",
    "TrainLog",
    "TripleRetriever",
]


@dataclasses.dataclass(frozen=True)
class RetrieverTrainConfig:
    """Training schedule (SubgraphRAG's optimizer, loss and stopping rule).

    Attributes:
        epochs: maximum epochs.
        lr: Adam learning rate.
        patience: epochs without a better validation recall@``eval_k`` before stopping.
        batch_size: questions per step.
        eval_k: the ``K`` of the stopping criterion.
        seed: initialization and shuffling.

    References:
        Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
            Knowledge-Graph-Based Retrieval-Augmented Generation", 2025.
    """

    epochs: int = 50
    lr: float = 1e-3
    patience: int = 10
    batch_size: int = 4
    eval_k: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("epochs", "patience", "batch_size", "eval_k"):
            check_int(getattr(self, name), name)
        if not (isinstance(self.lr, (int, float)) and np.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite positive number, got {self.lr!r}")


@dataclasses.dataclass
class TrainLog:
    """What :meth:`TripleRetriever.fit` did: per-epoch loss and validation recall, the best
    epoch, questions skipped (no path), wall time."""

    loss: list[float] = dataclasses.field(default_factory=list)
    valid_recall: list[float] = dataclasses.field(default_factory=list)
    best_epoch: int = -1
    n_train: int = 0
    n_skipped: int = 0
    seconds: float = 0.0

    @property
    def epochs_per_second(self) -> float:
        return len(self.loss) / self.seconds if self.seconds else float("nan")


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
        self.name = name or f"gnn-{config.gate}-L{config.n_layers}" + (
            "" if n_anchors else "-noanchor"
        )
        self.params = init_params(
            jax.random.PRNGKey(seed), config, self.encoder.dim, len(rel_texts)
        )
        self._fact_norm = self._fact_norms()
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
        """The query's candidate subgraph (answers from ``query.relevant`` when given)."""
        q = self.embed([query])[0] if q is None else q
        topics = self._topics(query)
        anchors = self.anchor_facts(q)
        cand = self.facts.candidates(
            topics,
            anchors,
            self.hops,
            self.anchor_hops,
            self.max_facts,
            seed=stable_seed(query.id or query.text),
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

    # ------------------------------------------------------------------------- scoring
    def scores(
        self, subs: Sequence[QuestionSubgraph], qs: np.ndarray, batch_size: int = 8
    ) -> list[np.ndarray]:
        """``[m_i]`` logits of every candidate fact of each subgraph."""
        out = []
        rows = min(batch_size, bucket(len(subs), floor=1))  # a last, smaller batch is padded
        for lo in range(0, len(subs), batch_size):
            part = subs[lo : lo + batch_size]
            batch = self.batch(part, qs[lo : lo + batch_size], n_rows=rows)
            s = np.asarray(self._score(self.params, batch))
            if not np.all(np.isfinite(s[np.asarray(batch.fact_mask)])):
                raise FloatingPointError(f"{self.name}: non-finite fact scores")
            out.extend(s[i, : sub.n_facts] for i, sub in enumerate(part))
        return out

    def rank(self, subs: Sequence[QuestionSubgraph], qs: np.ndarray) -> list[np.ndarray]:
        """Fact indices of each subgraph's candidates, best first (ties: lower index)."""
        return [
            sub.facts[np.lexsort((sub.facts, -s))] for sub, s in zip(subs, self.scores(subs, qs))
        ]

    def retrieve(self, query: Query, k: int = 100) -> Retrieval:
        return self.retrieve_batch([query], k)[0]

    def retrieve_batch(self, queries: Sequence[Query], k: int = 100) -> list[Retrieval]:
        """The top ``k`` facts of each query, as triples of the graph (edge indices, with their
        logits) and an evidence state holding them and their inverse copies; ``index`` lists
        the facts' entities, each scored by its best fact."""
        k = check_k(k)
        qs = self.embed(queries)
        subs = [self.subgraph(query, q) for query, q in zip(queries, qs)]
        out = []
        for query, sub, s in zip(queries, subs, self.scores(subs, qs)):
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
        train: Sequence[Query],
        valid: Sequence[Query],
        config: RetrieverTrainConfig | None = None,
        progress: bool = False,
    ) -> TrainLog:
        """Train on ``train`` (queries with ``relevant`` answers), stop early on ``valid``
        (keep the parameters of the best validation epoch); with no ``valid`` questions, train
        every epoch and keep the last parameters."""
        config = config if config is not None else RetrieverTrainConfig()
        log = TrainLog()
        t0 = time.perf_counter()
        tq, vq = self.embed(train), self.embed(valid)
        tsubs = [self.subgraph(x, q) for x, q in zip(train, tq)]
        keep = [i for i, s in enumerate(tsubs) if s.has_path]
        log.n_train, log.n_skipped = len(keep), len(tsubs) - len(keep)
        if not keep:
            raise ValueError(
                "no training question has a topic-answer path in its candidate subgraph"
            )
        vsubs = [self.subgraph(x, q) for x, q in zip(valid, vq)]
        vgold = [s.facts[s.labels > 0] for s in vsubs]
        opt = optax.adam(config.lr)
        state = opt.init(self.params)
        cfg = self.config
        rel = self.relation_text

        def loss_fn(p, b):
            z = logits(p, cfg, b, rel)
            z = jnp.where(b.fact_mask, z, 0.0)
            bce = optax.sigmoid_binary_cross_entropy(z, b.labels) * b.fact_mask
            per_q = jnp.sum(bce, 1) / jnp.maximum(jnp.sum(b.fact_mask, 1), 1)
            real = jnp.any(b.fact_mask, 1)
            return jnp.sum(per_q * real) / jnp.maximum(jnp.sum(real), 1)

        @jax.jit
        def step(p, s, b):
            loss, g = jax.value_and_grad(loss_fn)(p, b)
            upd, s = opt.update(g, s, p)
            return optax.apply_updates(p, upd), s, loss

        rng = np.random.default_rng(config.seed)
        stop = EarlyStopping(config.patience)
        best_params = self.params
        for epoch in tqdm(range(config.epochs), disable=not progress, desc=self.name):
            order = rng.permutation(keep)
            losses = []
            for lo in range(0, len(order), config.batch_size):
                idx = order[lo : lo + config.batch_size]
                b = self.batch([tsubs[i] for i in idx], tq[idx], n_rows=config.batch_size)
                self.params, state, loss = step(self.params, state, b)
                losses.append(float(loss))
            mean = float(np.mean(losses))
            check_finite(mean, self.params, epoch, self.name)
            log.loss.append(mean)
            if not vsubs:
                best_params, log.best_epoch = self.params, epoch
                continue
            ranked = self.rank(vsubs, vq)
            rec = [recall_at_k(r, g, config.eval_k) for r, g in zip(ranked, vgold) if len(g)]
            log.valid_recall.append(float(np.mean(rec)) if rec else 0.0)
            done = stop.update(epoch, log.valid_recall[-1], self.params)
            best_params, log.best_epoch = stop.best_state, stop.best_epoch
            if done:
                break
        self.params = best_params
        log.seconds = time.perf_counter() - t0
        return log

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


_SETTINGS = ("n_anchors", "hops", "anchor_hops", "max_facts")
