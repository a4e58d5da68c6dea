"""Batched retrieval -> evidence equals the per-question path, exactly: distances of many
anchor sets (NetworkX BFS), PCR.retrieve_batch at a depth limit (PCR.retrieve), the batched
evidence edge sets (subgraph_evidence) and the compact batch
(``grounding.solver.compact.compact_evidence``, against a state-by-state reference compaction
written here, the obviously correct way).
"""

from __future__ import annotations

import dataclasses
import functools
from unittest import mock

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grounding import EvidenceState, TypedGraph
from grounding.datasets import kgqa_benchmark
from grounding.graph._memo import GraphMemo
from grounding.retrieval import PCR, Query, TextIndex, _batch, subgraph_evidence
from grounding.retrieval.base import subgraph_evidence_batch
from grounding.semiring import reach
from grounding.semiring.recursion import UNREACHABLE
from grounding.solver import compact
from grounding.testing.strategies import seeds, typed_graphs


def compact_evidence(state: EvidenceState, keep=(), min_size: int = 64) -> EvidenceState:
    """Reference compaction of one state: the entities its edges touch and ``keep``, in their
    original order, then isolated ``<padding i>`` entities (names the graph does not hold) up
    to the power of two ``>= min_size``; edges renumbered, everything else unchanged."""
    g = state.graph
    used = np.zeros(g.n_nodes, bool)
    used[np.asarray(g.head)] = used[np.asarray(g.tail)] = True
    for name in keep:
        used[g.entity_index(name)] = True
    old = np.flatnonzero(used)
    size = max(min_size, 1 << max(len(old) - 1, 0).bit_length())
    names, pad, i = set(g.entities), [], 0
    while len(pad) < size - len(old):
        if f"<padding {i}>" not in names:
            pad.append(f"<padding {i}>")
        i += 1
    new = np.full(g.n_nodes, -1, np.int32)
    new[old] = np.arange(len(old), dtype=np.int32)
    graph = TypedGraph(
        head=new[np.asarray(g.head)],
        relation=g.relation,
        tail=new[np.asarray(g.tail)],
        reliability=g.reliability,
        entities=tuple(g.entities[j] for j in old) + tuple(pad),
        relations=g.relations,
        texts=tuple(g.texts[j] for j in old) + ("",) * len(pad) if g.texts else (),
    )
    return dataclasses.replace(state, graph=graph)


DEPTHS = st.sampled_from([0, 1, 2, 3, None])


def nx_nearest(g: TypedGraph, anchors, max_hops) -> np.ndarray:
    """``[N]`` BFS distance from the nearest anchor (NetworkX), UNREACHABLE beyond."""
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n_nodes))
    G.add_edges_from(zip(np.asarray(g.head).tolist(), np.asarray(g.tail).tolist()))
    out = np.full(g.n_nodes, UNREACHABLE, np.int64)
    for a in anchors:
        for v, d in nx.single_source_shortest_path_length(G, int(a), cutoff=max_hops).items():
            if out[v] == UNREACHABLE or d < out[v]:
                out[v] = d
    return out


def arrays(g: TypedGraph) -> list[np.ndarray]:
    return [np.asarray(x) for x in (g.head, g.relation, g.tail, g.reliability)]


def assert_same_graph(a: TypedGraph, b: TypedGraph) -> None:
    """Same vocabulary, texts, and edge arrays (values and dtypes)."""
    assert (a.entities, a.relations, a.texts) == (b.entities, b.relations, b.texts)
    for x, y in zip(arrays(a), arrays(b)):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def draw_sets(rng, n: int, count: int, empty_ok: bool = True) -> list[np.ndarray]:
    """``count`` random index sets of ``[0, n)`` (sizes 0..3; at least 1 if not empty_ok)."""
    lo = 0 if empty_ok else 1
    return [rng.choice(n, rng.integers(lo, min(n, 3) + 1), replace=False) for _ in range(count)]


