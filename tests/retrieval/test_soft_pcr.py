"""Soft path-constrained retrieval (:mod:`grounding.retrieval.soft_pcr`): the core's Prop. 6 /
Prop. 3 / Prop. 11 functions as oracles for the soft-to-hard limit, the PCR paper's distance
penalty as its energy, and the batch (:func:`grounding.solver.answer_log_posteriors`) against
one ``ground`` per query."""

from __future__ import annotations

import dataclasses
import importlib

import jax
import numpy as np
import pytest
from _retrieval import TableEncoder, _chain, _same_answers, graphs
from _tol import F64
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from grounding import GroundingConfig, TypedGraph
from grounding.bounds import hard_limit_tv
from grounding.posterior import hard_log_posterior
from grounding.retrieval import (
    PCR,
    Query,
    SoftPCR,
    TextIndex,
    distance_penalty,
)
from grounding.solver import answer_energies


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
            index, lam=lam, prior_temperature=0.5, hop_cost=0.0, kappa=1.0, max_hops=hops
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
        index, lam=lam, prior_temperature=0.3, hop_cost=0.2, kappa=1.0, tau=tau, max_hops=hops
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
    soft = SoftPCR(index, hop_cost=0.1, kappa=1.0)
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
        kappa=data.draw(st.sampled_from([0.5, 1.0])),
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
    pcr_module = importlib.import_module("grounding.retrieval.soft_pcr")
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
        answer_energies(g, [[0], []], soft.config, max_hops=None)
    with pytest.raises(ValueError, match="anchor indices"):
        answer_energies(g, [[4]], soft.config, max_hops=None)
    with pytest.raises(ValueError, match="max_hops must be >= 1"):
        SoftPCR(index, max_hops=0)
    np.testing.assert_allclose(answer_energies(g, [[0], [2, 0]], soft.config, max_hops=None), [[0.0, 0.1, 0.2, np.inf],
                               [0.0, 0.1, 0.0, np.inf]], **F64)  # fmt: skip


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


def test_soft_pcr_fallback_and_bad_settings():
    """Settings are one GroundingConfig, checked once there (the message names the field);
    SoftPCR's own arguments are checked by SoftPCR."""
    g, index = _chain()
    assert "no anchor given" in SoftPCR(index).retrieve(Query("q"), 2).fallback
    assert SoftPCR(index).config == GroundingConfig(lam=10.0, kappa=1.0, hop_cost=0.1, n_paths=0)
    base = GroundingConfig(lam=2.0, kappa=0.5)
    assert SoftPCR(index, base).config == base
    assert SoftPCR(index, base, lam=3.0).config == base.replace(lam=3.0)
    with pytest.raises(ValueError, match="tau > 0"):
        SoftPCR(index, tau=0.5)
    for kw, field in (
        ({"lam": -1.0}, "lam"),
        ({"kappa": 0.0}, "kappa"),
        ({"hop_cost": np.nan}, "hop_cost"),
    ):
        with pytest.raises(ValueError, match=field):
            SoftPCR(index, **kw)
    for t in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="prior_temperature"):
            SoftPCR(index, prior_temperature=t)
    for kw in ({"lam": "10"}, {"tau": None}, {"lam": True}):
        with pytest.raises(TypeError, match=f"{next(iter(kw))} must be a number"):
            SoftPCR(index, **kw)
    with pytest.raises(TypeError, match="prior_temperature must be a number"):
        SoftPCR(index, prior_temperature="0.1")
    with pytest.raises(TypeError, match=r"SoftPCR: unknown settings \['slack'\]"):
        SoftPCR(index, slack=1.0)  # the slack is the config's kappa
    with pytest.raises(TypeError, match="config must be a GroundingConfig"):
        SoftPCR(index, {"lam": 1.0})
    with jax.enable_x64(False), pytest.raises(ValueError, match="lam"):
        SoftPCR(index, lam=1e300)  # overflows float32: refused when built, not at a query
