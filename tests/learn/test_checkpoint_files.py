"""Crafted checkpoint files: each is refused quickly, by a ValueError naming the file (and the
field), before anything large is allocated or parsed; and every model kind round-trips."""

from __future__ import annotations

import io
import json
import time
import zipfile

import jax.numpy as jnp
import numpy as np
import pytest

from grounding.learn import init_model, load_checkpoint, save_checkpoint
from grounding.learn.checkpoint import MAX_META_BYTES, MAX_META_DEPTH, read_archive, write_archive
from grounding.learn.reciprocal import ReciprocalModel

FORMAT = "grounding KGE, version 2"


def _npy(x: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(x), allow_pickle=False)
    return buf.getvalue()


def _meta(obj: object) -> bytes:
    return _npy(np.frombuffer(json.dumps(obj).encode(), np.uint8))


def _header(**fields) -> dict:
    return {"format": FORMAT, "kind": "transe", "p": 2, "reciprocal": False, "meta": {}} | fields


def _zip(path, members: dict[str, bytes], deflate: tuple[str, ...] = ()):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            kind = zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED
            zf.writestr(name, data, compress_type=kind)
    return path


def _kge(path, header: dict, entity, relation, **kw):
    return _zip(path, {"meta.npy": _meta(header), "p0.npy": _npy(entity), "p1.npy": _npy(relation)},
                **kw)  # fmt: skip


def _fast(fn, *args):
    start = time.perf_counter()
    try:
        fn(*args)
    finally:
        assert time.perf_counter() - start < 5.0


# --------------------------------------------------------------------------- size and time
def test_a_compressed_member_that_expands_past_the_file_is_refused_before_reading(tmp_path):
    # 16 MiB of zeros deflates to about 16 KiB: decompressing it is what a crafted file costs
    path = _kge(tmp_path / "bomb.npz", _header(), np.zeros((1 << 19, 4)), np.zeros((2, 4)),
                deflate=("p0.npy",))  # fmt: skip
    assert path.stat().st_size < 100_000
    with pytest.raises(ValueError, match=r"bomb.npz: not a grounding KGE checkpoint: its members "
                                         r"declare \d+ bytes uncompressed, more than the file's"):  # fmt: skip
        _fast(load_checkpoint, path)


def test_a_compressed_metadata_member_is_refused_before_it_is_parsed(tmp_path):
    big = _header(meta={"history": [0] * 2_000_000})  # 6 MB of JSON, deflated to a few KB
    path = _zip(tmp_path / "meta.npz", {"meta.npy": _meta(big), "p0.npy": _npy(np.zeros((3, 2))),
                                        "p1.npy": _npy(np.zeros((1, 2)))}, deflate=("meta.npy",))  # fmt: skip
    with pytest.raises(ValueError, match="meta.npz: .*declare .* bytes uncompressed"):
        _fast(load_checkpoint, path)


def test_an_array_header_declaring_more_than_its_member_holds_is_refused(tmp_path):
    buf = io.BytesIO()  # the header of an 8 GiB array, followed by 64 bytes of data
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f8", "fortran_order": False, "shape": (1 << 28, 4)}
    )
    lie = buf.getvalue() + np.zeros((2, 4)).tobytes()
    path = _zip(tmp_path / "lie.npz", {"meta.npy": _meta(_header()), "p0.npy": lie,
                                       "p1.npy": _npy(np.zeros((1, 4)))})  # fmt: skip
    with pytest.raises(ValueError, match=r"lie.npz: array 'p0' declares shape \(268435456, 4\) "
                                         r"float64 \(8589934592 bytes\), more than the 64 bytes"):  # fmt: skip
        _fast(load_checkpoint, path)


def test_a_member_that_is_not_an_array_is_refused(tmp_path):
    path = _zip(tmp_path / "raw.npz", {"meta.npy": _meta(_header()), "p0": b"not an array",
                                       "p1.npy": _npy(np.zeros((1, 2)))})  # fmt: skip
    with pytest.raises(ValueError, match="raw.npz: not a readable grounding KGE checkpoint .*'p0'"):
        load_checkpoint(path)


# --------------------------------------------------------------------------- metadata
def test_deeply_nested_metadata_is_a_value_error_not_a_recursion_error(tmp_path):
    deep = b"[" * 100_000 + b"]" * 100_000
    path = _zip(tmp_path / "deep.npz", {"meta.npy": _npy(np.frombuffer(deep, np.uint8)),
                                        "p0.npy": _npy(np.zeros((1, 2)))})  # fmt: skip
    with pytest.raises(ValueError, match=f"deep.npz: field 'meta' is nested deeper than "
                                         f"{MAX_META_DEPTH} levels"):  # fmt: skip
        _fast(read_archive, path, "archive")
    nested: object = 0
    for _ in range(MAX_META_DEPTH - 2):  # inside the header's object and its 'meta' object
        nested = [nested]
    ok = _kge(tmp_path / "ok.npz", _header(meta={"x": nested, "s": "[[[[[[[[\\"}),
              np.zeros((3, 2)), np.zeros((1, 2)))  # fmt: skip
    assert load_checkpoint(ok)[1]["s"] == "[[[[[[[[\\"  # brackets inside strings do not count
    path = _kge(tmp_path / "d33.npz", _header(meta={"x": [nested]}), np.zeros((3, 2)),
                np.zeros((1, 2)))  # fmt: skip
    with pytest.raises(ValueError, match="d33.npz: field 'meta' is nested deeper"):
        load_checkpoint(path)
    with pytest.raises(ValueError, match="cannot write .*w.npz: field 'meta' is nested deeper"):
        write_archive(tmp_path / "w.npz", {"x": [[nested]]}, [])
    assert not (tmp_path / "w.npz").exists()


