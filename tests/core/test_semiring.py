"""Oracle tests of the all-walks semiring recursion (:mod:`grounding.semiring`).

The dynamic program must equal explicit walk enumeration (exactly ``k`` and up to ``K``
hops, log and min-plus semirings, with step priors and per-source costs), scipy's shortest
paths when the hop limit does not bind, the enumerated optimizer ``nu*`` of Prop. 2 (its
gradient), NetworkX's breadth-first distances, and itself under sharding. Unreachable
nodes are ``+inf``, never NaN. Walk enumeration here is an independent few-line recursion.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from functools import partial

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from _tol import F32, F64
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from jax.sharding import Mesh, NamedSharding
from scipy.sparse.csgraph import shortest_path

import grounding as g
from grounding import semiring
from grounding.paths import costs, kbest
from grounding.semiring import layout, recursion
from grounding.semiring.kernels import SegmentEdges
from grounding.testing.strategies import seeds, typed_graphs, weighted_digraphs

taus = st.one_of(st.just(0.0), st.floats(0.05, 5.0))
# Each example runs the recursion eagerly on a new small graph (~0.3 s); the oracle
# properties run 40% of the profile's examples (40 under ``ci``, 400 under ``thorough``).
oracle = settings(max_examples=max(10, settings.default.max_examples * 2 // 5))


# ------------------------------------------------------------------------------ oracles
def walks(head, tail, source, k):
    """All walks with exactly ``k`` edges from ``source``, as edge tuples."""
    out = defaultdict(list)
    for e, u in enumerate(head):
        out[int(u)].append(e)
    frontier = [((), int(source))]
    for _ in range(k):
        frontier = [(w + (e,), int(tail[e])) for w, v in frontier for e in out[v]]
    return [w for w, _ in frontier]


def walk_scores(gr, source, hops, tau, prior):
    """``{end node: [(walk, score)]}`` with score ``log omega(w) - c(w)/tau`` (``-c(w)`` at tau 0),
    over walks of the given lengths that have finite score."""
    out = defaultdict(list)
    for k in hops:
        for w in walks(gr.head, gr.tail, source, k):
            c = sum(gr.cost[e] for e in w)
            lp = sum(gr.log_prior[e] for e in w) if prior else 0.0
            score = (-c if lp > -np.inf else -np.inf) if tau == 0 else lp - c / tau
            if np.isfinite(score):
                out[int(gr.tail[w[-1]])].append((w, score))
    return out


def scored_walk_family(rng, n, T, to_target, nodes, draw):
    """A random multigraph on ``n`` nodes with per-hop edge scores ``hop`` ``[T, E]``, start
    scores ``[n]`` and optional node scores ``[T, n]`` drawn by ``draw(shape)``, a target when
    ``to_target``, and its walk family: walks of exactly ``T`` edges from any node, or of
    ``1..T`` edges ending at the target. Returns ``(kwargs of the k-best / counting
    functions, the family, a walk's score)``."""
    m = int(rng.integers(1, 8))
    head, tail = rng.integers(0, n, m), rng.integers(0, n, m)
    hop, start = draw((T, m)), draw(n)
    node_score = draw((T, n)) if nodes else None
    target = int(rng.integers(n)) if to_target else None
    family = [w for s in range(n) for j in (range(1, T + 1) if to_target else [T])
              for w in walks(head, tail, s, j) if not to_target or tail[w[-1]] == target]  # fmt: skip

    def score(w):
        x = start[head[w[0]]] + sum(hop[i, e] for i, e in enumerate(w))
        return x + (sum(node_score[i, tail[e]] for i, e in enumerate(w)) if nodes else 0.0)

    kw = dict(head=head, tail=tail, hop_score=hop, start=start, node_score=node_score,
              target=target)  # fmt: skip
    return kw, family, score


def walk_source(gr, rng):
    """The head of a finite-cost edge (4 draws in 5, when there is one), else any node."""
    heads = gr.head[np.isfinite(gr.cost)]
    if len(heads) and rng.random() < 0.8:
        return int(rng.choice(heads))
    return int(rng.integers(0, gr.n_nodes))


def reached_target(gr, s, hops, rng, tau=1.0, prior=False):
    """A node some walk of ``hops`` from ``s`` ends at (4 draws in 5), else any node: the
    assertions about walks then run in most examples, and the no-walk branch still runs."""
    ends = sorted(walk_scores(gr, s, hops, tau, prior))
    if ends and rng.random() < 0.8:
        return int(rng.choice(ends))
    return int(rng.integers(0, gr.n_nodes))


def oracle_energy(scored, tau):
    """Eq. (13) (min at tau 0) from a list of walk scores; ``+inf`` when empty."""
    if not scored:
        return np.inf
    s = np.array([x for _, x in scored])
    if tau == 0:
        return -s.max()
    m = s.max()
    return -tau * (m + np.log(np.sum(np.exp(s - m))))


def oracle_field(gr, sources, hops, tau, prior):
    n = gr.n_nodes
    out = np.full((len(sources), n), np.inf)
    for i, s in enumerate(sources):
        scored = walk_scores(gr, s, hops, tau, prior)
        for v in range(n):
            out[i, v] = oracle_energy(scored.get(v, []), tau)
    return out


def field(gr, sources, k, tau, prior, **kw):
    return g.semiring.energy_field(
        gr.head,
        gr.tail,
        gr.cost,
        np.asarray(sources, np.int32),
        n_nodes=gr.n_nodes,
        max_hops=k,
        tau=tau,
        log_step_prior=gr.log_prior if prior else None,
        **kw,
    )


def assert_energies_equal(got, want, tol=F64):
    got, want = np.asarray(got), np.asarray(want)
    assert not np.isnan(got).any()
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], **tol)


sources_of = st.lists(st.integers(0, 5), min_size=1, max_size=4)


def _clip(sources, n):
    return [s % n for s in sources]


# ------------------------------------------------------------------ Eq. (13) / Eq. (11)
@oracle
@given(weighted_digraphs(), st.integers(1, 4), taus, st.booleans(), sources_of)
def test_eq13_energy_field_equals_walk_enumeration(gr, k, tau, prior, sources):
    """Up to ``K`` hops, both semirings, with and without a step prior."""
    sources = _clip(sources, gr.n_nodes)
    want = oracle_field(gr, sources, range(1, k + 1), tau, prior)
    note(f"oracle {want}")
    assert_energies_equal(field(gr, sources, k, tau, prior), want)


@oracle
@given(weighted_digraphs(), st.integers(1, 4), taus, st.booleans(), sources_of)
def test_eq13_exact_hop_fields_equal_enumeration(gr, k, tau, prior, sources):
    sources = _clip(sources, gr.n_nodes)
    got = g.semiring.hop_energy_fields(
        gr.head, gr.tail, gr.cost, np.asarray(sources, np.int32), n_nodes=gr.n_nodes,
        max_hops=k, tau=tau, log_step_prior=gr.log_prior if prior else None,
    )  # fmt: skip
    assert got.shape == (k, len(sources), gr.n_nodes)
    for hop in range(1, k + 1):
        assert_energies_equal(got[hop - 1], oracle_field(gr, sources, [hop], tau, prior))


