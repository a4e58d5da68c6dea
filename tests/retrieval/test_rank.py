"""The screened top-k of PCR's ranking equals brute force: the top k of fixed-order (einsum)
dot products over every candidate, ties broken by lower index, for one query or a batch —
including rows that tie exactly (repeated texts) and rows that differ in the last bits."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grounding.retrieval import _rank
from grounding.retrieval.base import top_k


def _brute(emb, q, cand, k):
    idx, s = top_k(np.einsum("nd,d->n", emb[cand], q), k)
    return cand[idx], s


def _embeddings(rng, n, d, n_distinct):
    """Unit rows drawn from ``n_distinct`` directions, each copy nudged by a few ulps or not
    at all: exact ties and near-ties around every score."""
    base = rng.normal(size=(n_distinct, d)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    emb = base[rng.integers(n_distinct, size=n)].copy()
    nudged = rng.random(n) < 0.5
    emb[nudged] += (rng.normal(size=(nudged.sum(), d)) * 1e-7).astype(np.float32)
    return emb


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(5, 400),
    st.sampled_from([3, 16, 300]),
    st.integers(1, 30),
    st.integers(1, 12),
)
def test_screened_top_k_equals_brute_force(seed, n, d, k, n_distinct):
    rng = np.random.default_rng(seed)
    emb = _embeddings(rng, n, d, n_distinct)
    qv = _embeddings(rng, 4, d, 4)
    norm = float(np.linalg.norm(emb, axis=1).max())
    approx = _rank.screen(emb, qv)  # one product for the batch
    for q, a in zip(qv, approx):
        cand = np.flatnonzero(rng.random(n) < 0.7)
        if not len(cand):
            continue
        got = _rank.top_k_exact(emb, norm, q, a, cand, k)
        single = _rank.top_k_exact(emb, norm, q, _rank.screen(emb, q[None])[0], cand, k)
        want = _brute(emb, q, cand, k)
        for g in (got, single):
            np.testing.assert_array_equal(g[0], want[0])
            np.testing.assert_array_equal(g[1], want[1])