# ------------------------------------------------------------------ distances
@settings(max_examples=60)
@given(typed_graphs(n_max=8, e_max=20), seeds, DEPTHS)
def test_distances_to_nearest_equals_networkx_bfs(g, seed, max_hops):
    rng = np.random.default_rng(seed)
    sets = draw_sets(rng, g.n_nodes, 4)
    got = g.distances_to_nearest(sets, max_hops)
    assert got.shape == (4, g.n_nodes) and got.dtype == np.int64
    for row, anchors in zip(got, sets):
        np.testing.assert_array_equal(row, nx_nearest(g, anchors, max_hops))
    # compact: the same distances in the narrowest type (int8 below 127 hops)
    small = g.distances_to_nearest(sets, max_hops, compact=True)
    np.testing.assert_array_equal(small, got)
    assert small.dtype == (np.int32 if max_hops is None else np.int8)
    # pairs: the reached entries in row-major order with their distances (a repeated anchor
    # is reached once)
    # (both ways: read off the matrix when many entries are reached, else from the levels)
    sets = [*sets, np.repeat(sets[-1], 2)]
    for share in (0, 10**9):
        reach.DENSE_PAIRS, saved = share, reach.DENSE_PAIRS
        try:
            dist, (q, v, d) = g.distances_to_nearest(sets, max_hops, compact=True, pairs=True)
        finally:
            reach.DENSE_PAIRS = saved
        np.testing.assert_array_equal(dist[:4], small)
        want_q, want_v = np.nonzero(dist >= 0)
        np.testing.assert_array_equal(q, want_q)
        np.testing.assert_array_equal(v, want_v)
        np.testing.assert_array_equal(d, dist[want_q, want_v])
        assert d.dtype == dist.dtype


@settings(max_examples=60)
@given(typed_graphs(n_max=8, e_max=20), seeds, DEPTHS)
def test_distances_per_anchor_equal_networkx_bfs(g, seed, max_hops):
    anchors = np.random.default_rng(seed).integers(0, g.n_nodes, 3)
    got = g.distances(anchors, max_hops)
    for row, a in zip(got, anchors):
        np.testing.assert_array_equal(row, nx_nearest(g, [a], max_hops))


def test_distances_to_nearest_rejects_bad_input():
    g = TypedGraph.from_triples([("a", "r", "b")])
    with pytest.raises(ValueError, match="anchor indices"):
        g.distances_to_nearest([[0], [2]], 1)
    with pytest.raises(ValueError, match="max_hops"):
        g.distances_to_nearest([[0]], -1)
    assert g.distances_to_nearest([], 2).shape == (0, 2)


# ------------------------------------------------------------------ evidence
SIDES = ["chosen", "forward", "scan", "search"]


def force(mp: pytest.MonkeyPatch, side: str, hub_degree: int = _batch.HUB_DEGREE) -> None:
    """Make the batched evidence find predecessors one way: from the level below
    (``forward``), by the edges into each node (``scan``) or by a binary search of each node
    of the level below among them (``search``); and treat nodes with more than ``hub_degree``
    edges as hubs (``-1``: every node) when it gathers the induced edges."""
    mp.setattr(_batch, "HUB_DEGREE", hub_degree)
    mp.setattr(_batch, "_HUBS", GraphMemo())
    if side != "chosen":
        mp.setattr(_batch, "_forward", lambda n_out, n_in: side == "forward")
        mp.setattr(_batch, "_SEARCH_COST", 0 if side == "search" else 1 << 40)


@pytest.mark.parametrize("hub_degree", [_batch.HUB_DEGREE, 2, -1])
@pytest.mark.parametrize("side", SIDES)
@settings(max_examples=60)
@given(g=typed_graphs(n_max=7, e_max=30), seed=seeds, max_hops=DEPTHS, with_triples=st.booleans())
def test_subgraph_evidence_batch_equals_subgraph_evidence(
    side, hub_degree, g, seed, max_hops, with_triples
):
    """Every way of finding predecessors (edges into the node, a search among them, edges from
    the level below) and of gathering the induced edges (no hubs, some, every node a hub)."""
    rng = np.random.default_rng(seed)
    anchors = draw_sets(rng, g.n_nodes, 5)
    nodes = [
        rng.choice(g.n_nodes, rng.integers(0, min(4, g.n_nodes + 1)), replace=False)
        for _ in anchors
    ]
    triples = None
    if with_triples:
        triples = [rng.integers(0, g.n_edges, rng.integers(0, 3)) for _ in anchors]
    provs = [{"i": i} for i in range(len(anchors))]
    with pytest.MonkeyPatch.context() as mp:
        force(mp, side, hub_degree)
        got = subgraph_evidence_batch(g, anchors, nodes, max_hops, provs, triples)
    for i, state in enumerate(got):
        t = None if triples is None else triples[i]
        want = subgraph_evidence(g, anchors[i], nodes[i], provs[i], t, max_hops)
        assert_same_graph(state.graph, want.graph)
        assert state.provenance == want.provenance


