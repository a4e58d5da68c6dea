"""TripleRetriever checkpoints: a round trip restores the scores; every other file (another
graph, other settings, bad parameters, bad metadata, damaged bytes) is a ValueError naming the
file (and the field), never a silent load or a bare zip/pickle error."""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from grounding import TypedGraph
from grounding.query import Query
from grounding.retrieval import GNNConfig, TripleRetriever
from grounding.retrieval.learned._checkpoint import graph_sha256

CONFIG = GNNConfig(gate="structural", layers=1, hidden=8)
QUERY = Query("alpha city gamma lake", anchor="a", relevant=("c",), id="q")


def graph(tails=(1, 2, 3, 5)) -> TypedGraph:
    """a -r-> b -s-> c, b -r-> d, e -s-> f with inverse copies (``tails``: the four tails)."""
    heads, rels = (0, 1, 1, 4), (0, 1, 0, 1)
    facts = list(zip(heads, rels, tails))
    return TypedGraph(
        head=jnp.asarray([h for h, _, _ in facts] + [t for _, _, t in facts], jnp.int32),
        relation=jnp.asarray([r for _, r, _ in facts] + [r + 2 for _, r, _ in facts], jnp.int32),
        tail=jnp.asarray([t for _, _, t in facts] + [h for h, _, _ in facts], jnp.int32),
        reliability=jnp.ones(2 * len(facts)),
        entities=("a", "b", "c", "d", "e", "f"),
        relations=("r", "s", "r^-1", "s^-1"),
        texts=("alpha city", "beta river", "gamma lake", "delta town", "eps", "zeta"),
    )


def retriever(g=None, **kw) -> TripleRetriever:
    g = graph() if g is None else g
    kw.setdefault("n_anchors", 1)
    return TripleRetriever(g, CONFIG, **kw)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    r = retriever(seed=3)
    path = r.save(tmp_path_factory.mktemp("ckpt") / "r.npz")
    return r, path


def scores(r: TripleRetriever) -> np.ndarray:
    return r.scores(r.subgraphs([QUERY]), r.embed([QUERY]))[0]


def rewrite(src, dst, **changes) -> str:
    """A copy of the checkpoint ``src`` at ``dst`` with arrays replaced (``None``: dropped)."""
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    for k, v in changes.items():
        if v is None:
            arrays.pop(k)
        else:
            arrays[k] = v
    np.savez(dst, **arrays)
    return str(dst)


def meta_of(path) -> dict:
    with np.load(path) as z:
        return json.loads(z["meta"].tobytes())


def encoded(meta) -> np.ndarray:
    return np.frombuffer(json.dumps(meta).encode(), np.uint8)


def test_round_trip_restores_the_scores(saved):
    r, path = saved
    other = retriever(encoder=r.encoder, seed=99).load(path)
    np.testing.assert_array_equal(scores(other), scores(r))


@pytest.mark.parametrize(
    "kw, what",
    [
        (dict(n_anchors=20), "n_anchors=1 \\(this retriever: 20\\)"),
        (dict(hops=3), "hops=2 \\(this retriever: 3\\)"),
        (dict(anchor_hops=0), "anchor_hops=1 \\(this retriever: 0\\)"),
        (dict(max_facts=10), "max_facts=3000 \\(this retriever: 10\\)"),
    ],
)
def test_other_retrieval_settings_are_refused(saved, kw, what):
    r, path = saved
    with pytest.raises(ValueError, match=f"{path}: checkpoint was trained with {what}"):
        retriever(encoder=r.encoder, **kw).load(path)


def test_another_graph_with_the_same_counts_and_names_is_refused(saved):
    r, path = saved
    other = graph(tails=(1, 2, 3, 0))  # e -s-> a instead of e -s-> f
    assert graph_sha256(other) != graph_sha256(r.graph)
    assert graph_sha256(graph()) == graph_sha256(r.graph)
    mine = retriever(other, encoder=r.encoder)
    with pytest.raises(ValueError, match="another graph") as info:
        mine.load(path)
    msg = str(info.value)
    assert str(path) in msg and graph_sha256(r.graph) in msg and graph_sha256(other) in msg


def test_graph_fingerprint_ignores_edge_order():
    g = graph()
    perm = np.arange(g.n_edges)[::-1]
    flipped = TypedGraph(
        head=g.head[perm], relation=g.relation[perm], tail=g.tail[perm],
        reliability=g.reliability[perm], entities=g.entities, relations=g.relations,
        texts=g.texts,
    )  # fmt: skip
    assert graph_sha256(flipped) == graph_sha256(g)


