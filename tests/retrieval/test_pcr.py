"""Path-constrained retrieval (:mod:`grounding.retrieval.pcr`): the reachable candidate sets
:math:`C(A)` against NetworkX BFS, cosine top-k within them against brute-force sorting, the
batch against one query at a time, approximate search, the evidence it hands to ``ground``,
and its bad inputs."""

from __future__ import annotations

import sys

import networkx as nx
import numpy as np
import pytest
from _retrieval import TableEncoder, _brute_top, _chain, _nx, _same_answers, graphs
from _tol import F64
from hypothesis import event, given
from hypothesis import strategies as st

from grounding import TypedGraph
from grounding.retrieval import (
    PCR,
    Query,
    SoftPCR,
    TextIndex,
    VectorRetriever,
    relevance_at_k,
)
from grounding.retrieval.base import subgraph_evidence
from grounding.semiring import hop_distances


@given(graphs(), st.data())
def test_reachability_matches_networkx_bfs(gt, data):
    g, _ = gt
    a = data.draw(st.integers(0, g.n_nodes - 1))
    hops = data.draw(st.sampled_from([None, 0, 1, 2, 3]))
    ref = nx.single_source_shortest_path_length(_nx(g), a, cutoff=hops)
    assert g.reachable(a, hops).tolist() == sorted(ref)
    dist = g.distances([a], hops)[0]
    assert {v: int(d) for v, d in enumerate(dist) if d >= 0} == ref
    if g.n_edges and hops != 0:  # the engine's batched BFS agrees (it needs >= 1 hop)
        bfs = hop_distances(g.head, g.tail, np.array([a]), n_nodes=g.n_nodes, max_hops=hops)
        np.testing.assert_array_equal(np.asarray(bfs)[0], dist)


@given(graphs(), st.data())
def test_reachability_from_several_anchors_is_the_union(gt, data):
    """``C(a_1) u ... u C(a_k)`` and one distance row per anchor, for zero, one or several
    anchors (repeats allowed), at every depth; a negative or fractional depth is refused."""
    g, _ = gt
    anchors = data.draw(st.lists(st.integers(0, g.n_nodes - 1), max_size=4))
    hops = data.draw(st.sampled_from([None, 0, 1, 2]))
    event(f"anchors: {min(len(anchors), 2)}")
    G = _nx(g)
    refs = [nx.single_source_shortest_path_length(G, a, cutoff=hops) for a in anchors]
    assert g.reachable(anchors, hops).tolist() == sorted(set().union(*refs))
    dist = g.distances(anchors, hops)
    assert dist.shape == (len(anchors), g.n_nodes) and dist.dtype == np.int64
    for row, ref in zip(dist, refs):
        assert {v: int(d) for v, d in enumerate(row) if d >= 0} == ref
    for bad in (-1, 1.5, True):
        for method in (g.reachable, g.distances):
            with pytest.raises(ValueError, match=r"^max_hops \(or None\) must be an int >= 0"):
                method(anchors, bad)


def test_reachability_on_a_single_edge():
    g = TypedGraph.from_edges(["a", "b"], [("a", "b")])
    assert g.reachable([0]).tolist() == [0, 1] and g.reachable([1]).tolist() == [1]
    np.testing.assert_array_equal(g.distances([0, 1], 1), [[0, 1], [-1, 0]])
    none = g.reachable([])  # no anchor: the empty index set, still an index array
    assert none.shape == (0,) and none.dtype == np.int64
    for bad in (-1, 2):  # one past the last node is out of range too
        for method in (g.reachable, g.distances):
            with pytest.raises(ValueError, match=r"^anchor indices must lie in \[0, 2\)"):
                method([bad])


@given(graphs(), st.data())
def test_pcr_is_cosine_top_k_within_reachable_set(gt, data):
    g, enc = gt
    index = TextIndex(g, enc)
    a = data.draw(st.integers(0, g.n_nodes - 1))
    hops = data.draw(st.sampled_from([None, 1, 2]))
    k = data.draw(st.integers(1, 12))
    q = Query("q", anchor=g.entities[a])
    res = PCR(index, max_hops=hops).retrieve(q, k)
    cos = index.embeddings @ index.embed_queries(["q"])[0]
    reach = g.reachable(a, hops).tolist()
    assert res.index.tolist() == _brute_top(cos, reach, k)
    np.testing.assert_allclose(res.scores, cos[res.index], **F64)
    assert res.fallback is None and res.anchor == a
    batch = PCR(index, max_hops=hops).retrieve_batch([q, q], k)
    assert all(b.index.tolist() == res.index.tolist() for b in batch)