@pytest.mark.parametrize("side", SIDES)
def test_evidence_walks_back_along_the_first_in_edge(side, monkeypatch):
    """Two shortest paths a->x->c and a->y->c: the edge into c listed first (x->c, edge 2)
    decides which middle node the evidence keeps, in both paths; parallel edges x->c too."""
    force(monkeypatch, side)
    g = TypedGraph.from_triples(
        [("a", "r", "x"), ("a", "r", "y"), ("x", "r", "c"), ("y", "r", "c")]
    )
    want = subgraph_evidence(g, [0], [3], max_hops=2)
    [got] = subgraph_evidence_batch(g, [[0]], [[3]], max_hops=2)
    assert got.graph.triples() == want.graph.triples() == [("a", "r", "x"), ("x", "r", "c")]
    flipped = TypedGraph.from_triples(
        [("a", "r", "x"), ("a", "r", "y"), ("y", "r", "c"), ("x", "r", "c")]
    )
    [got] = subgraph_evidence_batch(flipped, [[0]], [[3]], max_hops=2)
    assert got.graph.triples() == [("a", "r", "y"), ("y", "r", "c")]
    parallel = TypedGraph.from_triples(
        [("a", "r", "x"), ("a", "r", "y"), ("y", "s", "c"), ("x", "r", "c"), ("y", "r", "c")]
    )
    want = subgraph_evidence(parallel, [0], [3], max_hops=2)
    [got] = subgraph_evidence_batch(parallel, [[0]], [[3]], max_hops=2)
    assert got.graph.triples() == want.graph.triples()
    assert got.graph.triples() == [("a", "r", "y"), ("y", "s", "c"), ("y", "r", "c")]


def test_subgraph_evidence_batch_checks_lengths():
    g = TypedGraph.from_triples([("a", "r", "b")])
    with pytest.raises(ValueError, match="nodes_list"):
        subgraph_evidence_batch(g, [[0], [1]], [[1]])


# ------------------------------------------------------------------ PCR
def with_texts(g: TypedGraph, rng) -> TypedGraph:
    """The graph with node texts from a small vocabulary (repeats: tied cosines)."""
    words = ["red fox", "blue fox", "red owl", "green owl"]
    return dataclasses.replace(g, texts=tuple(words[rng.integers(4)] for _ in g.entities))


def assert_same_retrieval(a, b) -> None:
    np.testing.assert_array_equal(a.index, b.index)
    assert a.scores.dtype == b.scores.dtype
    np.testing.assert_array_equal(a.scores, b.scores)  # exactly: the same arithmetic
    np.testing.assert_array_equal(a.anchors, b.anchors)
    assert (a.fallback, a.max_hops, a.retriever) == (b.fallback, b.max_hops, b.retriever)
    assert_same_graph(a.evidence.graph, b.evidence.graph)
    assert a.evidence.provenance == b.evidence.provenance


@settings(max_examples=40)
@given(typed_graphs(n_max=8, e_max=24), seeds, st.sampled_from([0, 1, 2, 3]), st.integers(1, 5))
def test_pcr_retrieve_batch_equals_retrieve(g, seed, max_hops, k):
    rng = np.random.default_rng(seed)
    g = with_texts(g, rng)
    pcr = PCR(TextIndex(g), max_hops=max_hops)
    names = [*g.entities, "unknown"]
    queries = [
        Query(["red fox", "owl", "green blue fox"][i % 3], anchor=names[rng.integers(len(names))])
        for i in range(6)
    ]
    got = pcr.retrieve_batch(queries, k)
    for q, r in zip(queries, got):
        if r.fallback is None:
            assert "evidence" in r.__dict__  # precomputed
        assert_same_retrieval(r, pcr.retrieve(q, k))