@settings(max_examples=12)  # each example compiles an ELL hop (~2.5 s); see ELL_MIN_EDGES
@given(weighted_digraphs(e_max=40), st.integers(1, 3), taus, st.booleans(), sources_of)
def test_segment_fallback_equals_ell_layout(gr, k, tau, prior, sources):
    """The traced-edge path (segment reductions) and the ELL index compute the same field."""
    sources = np.asarray(_clip(sources, gr.n_nodes), np.int32)
    args = (gr.cost, sources, k, tau, gr.log_prior if prior else None, None, False)
    ell = recursion.fields(semiring.EdgeIndex.from_edges(gr.head, gr.tail, gr.n_nodes), *args)
    seg = recursion.fields(
        SegmentEdges(jnp.asarray(gr.head), jnp.asarray(gr.tail), gr.n_nodes), *args
    )
    assert_energies_equal(seg, ell)


@oracle
@given(weighted_digraphs(), st.integers(1, 3), st.floats(0.1, 3.0), sources_of)
def test_per_source_costs_equal_separate_runs(gr, k, tau, sources):
    sources = _clip(sources, gr.n_nodes)
    rng = np.random.default_rng(len(sources))
    costs = gr.cost[None, :] + rng.uniform(0, 1, (len(sources), len(gr.cost)))
    got = g.semiring.energy_field(gr.head, gr.tail, costs, np.asarray(sources, np.int32),
                         n_nodes=gr.n_nodes, max_hops=k, tau=tau)  # fmt: skip
    for i, s in enumerate(sources):
        want = field(gr._replace(cost=costs[i]), [s], k, tau, False)
        assert_energies_equal(got[i], want[0])


@oracle
@given(weighted_digraphs(inf_frac=0.0), st.integers(1, 4), st.floats(1e-3, 0.05), sources_of)
def test_tau_to_zero_reaches_the_min_plus_field(gr, k, tau, sources):
    """``0 <= E_min - E_tau <= tau * log(#walks)`` (Eq. (13) vs (11)), and the min-plus field
    is the ``tau = 0`` value."""
    sources = _clip(sources, gr.n_nodes)
    soft = np.asarray(field(gr, sources, k, tau, False))
    hard = np.asarray(field(gr, sources, k, 0.0, False))
    counts = oracle_field(gr._replace(cost=np.zeros_like(gr.cost)), sources, range(1, k + 1), 1.0,
                          False)  # fmt: skip  # -log(#walks)
    ok = np.isfinite(hard)
    np.testing.assert_array_equal(np.isfinite(soft), ok)
    gap = hard[ok] - soft[ok]
    assert np.all(gap >= -1e-9)
    assert np.all(gap <= tau * -counts[ok] + 1e-9)


@oracle
@given(weighted_digraphs(positive=True, inf_frac=0.0), sources_of)
def test_min_plus_equals_scipy_shortest_paths_when_hops_do_not_bind(gr, sources):
    """With ``max_hops >= n - 1`` and positive costs the best walk is a shortest path."""
    sources = _clip(sources, gr.n_nodes)
    n = gr.n_nodes
    best = {}
    for h, t, c in zip(gr.head, gr.tail, gr.cost):  # parallel edges: keep the cheapest
        best[(h, t)] = min(c, best.get((h, t), np.inf))
    rows, cols = zip(*best) if best else ((), ())
    w = sp.csr_matrix((list(best.values()), (rows, cols)), shape=(n, n))
    dist = shortest_path(w, method="D", directed=True, indices=sources)
    got = np.asarray(field(gr, sources, max(n - 1, 1), 0.0, False))
    off = np.ones_like(dist, bool)
    off[np.arange(len(sources)), sources] = False  # a walk needs >= 1 hop; scipy's d(s, s) = 0
    assert_energies_equal(got[off], dist[off])


@oracle
@given(weighted_digraphs(), sources_of)
def test_min_plus_without_a_hop_limit_is_the_shortest_walk_of_at_least_one_edge(gr, sources):
    """``max_hops=None`` (relaxation to a fixed point) equals scipy's Dijkstra off the
    diagonal, and on it the cheapest cycle through the source (walks need >= 1 edge)."""
    sources = _clip(sources, gr.n_nodes)
    n = gr.n_nodes
    best = {}
    for h, t, c in zip(gr.head, gr.tail, gr.cost):
        best[(h, t)] = min(c, best.get((h, t), np.inf))
    rows, cols = zip(*best) if best else ((), ())
    w = sp.csr_matrix((list(best.values()), (rows, cols)), shape=(n, n))
    dist = shortest_path(w, method="D", directed=True)
    got = np.asarray(
        g.semiring.energy_field(
            gr.head,
            gr.tail,
            gr.cost,
            np.asarray(sources, np.int32),
            n_nodes=n,
            max_hops=None,
            tau=0.0,
        )
    )
    for i, s in enumerate(sources):
        want = dist[s].copy()
        want[s] = min((c + dist[t, s] for (h, t), c in best.items() if h == s), default=np.inf)
        assert_energies_equal(got[i], want)


def test_min_plus_without_a_hop_limit_relaxes_through_a_long_cycle():
    """A directed cycle of n nodes: the walk to node v costs v, back to the source n. The
    relaxation needs n - 1 hops to reach the far end (a hop budget below that stops short)."""
    n = 12
    head, tail = np.arange(n), (np.arange(n) + 1) % n
    got = g.semiring.energy_field(
        head, tail, np.ones(n), np.array([0]), n_nodes=n, max_hops=None, tau=0.0
    )
    np.testing.assert_array_equal(np.asarray(got), [[n, *range(1, n)]])


def test_unlimited_hops_need_min_plus_and_non_negative_costs():
    h, t = np.array([0, 1]), np.array([1, 0])
    with pytest.raises(ValueError, match="tau == 0"):
        g.semiring.energy_field(h, t, np.ones(2), np.array([0]), n_nodes=2, max_hops=None, tau=0.5)
    with pytest.raises(ValueError, match="non-negative"):
        g.semiring.energy_field(
            h, t, np.array([1.0, -2.0]), np.array([0]), n_nodes=2, max_hops=None, tau=0.0
        )


@oracle
@given(weighted_digraphs(), st.integers(1, 4), sources_of)
def test_min_plus_equals_hop_limited_bellman_ford(gr, k, sources):
    """Dense NumPy reference: ``D_t = D_{t-1} (min,+) W`` for ``t <= K``."""
    sources = _clip(sources, gr.n_nodes)
    n = gr.n_nodes
    w = np.full((n, n), np.inf)
    for h, t, c in zip(gr.head, gr.tail, gr.cost):
        w[h, t] = min(w[h, t], c)
    d = w[sources]
    best = d.copy()
    for _ in range(k - 1):
        d = np.min(d[:, :, None] + w[None, :, :], axis=1)
        best = np.minimum(best, d)
    assert_energies_equal(field(gr, sources, k, 0.0, False), best)


