"""The files of a :class:`~grounding.retrieval.TripleRetriever`, on the package's one checkpoint
archive (:mod:`grounding.learn.checkpoint`): what a checkpoint must agree on (its version, its
graph's fingerprint, the architecture and the retrieval settings), and the per-epoch training
state that :meth:`~grounding.retrieval.TripleRetriever.fit` writes and resumes from."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from grounding.graph import TypedGraph
from grounding.learn.checkpoint import check_leaves, read_archive, short, write_archive
from grounding.learn.early_stopping import EarlyStopping
from grounding.retrieval.learned.prepared import PreparedQuestions
from grounding.retrieval.learned.schedule import RetrieverTrainConfig, TrainLog

__all__ = [
    "check_compatible",
    "check_meta",
    "graph_sha256",
    "data_tag",
    "resume",
    "save_state",
    "state_meta",
]

CHECKPOINT_VERSION = 3  # 2: the graph fingerprint holds a sha256 of the graph; 3: anchor_tags
TRAIN_STATE_VERSION = 1  # the per-epoch training state of TripleRetriever.fit(checkpoint=...)


def graph_sha256(graph: TypedGraph) -> str:
    """A sha256 of a graph's entity and relation names, node texts and sorted id triples
    (edge order and reliabilities do not count): equal for the same graph, different for
    another one with the same counts."""
    h = hashlib.sha256()
    h.update(json.dumps([graph.entities, graph.relations, graph.node_texts]).encode())
    ids = np.stack([np.asarray(a, np.int64) for a in (graph.head, graph.relation, graph.tail)], 1)
    ids = ids[np.lexsort(ids.T[::-1])] if len(ids) else ids
    h.update(np.ascontiguousarray(ids, "<i8").tobytes())
    return h.hexdigest()


def check_meta(path: str | Path, meta: object, settings: Sequence[str]) -> None:
    """ValueError naming ``path`` and the field for metadata ``TripleRetriever.save`` does not
    write (``settings``: the integer retrieval settings it records)."""
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: field 'meta' must be a JSON object, got {type(meta).__name__}")
    if "version" not in meta:
        raise ValueError(f"{path}: field 'version' is missing")
    if meta["version"] != CHECKPOINT_VERSION:
        raise ValueError(
            f"{path}: field 'version': checkpoint version {short(meta['version'], 40)}, "
            f"expected {CHECKPOINT_VERSION}: written by an older version of the package "
            "(version 3 records the anchor_tags setting); retrain, or load it with the "
            "version that wrote it"
        )
    for field, kind in (("config", dict), ("graph", dict), *((k, int) for k in settings)):
        if field not in meta:
            raise ValueError(f"{path}: field {field!r} is missing")
        v = meta[field]
        if isinstance(v, bool) or not isinstance(v, kind):
            raise ValueError(
                f"{path}: field {field!r} must be a JSON {'object' if kind is dict else 'integer'}"
                f", got {short(v, 80)}"
            )


def check_compatible(
    path: str | Path, meta: dict, mine: dict, config: object, settings: dict
) -> None:
    """ValueError unless the checkpoint's graph and encoder fingerprint, architecture
    (``config``, a dataclass) and retrieval ``settings`` are the retriever's."""
    theirs = meta["graph"]
    diff = [
        f"{k}: checkpoint {short(theirs.get(k), 100)} vs this retriever's {mine.get(k)!r}"
        for k in sorted(set(mine) | set(theirs))
        if theirs.get(k) != mine.get(k)
    ]
    if diff:
        raise ValueError(
            f"{path}: checkpoint is for another graph or encoder; {'; '.join(diff[:6])}"
        )
    if meta["config"] != dataclasses.asdict(config):
        raise ValueError(
            f"{path}: checkpoint architecture {short(meta['config'])} differs from "
            f"{dataclasses.asdict(config)}"
        )
    bad = [f"{k}={meta[k]} (this retriever: {v})" for k, v in settings.items() if meta[k] != v]
    if bad:
        raise ValueError(
            f"{path}: checkpoint was trained with {', '.join(bad)}; construct the retriever "
            "with the checkpoint's settings"
        )


def state_meta(model: Any, config: RetrieverTrainConfig, tag: str) -> dict:
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


def save_state(
    model: Any,
    path: str | Path,
    config: RetrieverTrainConfig,
    tag: str,
    opt_state: Any,
    rng: np.random.Generator,
    log: TrainLog,
    stop: EarlyStopping,
) -> None:
    """Write the training state of ``model`` after an epoch (parameters, optimizer state, best
    parameters, shuffling state, log, stopping rule) to ``path``, atomically."""
    parts = [model.params, opt_state, stop.best_state]
    leaves = [np.asarray(x) for p in parts for x in jax.tree_util.tree_leaves(p)]
    meta = state_meta(model, config, tag) | dict(
        epoch=len(log.loss),
        rng=rng.bit_generator.state,
        log=dict(loss=log.loss, valid_recall=log.valid_recall, best_epoch=log.best_epoch,
                 stopped=log.stopped),
        stop=dict(best_score=stop.best_score, best_epoch=stop.best_epoch,
                  since_best=stop.since_best),
        counts=[len(jax.tree_util.tree_leaves(p)) for p in parts],
    )  # fmt: skip
    write_archive(path, meta, leaves)


def resume(
    model: Any,
    path: str | Path,
    config: RetrieverTrainConfig,
    tag: str,
    opt: Any,
    log: TrainLog,
    stop: EarlyStopping,
) -> tuple:
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
    mine = state_meta(model, config, tag)
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