@pytest.mark.parametrize(
    "leaf, what",
    [
        (lambda x: x.astype(np.int32), "parameter p0 must be a float array, got int32"),
        (lambda x: np.full_like(x, np.nan), "parameter p0 holds non-finite values"),
        (lambda x: np.full_like(x, np.inf), "parameter p0 holds non-finite values"),
        (lambda x: x[..., :1], "parameter p0 has shape"),
        (lambda x: x.astype(bool), "parameter p0 must be a float array"),
    ],
)
def test_bad_parameters_are_refused(saved, tmp_path, leaf, what):
    r, path = saved
    with np.load(path) as z:
        p0 = z["p0"]
    bad = rewrite(path, tmp_path / "bad.npz", p0=leaf(p0))
    before = jax.tree_util.tree_leaves(r.params)
    with pytest.raises(ValueError, match=f"{bad}: {what}"):
        r.load(bad)
    for a, b in zip(before, jax.tree_util.tree_leaves(r.params)):
        assert a is b  # nothing was loaded


def test_missing_or_extra_parameter_arrays_are_refused(saved, tmp_path):
    r, path = saved
    n = len(jax.tree_util.tree_leaves(r.params))
    bad = rewrite(path, tmp_path / "bad.npz", **{f"p{n - 1}": None})
    with pytest.raises(ValueError, match="parameter arrays, the architecture has"):
        r.load(bad)
    bad = rewrite(path, tmp_path / "bad2.npz", p0=None)
    with pytest.raises(ValueError, match="not a TripleRetriever checkpoint: expected the arrays"):
        r.load(bad)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda m: m.pop("graph"), "'graph' is missing"),
        (lambda m: m.pop("n_anchors"), "'n_anchors' is missing"),
        (lambda m: m.update(hops="2"), "'hops' must be a JSON integer"),
        (lambda m: m.update(hops=True), "'hops' must be a JSON integer"),
        (lambda m: m.update(graph=[1]), "'graph' must be a JSON object"),
        (lambda m: m.update(config=None), "'config' must be a JSON object"),
        (lambda m: m.pop("version"), "'version' is missing"),
        (lambda m: m.update(version=2), "'version': checkpoint version 2, expected 3: written by"),
    ],
)
def test_bad_metadata_names_the_file_and_the_field(saved, tmp_path, edit, field):
    r, path = saved
    meta = meta_of(path)
    edit(meta)
    bad = rewrite(path, tmp_path / "bad.npz", meta=encoded(meta))
    with pytest.raises(ValueError, match=f"{bad}: field {field}"):
        r.load(bad)


@pytest.mark.parametrize(
    "meta, what",
    [
        (np.frombuffer(b"[1, 2]", np.uint8), "field 'meta' must be a JSON object, got list"),
        (np.frombuffer(b"{oops", np.uint8), "field 'meta' is not UTF-8 JSON"),
        (np.frombuffer(b"\xff\xfe", np.uint8), "field 'meta' is not UTF-8 JSON"),
        (np.zeros(3, np.float32), "field 'meta' must be a 1-D uint8 array"),
        (None, "not a TripleRetriever checkpoint: expected the arrays"),
    ],
)
def test_unreadable_metadata_names_the_file(saved, tmp_path, meta, what):
    r, path = saved
    bad = rewrite(path, tmp_path / "bad.npz", meta=meta)
    with pytest.raises(ValueError, match=f"{bad}: {what}"):
        r.load(bad)


def _damaged(path, tmp_path):
    data = path.read_bytes()
    mid = len(data) // 2
    return {
        "empty": b"",
        "truncated": data[:mid],
        "tail only": data[mid:],
        "garbage": b"not a checkpoint at all\n" * 10,
        "flipped bytes": data[:mid]
        + bytes(b ^ 0xFF for b in data[mid : mid + 64])
        + data[mid + 64 :],
        "zip header only": data[:30],
    }


def test_damaged_files_are_a_value_error_naming_the_path(saved, tmp_path):
    r, path = saved
    for label, data in _damaged(path, tmp_path).items():
        bad = tmp_path / f"{label.replace(' ', '_')}.npz"
        bad.write_bytes(data)
        with pytest.raises(ValueError, match="TripleRetriever checkpoint|field|parameter") as e:
            r.load(bad)
        assert str(bad) in str(e.value), (label, str(e.value))


def test_pickled_arrays_and_single_arrays_are_refused(saved, tmp_path):
    r, path = saved
    bad = rewrite(path, tmp_path / "pickled.npz", p0=np.array([{"x": 1}], dtype=object))
    with pytest.raises(ValueError, match=f"{bad}: not a readable TripleRetriever checkpoint"):
        r.load(bad)
    single = tmp_path / "single.npy"
    np.save(single, np.zeros(3))
    with pytest.raises(ValueError, match=f"{single}: not a TripleRetriever checkpoint"):
        r.load(single)
    with pytest.raises(FileNotFoundError):
        r.load(tmp_path / "missing.npz")


def test_save_is_atomic(saved, tmp_path, monkeypatch):
    r, path = saved
    target = tmp_path / "keep.npz"
    target.write_bytes(b"old")

    def fail(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        r.save(target)
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["keep.npz"]
