"""Hostile and edge-case inputs of :func:`grounding.ground`: out-of-range options, repeated
candidates, graphs edited in place, mixed float widths, strict JSON reports, the hard feasible
set under counter-evidence (Eq. (5), Axiom 4) and a report whose cost follows the reported
candidates."""

from __future__ import annotations

import dataclasses
import json

import jax.numpy as jnp
import numpy as np
import pytest
from _tol import F64

import grounding as g
from grounding import programs
from grounding.solver import program


def _answers(names=("b", "c"), prior=(0.5, 0.5), **kw):
    kw = dict(anchors=("a",), max_hops=1) | kw
    return g.GroundingProblem("q", tuple(names), jnp.log(jnp.asarray(prior)), **kw)


def _graph(reliability=(1.0, 1.0)):
    return g.TypedGraph.from_triples(
        [("a", "r", "b"), ("a", "r", "c")], list(reliability), entities=["a", "b", "c", "d"]
    )


# ----------------------------------------------------------------------------- options
@pytest.mark.parametrize("theta", [2.0, 1.0 + 1e-9, -0.1, np.nan])
def test_theta_outside_the_unit_interval_is_an_error(theta):
    """theta thresholds the best candidate's posterior mass (Eq. (22)): above 1 it would
    abstain on every question; it is refused, naming the argument and the value."""
    with pytest.raises(ValueError, match="theta"):
        g.ground(_answers(), _graph(), lam=1.0, kappa=1.0, theta=theta)
    with pytest.raises(ValueError, match="theta"):
        g.ground_batch([_answers()], _graph(), lam=1.0, kappa=1.0, theta=theta)
    if not np.isnan(theta) and theta > 1:
        with pytest.raises(ValueError, match=r"theta must lie in \[0, 1\]"):
            g.decide(np.log([0.5, 0.5]), np.array([0, 0]), theta=theta)


def test_theta_at_the_ends_of_the_unit_interval_is_valid():
    res = [g.ground(_answers(), _graph(), lam=1.0, kappa=1.0, theta=t) for t in (0.0, 0.5, 1.0)]
    assert [r.decision for r in res] == [g.Action.ANSWER, g.Action.ANSWER, g.Action.ABSTAIN]


@pytest.mark.parametrize("bad", [np.nan, 5.0, 1.5, -0.1])
def test_min_reliability_outside_the_unit_interval_is_an_error(bad):
    """Above 1 (or NaN) no edge would count as counter-support: contradicted candidates would
    silently turn unsupported. Refused, naming the argument."""
    state = g.EvidenceState(_graph(), functional=frozenset({"r"}))
    chains = (g.ClaimChain(("a", "b"), ("r",)), g.ClaimChain(("a", "d"), ("r",)))
    p = g.GroundingProblem("q", chains, jnp.log(jnp.array([0.5, 0.5])))
    with pytest.raises(ValueError, match="min_reliability"):
        g.ground(p, state, lam=1.0, kappa=1.0, min_reliability=bad)
    with pytest.raises(ValueError, match="min_reliability"):
        g.ground_batch([p], state, lam=1.0, kappa=1.0, min_reliability=bad)
    with pytest.raises(ValueError, match="min_reliability"):
        state.counter_support(("a", "r", "d"), bad)
    with pytest.raises(TypeError, match="min_reliability"):
        g.ground(p, state, lam=1.0, kappa=1.0, min_reliability="0.5")
    ok = g.ground(p, state, lam=1.0, kappa=1.0, min_reliability=1.0)
    assert g.EvidenceStatus(int(ok.status[1])) is g.EvidenceStatus.CONTRADICTED


# ----------------------------------------------------------------------------- candidates
def test_repeated_answer_candidates_are_an_error_and_merged_sums_their_mass():
    """['b', 'b', 'c'] with prior (0.3, 0.3, 0.4) would split b's mass 0.6 and answer c. A
    repeated answer is refused, naming it; GroundingProblem.merged log-adds the copies."""
    lp = jnp.log(jnp.array([0.3, 0.3, 0.4]))
    with pytest.raises(ValueError, match="'b' appears at positions 0 and 1"):
        g.GroundingProblem("q", ("b", "b", "c"), lp, anchors=("a",), max_hops=1)
    p = g.GroundingProblem.merged("q", ("b", "b", "c"), lp, anchors=("a",), max_hops=1)
    assert p.names == ("b", "c")
    np.testing.assert_allclose(np.exp(p.log_prior), [0.6, 0.4], **F64)
    assert g.ground(p, _graph(), lam=1.0, kappa=1.0).answer == "b"