def test_unreachable_nodes_are_inf_not_nan_with_finite_gradients():
    head, tail, cost = np.array([0, 1]), np.array([1, 0]), np.array([1.0, 2.0])
    for tau in (0.0, 0.5):
        f = g.semiring.energy_field(
            head, tail, cost, np.array([0, 2]), n_nodes=4, max_hops=3, tau=tau
        )
        assert np.isinf(f[:, 3]).all() and np.isinf(f[1]).all() and not np.isnan(f).any()
        grad = jax.grad(
            lambda c, tau=tau: jnp.sum(jnp.where(jnp.isfinite(f := g.semiring.energy_field(
                head, tail, c, np.array([0, 2]), n_nodes=4, max_hops=3, tau=tau)), f, 0.0))
        )(cost)  # fmt: skip
        assert np.isfinite(grad).all()


def test_empty_graph_gives_all_inf():
    f = g.semiring.energy_field(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0), np.array([0]),
                       n_nodes=3, max_hops=2, tau=1.0)  # fmt: skip
    assert np.isinf(f).all()


@pytest.mark.parametrize("backend", layout.BACKENDS)
@pytest.mark.parametrize("tau", [0.0, 0.3])
def test_hub_nodes_split_over_three_levels(tau, backend):
    """In-degree 1100 > 32 * 32: the hub's ELL reduction spans three levels of the layout (the
    fused kernel reduces it in one row)."""
    leaves = 1100
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 2, leaves), rng.uniform(0, 2, leaves)
    hub = leaves + 1
    head = np.concatenate([np.zeros(leaves), np.arange(1, hub)]).astype(np.int32)
    tail = np.concatenate([np.arange(1, hub), np.full(leaves, hub)]).astype(np.int32)
    index = semiring.EdgeIndex.from_edges(head, tail, hub + 1, backend=backend)
    assert len(index.srcs) == (3 if backend == "ell" else 0)
    got = index.energy_field(np.concatenate([a, b]), np.array([0]), max_hops=2, tau=tau)
    s = -(a + b)
    want = (
        -s.max() if tau == 0 else -tau * (s.max() / tau + np.log(np.exp((s - s.max()) / tau).sum()))
    )
    np.testing.assert_allclose(float(got[0, hub]), want, **F64)
    np.testing.assert_allclose(np.asarray(got[0, 1:hub]), a, **F64)


# ---------------------------------------------------------------------------- Prop. 2
@oracle
@given(weighted_digraphs(), st.integers(1, 3), st.floats(0.1, 3.0), st.booleans(), seeds)
def test_prop2_gradient_is_the_enumerated_edge_marginal_of_nu_star(gr, k, tau, prior, seed):
    rng = np.random.default_rng(seed)
    sources = [walk_source(gr, rng) for _ in range(3)]
    targets = [reached_target(gr, s, range(1, k + 1), rng, tau, prior) for s in sources]
    got = np.asarray(g.semiring.edge_usage(gr.head, gr.tail, gr.cost, sources, targets, n_nodes=gr.n_nodes,
                                  max_hops=k, tau=tau,
                                  log_step_prior=gr.log_prior if prior else None))  # fmt: skip
    assert got.shape == (3, len(gr.cost))
    for i, (s, t) in enumerate(zip(sources, targets)):
        scored = walk_scores(gr, s, range(1, k + 1), tau, prior).get(int(t), [])
        want = np.zeros(len(gr.cost))
        if scored:
            sc = np.array([x for _, x in scored])
            nu = np.exp(sc - sc.max())
            nu /= nu.sum()  # nu*(w) of Prop. 2
            for (w, _), p in zip(scored, nu):
                for e in w:
                    want[e] += p
        event(f"source-target pair has a walk: {bool(scored)}")
        np.testing.assert_allclose(got[i], want, **F64)


@oracle
@given(weighted_digraphs(inf_frac=0.0), st.integers(1, 3), seeds)
def test_prop2_min_plus_gradient_is_the_best_walk_usage_when_unique(gr, k, seed):
    rng = np.random.default_rng(seed)
    s = walk_source(gr, rng)
    t = reached_target(gr, s, range(1, k + 1), rng)
    scored = walk_scores(gr, s, range(1, k + 1), 0.0, False).get(t, [])
    got = np.asarray(g.semiring.edge_usage(gr.head, gr.tail, gr.cost, [s], [t], n_nodes=gr.n_nodes,
                                  max_hops=k, tau=0.0))[0]  # fmt: skip
    sc = np.array([x for _, x in scored])
    event("no walk" if not scored else f"unique best walk: {(sc == sc.max()).sum() == 1}")
    if not scored:
        assert not got.any()
        return
    sc = np.array([x for _, x in scored])
    note(f"scores {sorted(sc)[-3:]}")
    if (sc == sc.max()).sum() > 1:  # ties: some convex combination of the tied walks
        np.testing.assert_allclose(got.sum() >= 1, True)
        return
    want = np.bincount(scored[int(np.argmax(sc))][0], minlength=len(gr.cost))
    np.testing.assert_allclose(got, want, **F64)


@oracle
@given(weighted_digraphs(), st.integers(1, 3), st.sampled_from([0.0, 0.7]), st.integers(1, 4),
       seeds)  # fmt: skip
def test_top_paths_are_the_k_best_enumerated_walks(gr, k, tau, n_best, seed):
    rng = np.random.default_rng(seed)
    s = walk_source(gr, rng)
    t = reached_target(gr, s, range(1, k + 1), rng)
    tp = g.paths.top_paths(gr.head, gr.tail, gr.cost, s, t, n_nodes=gr.n_nodes, max_hops=k, k=n_best,
                     tau=tau, log_step_prior=gr.log_prior)  # fmt: skip
    scored = walk_scores(gr, s, range(1, k + 1), tau, True).get(t, [])
    event(f"a walk reaches the target: {bool(scored)}")
    want = sorted((x for _, x in scored), reverse=True)[:n_best]
    lp = [float(np.sum(gr.log_prior[w])) for w in tp.edges]
    got = [-c if tau == 0 else p - c / tau for c, p in zip(tp.cost, lp)]
    np.testing.assert_allclose(got, want, **F64)
    for w, nodes, c in zip(tp.edges, tp.nodes, tp.cost):
        assert nodes[0] == s and nodes[-1] == t and len(nodes) == len(w) + 1
        assert np.array_equal(gr.head[w], nodes[:-1]) and np.array_equal(gr.tail[w], nodes[1:])
        np.testing.assert_allclose(c, gr.cost[w].sum(), **F64)
    if tau > 0 and scored:
        sc = np.array([x for _, x in scored])
        log_z = sc.max() + np.log(np.exp(sc - sc.max()).sum())
        np.testing.assert_allclose(tp.weight, np.exp(np.array(want) - log_z), **F64)
        assert tp.weight.sum() <= 1 + 1e-9