@functools.cache
def codex_s():
    bench = kgqa_benchmark("codex-s", questions_per_hop=40, seed=0)
    return bench, TextIndex(bench.graph)


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_pcr_batch_on_codex_s_equals_the_per_question_path(hops, monkeypatch):
    """Real data, several chunks of queries: rankings, evidence and compaction identical."""
    monkeypatch.setattr(_batch, "_CHUNK_CELLS", 7 * codex_s()[0].graph.n_nodes)
    bench, index = codex_s()
    qs = [q for q in bench.questions if q.hops == hops][:25]
    queries = [Query(q.text, anchor=q.topic) for q in qs]
    pcr = PCR(index, max_hops=hops)
    got = pcr.retrieve_batch(queries, 50)
    singles = [pcr.retrieve(q, 50) for q in queries]
    for a, b in zip(got, singles):
        assert_same_retrieval(a, b)
    keep = [(q.topic, *q.answers[:2]) for q in qs]
    compacted = compact.compact_evidence([r.evidence for r in got], keep)
    size = compacted[0].graph.n_nodes
    assert size >= 64 and size & (size - 1) == 0
    for c, r, kp in zip(compacted, singles, keep):
        assert_same_graph(c.graph, compact_evidence(r.evidence, kp, min_size=size).graph)


# ------------------------------------------------------------------ compaction
@settings(max_examples=60)
@given(
    typed_graphs(n_max=10, e_max=24), typed_graphs(n_max=6, e_max=12), seeds,
    st.sampled_from([1, 4, 64]), st.booleans(), st.sampled_from([1, 12, 1 << 24]),
    st.sampled_from([0, 1 << 18]),
)  # fmt: skip
def test_compact_evidence_equals_the_reference_state_by_state(
    g, g2, seed, min_size, texts, cells, dense
):
    """One batch of states from two graphs of different sizes, renumbered together by flags in
    passes of ``cells`` (one question a pass, a few, or all) or, as over large graphs
    (``dense=0``), by sorting: each state equals its own reference compaction."""
    rng = np.random.default_rng(seed)
    if texts:
        g = with_texts(g, rng)
    if rng.random() < 0.3:  # a name that collides with a padding name
        g = dataclasses.replace(g, entities=("<padding 1>", *g.entities[1:]))
    states = []
    for i in range(5):
        src = g2 if i % 3 == 1 else g
        edges = np.flatnonzero(rng.random(src.n_edges) < 0.5)
        states.append(EvidenceState(src.subgraph(edges), negative={("v0", "r0", "v1")}))
    keep = [tuple(rng.choice(s.graph.entities, rng.integers(0, 3), replace=False)) for s in states]
    with mock.patch.multiple(compact, _CELLS=cells, _DENSE_NODES=dense):
        got = compact.compact_evidence(states, keep, min_size=min_size)
    size = got[0].graph.n_nodes
    assert size & (size - 1) == 0 and size >= min_size
    for c, s, kp in zip(got, states, keep):
        assert c.graph.n_nodes == size
        want = compact_evidence(s, kp, min_size=size)
        assert_same_graph(c.graph, want.graph)
        assert c.negative == want.negative == s.negative
        assert dataclasses.replace(c, negative=frozenset()).negative == frozenset()
    # without texts, and skipping names a state lacks: the same graphs otherwise
    lacking = [(*kp, "not an entity") for kp in keep]
    bare = compact.compact_evidence(states, lacking, min_size=min_size, texts=False,
                                    unknown="skip")  # fmt: skip
    for b, c in zip(bare, got):
        assert b.graph.texts == ()
        assert_same_graph(b.graph, dataclasses.replace(c.graph, texts=()))


def test_compact_evidence_errors():
    g = TypedGraph.from_triples([("a", "r", "b")])
    s = EvidenceState(g)
    with pytest.raises(ValueError, match="keep lists"):
        compact.compact_evidence([s], [])
    with pytest.raises(KeyError, match="nope"):
        compact.compact_evidence([s], [("nope",)])
    with pytest.raises(ValueError, match="unknown must be"):
        compact.compact_evidence([s], [()], unknown="drop")
    assert compact.compact_evidence([], []) == []
