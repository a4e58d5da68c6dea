"""Retrieval layer: reachability, PCR (hard and soft), baselines, metrics, evidence states.

Oracles: NetworkX BFS for reachability, brute-force sorting for every ranking, the paper's
dictionary formulation for the hybrid baseline, and the core's Prop. 6 / Prop. 3 / Prop. 11
functions for the soft-to-hard limit.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys

import jax
import networkx as nx
import numpy as np
import pytest
from _tol import F64
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from grounding import TypedGraph
from grounding.bounds import hard_limit_tv
from grounding.posterior import hard_log_posterior
from grounding.retrieval import (
    PCR,
    BM25Retriever,
    HybridRetriever,
    Query,
    SoftPCR,
    TextIndex,
    VectorRetriever,
    distance_penalty,
    evaluate_retrieval,
    recall_at_k,
    relevance_at_k,
    structural_consistency,
    summarize_retrieval,
)
from grounding.retrieval.base import subgraph_evidence
from grounding.semiring import hop_distances


@dataclasses.dataclass(frozen=True)
class TableEncoder:
    """Fixed vectors per text (so rankings are known exactly)."""

    vectors: dict
    name: str = "table"

    @property
    def dim(self) -> int:
        return len(next(iter(self.vectors.values())))

    def encode(self, texts):
        x = np.stack([np.asarray(self.vectors[t], float) for t in texts]).reshape(len(texts), -1)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


@st.composite
def graphs(draw, max_nodes=10):
    n = draw(st.integers(1, max_nodes))
    m = draw(st.integers(0, 3 * n))
    edges = [(draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))) for _ in range(m)]
    ids = [f"n{i}" for i in range(n)]
    g = TypedGraph.from_edges(ids, [(ids[a], ids[b]) for a, b in edges], texts=ids)
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    vecs = {t: rng.normal(size=4) for t in [*ids, "q"]}
    return g, TableEncoder(vecs)


def _nx(g: TypedGraph) -> nx.MultiDiGraph:
    G = nx.MultiDiGraph()
    G.add_nodes_from(range(g.n_nodes))
    G.add_edges_from(zip(g.head.tolist(), g.tail.tolist()))
    return G


def _brute_top(scores, allowed, k):
    order = sorted(allowed, key=lambda i: (-scores[i], i))
    return order[:k]


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


def _chain():
    # a -> b -> c, d isolated; the query is closest to d, then c
    ids = ["a", "b", "c", "d"]
    g = TypedGraph.from_edges(ids, [("a", "b"), ("b", "c")], texts=ids)
    vecs = {"a": [1, 0, 0], "b": [0.6, 0.8, 0], "c": [0, 1, 0.3], "d": [0, 1, 0.1], "q": [0, 1, 0]}
    return g, TextIndex(g, TableEncoder({k: np.array(v, float) for k, v in vecs.items()}))


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
    assert "no anchor given" in SoftPCR(index).retrieve(Query("q"), 2).fallback
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="k must be an int >= 1"):
            PCR(index).retrieve(Query("q", "a"), bad)
    with pytest.raises(ValueError, match="fallback"):
        PCR(index, fallback="maybe")
    with pytest.raises(ValueError, match="max_hops"):
        PCR(index, max_hops=-1)
    with pytest.raises(ValueError, match="tau > 0"):
        SoftPCR(index, tau=0.5)
    for kw in ({"lam": -1.0}, {"prior_temperature": 0.0}, {"slack": np.inf}, {"hop_cost": np.nan}):
        with pytest.raises(ValueError, match="SoftPCR: invalid"):
            SoftPCR(index, **kw)
    for kw in ({"lam": "10"}, {"tau": None}, {"lam": True}):
        with pytest.raises(TypeError, match=f"SoftPCR: {next(iter(kw))} must be a number"):
            SoftPCR(index, **kw)
    with jax.enable_x64(False), pytest.raises(ValueError, match="lam=1e.300 overflows float32"):
        SoftPCR(index, lam=1e300)  # accepted before, then failed at the first query
    with pytest.raises(ValueError, match="no nodes"):
        TypedGraph.from_edges([], [], texts=[])
    with pytest.raises(ValueError, match="unknown node"):
        TypedGraph.from_edges(["a"], [("a", "b")], texts=["a"])


def test_hard_pcr_deletes_what_soft_pcr_keeps():
    """The chain example: the most relevant node ``d`` is unreachable from ``a``."""
    g, index = _chain()
    q = Query("q", anchor="a", relevant=("d",))
    hard = PCR(index).retrieve(q, 4)
    assert "d" not in hard.nodes and hard.nodes[0] == "c"  # deleted by the hard rule
    # log-odds d vs c: (cos_d - cos_c) / T - lam * (kappa - 2 c) = 0.371 - lam * 0.8
    soft = SoftPCR(index, lam=0.3, prior_temperature=0.1).retrieve(q, 4)
    assert soft.nodes[0] == "d"  # kept, and ranked first at this finite penalty
    assert SoftPCR(index, lam=1.0, prior_temperature=0.1).retrieve(q, 4).nodes[:2] == ("c", "d")
    assert np.isfinite(soft.scores).all()


@given(graphs(), st.data())
def test_soft_pcr_prop6_limit_is_hard_pcr(gt, data):
    """Prop. 6: with hop cost 0 the energy is E_M (0 on C(a), kappa outside); the TV to the
    prior conditioned on C(a) equals the exact rate u / (1 + u) and vanishes as
    lambda * kappa grows; at a large penalty the soft ranking starts with hard PCR's."""
    g, enc = gt
    index = TextIndex(g, enc)
    a = data.draw(st.integers(0, g.n_nodes - 1))
    hops = data.draw(st.sampled_from([None, 1]))
    q = Query("q", anchor=g.entities[a])
    reach = g.reachable(a, hops)
    feasible = np.isin(np.arange(g.n_nodes), reach)
    tvs = []
    for lam in (0.0, 1.0, 10.0, 100.0, 1e4):
        soft = SoftPCR(
            index, lam=lam, prior_temperature=0.5, hop_cost=0.0, slack=1.0, max_hops=hops
        )
        log_prior, energy, log_post, _ = soft.posterior(q)
        np.testing.assert_array_equal(energy, np.where(feasible, 0.0, 1.0))
        hard = np.asarray(hard_log_posterior(log_prior, energy, 0.0))
        tv = 0.5 * np.abs(np.exp(log_post) - np.exp(hard)).sum()
        rate = float(hard_limit_tv(log_prior, feasible, lam * 1.0))
        note(f"lam={lam} tv={tv} rate={rate}")
        np.testing.assert_allclose(tv, rate, rtol=1e-9, atol=1e-12)
        tvs.append(tv)
    assert all(x >= y - 1e-15 for x, y in zip(tvs, tvs[1:])) and tvs[-1] < 1e-12
    k = len(reach)
    pcr = PCR(index, max_hops=hops).retrieve(q, k).index.tolist()
    assert soft.retrieve(q, k).index.tolist() == pcr