@pytest.mark.parametrize("x64", [True, False])
def test_top_paths_weights_are_probabilities_at_small_tau_or_refused(x64):
    """``nu*`` weights stay in [0, 1] with sum <= 1 down to small ``tau`` whatever JAX's
    precision (they were above 1, then infinite, from a float32 partition function), and a
    ``tau`` too small for float64 is a clear error rather than a wrong weight."""
    h, t = np.array([0, 1, 0, 2]), np.array([1, 2, 2, 2])
    cost = np.array([1.0, 1.0, 2.5, 0.3])
    with jax.enable_x64(x64):
        for tau in (1.0, 1e-1, 1e-2, 1e-3, 1e-4):
            tp = g.paths.top_paths(h, t, cost, 0, 2, n_nodes=3, max_hops=3, k=10, tau=tau)
            assert np.all(np.isfinite(tp.weight)) and np.all(tp.weight >= 0)
            assert tp.weight.sum() <= 1 + 1e-12 and tp.weight.max() <= 1
            # the two best walks cost 2.0 and 2.3 (0->1->2, 0->1->2->2): log-ratio 0.3 / tau
            if tp.weight[1] > 0:
                log_ratio = np.log(tp.weight[0]) - np.log(tp.weight[1])
                np.testing.assert_allclose(log_ratio, 0.3 / tau, rtol=1e-9)
        for tau in (1e-8, 1e-12):
            with pytest.raises(FloatingPointError, match="too small for float64"):
                g.paths.top_paths(h, t, cost, 0, 2, n_nodes=3, max_hops=3, k=10, tau=tau)


def test_top_paths_precision_threshold_is_the_documented_one():
    """``top_paths`` refuses ``tau`` exactly when ``4 (T + 1) eps T max|score| > 1e-6`` (the
    relative weight error its docstring states), on either side of the threshold."""
    h, t, cost = np.array([0]), np.array([1]), np.array([2.0])
    eps = np.finfo(np.float64).eps
    for hops in (1, 2, 3):
        tau_star = 4 * (hops + 1) * eps * hops * 2.0 / 1e-6  # where the bound equals 1e-6
        tp = g.paths.top_paths(h, t, cost, 0, 1, n_nodes=2, max_hops=hops, tau=tau_star * 1.01)
        np.testing.assert_allclose(tp.weight, [1.0], **F64)  # the only walk carries all mass
        with pytest.raises(FloatingPointError, match="too small for float64"):
            g.paths.top_paths(h, t, cost, 0, 1, n_nodes=2, max_hops=hops, tau=tau_star * 0.99)


def test_top_paths_defaults_dtypes_and_no_finite_walk():
    """Defaults ``k = 5`` and ``tau = 0`` (costs, no weights); edges and nodes are int64
    index arrays; with every cost infinite there is no walk, at any ``tau``."""
    # six walks 0 -> 1 of one or two edges: three parallel edges, and 0 -> 2 -> 1 in 1 x 3 ways
    h, t = np.array([0, 0, 0, 0, 2, 2, 2]), np.array([1, 1, 1, 2, 1, 1, 1])
    cost = np.array([1.0, 2.0, 3.0, 0.5, 1.0, 2.0, 4.0])
    tp = g.paths.top_paths(jnp.asarray(h, jnp.int32), jnp.asarray(t, jnp.int32), cost, 0, 1,
                     n_nodes=3, max_hops=2)  # fmt: skip
    assert tp.weight is None and len(tp.edges) == 5
    np.testing.assert_allclose(tp.cost, [1.0, 1.5, 2.0, 2.5, 3.0])
    assert all(w.dtype == np.int64 and n.dtype == np.int64 for w, n in zip(tp.edges, tp.nodes))
    for tau in (0.0, 0.5):
        none = g.paths.top_paths(h, t, np.full(7, np.inf), 0, 1, n_nodes=3, max_hops=2, tau=tau)
        assert none.edges == [] and none.nodes == [] and len(none.cost) == 0
        assert (none.weight is None) if tau == 0 else (none.weight.shape == (0,))


def test_top_paths_input_contract():
    """One source's costs as ``[E]`` or ``[1, E]``; costs and log-priors of another shape,
    a ``-inf`` cost, a ``+inf`` log-prior, or an endpoint out of range are refused by name;
    a ``-inf`` log-prior removes the edge at ``tau = 0`` too; float32 costs are read in
    float64 (the weights are those of the float64 values of the float32 numbers)."""
    h, t = np.array([0, 1, 0]), np.array([1, 2, 2])
    cost, kw = np.array([1.0, 1.0, 3.0]), dict(n_nodes=3, max_hops=2, k=3)
    for tau in (0.0, 0.5):
        ref = g.paths.top_paths(h, t, cost, 0, 2, tau=tau, **kw)
        row = g.paths.top_paths(
            h, t, cost[None], 0, 2, tau=tau, log_step_prior=np.zeros((1, 3)), **kw
        )
        assert [w.tolist() for w in row.edges] == [w.tolist() for w in ref.edges] == [[0, 1], [2]]
        assert row.cost.shape == (2,) and (tau == 0 or row.weight.shape == (2,))
        np.testing.assert_array_equal(row.weight, ref.weight)
    for name, bad, match in (
        ("edge_cost", np.ones((2, 3)), r"^edge_cost must have shape \[3\] or \[1, 3\]"),
        ("edge_cost", np.array([1.0, -np.inf, 1.0]), "^edge_cost contains -inf"),
        ("log_step_prior", np.zeros((2, 3)), r"^log_step_prior must have shape \[3\] or \[1, 3\]"),
        ("log_step_prior", np.array([0.0, np.inf, 0.0]), "^log_step_prior contains inf"),
    ):  # fmt: skip
        args = {"edge_cost": cost, "log_step_prior": None, name: bad}
        with pytest.raises(ValueError, match=match):
            g.paths.top_paths(
                h, t, args["edge_cost"], 0, 2, log_step_prior=args["log_step_prior"], **kw
            )
    for source, target, name in ((3, 2, "source"), (0, 3, "target")):
        with pytest.raises(ValueError, match=f"^{name} must lie in \\[0, 3\\)"):
            g.paths.top_paths(h, t, cost, source, target, **kw)
    banned = g.paths.top_paths(h, t, cost, 0, 2, log_step_prior=np.array([0.0, -np.inf, 0.0]), **kw)
    assert [w.tolist() for w in banned.edges] == [[2]] and banned.cost.tolist() == [3.0]
    c32 = np.array([0.1, 0.2, 0.33], np.float32)
    tp = g.paths.top_paths(h, t, jnp.asarray(c32), 0, 2, tau=0.01, **kw)
    c64 = c32.astype(np.float64)
    scores = np.array([-(c64[0] + c64[1]), -c64[2]]) / 0.01
    np.testing.assert_allclose(tp.weight, np.exp(scores - np.logaddexp.reduce(scores)), rtol=1e-12)
    assert tp.cost.dtype == np.float64


@given(st.integers(1, 4), st.integers(1, 3), st.booleans(), st.booleans(), seeds)
def test_count_optimal_walks_is_the_enumerated_count_of_best_walks(n, T, to_target, nodes, seed):
    """``(best score, number of walks attaining it)`` by enumeration, on integer scores (so
    that ties are exact): walks of exactly ``T`` edges from any start, or of ``1..T`` edges
    ending at ``target``; ``-inf`` hop scores and starts exclude walks; ``(-inf, 0)`` if none."""
    rng = np.random.default_rng(seed)

    def ints(shape):  # small integers, a quarter of them -inf
        x = rng.integers(-2, 1, shape).astype(float)
        return np.where(rng.random(shape) < 0.25, -np.inf, x)

    kw, family, score = scored_walk_family(rng, n, T, to_target, nodes, ints)
    finite = [x for x in map(score, family) if x > -np.inf]
    want = (max(finite), finite.count(max(finite))) if finite else (-np.inf, 0)
    event(f"optimal walks: {min(want[1], 2)}")
    assert g.paths.count_optimal_walks(**kw) == want


