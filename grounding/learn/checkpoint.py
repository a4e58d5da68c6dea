"""The checkpoint file of every trainer of the package: a ``.npz`` archive of a JSON metadata
array ``meta`` and the arrays ``p0 ... p<n>`` (a model's parameters as pytree leaves), written
atomically and read so that any damaged or foreign file is a ``ValueError`` naming it
(pickled arrays refused). Used by :func:`grounding.learn.save_checkpoint` (KG embeddings) and
:meth:`grounding.retrieval.TripleRetriever.save`."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from grounding.io import atomic_write_bytes

__all__ = ["write_archive", "read_archive", "check_leaves"]


def write_archive(path: str | Path, meta: dict, leaves: Sequence[np.ndarray]) -> Path:
    """Write JSON-able ``meta`` and the arrays ``leaves`` to ``path`` atomically (an
    interrupted write keeps the old file)."""
    buf = io.BytesIO()
    np.savez(
        buf,
        meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
        **{f"p{i}": np.asarray(x) for i, x in enumerate(leaves)},
    )
    return atomic_write_bytes(path, buf.getvalue())


def short(value: object, limit: int = 400) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def read_archive(path: str | Path, what: str) -> tuple[object, list[np.ndarray]]:
    """The decoded metadata and the arrays of a checkpoint file written by
    :func:`write_archive` (pickled arrays refused); any damaged or foreign file is a
    ``ValueError`` naming ``path`` and ``what`` it should have been."""
    with open(path, "rb") as fh:  # owned here: np.load leaks a handle it fails to parse
        try:
            z = np.load(fh, allow_pickle=False)
        except Exception as err:  # noqa: BLE001 - any failure to parse is a bad checkpoint
            raise _unreadable(path, what, err) from err
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError(f"{path}: not a {what} (a single array, not .npz)")
        with z:
            return _members(path, what, z)


def _members(
    path: str | Path, what: str, z: np.lib.npyio.NpzFile
) -> tuple[object, list[np.ndarray]]:
    """The decoded metadata and the parameter arrays ``p0 ... p<n>`` of an open archive."""
    n = len(z.files) - 1
    if set(z.files) != {"meta", *(f"p{i}" for i in range(n))}:
        raise ValueError(
            f"{path}: not a {what}: expected the arrays 'meta' and "
            f"'p0'... 'p<n>', got {short(sorted(z.files))}"
        )
    try:
        raw = z["meta"]
        leaves = [z[f"p{i}"] for i in range(n)]
    except Exception as err:  # noqa: BLE001 - corrupt members, pickled arrays
        raise _unreadable(path, what, err) from err
    return _decode_meta(path, raw), leaves


def _unreadable(path: str | Path, what: str, err: BaseException) -> ValueError:
    return ValueError(
        f"{path}: not a readable {what} (empty, truncated or corrupt: "
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