def test_merged_keeps_claim_energies_and_refuses_conflicting_ones():
    lp = jnp.log(jnp.array([0.2, 0.3, 0.5]))
    kw = dict(anchors=("a",), max_hops=1)
    p = g.GroundingProblem.merged("q", ("c", "b", "c"), lp, claim_energy=[1.0, 2.0, 1.0], **kw)
    assert p.names == ("c", "b")
    np.testing.assert_allclose(np.exp(p.log_prior), [0.7, 0.3], **F64)
    np.testing.assert_allclose(p.claim_energy, [1.0, 2.0], **F64)
    with pytest.raises(ValueError, match="claim_energy"):
        g.GroundingProblem.merged("q", ("c", "b", "c"), lp, claim_energy=[1.0, 2.0, 0.0], **kw)


# ----------------------------------------------------------------------------- the graph
def test_a_graph_built_from_numpy_arrays_cannot_change_in_place():
    """The edge arrays are cached per graph; a NumPy graph is a read-only copy, so editing it
    raises and editing the caller's arrays leaves it (and the cached answer) unchanged."""
    w = np.array([1.0, 0.5])
    graph = g.TypedGraph(
        head=np.array([0, 0]), relation=np.array([0, 0]), tail=np.array([1, 2]),
        reliability=w, entities=("a", "b", "c", "d"), relations=("r",),
    )  # fmt: skip
    before = g.ground(_answers(), graph, lam=1.0, kappa=2.0)
    with pytest.raises(ValueError, match="read-only"):
        graph.reliability[1] = 1.0
    w[1] = 1.0  # the caller's own array
    after = g.ground(_answers(), graph, lam=1.0, kappa=2.0)
    np.testing.assert_array_equal(after.raw_energy, before.raw_energy)
    np.testing.assert_allclose(after.raw_energy, [0.0, np.log(2.0)], **F64)
    fresh = dataclasses.replace(graph, reliability=w)  # a new graph: a new answer
    np.testing.assert_allclose(
        g.ground(_answers(), fresh, lam=1.0, kappa=2.0).raw_energy, [0.0, 0.0], **F64
    )


def test_energies_are_computed_in_the_float_width_the_result_reports():
    """A graph whose reliabilities are float32 (built before 64-bit mode was switched on)
    grounded in 64-bit mode: every energy is float64, computed in float64 from the stored
    reliabilities (no float32 arithmetic behind a float64 label)."""
    w32 = np.array([0.9, 0.7], np.float32)
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("a", "r", "c")], entities=["a", "b", "c", "d"]
    )
    graph = dataclasses.replace(graph, reliability=jnp.asarray(w32))
    res = g.ground(_answers(), graph, lam=1.0, kappa=1.0, eps=1.0)
    for name in ("raw_energy", "energy", "log_posterior", "hard_log_posterior"):
        assert np.asarray(getattr(res, name)).dtype == np.float64, name
    want = -np.log(w32.astype(np.float64))  # Eq. (8), the stored values in float64
    np.testing.assert_allclose(res.raw_energy, want, rtol=1e-15, atol=0)
    np.testing.assert_allclose(res.paths.cost[:, 0], want, rtol=1e-15, atol=0)


# ----------------------------------------------------------------------------- the report
def test_to_dict_is_strict_json_with_null_for_infinities():
    """No walk (raw energy +inf), no slack (kappa = inf), one candidate with all the mass
    (margin, radius +inf): json.dumps(..., allow_nan=False) succeeds; the infinities are null."""
    p = _answers(("b", "d"))
    res = g.ground(p, _graph(), lam=1.0, kappa=np.inf, eps=0.0)
    d = res.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text) == d
    assert d["candidates"][1]["raw_energy"] is None and d["candidates"][1]["energy"] is None
    assert d["certificate"]["margin"] is None and d["certificate"]["log_ratio"] is None
    assert "inf" in res.summary()


def test_a_candidate_without_a_walk_is_never_supported():
    """Supported needs an alignment (a finite support energy), even at eps_s = kappa = inf."""
    res = g.ground(_answers(("b", "d")), _graph(), lam=1.0, kappa=np.inf)
    assert [g.EvidenceStatus(int(s)).name for s in res.status] == ["SUPPORTED", "UNSUPPORTED"]
    st = g.classify_status(jnp.array([0.0, jnp.inf]), [False, False], [True, True], jnp.inf)
    assert np.asarray(st).tolist() == [0, 2]