@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 6), st.booleans(), st.booleans(),
       seeds)  # fmt: skip
def test_kbest_walks_are_the_k_best_enumerated_walks(n, T, k, to_target, nodes, seed):
    """The ``k`` best walks (exactly ``T`` edges from any start, or ``1..T`` edges ending at
    ``target``) by enumeration: the best ``k`` scores, each returned walk a real walk of the
    family with that score, fewer than ``k`` when fewer are finite."""
    rng = np.random.default_rng(seed)

    def scores(shape):  # a quarter -inf
        return np.where(rng.random(shape) < 0.25, -np.inf, rng.normal(size=shape))

    kw, family, score = scored_walk_family(rng, n, T, to_target, nodes, scores)
    want = sorted((x for x in map(score, family) if x > -np.inf), reverse=True)[:k]
    event(f"fewer finite walks than k: {len(want) < k}")
    got = kbest.kbest_walks(k=k, **kw)
    np.testing.assert_allclose(got.score, want, **F64)
    assert len(got.edges) == len(want) and got.score.dtype == np.float64
    members = set(family)
    for w, x in zip(got.edges, got.score):
        assert w.dtype == np.int64 and tuple(w.tolist()) in members
        np.testing.assert_allclose(score(w.tolist()), x, **F64)


def test_chain_energies_without_walks_keep_the_cost_dtype():
    """No walk of ``T`` edges: an empty ``[0, T]`` walk array and ``[0]`` energies in the
    precision of the costs, as when there are walks (float32 inputs under x64 included)."""
    graph = g.TypedGraph.from_triples([("a", "r", "b")])
    emb = np.zeros((2, 2), np.float32)
    with jax.enable_x64(True):
        for dtype in (np.float32, np.float64):
            args = (graph, emb.astype(dtype), g.geometry.identity_map())
            _, e1 = g.paths.chain_path_energies(*args, np.zeros((2, 2), dtype), np.array([0]))
            w, e = g.paths.chain_path_energies(*args, np.zeros((3, 2), dtype), np.array([0, 0]))
            assert w.shape == (0, 2) and w.dtype == np.int64 and e.shape == (0,)
            assert e1.shape == (1,) and e.dtype == e1.dtype == dtype
            none = g.paths.chain_energy(
                *args, np.zeros((3, 2), dtype), np.array([0, 0]), simple=True
            )
            assert none == np.inf and none.dtype == dtype


@given(typed_graphs(), st.integers(1, 3), st.data())
def test_enumerated_walks_and_simple_paths_are_the_brute_force_families(graph, n_hops, data):
    """``enumerate_walks`` lists every walk of exactly ``n_hops`` edges (from ``sources`` when
    given), ``walk_nodes`` their node sequences, ``simple_paths`` those visiting no node
    twice, and ``chain_path_energies(simple=True)`` is the unrestricted result on them."""
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    sources = data.draw(st.one_of(st.none(), st.lists(st.integers(0, graph.n_nodes - 1))))
    starts = range(graph.n_nodes) if sources is None else sorted(set(sources))
    want = sorted(w for s in starts for w in walks(head, tail, s, n_hops))
    got = g.paths.enumerate_walks(graph, n_hops, sources)
    assert got.dtype == np.int64 and got.shape == (len(want), n_hops)
    assert sorted(map(tuple, got.tolist())) == want
    nodes = g.paths.walk_nodes(graph, got)
    assert nodes.shape == (len(want), n_hops + 1) and nodes.dtype == np.int64
    for w, row in zip(got, nodes):
        assert row.tolist() == [head[w[0]], *tail[w].tolist()]
    simple = g.paths.simple_paths(graph, got)
    keep = [tuple(w) for w, row in zip(got.tolist(), nodes.tolist()) if len(set(row)) == len(row)]
    event(f"some walk revisits a node: {len(keep) < len(want)}")
    assert simple.shape == (len(keep), n_hops) and [tuple(w) for w in simple.tolist()] == keep
    emb = np.random.default_rng(0).normal(size=(graph.n_nodes, 2))
    psi = np.random.default_rng(1).normal(size=(n_hops + 1, 2))
    claim = -np.ones(n_hops, int)
    args = (graph, emb, g.geometry.translation_map(np.zeros((len(graph.relations), 2))), psi, claim)
    w_all, e_all = g.paths.chain_path_energies(*args)  # walks from every node
    w_simple, e_simple = g.paths.chain_path_energies(*args, simple=True)
    assert w_simple.tolist() == g.paths.simple_paths(graph, w_all).tolist()
    index = {tuple(w): i for i, w in enumerate(w_all.tolist())}
    rows = [index[tuple(w)] for w in w_simple.tolist()]
    np.testing.assert_allclose(e_simple, np.asarray(e_all)[rows].reshape(-1), **F64)


# ------------------------------------------------------------------- reachability (BFS)
@oracle
@given(weighted_digraphs(), st.one_of(st.none(), st.integers(1, 4)), sources_of)
def test_hop_distances_equal_networkx_bfs(gr, d_max, anchors):
    anchors = _clip(anchors, gr.n_nodes)
    got = np.asarray(g.semiring.hop_distances(gr.head, gr.tail, np.asarray(anchors), n_nodes=gr.n_nodes,
                                     max_hops=d_max))  # fmt: skip
    G = nx.MultiDiGraph()
    G.add_nodes_from(range(gr.n_nodes))
    G.add_edges_from(zip(gr.head.tolist(), gr.tail.tolist()))
    for i, a in enumerate(anchors):
        want = np.full(gr.n_nodes, g.semiring.UNREACHABLE)
        for v, d in nx.single_source_shortest_path_length(G, a, cutoff=d_max).items():
            want[v] = d
        np.testing.assert_array_equal(got[i], want)
    assert got.dtype == np.int32  # hop counts, with UNREACHABLE = -1


# ------------------------------------------------------------------ claim chains, Eq. (10)
@oracle
@given(typed_graphs(n_max=5, e_max=10), st.integers(1, 3), st.sampled_from([0.0, 0.4]),
       st.sampled_from([np.inf, 0.7]), seeds)  # fmt: skip
def test_chain_energy_by_dp_equals_enumeration(graph, T, tau, mismatch, seed):
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(graph.n_nodes, 2))
    tmap = g.geometry.Translation(jnp.asarray(rng.normal(size=(len(graph.relations), 2))))
    psi = rng.normal(size=(T + 1, 2))
    rels = rng.integers(-1, len(graph.relations), T)
    kw = dict(alpha=0.8, xi=0.5, mismatch_cost=mismatch)
    _, e = g.paths.chain_path_energies(graph, emb, tmap, psi, rels, **kw)
    e = np.asarray(e)
    if e.size == 0:
        want = np.inf
    else:
        want = float(g.energy.aggregate_paths(e, np.full(e.shape, -np.log(e.size)), tau))
    got = float(g.paths.chain_energy(graph, emb, tmap, psi, rels, tau=tau, **kw))
    assert_energies_equal(np.array([got]), np.array([want]))


