"""The checkpoint file of every trainer of the package: a ``.npz`` archive of a JSON metadata
array ``meta`` and the arrays ``p0 ... p<n>`` (a model's parameters as pytree leaves), written
atomically and read so that any damaged or foreign file is a ``ValueError`` naming it
(pickled arrays refused). Used by :func:`grounding.learn.save_checkpoint` (KG embeddings) and
:meth:`grounding.retrieval.TripleRetriever.save`.

Reading costs time and memory in proportion to the file's size: before anything is read, the
archive's members may not declare more bytes than the file holds (archives are written
uncompressed), each array's header may not declare more data than its member holds, and the
metadata may hold at most :data:`MAX_META_BYTES` bytes of JSON nested at most
:data:`MAX_META_DEPTH` levels (checked on writing too)."""

from __future__ import annotations

import io
import json
import math
import os
import re
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from grounding.io import atomic_write_bytes

__all__ = ["write_archive", "read_archive", "check_leaves"]

#: The most bytes of JSON a checkpoint's metadata may hold.
MAX_META_BYTES = 16 << 20
#: The deepest nesting of lists and objects a checkpoint's metadata may have.
MAX_META_DEPTH = 32

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NESTING = np.zeros(256, np.int8)  # +1 opens a list or an object, -1 closes one
_NESTING[[ord("["), ord("{")]], _NESTING[[ord("]"), ord("}")]] = 1, -1


def write_archive(path: str | Path, meta: dict, leaves: Sequence[np.ndarray]) -> Path:
    """Write JSON-able ``meta`` and the arrays ``leaves`` to ``path`` atomically (an
    interrupted write keeps the old file). Metadata that :func:`read_archive` would refuse
    (over :data:`MAX_META_BYTES` bytes or :data:`MAX_META_DEPTH` levels) is a ``ValueError``
    and nothing is written."""
    raw = json.dumps(meta).encode()
    _check_meta_bytes(f"cannot write {path}", raw)
    buf = io.BytesIO()
    np.savez(
        buf,
        meta=np.frombuffer(raw, np.uint8),
        **{f"p{i}": np.asarray(x) for i, x in enumerate(leaves)},
    )
    return atomic_write_bytes(path, buf.getvalue())


def _check_meta_bytes(where: str, raw: bytes) -> None:
    """The metadata's JSON is at most :data:`MAX_META_BYTES` bytes and :data:`MAX_META_DEPTH`
    levels deep (brackets inside strings do not count); a ``ValueError`` starts with
    ``where`` otherwise."""
    if len(raw) > MAX_META_BYTES:
        raise ValueError(
            f"{where}: field 'meta' holds {len(raw)} bytes, more than {MAX_META_BYTES}"
        )
    step = _NESTING[np.frombuffer(_JSON_STRING.sub(b"", raw), np.uint8)]
    if len(step) and int(np.cumsum(step, dtype=np.int32).max()) > MAX_META_DEPTH:
        raise ValueError(f"{where}: field 'meta' is nested deeper than {MAX_META_DEPTH} levels")


def short(value: object, limit: int = 400) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def read_archive(path: str | Path, what: str) -> tuple[object, list[np.ndarray]]:
    """The decoded metadata and the arrays of a checkpoint file written by
    :func:`write_archive` (pickled arrays refused); any damaged or foreign file is a
    ``ValueError`` naming ``path`` and ``what`` it should have been."""
    with open(path, "rb") as fh:  # owned here: np.load leaks a handle it fails to parse
        size = os.fstat(fh.fileno()).st_size
        try:
            z = np.load(fh, allow_pickle=False)
        except Exception as err:  # noqa: BLE001 - any failure to parse is a bad checkpoint
            raise _unreadable(path, what, err) from err
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError(f"{path}: not a {what} (a single array, not .npz)")
        with z:
            return _members(path, what, z, size)


def _members(
    path: str | Path, what: str, z: np.lib.npyio.NpzFile, size: int
) -> tuple[object, list[np.ndarray]]:
    """The decoded metadata and the parameter arrays ``p0 ... p<n>`` of an open archive of
    ``size`` bytes (their sizes checked before they are read)."""
    n = len(z.files) - 1
    if set(z.files) != {"meta", *(f"p{i}" for i in range(n))}:
        raise ValueError(
            f"{path}: not a {what}: expected the arrays 'meta' and "
            f"'p0'... 'p<n>', got {short(sorted(z.files))}"
        )
    _check_sizes(path, what, z.zip, size)
    try:
        raw = z["meta"]
        leaves = [z[f"p{i}"] for i in range(n)]
    except Exception as err:  # noqa: BLE001 - corrupt members, pickled arrays
        raise _unreadable(path, what, err) from err
    return _decode_meta(path, raw), leaves