def test_oversized_or_unparsable_metadata_is_refused_naming_the_file(tmp_path):
    blob = _header(meta={"blob": "x" * MAX_META_BYTES})
    path = _kge(tmp_path / "big.npz", blob, np.zeros((3, 2)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match=rf"big.npz: field 'meta' holds \d+ bytes, "
                                         rf"more than {MAX_META_BYTES}"):  # fmt: skip
        load_checkpoint(path)
    with pytest.raises(ValueError, match="more than"):
        save_checkpoint(
            tmp_path / "w.npz", init_model("transe", 3, 1, 2), {"blob": "x" * MAX_META_BYTES}
        )
    digits = b'{"format": "%s", "n": %s}' % (FORMAT.encode(), b"1" * 5000)
    path = _zip(tmp_path / "int.npz", {"meta.npy": _npy(np.frombuffer(digits, np.uint8))})
    with pytest.raises(ValueError, match="int.npz: field 'meta' is not UTF-8 JSON"):
        load_checkpoint(path)


# --------------------------------------------------------------------------- model fields
@pytest.mark.parametrize(
    "header, entity, relation, match",
    [
        (_header(kind="distmult"), (3, 2), (1, 2),
         r"field 'kind' is 'distmult', not one of \('transe', 'rotate', 'linear'\)"),
        (_header(kind="rotate", reciprocal=True, p=None), (3, 2), (2, 2),
         r"field 'kind' is 'rotate', not one of \('transe', 'complex'\)"),
        (_header(kind=["transe"]), (3, 2), (1, 2), "field 'kind'"),
        (_header(), (3, 2), (1, 5), r"parameter p1 \(relation parameters\) has shape \(1, 5\), "
                                    r"expected \(R, 2\) for kind 'transe'"),
        (_header(kind="rotate"), (3, 4), (1, 4), r"p1 .* expected \(R, 2\) for kind 'rotate'"),
        (_header(kind="rotate"), (3, 3), (1, 1), r"p0 .* d even for kind 'rotate'"),
        (_header(kind="linear"), (3, 2), (1, 2), r"p1 .* expected \(R, 2, 2\) for kind 'linear'"),
        (_header(kind="linear"), (3, 2), (1, 2, 3), r"expected \(R, 2, 2\)"),
        (_header(reciprocal=True, p=None), (3, 2), (3, 2),
         r"p1 .* expected \(2R, 2\) for kind 'transe'"),
        (_header(kind="complex", reciprocal=True, p=None), (3, 3), (2, 3), "d even for kind 'complex'"),
        (_header(), (0, 2), (1, 2), r"parameter p0 \(entity embeddings\) has shape \(0, 2\)"),
        (_header(), (3, 2), (0, 2), r"p1 .* has shape \(0, 2\)"),
        (_header(p=3), (3, 2), (1, 2), "field 'p' is 3, not 1 or 2"),
        (_header(p=True), (3, 2), (1, 2), "field 'p' is True, not 1 or 2"),
        (_header(reciprocal=True, p=2), (3, 2), (2, 2), "field 'p' is 2, not null"),
        (_header(reciprocal="yes"), (3, 2), (1, 2), "field 'reciprocal' is 'yes', not a bool"),
        (_header(meta=[1, 2]), (3, 2), (1, 2), r"field 'meta' is a list, not an object"),
    ],
)  # fmt: skip
def test_model_fields_are_checked_against_each_other(tmp_path, header, entity, relation, match):
    path = _kge(tmp_path / "m.npz", header, np.zeros(entity), np.zeros(relation))
    with pytest.raises(ValueError, match="m.npz: .*" + match):
        load_checkpoint(path)


@pytest.mark.parametrize("kind, dim", [("transe", 4), ("rotate", 4), ("linear", 3)])
def test_every_kind_round_trips(tmp_path, kind, dim):
    model = init_model(kind, 5, 2, dim, p=1)
    got, meta = load_checkpoint(save_checkpoint(tmp_path / f"{kind}.npz", model, {"n": 1}))
    assert (got.kind, got.p, meta) == (kind, 1, {"n": 1})
    np.testing.assert_array_equal(np.asarray(got.relation), np.asarray(model.relation))


@pytest.mark.parametrize("kind", ["transe", "complex"])
def test_reciprocal_models_round_trip(tmp_path, kind):
    model = ReciprocalModel(kind, jnp.ones((5, 4)), jnp.full((6, 4), 0.5))
    got, meta = load_checkpoint(save_checkpoint(tmp_path / f"{kind}.npz", model))
    assert isinstance(got, ReciprocalModel) and got.kind == kind and meta == {}
    np.testing.assert_array_equal(np.asarray(got.relation), np.asarray(model.relation))
