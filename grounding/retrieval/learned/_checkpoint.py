"""The checkpoint file of :class:`~grounding.retrieval.TripleRetriever`: a ``.npz`` archive of
a JSON metadata array ``meta`` and the parameter arrays ``p0 ... p<n>`` (pickled arrays
refused), read and checked so that any damaged or foreign file is a ValueError naming it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from grounding.graph import TypedGraph

__all__ = [
    "CHECKPOINT_VERSION",
    "check_compatible",
    "check_leaves",
    "check_meta",
    "graph_sha256",
    "read_checkpoint",
]

CHECKPOINT_VERSION = 2  # 2: the graph fingerprint holds a sha256 of the graph


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


def short(value: object, limit: int = 400) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def read_checkpoint(path: str | Path) -> tuple[object, list[np.ndarray]]:
    """The metadata and parameter arrays of a checkpoint file (pickled arrays refused)."""
    with open(path, "rb") as fh:  # owned here: np.load leaks a handle it fails to parse
        try:
            z = np.load(fh, allow_pickle=False)
        except Exception as err:  # noqa: BLE001 - any failure to parse is a bad checkpoint
            raise _unreadable(path, err) from err
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError(f"{path}: not a TripleRetriever checkpoint (a single array, not .npz)")
        with z:
            return _members(path, z)


def _members(path: str | Path, z: np.lib.npyio.NpzFile) -> tuple[object, list[np.ndarray]]:
    """The decoded metadata and the parameter arrays ``p0 ... p<n>`` of an open archive."""
    n = len(z.files) - 1
    if set(z.files) != {"meta", *(f"p{i}" for i in range(n))}:
        raise ValueError(
            f"{path}: not a TripleRetriever checkpoint: expected the arrays 'meta' and "
            f"'p0'... 'p<n>', got {short(sorted(z.files))}"
        )
    try:
        raw = z["meta"]
        leaves = [z[f"p{i}"] for i in range(n)]
    except Exception as err:  # noqa: BLE001 - corrupt members, pickled arrays
        raise _unreadable(path, err) from err
    return _decode_meta(path, raw), leaves


def _unreadable(path: str | Path, err: BaseException) -> ValueError:
    return ValueError(
        f"{path}: not a readable TripleRetriever checkpoint (empty, truncated or corrupt: "
        f"{type(err).__name__}: {short(str(err), 200)})"
    )


def _decode_meta(path: str | Path, raw: np.ndarray) -> object:
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise ValueError(
            f"{path}: field 'meta' must be a 1-D uint8 array, got {raw.dtype} {raw.shape}"
        )
    try:
        return json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: field 'meta' is not UTF-8 JSON ({err})") from None


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
            f"expected {CHECKPOINT_VERSION} (re-save it with this version)"
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


def check_leaves(path: str | Path, leaves: list[np.ndarray], ref: list) -> list[np.ndarray]:
    """The checkpoint's parameters as the architecture's dtypes, after checking that there are
    as many as the architecture has, each a finite float array of the expected shape."""
    if len(leaves) != len(ref):
        raise ValueError(f"{path}: {len(leaves)} parameter arrays, the architecture has {len(ref)}")
    out = []
    for i, (x, r) in enumerate(zip(leaves, ref)):
        if x.shape != r.shape:
            raise ValueError(
                f"{path}: parameter p{i} has shape {x.shape}, the architecture's is {r.shape}"
            )
        if not np.issubdtype(x.dtype, np.floating):
            raise ValueError(f"{path}: parameter p{i} must be a float array, got {x.dtype}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{path}: parameter p{i} holds non-finite values (NaN or inf)")
        out.append(x.astype(r.dtype, copy=False))
    return out


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