def test_pcr_batch_equals_single_on_many_anchors():
    rng = np.random.default_rng(0)
    n = 60
    ids = [f"v{i}" for i in range(n)]
    edges = [(ids[a], ids[b]) for a, b in rng.integers(0, n, (150, 2))]
    g = TypedGraph.from_edges(ids, edges, texts=ids)
    vecs = {t: rng.normal(size=8) for t in ids}
    qs = [Query(f"q{i}", anchor=ids[rng.integers(n)]) for i in range(40)]
    vecs.update({q.text: rng.normal(size=8) for q in qs})
    index = TextIndex(g, TableEncoder(vecs))
    for hops in (None, 2):
        pcr = PCR(index, max_hops=hops)
        single = [pcr.retrieve(q, 7).index.tolist() for q in qs]
        assert [r.index.tolist() for r in pcr.retrieve_batch(qs, 7)] == single


def test_fallback_policies_and_bad_input():
    g, index = _chain()
    q = Query("q", anchor="zzz")
    res = PCR(index).retrieve(q, 2)
    assert res.index.tolist() == [3, 2] and "unknown anchor 'zzz'" in res.fallback
    assert "searched all nodes" in res.fallback
    empty = PCR(index, fallback="empty").retrieve(q, 2)
    assert empty.index.size == 0 and "returned nothing" in empty.fallback
    with pytest.raises(ValueError, match="unknown anchor"):
        PCR(index, fallback="error").retrieve(q, 2)
    assert "no anchor given" in PCR(index).retrieve(Query("q"), 2).fallback
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="k must be an int >= 1"):
            PCR(index).retrieve(Query("q", "a"), bad)
    with pytest.raises(ValueError, match="fallback"):
        PCR(index, fallback="maybe")
    with pytest.raises(ValueError, match="max_hops"):
        PCR(index, max_hops=-1)
    with pytest.raises(ValueError, match="no nodes"):
        TypedGraph.from_edges([], [], texts=[])
    with pytest.raises(ValueError, match="unknown node"):
        TypedGraph.from_edges(["a"], [("a", "b")], texts=["a"])


def test_pcr_ann_search_is_restricted_and_exact_at_full_probe():
    """``search="ann"``: with every cell scanned it returns exact PCR's lists; at one cell
    it never leaves C(A), and rows left short fall back to exact search."""
    pytest.importorskip("faiss")
    from grounding.retrieval import ANNIndex

    rng = np.random.default_rng(1)
    n, ring = 3000, 2400  # nodes 0..2399 form a cycle (C(A) = 80 % of the graph); the rest isolated
    ids = [f"v{i}" for i in range(n)]
    g = TypedGraph.from_edges(ids, [(ids[i], ids[(i + 1) % ring]) for i in range(ring)], texts=ids)
    qs = [Query(f"q{j}", anchor=ids[a]) for j, a in enumerate([0, 5, 2500, 2999, 17])]
    vecs = {t: rng.normal(size=8) for t in [*ids, *(q.text for q in qs)]}
    index = TextIndex(g, TableEncoder(vecs))
    exact = PCR(index).retrieve_batch(qs, 7)
    ann = ANNIndex(index.embeddings, nlist=20, nprobe=20)
    assert (ann.nlist, ann.nprobe) == (20, 20)
    full = PCR(index, search=ann)
    _same_answers(exact, full.retrieve_batch(qs, 7))
    _same_answers([full.retrieve(q, 7) for q in qs], exact)
    ann.nprobe = 1
    for q, r in zip(qs, PCR(index, search=ann).retrieve_batch(qs, 7)):
        reach = g.reachable(g.entity_index(q.anchor))
        assert len(r.index) == min(7, len(reach)) and np.isin(r.index, reach).all()
        cos = index.embeddings[r.index] @ index.embed_queries([q.text])[0]
        np.testing.assert_allclose(r.scores, cos, **F64)  # rescored exactly
        assert np.all(np.diff(r.scores) <= 0)
    starved = ANNIndex(index.embeddings, nlist=50, nprobe=1)
    starved.search = lambda qv, k, allowed: [(np.zeros(0, np.int64), np.zeros(0))] * len(qv)
    _same_answers(exact, PCR(index, search=starved).retrieve_batch(qs, 7))  # all rows short


def test_pcr_ann_bad_input_and_missing_extra(monkeypatch):
    g, index = _chain()
    with pytest.raises(ValueError, match="search must be 'exact', 'ann' or an ANNIndex"):
        PCR(index, search="approximate")
    monkeypatch.setitem(sys.modules, "faiss", None)  # faiss absent: import fails
    with pytest.raises(ImportError, match=r"pip install 'grounding\[ann\]'"):
        PCR(index, search="ann")