@given(graphs(), st.data())
def test_soft_pcr_prop3_positivity_and_prop11_floor(gt, data):
    """Prop. 3 / 11: at finite slack every node, reachable or not, keeps positive mass, at
    least prior * exp(-lambda * kappa); hard PCR gives unreachable nodes none."""
    g, enc = gt
    index = TextIndex(g, enc)
    a = data.draw(st.integers(0, g.n_nodes - 1))
    lam = data.draw(st.floats(0.0, 50.0))
    tau = data.draw(st.sampled_from([0.0, 0.3]))  # tau > 0: entropic path energy, Eq. (13)
    hops = 3 if tau else None
    soft = SoftPCR(
        index, lam=lam, prior_temperature=0.3, hop_cost=0.2, slack=1.0, tau=tau, max_hops=hops
    )
    log_prior, energy, log_post, _ = soft.posterior(Query("q", anchor=g.entities[a]))
    assert np.all(np.isfinite(log_post))
    assert np.all(log_post >= log_prior - lam * 1.0 - 1e-9)  # Prop. 11 soft floor, B = kappa
    assert np.all((energy >= 0) & (energy <= 1.0))  # E in [0, kappa]
    outside = ~np.isin(np.arange(g.n_nodes), g.reachable(a, hops))
    assert np.all(energy[outside] == 1.0)  # unreachable nodes pay exactly the slack
    hard = PCR(index, max_hops=hops).retrieve(Query("q", anchor=g.entities[a]), g.n_nodes).index
    assert not outside[hard].any()  # hard PCR: zero mass (never retrieved) outside C(a)