@oracle
@given(typed_graphs(n_max=5, e_max=10), st.integers(1, 3), st.sampled_from([0.0, 0.4]), seeds)
def test_chain_energy_over_simple_paths_and_its_defaults(graph, T, tau, seed):
    """``simple=True``: Eq. (11) / Eq. (13) over the enumerated simple paths (uniform prior),
    ``+inf`` with none; the defaults are ``tau = 0``, ``alpha = xi = 1``, typed claims exact."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(graph.n_nodes, 2))
    tmap = g.geometry.Translation(jnp.asarray(rng.normal(size=(len(graph.relations), 2))))
    psi = rng.normal(size=(T + 1, 2))
    rels = rng.integers(-1, len(graph.relations), T)

    def aggregate(e, t):  # min at t = 0, else -t log(mean exp(-e / t)); +inf without paths
        e = np.asarray(e, float)
        if e.size == 0:
            return np.inf
        return e.min() if t == 0 else -t * (np.logaddexp.reduce(-e / t) - np.log(e.size))

    kw = dict(alpha=0.8, xi=0.5, mismatch_cost=0.7, metric="manhattan")
    _, e_simple = g.paths.chain_path_energies(graph, emb, tmap, psi, rels, **kw, simple=True)
    got = g.paths.chain_energy(graph, emb, tmap, psi, rels, tau=tau, **kw, simple=True)
    event(f"a simple path exists: {e_simple.size > 0}")
    assert_energies_equal(np.array([float(got)]), np.array([aggregate(e_simple, tau)]))
    _, e_all = g.paths.chain_path_energies(graph, emb, tmap, psi, rels, alpha=1.0, xi=1.0,
                                     mismatch_cost=np.inf)  # fmt: skip
    default = g.paths.chain_energy(graph, emb, tmap, psi, rels)
    assert_energies_equal(np.array([float(default)]), np.array([aggregate(e_all, 0.0)]))


@pytest.mark.parametrize("tau", [0.0, 0.4])
def test_chain_energy_from_costs_with_absent_edges_is_the_subgraph_energy(tau):
    """``edge_exists`` (a padded edge list) removes edges from the walk count of the uniform
    prior as well as from the walks: the energy is that of the graph without them."""
    rng = np.random.default_rng(5)
    graph = g.TypedGraph.from_triples(
        [(f"v{a}", "r0", f"v{b}") for a, b in rng.integers(0, 4, (9, 2))],
        entities=[f"v{i}" for i in range(4)],
    )
    keep = np.array([True, False, True, True, False, True, True, True, False])
    sub = g.TypedGraph(graph.head[keep], graph.relation[keep], graph.tail[keep],
                       graph.reliability[keep], graph.entities, graph.relations)  # fmt: skip
    emb, psi = rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
    tmap, claim = g.geometry.identity_map(), np.array([0, -1])
    node, step = costs.chain_costs(graph, emb, tmap, psi, claim, 1.0, 1.0, np.inf, "euclidean")
    step = jnp.where(keep, step, jnp.inf)
    t = jnp.asarray(tau)
    full = layout.as_graph(graph.head, graph.tail, 4)
    got = g.paths.chain_energy_from_costs(
        full, node, step, t, tau == 0, edge_exists=jnp.asarray(keep)
    )
    want = g.paths.chain_energy(sub, emb, tmap, psi, claim, tau=tau)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    if tau > 0:  # without the mask the extra edges would count in W_T: a different energy
        other = g.paths.chain_energy_from_costs(full, node, step, t, False)
        assert abs(float(other) - float(want)) > 1e-3


def test_chain_costs_reads_a_scalar_claim_and_refuses_a_flat_psi():
    graph = g.TypedGraph.from_triples([("a", "r", "b"), ("b", "r", "a")])
    emb = np.eye(2)
    one = costs.chain_costs(graph, emb, g.geometry.identity_map(), np.ones((2, 2)), 0, 1, 1, np.inf,
                             "euclidean")  # fmt: skip
    ref = costs.chain_costs(graph, emb, g.geometry.identity_map(), np.ones((2, 2)), [0], 1, 1, np.inf,
                             "euclidean")  # fmt: skip
    for a, b in zip(one, ref):
        np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(0)  # the metric reaches both the node and the edge costs
    emb, psi, tmap = (
        rng.normal(size=(2, 2)),
        rng.normal(size=(2, 2)),
        g.geometry.translation_map(np.ones((1, 2))),
    )
    node, step = costs.chain_costs(graph, emb, tmap, psi, [-1], 0.5, 0.8, np.inf, "manhattan")
    np.testing.assert_allclose(node, np.abs(psi[:, None] - emb[None]).sum(-1), rtol=1e-6)
    want = 0.5 * np.asarray(g.geometry.edge_residuals(graph, emb, tmap, 0.8, "manhattan"))
    np.testing.assert_allclose(step[0], want, rtol=1e-6)
    assert not np.allclose(want, 0.5 * np.asarray(g.geometry.edge_residuals(graph, emb, tmap, 0.8)))
    with pytest.raises(ValueError, match="^psi must have at least 2 dimension"):
        costs.chain_costs(
            graph, emb, g.geometry.identity_map(), np.ones(2), [0], 1, 1, np.inf, "euclidean"
        )


# ---------------------------------------------------------------- transforms and dtypes
def _small():
    rng = np.random.default_rng(3)
    head, tail = rng.integers(0, 8, 30).astype(np.int32), rng.integers(0, 8, 30).astype(np.int32)
    return head, tail, rng.uniform(0, 2, 30), np.array([0, 3, 5], np.int32)


@pytest.mark.parametrize("tau", [0.0, 0.6])
def test_jit_with_traced_edges_and_vmap_over_costs(tau):
    head, tail, cost, src = _small()
    eager = g.semiring.energy_field(head, tail, cost, src, n_nodes=8, max_hops=3, tau=tau)
    jitted = jax.jit(
        lambda h, t, c: g.semiring.energy_field(h, t, c, src, n_nodes=8, max_hops=3, tau=tau)
    )(head, tail, cost)  # fmt: skip
    assert_energies_equal(jitted, eager)
    batch = np.stack([cost, cost * 2, cost + 1])
    vm = jax.vmap(
        lambda c: g.semiring.energy_field(head, tail, c, src, n_nodes=8, max_hops=3, tau=tau)
    )
    for b, out in zip(batch, vm(batch)):
        assert_energies_equal(
            out, g.semiring.energy_field(head, tail, b, src, n_nodes=8, max_hops=3, tau=tau)
        )


def test_traced_tau_agrees_with_the_concrete_call_including_zero():
    """A ``tau`` traced by ``jit``/``vmap``/``grad`` selects the semiring at run time: the
    min-plus field (Eq. (11)) at ``tau == 0``, as the concrete call, not "no walk anywhere";
    per-hop fields, claim chains and gradients likewise (finite, not NaN)."""
    head, tail, cost, src = _small()
    taus = np.array([0.0, 0.6, 2.0])

    def field(t, **kw):
        return g.semiring.energy_field(head, tail, cost, src, n_nodes=8, max_hops=3, tau=t, **kw)

    def per_hop(t):
        return g.semiring.hop_energy_fields(head, tail, cost, src, n_nodes=8, max_hops=3, tau=t)

    for fn in (field, per_hop):
        eager = [fn(float(t)) for t in taus]
        assert np.isfinite(np.asarray(eager[0])).any()
        for t, want in zip(taus, eager):
            assert_energies_equal(jax.jit(fn)(t), want)
        for got, want in zip(jax.vmap(fn)(taus), eager):
            assert_energies_equal(got, want)
    prior = np.log(np.full(30, 0.5))
    d0 = jax.grad(lambda t: jnp.sum(jnp.where(jnp.isfinite(f := field(t, log_step_prior=prior)),
                                              f, 0.0)))(0.0)  # fmt: skip
    assert np.isfinite(float(d0))
    rng = np.random.default_rng(0)
    graph = g.TypedGraph.from_triples([("a", "r", "b"), ("b", "r", "c"), ("a", "r", "c")])
    emb, psi = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    tmap = g.geometry.Translation(jnp.asarray(rng.normal(size=(1, 2))))

    def chain(t):
        return g.paths.chain_energy(graph, emb, tmap, psi, np.array([0, 0]), tau=t)

    for t in taus:
        assert_energies_equal(jax.jit(chain)(t)[None], chain(float(t))[None])


def test_gradient_in_tau_is_finite_and_matches_finite_difference():
    head, tail, cost, src = _small()

    def total(tau):
        f = g.semiring.energy_field(head, tail, cost, src, n_nodes=8, max_hops=3, tau=tau)
        return jnp.sum(jnp.where(jnp.isfinite(f), f, 0.0))

    d = float(jax.grad(total)(0.7))
    fd = (float(total(0.7 + 1e-6)) - float(total(0.7 - 1e-6))) / 2e-6
    np.testing.assert_allclose(d, fd, rtol=1e-5)


def test_float32_agrees_with_float64():
    head, tail, cost, src = _small()
    f64 = g.semiring.energy_field(head, tail, cost, src, n_nodes=8, max_hops=3, tau=0.6)
    f32 = g.semiring.energy_field(
        head, tail, cost.astype(np.float32), src, n_nodes=8, max_hops=3, tau=0.6
    )
    assert f32.dtype == jnp.float32
    assert_energies_equal(f32, f64, tol=F32)


def test_index_methods_and_typed_graph_index_match_the_array_api():
    graph = g.TypedGraph.from_triples([("a", "r", "b"), ("b", "s", "c"), ("c", "r", "a")])
    index = graph.edge_index()
    cost = np.array([1.0, 2.0, 0.5])
    want = g.semiring.energy_field(graph.head, graph.tail, cost, np.array([0]), n_nodes=3, max_hops=4,
                          tau=0.3)  # fmt: skip
    assert_energies_equal(index.energy_field(cost, np.array([0]), max_hops=4, tau=0.3), want)
    np.testing.assert_array_equal(index.hop_distances(np.array([1])), [[2, 0, 1]])
    np.testing.assert_array_equal(index.hop_distances(np.array([1]), max_hops=1), [[-1, 0, 1]])


def test_index_takes_per_source_costs_and_priors_keeps_float32_and_int32_indices():
    """The prebuilt index equals the array API (segment layout) with ``[S, E]`` costs and step
    priors, for fields, per-hop fields and edge usage; float32 costs give float32 energies on
    both layouts even with a float64 prior; the index stores int32 indices under x64."""
    head, tail, cost, src = _small()
    rng = np.random.default_rng(1)
    per_source = cost[None] + rng.uniform(0, 1, (3, 30))
    prior = np.log(rng.uniform(0.2, 1.0, (3, 30)))
    index, ell = (semiring.EdgeIndex.from_edges(head, tail, 8, backend=b) for b in ("fused", "ell"))
    arrays = dict(head=head, tail=tail, n_nodes=8)
    for tau in (0.0, 0.6):
        kw = dict(max_hops=3, tau=tau, log_step_prior=prior)
        for fn in ("energy_field", "hop_energy_fields"):
            want = getattr(g.semiring, fn)(edge_cost=per_source, sources=src, **arrays, **kw)
            assert_energies_equal(getattr(index, fn)(per_source, src, **kw), want)
        usage = index.edge_usage(per_source, src, np.array([1, 2, 4]), **kw)
        want = g.semiring.edge_usage(
            head, tail, per_source, src, np.array([1, 2, 4]), n_nodes=8, **kw
        )
        np.testing.assert_allclose(np.asarray(usage), np.asarray(want), **F64)
    for c in (cost, per_source):
        c32 = c.astype(np.float32)
        kw = dict(max_hops=3, tau=0.6, log_step_prior=prior)
        assert index.energy_field(c32, src, **kw).dtype == jnp.float32
        assert g.semiring.energy_field(head, tail, c32, src, n_nodes=8, **kw).dtype == jnp.float32
    leaves = [ell.head, ell.tail, ell.final_row, *ell.slots, *jax.tree.leaves(index.csr)]
    assert all(a.dtype == jnp.int32 for a in leaves + [s for lv in ell.srcs for s in lv])


@pytest.mark.parametrize("tau", [0.0, 0.5])
def test_large_concrete_graphs_take_the_ell_layout_and_agree_with_traced_edges(tau):
    """From ``ELL_MIN_EDGES`` edges on, concrete edge arrays are laid out as an ``EdgeIndex``
    (below, and when traced, as segment reductions); both give the same field."""
    rng = np.random.default_rng(5)
    n, m = 4000, layout.ELL_MIN_EDGES
    head, tail = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
    cost, src = rng.uniform(0, 2, m), np.array([0, 17, 250], np.int32)
    assert isinstance(layout.as_graph(head, tail, n), semiring.EdgeIndex)
    assert isinstance(layout.as_graph(head[:-1], tail[:-1], n), SegmentEdges)
    kw = dict(n_nodes=n, max_hops=2, tau=tau)
    eager = g.semiring.energy_field(head, tail, cost, src, **kw)
    traced = jax.jit(lambda h, t: g.semiring.energy_field(h, t, cost, src, **kw))(head, tail)
    assert np.isfinite(np.asarray(eager)).sum() > 100
    assert_energies_equal(traced, eager)


def test_unlimited_hops_take_zero_costs_and_traced_costs():
    """``max_hops=None`` accepts zero-cost edges (no negative cycle) and a cost traced by
    ``jit`` (the sign check needs concrete costs; a traced one is the caller's promise); it
    equals a hop limit of ``n_nodes`` on non-negative costs."""
    head, tail, cost, src = _small()
    cost = np.where(np.arange(30) < 6, 0.0, cost)
    kw = dict(n_nodes=8, tau=0.0)
    eager = g.semiring.energy_field(head, tail, cost, src, max_hops=None, **kw)
    traced = jax.jit(lambda c: g.semiring.energy_field(head, tail, c, src, max_hops=None, **kw))(
        cost
    )
    assert_energies_equal(traced, eager)
    assert_energies_equal(eager, g.semiring.energy_field(head, tail, cost, src, max_hops=8, **kw))


# ------------------------------------------------------------------------------ sharding
def test_a_mesh_in_process_gives_the_unsharded_field_laid_out_on_the_mesh():
    """Every local device in one mesh axis (one device in the default run; the mutation run
    forces eight host devices, so source batches that do not divide are padded): the sharded
    field, per-hop fields and index method equal the unsharded ones and live on the mesh."""
    head, tail, cost, src = _small()
    mesh = Mesh(np.array(jax.devices()), ("devices",))
    index = semiring.EdgeIndex.from_edges(head, tail, 8)
    prior = np.log(np.full(30, 0.5))
    # with one device no batch is padded: one batch size suffices
    for sources in (src[:1], src, np.tile(src, 3)[:8]) if mesh.size > 1 else (src,):
        per_source = cost[None] + np.arange(len(sources))[:, None] / 7
        calls = (
            partial(g.semiring.energy_field, head, tail, per_source, sources, n_nodes=8),
            partial(g.semiring.hop_energy_fields, head, tail, cost, sources, n_nodes=8),
            partial(index.energy_field, cost, sources, log_step_prior=prior),
            partial(index.hop_energy_fields, per_source, sources),
        )
        for call, tau in zip(calls, (0.0, 0.6, 0.6, 0.0)):  # both semirings, each layout
            want, got = call(max_hops=3, tau=tau), call(max_hops=3, tau=tau, mesh=mesh)
            assert_energies_equal(got, want)
            assert isinstance(got.sharding, NamedSharding) and got.sharding.mesh == mesh


SHARDING_SCRIPT = r"""
import numpy as np, jax
jax.config.update("jax_enable_x64", True)
from jax.sharding import Mesh
import grounding as g

assert len(jax.devices()) == 8, jax.devices()
rng = np.random.default_rng(0)
n, m = 60, 400
head, tail = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
cost, prior = rng.uniform(0, 2, m), rng.uniform(-1, 0, m)
mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("hosts", "gpus"))
for n_src in (16, 13):  # divisible by the 8 devices, and padded
    src = rng.integers(0, n, n_src).astype(np.int32)
    per_source = cost[None] + rng.uniform(0, 1, (n_src, m))
    for tau in (0.0, 0.7):
        for c in (cost, per_source):
            kw = dict(n_nodes=n, max_hops=3, tau=tau, log_step_prior=prior)
            want = g.semiring.energy_field(head, tail, c, src, **kw)
            got = g.semiring.energy_field(head, tail, c, src, mesh=mesh, **kw)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)
            if n_src % 8 == 0:
                assert len(got.sharding.device_set) == 8, got.sharding
            hw = g.semiring.hop_energy_fields(head, tail, c, src, **kw)
            hg = g.semiring.hop_energy_fields(head, tail, c, src, mesh=mesh, **kw)
            np.testing.assert_allclose(np.asarray(hg), np.asarray(hw), rtol=1e-12, atol=1e-12)