def test_path_report_holds_the_best_candidates_only():
    """path_candidates = m: the m candidates of highest posterior that have a walk get the
    same walks as in the full report; every other slot is empty."""
    names = tuple(f"n{i}" for i in range(12))
    triples = [("a", "r", n) for n in names[:10]]  # n10, n11: no walk
    w = np.linspace(0.3, 1.0, 10)
    graph = g.TypedGraph.from_triples(triples, w, entities=["a", *names])
    prior = np.arange(1.0, 13.0)
    p = g.GroundingProblem("q", names, jnp.log(prior / prior.sum()), anchors=("a",), max_hops=1)
    full = g.ground(p, graph, lam=1.0, kappa=1.0, n_paths=2, path_candidates=None)
    top = g.ground(p, graph, lam=1.0, kappa=1.0, n_paths=2, path_candidates=3)
    order = np.argsort(-np.asarray(full.log_posterior[:10]), kind="stable")[:3]
    shown = np.flatnonzero(top.paths.length[:, 0] >= 0)
    assert sorted(shown.tolist()) == sorted(order.tolist())
    for f in ("edges", "nodes", "length", "cost", "weight"):
        np.testing.assert_array_equal(getattr(top.paths, f)[shown], getattr(full.paths, f)[shown])
    assert all(top.triples[i] == full.triples[i] for i in shown)
    assert all(top.triples[i] == () for i in range(12) if i not in shown)
    assert np.all(top.paths.length[[i for i in range(12) if i not in shown]] == -1)
    batch = g.ground_batch([p], graph, lam=1.0, kappa=1.0, n_paths=2, path_candidates=3)[0]
    np.testing.assert_array_equal(batch.paths.length, top.paths.length)
    with pytest.raises(ValueError, match="path_candidates"):
        g.ground(p, graph, lam=1.0, kappa=1.0, path_candidates=-1)


def test_chain_energies_in_chunks_equal_one_vmap(monkeypatch):
    """Claim chains are priced in chunks of candidates (bounded memory); any chunk size gives
    the energies and walks of one vmap over every chain."""
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "c"), ("a", "s", "c"), ("c", "r", "a")], [0.9, 0.8, 0.5, 1.0]
    )
    chains = tuple(
        g.ClaimChain((x, None, y), (r1, r2))
        for x, y, r1, r2 in [("a", "c", "r", "s"), ("a", "a", None, "r"), ("b", "b", "s", "r"),
                             ("c", "b", "r", None), ("a", "b", "s", "r")]
    )  # fmt: skip
    p = g.GroundingProblem("q", chains, jnp.log(jnp.full(5, 0.2)))
    kw = dict(lam=1.0, kappa=2.0, n_paths=2)
    want = [g.ground(p, graph, tau=tau, **kw) for tau in (0.0, 0.5)]
    monkeypatch.setattr(program, "CHAIN_CHUNK_ELEMENTS", 1)  # one chain per chunk
    programs.clear_solver_programs()
    try:
        got = [g.ground(p, graph, tau=tau, **kw) for tau in (0.0, 0.5)]
        batch = g.ground_batch([p, p], graph, tau=0.5, **kw)  # chunks inside the vmap
    finally:
        programs.clear_solver_programs()
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.raw_energy, b.raw_energy, **F64)
        np.testing.assert_allclose(a.paths.weight, b.paths.weight, **F64)
        assert a.triples == b.triples
    for b in batch:
        np.testing.assert_allclose(b.raw_energy, want[1].raw_energy, **F64)
    assert np.isfinite(want[0].raw_energy).sum() >= 3


# ----------------------------------------------------------------------------- F_R
def test_hard_feasible_set_excludes_a_supported_but_contradicted_candidate():
    """F_R = {E_R <= eps} (Eq. (5)) on the total energy without slack: a candidate with a
    supporting walk (raw energy 0) and reliable counter-support is contradicted, its energy
    is +inf (Axiom 4: above absence, which costs +inf without slack), so it leaves F_R at any
    finite eps; the soft posterior penalizes it by kappa_c. Claim energies count too."""
    graph = g.TypedGraph.from_triples([("a", "r", "b"), ("a", "r", "c"), ("a", "s", "d")])
    state = g.EvidenceState(graph, negative=frozenset({("a", "r", "b")}))
    chains = tuple(g.ClaimChain(("a", x), (r,)) for x, r in [("b", "r"), ("c", "r"), ("d", "s")])
    p = g.GroundingProblem("q", chains, jnp.log(jnp.array([0.5, 0.3, 0.2])))
    for eps in (0.5, 1e300):
        res = g.ground(p, state, lam=1.0, kappa=1.0, eps=eps)
        assert np.asarray(res.raw_energy).tolist() == [0.0, 0.0, 0.0]
        assert g.EvidenceStatus(int(res.status[0])) is g.EvidenceStatus.CONTRADICTED
        np.testing.assert_allclose(np.exp(res.hard_log_posterior), [0.0, 0.6, 0.4], **F64)
    # with claim energies: (0, 1, 0.2) -> total (inf, 1, 0.2); at eps 0.5 only d is feasible
    p = g.GroundingProblem("q", chains, p.log_prior, claim_energy=[0.0, 1.0, 0.2])
    res = g.ground(p, state, lam=1.0, kappa=1.0, eps=0.5)
    np.testing.assert_allclose(np.exp(res.hard_log_posterior), [0.0, 0.0, 1.0], **F64)
    res = g.ground(p, state, lam=1.0, kappa=1.0, eps=0.1)
    assert bool(res.hard_abstained)


