"""``grounding._numerics.top_k`` equals a full sort (by score, best first, ties by lower
index) on long score vectors too, where it first screens by the maxima of blocks: many exact
ties around the k-th best, ``-inf`` entries, a short last block, NaN entries."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grounding._numerics import top_k


def _sorted_top(scores: np.ndarray, k: int) -> np.ndarray:
    keyed = np.where(np.isnan(scores), -np.inf, scores)  # (no NaN in the tests below)
    return np.lexsort((np.arange(len(scores)), -keyed))[:k]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 3000),
    k=st.integers(1, 40),
    levels=st.integers(1, 50),
    neg_inf=st.floats(0, 0.5),
    seed=st.integers(0, 2**31 - 1),
)
def test_top_k_equals_a_full_sort(n, k, levels, neg_inf, seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(levels, size=n).astype(float)  # few distinct values: ties everywhere
    scores[rng.random(n) < neg_inf] = -np.inf
    idx, s = top_k(scores, k)
    want = _sorted_top(scores, k)
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(s, scores[want])


def test_top_k_of_a_vocabulary_sized_vector_with_its_best_in_one_block():
    """The k best all in one block (so only one block maximum is among them): still found."""
    rng = np.random.default_rng(0)
    scores = rng.normal(size=42_856)
    scores[6400:6420] = 10 + np.arange(20)
    idx, _ = top_k(scores, 20)
    np.testing.assert_array_equal(idx, np.arange(6419, 6399, -1))
    np.testing.assert_array_equal(top_k(scores, 25)[0], _sorted_top(scores, 25))


def test_top_k_with_nan_entries_keeps_the_unscreened_answer():
    scores = np.arange(5000.0)
    scores[[10, 4000]] = np.nan
    got = top_k(scores, 5)[0]
    ref = np.arange(5000.0)
    ref[[10, 4000]] = np.nan
    cand = np.arange(5000)
    # the reference: the same selection without the block screen (``among`` = everything)
    np.testing.assert_array_equal(got, top_k(ref, 5, among=cand)[0])