print("SHARDED_OK")
"""


def test_sharded_over_eight_host_devices_equals_unsharded():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", SHARDING_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0 and "SHARDED_OK" in proc.stdout, proc.stderr[-3000:]


# ---------------------------------------------------------------------------- bad input
H, T_, C = np.array([0, 1]), np.array([1, 2]), np.array([1.0, 1.0])
BAD = [
    (
        lambda: g.semiring.energy_field(H, T_, C, [0], n_nodes=0, max_hops=2, tau=1.0),
        "^n_nodes must be an int >= 1",
    ),
    (
        lambda: g.semiring.energy_field(H, T_[:1], C, [0], n_nodes=3, max_hops=2, tau=1.0),
        "^head and tail must have the same length",
    ),
    (
        lambda: g.semiring.energy_field(H, T_ + 5, C, [0], n_nodes=3, max_hops=2, tau=1.0),
        "^edge endpoints must lie in",
    ),
    (
        lambda: g.semiring.energy_field(H * 1.0, T_, C, [0], n_nodes=3, max_hops=2, tau=1.0),
        "^head must be a 1-D integer array",
    ),
    (
        lambda: g.semiring.energy_field(H, T_, C, [7], n_nodes=3, max_hops=2, tau=1.0),
        "^sources must lie in",
    ),
    (
        lambda: g.semiring.energy_field(H, T_, [1.0, np.nan], [0], n_nodes=3, max_hops=2, tau=1.0),
        "^edge_cost contains NaN",
    ),
    (
        lambda: g.semiring.energy_field(H, T_, [1.0, -np.inf], [0], n_nodes=3, max_hops=2, tau=1.0),
        "^edge_cost contains -inf",
    ),
    (
        lambda: g.semiring.energy_field(H, T_, [1.0], [0], n_nodes=3, max_hops=2, tau=1.0),
        r"^edge_cost must have shape \[2\] or \[1, 2\]",
    ),
    (
        lambda: g.semiring.energy_field(H, T_, C, [0], n_nodes=3, max_hops=0, tau=1.0),
        "^max_hops must be an int >= 1",
    ),
    (
        lambda: g.semiring.energy_field(H, T_, C, [0], n_nodes=3, max_hops=2, tau=-1.0),
        "^tau must be >= 0",
    ),
    (
        lambda: g.semiring.energy_field(
            H, T_, C, [0], n_nodes=3, max_hops=2, tau=1.0, log_step_prior=[0.0, np.inf]
        ),  # fmt: skip
        "^log_step_prior contains inf",
    ),
    (
        lambda: g.semiring.edge_usage(H, T_, C, [0, 1], [2], n_nodes=3, max_hops=2, tau=1.0),
        "^targets must match",
    ),
    (
        lambda: g.semiring.hop_distances(H, T_, [[0]], n_nodes=3),
        "^anchors must be a 1-D integer array",
    ),
    (
        lambda: g.semiring.edge_usage(H, T_, C, [0], [9], n_nodes=3, max_hops=2, tau=1.0),
        "^targets must lie",
    ),
    (
        lambda: g.semiring.edge_usage(
            H, T_, [[1.0], [1.0, 2.0]], [0], [2], n_nodes=3, max_hops=2, tau=1.0
        ),
        "^edge_cost must be a rectangular array",
    ),
    (
        lambda: g.semiring.energy_field(
            H, T_, C, [0], n_nodes=3, max_hops=2, tau=1.0, log_step_prior=np.zeros((2, 2))
        ),
        r"^log_step_prior must have shape \[2\] or \[1, 2\]",
    ),
    (
        lambda: g.semiring.hop_distances(H, T_, [0], n_nodes=3, max_hops=0),
        "^max_hops must be an int >= 1",
    ),
    (
        lambda: g.paths.top_paths(H, T_, C, 0, 2, n_nodes=3, max_hops=2, k=0),
        "^k must be an int >= 1",
    ),
    (lambda: g.paths.top_paths(H, T_, C, 0, 9, n_nodes=3, max_hops=2), "^target must lie in"),
]


@pytest.mark.parametrize("call,match", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_input_raises_a_clear_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()