@given(graphs(), st.data())
def test_pcr_evidence_searches_paths_within_its_hops_and_equals_the_unbounded_search(gt, data):
    """A PCR retrieval's evidence (paths searched no deeper than ``max_hops``, every retrieved
    node being that close to an anchor) is the evidence of the unbounded path search."""
    g, enc = gt
    anchor = data.draw(st.sampled_from(g.entities))
    hops = data.draw(st.integers(0, 3))
    res = PCR(TextIndex(g, enc), max_hops=hops).retrieve(Query("q", anchor=anchor), 4)
    assert res.max_hops == hops
    unbounded = subgraph_evidence(g, res.anchors, res.index, None, None, None)
    assert res.evidence.graph.triples() == unbounded.graph.triples()
    event(f"evidence edges: {min(unbounded.graph.n_edges, 3)}+")


def test_tied_scores_break_by_node_index_everywhere():
    """Many exactly tied cosines (a regression: the k-th place used to be an arbitrary one
    of the tied nodes, so hard PCR and its soft limit disagreed)."""
    n = 135
    ids = [f"v{i}" for i in range(n)]
    g = TypedGraph.from_edges(ids, [(ids[0], ids[i]) for i in range(1, n)], texts=ids)
    vecs = {t: np.array([0.0, 1.0]) if i % 7 else np.array([1.0, 0.0]) for i, t in enumerate(ids)}
    index = TextIndex(g, TableEncoder({**vecs, "q": np.array([1.0, 0.0])}))
    q = Query("q", anchor="v0")
    want = [i for i in range(n) if i % 7 == 0] + [i for i in range(n) if i % 7][:10]
    assert PCR(index).retrieve(q, 30).index.tolist() == want
    assert VectorRetriever(index).retrieve(q, 30).index.tolist() == want
    assert SoftPCR(index, lam=1e3, hop_cost=0.0).retrieve(q, 30).index.tolist() == want


@pytest.mark.parametrize("k", [1, 2, 7])
def test_pcr_large_candidate_sets_use_exact_block_selection(k):
    """Long rows take the masked all-nodes product and the block-maxima pre-selection; the
    answers must equal brute force, ties included (repeated vectors across blocks)."""
    rng = np.random.default_rng(k)
    n, ring = 3000, 2000  # nodes 0..1999 form a cycle (2/3 of the graph); the rest isolated
    ids = [f"v{i}" for i in range(n)]
    g = TypedGraph.from_edges(ids, [(ids[i], ids[(i + 1) % ring]) for i in range(ring)], texts=ids)
    base = rng.normal(size=(50, 8))
    vecs = {t: base[rng.integers(50)] for t in ids}  # 50 distinct vectors: many exact ties
    qs = [Query(f"q{j}", anchor=ids[a]) for j, a in enumerate([0, 5, 2500, 1999])]
    vecs.update({q.text: rng.normal(size=8) for q in qs})
    index = TextIndex(g, TableEncoder(vecs))
    pcr = PCR(index)
    batch = pcr.retrieve_batch(qs, k)
    for q, b in zip(qs, batch):
        a = g.entity_index(q.anchor)
        cos = index.embeddings @ index.embed_queries([q.text])[0]
        want = _brute_top(cos, g.reachable(a).tolist(), k)
        assert pcr.retrieve(q, k).index.tolist() == want == b.index.tolist()


def test_more_bad_input_is_rejected_clearly(tmp_path):
    g, index = _chain()
    with pytest.raises(ValueError, match="max_hops"):
        PCR(index, max_hops=1.5)
    with pytest.raises(TypeError, match="relevant"):
        Query("q", "a", relevant="c")
    with pytest.raises(ValueError, match="anchor indices"):
        g.distances([-1])
    r = g.reachable(0)
    with pytest.raises(ValueError, match="read-only"):
        r[0] = 3  # the memoized set is shared: it cannot be corrupted by a caller
    assert relevance_at_k([1], [1, 1], 2) == 1.0  # duplicates count once, as in the paper

    class NaNEncoder(TableEncoder):
        def encode(self, texts):
            return np.full((len(texts), 3), np.nan)

    bad = TextIndex(g, NaNEncoder({"q": (1.0, 0.0, 0.0)}), _embeddings=index.embeddings)
    with pytest.raises(ValueError, match="non-finite"):
        VectorRetriever(bad).retrieve(Query("q"), 2)