def test_soft_pcr_energy_is_the_papers_distance_penalty_and_tau_limit():
    g, index = _chain()
    soft = SoftPCR(index, hop_cost=0.1, slack=1.0)
    np.testing.assert_allclose(soft.energy(0), [0.0, 0.1, 0.2, 1.0], **F64)
    # the metric of the PCR paper is the mean of this energy over the retrieved nodes
    assert distance_penalty([0, 1, 2, 3], g.distances([0])[0]) == pytest.approx(1.3 / 4)
    exact = SoftPCR(index, hop_cost=0.1, max_hops=3).energy(0)
    # tau > 0: Eq. (13) under the uniform prior over the walk family from the anchor a: the
    # empty walk (a), a->b and a->b->c, one walk per node: E(v) = c(v) + tau log 3, then slack
    for tau in (1e-4, 0.05, 0.5):
        e = SoftPCR(index, hop_cost=0.1, max_hops=3, tau=tau).energy(0)
        want = np.minimum(np.array([0.0, 0.1, 0.2, np.inf]) + tau * np.log(3.0), 1.0)
        np.testing.assert_allclose(e, want, **F64)
        assert np.all(e >= exact)  # a normalized path prior never lowers the best walk (Eq. (13))


def _same_answers(single, batch):
    assert len(batch) == len(single)
    for a, b in zip(single, batch):
        assert b.index.tolist() == a.index.tolist()
        np.testing.assert_allclose(b.scores, a.scores, **F64)
        assert (b.fallback, b.anchors.tolist()) == (a.fallback, a.anchors.tolist())


# each example grounds up to 6 queries one by one, each compiling for new shapes (~1 s):
# half the profile's examples
@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(graphs(), st.data())
def test_soft_pcr_batch_equals_one_at_a_time(gt, data):
    """``retrieve_batch`` (one energy field over the batch's anchors) gives what ``retrieve``
    (one ``ground`` per query) gives: taus 0 and > 0, reliabilities below 1, several,
    repeated, unknown and no anchors (the fallback)."""
    g, enc = gt
    if data.draw(st.booleans()):  # uncertain edges: cost hop_cost - log w (Eq. (10))
        w = data.draw(st.lists(st.floats(0.05, 1.0), min_size=g.n_edges, max_size=g.n_edges))
        g = dataclasses.replace(g, reliability=np.asarray(w))
    names = st.lists(st.sampled_from([*g.entities, "zzz"]), max_size=3)
    qs = [Query(f"q{i}", anchors=data.draw(names)) for i in range(data.draw(st.integers(1, 6)))]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    index = TextIndex(g, TableEncoder({**enc.vectors, **{q.text: rng.normal(size=4) for q in qs}}))
    tau = data.draw(st.sampled_from([0.0, 0.05, 0.7]))
    soft = SoftPCR(
        index,
        lam=data.draw(st.floats(0.0, 30.0)),
        prior_temperature=0.3,
        hop_cost=data.draw(st.sampled_from([0.0, 0.2])),
        slack=data.draw(st.sampled_from([0.5, 1.0])),
        max_hops=data.draw(st.sampled_from([1, 3] if tau else [None, 1, 3])),
        tau=tau,
    )
    k = data.draw(st.integers(1, g.n_nodes + 1))
    event(f"tau={tau}, anchors per query {sorted({len(q.anchors) for q in qs})}")
    _same_answers([soft.retrieve(q, k) for q in qs], soft.retrieve_batch(qs, k))


@pytest.mark.parametrize("tau", [0.0, 0.4])
def test_soft_pcr_batch_on_the_prebuilt_edge_index(tau):
    """From 65,536 edges both paths use the graph's EdgeIndex; a batch larger than one
    engine call (several chunks), duplicate anchors within a query, queries sharing anchors."""
    from grounding.semiring.layout import ELL_MIN_EDGES

    rng = np.random.default_rng(7)
    n = 300
    ids = [f"v{i}" for i in range(n)]
    pairs = rng.integers(0, n, (ELL_MIN_EDGES, 2))
    g = TypedGraph.from_edges(ids, [(ids[a], ids[b]) for a, b in pairs], texts=ids)
    g = dataclasses.replace(g, reliability=rng.uniform(0.2, 1.0, g.n_edges))
    anchors = [(), ("v1",), ("v1", "v1"), ("v2", "v7", "v1"), ("v9", "nope"), ("nope",)]
    qs = [Query(f"q{i}", anchors=anchors[i % len(anchors)]) for i in range(12)]
    vecs = {t: rng.normal(size=8) for t in [*ids, *(q.text for q in qs)]}
    soft = SoftPCR(TextIndex(g, TableEncoder(vecs)), lam=3.0, max_hops=2, tau=tau)
    pcr_module = importlib.import_module("grounding.retrieval.path_constrained")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pcr_module, "_SOFT_BATCH", 5)  # several engine calls, one a short one
        batch = soft.retrieve_batch(qs, 6)
    _same_answers([soft.retrieve(q, 6) for q in qs], batch)


