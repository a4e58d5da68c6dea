"""The screened top-k of PCR's ranking equals brute force: the top k of fixed-order (einsum)
dot products over every candidate, ties broken by lower index, for one query or a batch —
including rows that tie exactly (repeated texts) and rows that differ in the last bits, on
every selection path (all nodes, few non-candidates masked, a gathered small set, candidates
packed into one stretch, a short last block)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grounding import TypedGraph
from grounding.retrieval import PCR, Query, TextIndex, _rank
from grounding.retrieval import pcr as pcr_module
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


def _check(emb, qv, cand, k):
    """The batch (one screening product over all nodes, or screened by top_k_exact itself),
    each query alone, and brute force agree."""
    norm = _rank.row_norm_max(emb)
    got = _rank.top_k_exact(emb, norm, qv, cand, k, _rank.screen(emb, qv))
    alone = _rank.top_k_exact(emb, norm, qv, cand, k)  # screened here (candidates or all)
    assert len(got) == len(alone) == len(qv)
    for q, g, a in zip(qv, got, alone):
        [single] = _rank.top_k_exact(emb, norm, q[None], cand, k, _rank.screen(emb, q[None]))
        want = _brute(emb, q, cand, k)
        for h in (g, a, single):
            np.testing.assert_array_equal(h[0], want[0])
            np.testing.assert_array_equal(h[1], want[1])


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(5, 400),
    st.sampled_from([3, 16, 300]),
    st.integers(1, 30),
    st.integers(1, 12),
    st.sampled_from([0.1, 0.7, 0.97, 1.0]),
)
def test_screened_top_k_equals_brute_force(seed, n, d, k, n_distinct, share):
    rng = np.random.default_rng(seed)
    emb = _embeddings(rng, n, d, n_distinct)
    qv = _embeddings(rng, 4, d, 4)
    cand = np.flatnonzero(rng.random(n) < share)
    if len(cand):
        _check(emb, qv, cand, k)


@pytest.mark.parametrize("k", [1, 10, 37])
@pytest.mark.parametrize("layout", ["all", "masked", "gathered", "packed", "tail"])
def test_screened_top_k_on_long_rows(k, layout):
    """Rows long enough for blocks of 256; 40 distinct vectors, so every score ties with
    dozens of others across blocks (the k-th place is a tie)."""
    rng = np.random.default_rng(k)
    n = 20_011 if layout == "tail" else 20_480  # 'tail': a last, shorter block
    emb = _embeddings(rng, n, 48, 40)
    qv = np.concatenate([_embeddings(rng, 3, 48, 3), emb[[5, 9_000]]])  # some equal a row
    cand = {
        "all": np.arange(n),
        "tail": np.arange(n),
        "masked": np.flatnonzero(rng.random(n) < 0.9),
        "gathered": np.flatnonzero(rng.random(n) < 0.2),
        # more than half the nodes, in one stretch: most blocks are masked out entirely
        "packed": np.arange(n // 2 - 300, n),
    }[layout]
    _check(emb, qv, cand, k)


def test_row_norm_max_is_float64_and_chunked():
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(70_000, 8)).astype(np.float32)
    want = float(np.sqrt((emb.astype(np.float64) ** 2).sum(axis=1).max()))
    assert _rank.row_norm_max(emb) == pytest.approx(want, rel=1e-15, abs=0)
    assert _rank.row_norm_max(np.zeros((0, 4), np.float32)) == 0.0


class _Table:
    """Fixed vectors per text."""

    name = "table"

    def __init__(self, vectors: dict):
        self.vectors, self.dim = vectors, len(next(iter(vectors.values())))

    def encode(self, texts):
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)


def test_pcr_screens_in_chunks_of_rows_into_one_kept_buffer(monkeypatch):
    """One query at a time, then groups longer than a screening chunk (the buffer grows), then
    a shorter group reusing the larger buffer: always brute force's lists and scores; copies
    and pickles leave the buffer out."""
    monkeypatch.setattr(pcr_module, "_SCREEN_ROWS", 3)
    rng = np.random.default_rng(1)
    n = 2_000
    ids = [f"v{i}" for i in range(n)]
    ring = [(ids[i], ids[(i + 1) % 1_500]) for i in range(1_500)]  # the rest is isolated
    g = TypedGraph.from_edges(ids, ring, texts=ids)
    emb = _embeddings(rng, n + 8, 16, 30)
    vecs = dict(zip([*ids, *(f"q{j}" for j in range(8))], emb))
    qs = [Query(f"q{j}", anchor=ids[a]) for j, a in enumerate(rng.integers(0, 1_500, 8))]
    index = TextIndex(g, _Table(vecs))
    pcr, cand = PCR(index), np.arange(1_500)
    want = [_brute(index.embeddings, vecs[q.text], cand, 9) for q in qs]
    one_by_one = [pcr.retrieve(q, 9) for q in qs]  # a one-row buffer, then longer chunks
    for got in (one_by_one, pcr.retrieve_batch(qs, 9), pcr.retrieve_batch(qs[:2], 9)):
        for r, (idx, s) in zip(got, want):
            np.testing.assert_array_equal(r.index, idx)
            np.testing.assert_array_equal(r.scores, s)
    assert pcr._screen_buffer.shape == (3, n)  # kept, never larger than a chunk
    for twin in (copy.copy(pcr), copy.deepcopy(pcr), pickle.loads(pickle.dumps(pcr))):
        assert "_screen_buffer" not in vars(twin)  # scratch: neither shared nor carried
        np.testing.assert_array_equal(twin.retrieve(qs[0], 9).index, want[0][0])
