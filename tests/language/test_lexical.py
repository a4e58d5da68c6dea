"""Words (:mod:`grounding.language.lexical`): the one tokenizer and BM25 against a brute-force
reference."""

from __future__ import annotations

import doctest
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grounding.language.lexical as lexical_mod
from grounding.language import BM25, tokenize

# ---------------------------------------------------------------- tokenize


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("amino_acid", ["amino", "acid"]),
        ("Amino Acid", ["amino", "acid"]),
        ("CD4+ T-cell, (human)!", ["cd4", "t", "cell", "human"]),
        ("  a\tb\nc  ", ["a", "b", "c"]),
        ("x2y 42", ["x2y", "42"]),
        ("", []),
        ("?!-_ .", []),
        ("café", ["caf"]),  # non-ASCII letters separate tokens
    ],
)
def test_tokenize_examples(text, tokens):
    assert tokenize(text) == tokens


@pytest.mark.parametrize("bad", [None, 3, b"bytes", ["a"]])
def test_tokenize_rejects_non_str(bad):
    with pytest.raises(TypeError, match="must be a str"):
        tokenize(bad)


# ---------------------------------------------------------------- BM25


def _bm25_reference(corpus, query, k1, b):
    """Brute force, term by term, from the formula."""
    docs = [tokenize(d) for d in corpus]
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    out = []
    for d in docs:
        tf = Counter(d)
        s = 0.0
        for t in tokenize(query):
            df = sum(t in doc for doc in docs)
            if tf[t] == 0:
                continue
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
            s += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(d) / avgdl))
        out.append(s)
    return np.array(out)


_WORDS = st.sampled_from(["a", "b", "c", "d", "e"])
_DOC = st.lists(_WORDS, min_size=0, max_size=6).map(" ".join)
_QUERY = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "z"]), min_size=1, max_size=5).map(
    " ".join
)


@given(
    corpus=st.lists(_DOC, min_size=1, max_size=8),  # all-empty corpora included
    queries=st.lists(_QUERY, min_size=1, max_size=4),
    k1=st.sampled_from([0.0, 0.5, 1.2, 1.5, 2.0]),
    b=st.sampled_from([0.0, 0.3, 0.75, 1.0]),
)
def test_bm25_matches_reference(corpus, queries, k1, b):
    bm = BM25(corpus, k1=k1, b=b)
    for q in queries:
        s = bm.scores(q)
        assert s.dtype == np.float64 and s.shape == (len(corpus),)
        np.testing.assert_allclose(s, _bm25_reference(corpus, q, k1, b), rtol=1e-12, atol=0)
        assert np.all(s >= 0)
    np.testing.assert_array_equal(
        bm.scores_batch(queries), np.stack([bm.scores(q) for q in queries])
    )


def test_bm25_details():
    bm = BM25(["red cell", "red red cloud", "", "blue sky"])
    s = bm.scores("red red")  # repeated query token counts twice
    np.testing.assert_allclose(s, 2 * bm.scores("red"), rtol=1e-15)
    assert s[2] == 0.0 and s[3] == 0.0
    assert s[1] > s[0] > 0
    np.testing.assert_array_equal(bm.scores("unknown words"), np.zeros(4))
    assert bm.scores_batch([]).shape == (0, 4)
    assert BM25(["", "?"]).scores("a").tolist() == [0.0, 0.0]  # all docs token-less


def test_bm25_errors():
    bm = BM25(["a b", "c"])
    with pytest.raises(ValueError, match="query has no tokens: '\\?!'"):
        bm.scores("?!")
    with pytest.raises(ValueError, match="query has no tokens"):
        bm.scores_batch(["a", ""])
    with pytest.raises(TypeError):
        bm.scores(["a"])
    with pytest.raises(ValueError, match="non-empty corpus"):
        BM25([])
    with pytest.raises(TypeError, match="single str"):
        BM25("a b c")
    for k1 in (-0.1, float("nan"), float("inf"), "1"):
        with pytest.raises(ValueError, match="k1"):
            BM25(["a"], k1=k1)
    for b in (-0.01, 1.01, float("nan")):
        with pytest.raises(ValueError, match="b must"):
            BM25(["a"], b=b)


def test_doctests():
    result = doctest.testmod(lexical_mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 3