def test_soft_pcr_batch_bad_input():
    g, index = _chain()
    soft = SoftPCR(index)
    assert soft.retrieve_batch([], 3) == []
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="k must be an int >= 1"):
            soft.retrieve_batch([], bad)
    with pytest.raises(TypeError, match="sequence of Query"):
        soft.retrieve_batch(Query("q", "a"), 2)
    with pytest.raises(TypeError, match="sequence of Query"):
        PCR(index).retrieve_batch("q", 2)
    with pytest.raises(TypeError, match="Query objects, got str"):
        soft.retrieve_batch([Query("q", "a"), "q"], 2)
    with pytest.raises(ValueError, match="unknown anchor"):
        SoftPCR(index, fallback="error").retrieve_batch([Query("q", "a"), Query("q", "z")], 2)
    with pytest.raises(ValueError, match="at least one anchor"):
        soft.batch_energy([[0], []])
    with pytest.raises(ValueError, match="anchor indices"):
        soft.batch_energy([[4]])
    with pytest.raises(ValueError, match="max_hops must be >= 1"):
        SoftPCR(index, max_hops=0)
    np.testing.assert_allclose(soft.batch_energy([[0], [2, 0]]), [[0.0, 0.1, 0.2, np.inf],
                               [0.0, 0.1, 0.0, np.inf]], **F64)  # fmt: skip


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


def test_ann_index_rejects_bad_arguments():
    pytest.importorskip("faiss")
    from grounding.retrieval import ANNIndex

    emb = np.random.default_rng(0).normal(size=(100, 4)).astype(np.float32)
    with pytest.raises(ValueError, match="float"):
        ANNIndex(emb.astype(int))
    with pytest.raises(ValueError, match="nlist must lie in"):
        ANNIndex(emb, nlist=101)
    with pytest.raises(ValueError, match="nprobe must be an int >= 1"):
        ANNIndex(emb, nlist=2, nprobe=1.5)
    with pytest.raises(ValueError, match="train_size=1 < nlist=2"):
        ANNIndex(emb, nlist=2, train_size=1)
    ann = ANNIndex(emb)
    assert (ann.nlist, ann.nprobe) == (2, 1)  # 100 // 39 cells, nlist // 8 probed (at least 1)
    with pytest.raises(ValueError, match="nprobe must lie in"):
        ann.nprobe = 3
    g, index = _chain()
    with pytest.raises(ValueError, match="the ANNIndex covers"):
        PCR(index, search=ann)


def test_baselines_match_brute_force_and_the_papers_hybrid():
    rng = np.random.default_rng(3)
    words = ["cloud", "scale", "graph", "node", "edge", "cache", "query", "index"]
    texts = [" ".join(rng.choice(words, size=rng.integers(2, 6))) for _ in range(25)]
    ids = [f"d{i}" for i in range(25)]
    g = TypedGraph.from_edges(ids, [], texts=texts)
    index = TextIndex(g)
    q = Query("cloud graph query", anchor="d0")
    cos = index.embeddings @ index.embed_queries([q.text])[0]
    bm = index.bm25.scores(q.text)
    assert VectorRetriever(index).retrieve(q, 5).index.tolist() == _brute_top(cos, range(25), 5)
    assert BM25Retriever(index).retrieve(q, 5).index.tolist() == _brute_top(bm, range(25), 5)

    def paper_hybrid(k, alpha=0.7):  # the dictionary formulation of the PCR paper's code
        out = {}
        for w, s in ((alpha, cos), (1 - alpha, bm)):
            top = _brute_top(s, range(25), 2 * k)
            lo, hi = min(s[top]), max(s[top])
            for i in top:
                out[i] = out.get(i, 0.0) + w * (s[i] - lo) / ((hi - lo) or 1.0)
        return sorted(out, key=lambda i: (-out[i], i))[:k]

    assert HybridRetriever(index).retrieve(q, 5).index.tolist() == paper_hybrid(5)
    with pytest.raises(ValueError, match="alpha"):
        HybridRetriever(index, alpha=1.5)
    with pytest.raises(ValueError, match="no tokens"):
        VectorRetriever(index).retrieve(Query("?!"), 3)