def _check_sizes(path: str | Path, what: str, zf: zipfile.ZipFile, size: int) -> None:
    """Refuse, before reading any data, an archive whose members declare more bytes than the
    file holds (a compressed member can expand a small file a thousandfold), a member that is
    not an array, and an array header that declares more data than its member holds (the
    array would be allocated first)."""
    infos = zf.infolist()
    declared = sum(info.file_size for info in infos)
    if declared > size:
        raise ValueError(
            f"{path}: not a {what}: its members declare {declared} bytes uncompressed, more "
            f"than the file's {size} (checkpoints are written uncompressed)"
        )
    for info in infos:
        name = info.filename.removesuffix(".npy")
        try:
            with zf.open(info) as f:
                version = np.lib.format.read_magic(f)
                read = {(1, 0): np.lib.format.read_array_header_1_0,
                        (2, 0): np.lib.format.read_array_header_2_0}[version]  # fmt: skip
                shape, _, dtype = read(f)
                held = info.file_size - f.tell()
        except Exception as err:  # noqa: BLE001 - not an array, or a damaged header
            raise _unreadable(path, what, err, name) from None
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > held:
            raise ValueError(
                f"{path}: array {name!r} declares shape {tuple(shape)} {dtype} ({nbytes} "
                f"bytes), more than the {held} bytes it holds"
            )
        if name == "meta" and nbytes > MAX_META_BYTES:
            raise ValueError(
                f"{path}: field 'meta' holds {nbytes} bytes, more than {MAX_META_BYTES}"
            )


def _unreadable(
    path: str | Path, what: str, err: BaseException, member: str | None = None
) -> ValueError:
    where = "" if member is None else f", array {member!r}"
    return ValueError(
        f"{path}: not a readable {what} (empty, truncated or corrupt{where}: "
        f"{type(err).__name__}: {short(str(err), 200)})"
    )


def _decode_meta(path: str | Path, raw: np.ndarray) -> object:
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise ValueError(
            f"{path}: field 'meta' must be a 1-D uint8 array, got {raw.dtype} {raw.shape}"
        )
    text = raw.tobytes()
    _check_meta_bytes(str(path), text)
    try:
        return json.loads(text.decode("utf-8"))
    except (ValueError, RecursionError) as err:  # bad UTF-8 or JSON, an int too long to read
        raise ValueError(
            f"{path}: field 'meta' is not UTF-8 JSON ({short(str(err), 200)})"
        ) from None


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


def check_kge_fields(
    path: str | Path,
    header: dict,
    arrays: list[np.ndarray],
    kinds: Sequence[str],
    reciprocal_kinds: Sequence[str],
) -> tuple[str, bool, int | None, dict]:
    """``(kind, reciprocal, p, meta)`` of a KG-embedding checkpoint's header, checked against
    its two arrays: ``kind`` one of ``kinds`` (``reciprocal_kinds`` for a reciprocal model),
    ``p`` 1 or 2 (``None`` for a reciprocal model), ``meta`` an object, the entity embeddings
    ``p0`` a finite ``[n, d]`` float array and the relation parameters ``p1`` of the kind's
    shape: ``[R, d]`` (transe), ``[R, d / 2]`` (rotate), ``[R, d, d]`` (linear), ``[2R, d]``
    (reciprocal). A ``ValueError`` names ``path`` and the field otherwise."""
    reciprocal, kind, p = header.get("reciprocal", False), header.get("kind"), header.get("p")
    if not isinstance(reciprocal, bool):
        raise ValueError(f"{path}: field 'reciprocal' is {short(reciprocal, 80)}, not a bool")
    allowed = tuple(reciprocal_kinds if reciprocal else kinds)
    if not isinstance(kind, str) or kind not in allowed:
        raise ValueError(f"{path}: field 'kind' is {short(kind, 80)}, not one of {allowed}")
    if reciprocal and p is not None:
        raise ValueError(f"{path}: field 'p' is {short(p, 80)}, not null (a reciprocal model)")
    if not reciprocal and (isinstance(p, bool) or p not in (1, 2)):
        raise ValueError(f"{path}: field 'p' is {short(p, 80)}, not 1 or 2")
    meta = header.get("meta", {})
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: field 'meta' is a {type(meta).__name__}, not an object")
    entity, relation = arrays
    names = ("parameter p0 (entity embeddings)", "parameter p1 (relation parameters)")
    for i, x in enumerate(arrays):
        if not np.issubdtype(x.dtype, np.floating) or not np.isfinite(x).all():
            raise ValueError(f"{path}: parameter p{i} must be a finite float array")
    even = kind in ("rotate", "complex")
    if entity.ndim != 2 or 0 in entity.shape or (even and entity.shape[1] % 2):
        rule = f"n, d >= 1{f', d even for kind {kind!r}' if even else ''}"
        raise ValueError(
            f"{path}: {names[0]} has shape {entity.shape}, expected (n, d) with {rule}"
        )
    d = entity.shape[1]
    want = {"rotate": ("R", d // 2), "linear": ("R", d, d)}.get(kind, ("R", d))
    want = ("2R", d) if reciprocal else want
    ok = relation.ndim == len(want) and relation.shape[1:] == want[1:] and len(relation) > 0
    if not ok or (reciprocal and len(relation) % 2):
        raise ValueError(
            f"{path}: {names[1]} has shape {relation.shape}, expected "
            f"({', '.join(map(str, want))}) for kind {kind!r} with entity width {d}"
        )
    return kind, reciprocal, p, meta
