"""The training loop of :class:`~grounding.retrieval.TripleRetriever` (its ``fit``): the schedule,
the log, the compiled steps shared by every retriever of an architecture, per-epoch
validation and the resumable training state."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm import tqdm

from grounding._checks import check_int
from grounding.learn.checkpoint import check_leaves, read_archive, write_archive
from grounding.learn.early_stopping import EarlyStopping, check_finite
from grounding.query import Query
from grounding.retrieval.learned._checkpoint import TRAIN_STATE_VERSION
from grounding.retrieval.learned.gnn import Batch, GNNConfig, logits
from grounding.retrieval.learned.prepared import LABELS, Bucket, PreparedQuestions, gather

__all__ = ["RetrieverTrainConfig", "TrainLog", "train", "valid_recall", "programs", "data_tag"]


@dataclasses.dataclass(frozen=True)
class RetrieverTrainConfig:
    """Training schedule (SubgraphRAG's optimizer, loss and stopping rule).

    Attributes:
        epochs: maximum epochs.
        lr: Adam learning rate.
        patience: epochs without a better validation recall@``eval_k`` before stopping.
        batch_size: questions per step (a batch holds questions of one bucket shape).
        eval_k: the ``K`` of the stopping criterion.
        seed: shuffling.
        labels: ``"all"`` (every fact on a shortest topic–answer path is positive) or
            ``"pair"`` (SubgraphRAG's exact labels: one fact per entity pair).

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
    labels: str = "all"

    def __post_init__(self) -> None:
        for name in ("epochs", "patience", "batch_size", "eval_k"):
            check_int(getattr(self, name), name)
        if self.labels not in LABELS:
            raise ValueError(f"labels must be one of {LABELS}, got {self.labels!r}")
        if not (isinstance(self.lr, (int, float)) and np.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite positive number, got {self.lr!r}")


@dataclasses.dataclass
class TrainLog:
    """What :meth:`TripleRetriever.fit` did: per-epoch loss and validation recall, the best
    epoch, whether the stopping rule fired, questions skipped (no path), wall time (all of
    it; the epochs' alone: training steps, compiling and per-epoch validation, without
    preparing the questions; and each epoch's), and the epochs resumed from a checkpoint."""

    loss: list[float] = dataclasses.field(default_factory=list)
    valid_recall: list[float] = dataclasses.field(default_factory=list)
    best_epoch: int = -1
    stopped: bool = False
    n_train: int = 0
    n_skipped: int = 0
    seconds: float = 0.0
    train_seconds: float = 0.0
    epoch_seconds: list[float] = dataclasses.field(default_factory=list)
    resumed_epochs: int = 0

    @property
    def epochs_per_second(self) -> float:
        return len(self.loss) / self.seconds if self.seconds else float("nan")

    @property
    def question_epochs_per_second(self) -> float:
        """Training questions times the epochs run in this call, per second of the epochs."""
        run = len(self.loss) - self.resumed_epochs
        return self.n_train * run / self.train_seconds if self.train_seconds else float("nan")


def train(
    model: Any,
    train: Sequence[Query] | PreparedQuestions,
    valid: Sequence[Query] | PreparedQuestions,
    config: RetrieverTrainConfig | None = None,
    progress: bool = False,
    checkpoint: str | Path | None = None,
) -> TrainLog:
    """:meth:`TripleRetriever.fit <grounding.retrieval.TripleRetriever.fit>` (its docstring)."""
    config = config if config is not None else RetrieverTrainConfig()
    log = TrainLog()
    t0 = time.perf_counter()
    tp = train if isinstance(train, PreparedQuestions) else model.prepare(train, config.labels)
    model._check_prepared(tp, config.labels)
    vp = None
    if isinstance(valid, PreparedQuestions):
        vp = valid
    elif len(valid):
        vp = model.prepare(valid)
    if vp is not None:
        model._check_prepared(vp)
    keep = tp.has_path
    log.n_train, log.n_skipped = int(keep.sum()), int((~keep).sum())
    if not keep.any():
        raise ValueError("no training question has a topic-answer path in its candidate subgraph")
    step = programs(model.config, float(config.lr), model.anchor_tags)[0]
    opt = optax.adam(config.lr)
    state = opt.init(model.params)
    rng = np.random.default_rng(config.seed)
    stop = EarlyStopping(config.patience)
    stop.best_state = model.params
    start = 0
    tag = data_tag(tp, vp)
    if checkpoint is not None and Path(checkpoint).exists():
        state, rng, start = _resume(model, checkpoint, config, tag, opt, log, stop)
    local = [np.flatnonzero(keep[rows]) for rows in tp.rows]  # trainable rows per bucket
    B = config.batch_size
    t1 = time.perf_counter()
    for epoch in tqdm(range(start, config.epochs), disable=not progress, desc=model.name):
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
            model.params, state, loss = step(
                model.params, state, tp.buckets[b], jnp.asarray(full), jnp.asarray(live),
                model._entity_text, model.relation_text,
            )  # fmt: skip
            losses.append(loss)
        mean = float(np.mean(np.asarray(jnp.stack(losses))))
        check_finite(mean, model.params, epoch, model.name)
        log.loss.append(mean)
        if vp is None:
            stop.best_state, stop.best_epoch = model.params, epoch
        else:
            log.valid_recall.append(valid_recall(model, vp, config.eval_k))
            log.stopped = stop.update(epoch, log.valid_recall[-1], model.params)
        log.best_epoch = stop.best_epoch
        log.epoch_seconds.append(time.perf_counter() - te)
        if checkpoint is not None:
            _save_state(model, checkpoint, config, tag, state, rng, log, stop)
    model.params = stop.best_state
    log.train_seconds = time.perf_counter() - t1
    log.seconds = time.perf_counter() - t0
    return log


def valid_recall(model: Any, prepared: PreparedQuestions, k: int = 100) -> float:
    """:meth:`TripleRetriever.valid_recall <grounding.retrieval.TripleRetriever.valid_recall>`."""
    model._check_prepared(prepared)
    recalls = []
    for bucket in prepared.buckets:
        z = model._bucket_logits(bucket)
        gold = np.asarray(bucket.gold)
        n_gold = gold.sum(1)
        kk = min(k, z.shape[1])
        top = np.argsort(-z, axis=1, kind="stable")[:, :kk]  # ties: candidate order
        hits = np.take_along_axis(gold, top, 1).sum(1)
        recalls += (hits / np.maximum(n_gold, 1))[n_gold > 0].tolist()
    return float(np.mean(recalls)) if recalls else 0.0


def _state_meta(model: Any, config: RetrieverTrainConfig, tag: str) -> dict:
    return dict(
        version=TRAIN_STATE_VERSION,
        kind="TripleRetriever training state",
        config=dataclasses.asdict(model.config),
        graph=model._fingerprint(),
        settings={k: int(v) for k, v in model._settings().items()},
        # the epoch budget may grow between runs; everything else must be the same
        train_config={k: v for k, v in dataclasses.asdict(config).items() if k != "epochs"},
        data=tag,
    )


def _save_state(model: Any, path, config, tag, opt_state, rng, log: TrainLog, stop) -> None:
    parts = [model.params, opt_state, stop.best_state]
    leaves = [np.asarray(x) for p in parts for x in jax.tree_util.tree_leaves(p)]
    meta = _state_meta(model, config, tag) | dict(
        epoch=len(log.loss),
        rng=rng.bit_generator.state,
        log=dict(loss=log.loss, valid_recall=log.valid_recall, best_epoch=log.best_epoch,
                 stopped=log.stopped),
        stop=dict(best_score=stop.best_score, best_epoch=stop.best_epoch,
                  since_best=stop.since_best),
        counts=[len(jax.tree_util.tree_leaves(p)) for p in parts],
    )  # fmt: skip
    write_archive(path, meta, leaves)


def _resume(model: Any, path, config, tag, opt, log: TrainLog, stop) -> tuple:
    """Restore the training state at ``path`` into this retriever, ``log`` and ``stop``;
    returns the optimizer state, the shuffling generator and the next epoch."""
    meta, leaves = read_archive(path, "TripleRetriever training state")
    if not isinstance(meta, dict) or meta.get("kind") != "TripleRetriever training state":
        raise ValueError(f"{path}: not a TripleRetriever training state")
    if meta.get("version") != TRAIN_STATE_VERSION:
        raise ValueError(
            f"{path}: field 'version': training state version {meta.get('version')!r}, "
            f"expected {TRAIN_STATE_VERSION} (start training afresh: delete the file)"
        )
    mine = _state_meta(model, config, tag)
    bad = [k for k in mine if json.dumps(meta.get(k), sort_keys=True)
           != json.dumps(mine[k], sort_keys=True)]  # fmt: skip
    if bad:
        raise ValueError(
            f"{path}: training state of another retriever, schedule or question set "
            f"(differs in {', '.join(bad)}); delete it to start afresh"
        )
    refs = [model.params, opt.init(model.params), model.params]
    counts = meta["counts"]
    if counts != [len(jax.tree_util.tree_leaves(p)) for p in refs]:
        raise ValueError(f"{path}: {sum(counts)} arrays, not this architecture's state")
    out, lo = [], 0
    for part, (ref, c) in enumerate(zip(refs, counts)):
        got, want = leaves[lo : lo + c], jax.tree_util.tree_leaves(ref)
        if part == 1:  # the optimizer state: its step count is an integer
            bad = [i for i, (x, r) in enumerate(zip(got, want))
                   if x.shape != r.shape or x.dtype != r.dtype]  # fmt: skip
            if bad:
                raise ValueError(f"{path}: optimizer state array {bad[0]} is not the "
                                 "architecture's (shape or dtype)")  # fmt: skip
            arrays = got
        else:
            arrays = check_leaves(path, got, want)
        treedef = jax.tree_util.tree_structure(ref)
        out.append(jax.tree_util.tree_unflatten(treedef, [jnp.asarray(x) for x in arrays]))
        lo += c
    model.params, opt_state, stop.best_state = out
    for k, v in meta["stop"].items():
        setattr(stop, k, v)
    log.loss, log.valid_recall = list(meta["log"]["loss"]), list(meta["log"]["valid_recall"])
    log.best_epoch, log.stopped = meta["log"]["best_epoch"], meta["log"]["stopped"]
    log.resumed_epochs = meta["epoch"]
    rng = np.random.default_rng()
    rng.bit_generator.state = meta["rng"]
    return opt_state, rng, meta["epoch"]


def data_tag(train: PreparedQuestions, valid: PreparedQuestions | None) -> str:
    """A sha256 of the training and validation questions' ids and settings (a training
    state resumes only on the same questions)."""
    h = hashlib.sha256()
    for p in (train, valid):
        if p is not None:
            h.update(json.dumps([list(p.ids), p.settings], sort_keys=True).encode())
    return h.hexdigest()


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