@given(
    st.lists(st.integers(0, 9), max_size=10, unique=True),
    st.sets(st.integers(0, 9), min_size=1),
    st.integers(1, 12),
)
def test_relevance_and_recall_bounds(retrieved, relevant, k):
    rel, rec = relevance_at_k(retrieved, relevant, k), recall_at_k(retrieved, relevant, k)
    assert 0.0 <= rec <= rel <= 1.0
    hits = len(set(retrieved[:k]) & relevant)
    assert rel == hits / min(k, len(relevant)) and rec == hits / len(relevant)


def test_metric_edge_cases():
    dist = np.array([0, 1, -1])
    assert structural_consistency([], dist) == 1.0 and distance_penalty([], dist) == 0.0
    with pytest.raises(ValueError, match="no relevant"):
        relevance_at_k([1], set(), 1)
    with pytest.raises(ValueError, match="an int >= 1"):
        recall_at_k([1], {1}, 0)


def test_evaluate_and_evidence_state_on_a_tiny_graph():
    g, index = _chain()
    qs = [Query("q", anchor="a", relevant=("c", "d"), id="q1"), Query("q", "zzz", ("d",), "q2")]
    rows = evaluate_retrieval(PCR(index), g, qs, k=2)
    assert rows[0]["consistency"] == 1.0 and rows[0]["relevance@10"] == 0.5
    assert rows[0]["distance"] == pytest.approx((0.2 + 0.1) / 2)  # c (2 hops), b (1 hop)
    assert rows[1]["fallback"] and rows[1]["consistency"] == 0.0
    vec = evaluate_retrieval(VectorRetriever(index), g, qs, k=2)[0]
    assert vec["consistency"] == 0.5 and vec["relevance@10"] == 1.0
    res = PCR(index).retrieve(qs[0], 1)  # retrieves c only; evidence keeps the path a->b->c
    ev = res.evidence
    assert sorted(ev.graph.triples()) == [("a", "related_to", "b"), ("b", "related_to", "c")]
    assert ev.provenance["retriever"] == "pcr" and ev.provenance["nodes"] == ("c",)
    summary = summarize_retrieval(rows)
    assert summary["retriever"] == "pcr" and summary["n_queries"] == 2
    assert summary["n_fallback"] == 1 and summary["consistency"] == 0.5
    assert summary["relevance@10"] == np.mean([r["relevance@10"] for r in rows])
    assert "graph=" not in repr(res) and "index=array([2])" in repr(res)  # not the whole graph
    with pytest.raises(ValueError, match="no rows"):
        summarize_retrieval([])


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


def test_soft_limit_equals_hard_pcr_on_pathrag6_with_duplicate_texts():
    """PathRAG-6 repeats node texts verbatim; identical rows must score bit-identically on
    every path, or the soft limit and hard PCR break ties differently (a regression)."""
    from grounding.datasets import load_pathrag6

    for bench in load_pathrag6().values():
        index = TextIndex(bench.graph)
        pcr, soft = PCR(index), SoftPCR(index, lam=1e4, hop_cost=0.0)
        for q in bench.queries:
            hard = pcr.retrieve(q, 10).index.tolist()
            assert soft.retrieve(q, 10).index.tolist()[: len(hard)] == hard, q.id
            assert pcr.retrieve_batch([q], 10)[0].index.tolist() == hard


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


def test_hybrid_returns_k_nodes_even_when_scores_are_zero():
    ids = [f"d{i}" for i in range(6)]
    texts = ["alpha beta", "gamma", "delta", "epsilon", "zeta", "eta"]
    index = TextIndex(TypedGraph.from_edges(ids, [], texts=texts))
    res = HybridRetriever(index).retrieve(Query("alpha"), 2)
    assert len(res.index) == 2 and res.index[0] == 0
