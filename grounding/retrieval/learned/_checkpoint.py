"""What a :class:`~grounding.retrieval.TripleRetriever` checkpoint must agree on (its version,
its graph's fingerprint, the architecture and the retrieval settings), on the package's one
checkpoint archive (:mod:`grounding.learn.checkpoint`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from grounding.graph import TypedGraph
from grounding.learn.checkpoint import short

__all__ = ["check_compatible", "check_meta", "graph_sha256"]

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
