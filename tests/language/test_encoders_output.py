"""Encoder output enters the package checked: one float32 row per text, every value finite; a
bad row is a ValueError naming the encoder and the first offending text (never NaN cosines,
never a NaN embedding written to the cache)."""

from __future__ import annotations

import numpy as np
import pytest

from grounding.language import EmbeddingCache, HashingEncoder, checked_embeddings

TEXTS = ["a red cell", "a blue cloud", "a green leaf"]


class NaNAt:
    """A user's encoder whose row for ``bad`` is NaN (or whose output has ``rows`` rows)."""

    name, dim = "nan-encoder", 8

    def __init__(self, bad: str = "", rows: int | None = None):
        self.bad, self.rows = bad, rows

    def encode(self, texts):
        x = HashingEncoder(dim=self.dim).encode(texts)
        x[[t == self.bad for t in texts]] = np.nan
        return x if self.rows is None else x[: self.rows]


def test_a_nan_row_names_the_encoder_and_the_first_bad_text():
    x = NaNAt("a blue cloud").encode(TEXTS)
    with pytest.raises(ValueError, match=r"encoder 'nan-encoder' returned non-finite values "
                                         r"\(NaN or inf\) for text 1 \('a blue cloud'\)"):  # fmt: skip
        checked_embeddings(NaNAt(), TEXTS, x)
    x[2, 0] = np.inf
    with pytest.raises(ValueError, match=r"for text 1 "):
        checked_embeddings("named-only", TEXTS, x)
    good = checked_embeddings(NaNAt(), TEXTS, NaNAt().encode(TEXTS))
    assert good.dtype == np.float32 and good.shape == (3, 8)


def test_rows_and_width_must_match_the_texts_and_the_encoder():
    with pytest.raises(ValueError, match=r"encoder 'nan-encoder' returned shape \[2, 8\] for 3 "
                                         r"texts, expected \[3, 8\]"):  # fmt: skip
        checked_embeddings(NaNAt(), TEXTS, np.zeros((2, 8)))
    with pytest.raises(ValueError, match=r"returned shape \[3, 4\] for 3 texts, expected \[3, 8\]"):
        checked_embeddings(NaNAt(), TEXTS, np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"returned shape \[3\] for 3 texts, expected \[3, dim\]"):
        checked_embeddings("no-dim", TEXTS, np.zeros(3))


def test_the_cache_refuses_to_store_non_finite_or_misshapen_embeddings(tmp_path):
    cache = EmbeddingCache(tmp_path)
    with pytest.raises(ValueError, match=r"'nan-encoder' returned non-finite .*'a green leaf'"):
        cache.encode(NaNAt("a green leaf"), TEXTS)
    with pytest.raises(ValueError, match=r"encoder 'nan-encoder' returned shape \[2, 8\]"):
        cache.encode(NaNAt(rows=2), TEXTS)
    assert list(tmp_path.iterdir()) == []  # nothing written
    np.testing.assert_array_equal(cache.encode(NaNAt(), TEXTS), NaNAt().encode(TEXTS))


def test_a_text_without_tokens_says_what_a_token_is():
    for text in ["北京的货币是什么", "Ποιο είναι", "", "?!"]:
        with pytest.raises(
            ValueError, match=r"texts\[1\] has no tokens \(.*, no a-z/0-9\); it cannot be embedded"
        ):
            HashingEncoder(dim=8).encode(["a cell", text])


def test_a_text_index_checks_its_encoder_on_nodes_and_queries():
    """A custom encoder's NaN row is an error naming the encoder and the text, whether it
    comes while indexing the node texts or embedding a query (was: the index kept NaN rows and
    every cosine against them was NaN, so the node ranked nowhere without a word)."""
    import numpy as np
    import pytest

    from grounding import TypedGraph
    from grounding.retrieval import TextIndex

    class Poisoned:
        name, dim = "poisoned", 4

        def encode(self, texts):
            out = np.tile(np.array([1.0, 0.0, 0.0, 0.0], np.float32), (len(texts), 1))
            out[[i for i, t in enumerate(texts) if "bad" in t]] = np.nan
            return out

    graph = TypedGraph.from_triples([("good", "r", "fine")])
    with pytest.raises(ValueError, match=r"'poisoned'.*'bad"):
        TextIndex(TypedGraph.from_triples([("good", "r", "bad_node")]), Poisoned())
    index = TextIndex(graph, Poisoned())
    with pytest.raises(ValueError, match=r"'poisoned'.*'a bad query'"):
        index.embed_queries(["a good query", "a bad query"])