def test_an_anchor_answer_reports_its_empty_walk_first_and_pads_with_minus_one():
    """An answer that is itself an anchor (min_hops=0) has the empty walk (energy 0, the best)
    first, then its cycles, best first; unused slots are padded with -1 edges and nodes, and
    the arrays are as wide as the longest reported walk."""
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "r", "a")], reliability=[0.5, 0.5], entities=["a", "b", "c"]
    )
    p = g.GroundingProblem(
        "q", ["a", "c"], jnp.log(jnp.array([0.5, 0.5])), anchors=("a",), max_hops=2, min_hops=0
    )
    r = g.ground(p, graph, lam=1.0, kappa=5.0, n_paths=3, path_candidates=None)
    paths = r.paths
    assert paths.length[0].tolist() == [0, 2, -1]  # the empty walk, the cycle a->b->a, none
    np.testing.assert_allclose(paths.cost[0, :2], [0.0, 2 * np.log(2.0)], rtol=1e-12)
    assert paths.edges.shape == (2, 3, 2) and paths.nodes.shape == (2, 3, 3)
    assert (paths.edges[0, 0] == -1).all() and (paths.edges[0, 2] == -1).all()
    assert (paths.edges[1] == -1).all() and (paths.nodes[1] == -1).all()  # 'c': no walk
    assert paths.length[1].tolist() == [-1, -1, -1]
    alone = g.TypedGraph.from_triples(
        [("b", "r", "c")], reliability=[0.5], entities=["a", "b", "c"]
    )
    r = g.ground(p, alone, lam=1.0, kappa=5.0, n_paths=3, path_candidates=None)
    assert r.paths.length[0].tolist() == [0, -1, -1]  # only the empty walk
    assert r.paths.edges.shape == (2, 3, 1)  # as wide as one edge at least, no wider


def test_min_reliability_decides_which_edges_count_as_counter_support():
    """A functional relation's other object contradicts a claim only through an edge at least
    ``min_reliability`` reliable: 0.6 counts at 0.5, not at 0.7 (single and batched)."""
    graph = g.TypedGraph.from_triples([("a", "r", "b")], [0.6], entities=["a", "b", "d"])
    state = g.EvidenceState(graph, functional=frozenset({"r"}))
    p = g.GroundingProblem("q", (g.ClaimChain(("a", "d"), ("r",)),), jnp.zeros(1))
    for m, want in ((0.5, g.EvidenceStatus.CONTRADICTED), (0.7, g.EvidenceStatus.UNSUPPORTED)):
        for r in (g.ground(p, state, lam=1.0, kappa=1.0, min_reliability=m),
                  *g.ground_batch([p, p], state, lam=1.0, kappa=1.0, min_reliability=m)):  # fmt: skip
            assert g.EvidenceStatus(int(r.status[0])) is want


def test_ground_batch_reports_walks_under_the_realization_as_ground_does():
    """With a realization, the batched report recomputes each reported chain's costs with it,
    as ground does: the same walks, energies and weights."""
    rng = np.random.default_rng(0)
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "c"), ("a", "r", "c"), ("c", "s", "b")],
        [0.9, 0.8, 0.7, 0.6],
    )
    real = g.Realization(
        jnp.asarray(rng.normal(size=(3, 4))),
        g.geometry.Translation(jnp.asarray(rng.normal(size=(2, 4)))),
    )
    chains = tuple(g.ClaimChain(("a", None, t), ("r", "s")) for t in ("b", "c"))
    p = g.GroundingProblem("q", chains, jnp.log(jnp.array([0.4, 0.6])))
    kw = dict(lam=1.0, kappa=5.0, tau=0.5, n_paths=2, realization=real)
    want = g.ground(p, graph, **kw)
    for got in g.ground_batch([p, p], graph, **kw):
        assert got.triples == want.triples
        np.testing.assert_allclose(got.paths.cost, want.paths.cost, rtol=1e-9)
        np.testing.assert_allclose(got.paths.weight, want.paths.weight, rtol=1e-9)
