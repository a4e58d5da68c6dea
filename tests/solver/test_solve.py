"""Property tests of :func:`grounding.ground`, against an independent enumeration oracle.

The oracle enumerates every walk of the candidate's family in a few lines of Python (no
engine code), prices it with Eq. (8)-(10) written out here, and takes the minimum (Eq. (11))
or the uniform-prior aggregate (Eq. (13)). ``ground`` must equal
``gibbs_log_posterior(log_prior, slack_energy(best_path_energy(...)), lam)`` on it, its hard
branch must equal ``hard_log_posterior``, and its Thm. 3 certificate must bound the measured
total variation under random perturbations of the evidence.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import unicodedata

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _tol import F64
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import grounding as g
from grounding import _shapes, programs
from grounding.graph._memo import GraphMemo
from grounding.solver import prepare
from grounding.testing.strategies import grounding_problems, seeds

oracle = settings(max_examples=max(10, settings.default.max_examples * 2 // 5))
lams = st.sampled_from([0.0, 0.3, 1.0, 4.0])
kappas = st.sampled_from([0.5, 1.0, 3.0])
taus = st.sampled_from([0.0, 0.4])


# ----------------------------------------------------------------------------- the oracle
def _walks(graph, n_hops, starts=None):
    """Every walk of exactly ``n_hops`` edges (edge tuples) from ``starts`` (any node if None),
    with its start node."""
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    nodes = range(graph.n_nodes) if starts is None else starts
    out = [((), int(v)) for v in nodes]
    for _ in range(n_hops):
        out = [
            (w + (e,), s)
            for w, s in out
            for e in range(len(head))
            if head[e] == (tail[w[-1]] if w else s)
        ]
    return out


def _end(graph, walk, start):
    return int(np.asarray(graph.tail)[walk[-1]]) if walk else start


def _edge_cost(graph, xi=1.0, hop=0.0):
    return hop + xi * -np.log(np.asarray(graph.reliability, float))  # Eq. (8), evidence-only


def _aggregate(energies, n_family, tau):
    """Eq. (11) (tau = 0) or Eq. (13) with the uniform prior over a family of ``n_family``."""
    e = np.asarray([x for x in energies if np.isfinite(x)])
    if not len(e):
        return np.inf
    if tau == 0:
        return float(g.energy.best_path_energy(jnp.asarray(e)))
    m = e.min()
    return float(m - tau * (np.log(np.sum(np.exp(-(e - m) / tau))) - np.log(n_family)))


def oracle_answers(graph, problem, tau, cost):
    """Raw energy of each answer candidate: walks of min..max hops from any anchor."""
    anchors = sorted({graph.entity_index(a) for a in problem.anchors})
    family = [
        (w, s)
        for k in range(problem.min_hops, problem.max_hops + 1)
        for w, s in _walks(graph, k, anchors)
    ]
    out = []
    for x in problem.candidates:
        xi = graph.entity_index(x)
        es = [sum(cost[e] for e in w) for w, s in family if _end(graph, w, s) == xi]
        out.append(_aggregate(es, len(family), tau))
    return np.asarray(out)


def chain_walk_energies(graph, chain, cost):
    """Eq. (10) of a claim chain on every T-hop walk (``+inf`` where a mention or a claimed
    relation does not match: evidence-only realization, typed claims)."""
    tail, rel = np.asarray(graph.tail), np.asarray(graph.relation)
    out = []
    for w, s in _walks(graph, chain.n_hops):
        nodes = [s, *[int(tail[e]) for e in w]]
        ok = all(
            z is None or graph.entity_index(z) == v for z, v in zip(chain.entities, nodes)
        ) and all(
            r is None or graph.relation_index(r) == rel[e] for r, e in zip(chain.relations, w)
        )
        out.append(sum(cost[e] for e in w) if ok else np.inf)
    return out


def oracle_chain(graph, chain, tau, cost):
    """Raw energy of a claim chain: Eq. (11) / (13) over every T-hop walk."""
    es = chain_walk_energies(graph, chain, cost)
    return _aggregate(es, len(es), tau)


def answer_walk_energies(graph, problem, x, cost):
    """Eq. (10) of every walk of the family of answer ``x`` (min..max hops from an anchor)."""
    anchors = sorted({graph.entity_index(a) for a in problem.anchors})
    return [
        sum(cost[e] for e in w)
        for k in range(problem.min_hops, problem.max_hops + 1)
        for w, s in _walks(graph, k, anchors)
        if _end(graph, w, s) == graph.entity_index(x)
    ]


def oracle_raw(graph, problem, tau, cost):
    if problem.kind == "answer":
        return oracle_answers(graph, problem, tau, cost)
    return np.asarray([oracle_chain(graph, c, tau, cost) for c in problem.candidates])


# ----------------------------------------------------------------------------- properties
@oracle
@given(grounding_problems(), lams, kappas, taus)
def test_ground_equals_gibbs_of_slack_best_path_energy(gp, lam, kappa, tau):
    graph, problem = gp
    res = g.ground(problem, graph, lam=lam, kappa=kappa, tau=tau, n_paths=0)
    raw = oracle_raw(graph, problem, tau, _edge_cost(graph))
    note(f"raw oracle {raw}, ground {np.asarray(res.raw_energy)}")
    np.testing.assert_allclose(res.raw_energy, raw, **F64)
    want = g.gibbs_log_posterior(
        problem.log_prior, g.energy.slack_energy(raw, kappa), lam
    )  # (7), (19)
    np.testing.assert_allclose(np.exp(res.log_posterior), np.exp(want), **F64)
    np.testing.assert_allclose(res.energy, np.minimum(raw, kappa), **F64)
    supported = raw <= kappa  # default eps_s = kappa; no counter-evidence, all in schema
    status = np.where(supported, g.EvidenceStatus.SUPPORTED, g.EvidenceStatus.UNSUPPORTED)
    np.testing.assert_array_equal(res.status, status)
    assert int(res.best) == int(np.argmax(np.asarray(res.log_posterior)))
    want_action = g.decide(np.asarray(res.log_posterior), np.asarray(res.status))
    assert res.decision is want_action


@oracle
@given(grounding_problems(), lams, st.sampled_from([0.0, 0.3, 1.0, np.inf]))
def test_hard_branch_equals_hard_log_posterior_or_abstains(gp, lam, eps):
    graph, problem = gp
    res = g.ground(problem, graph, lam=lam, kappa=1.0, eps=eps, n_paths=0)
    raw = oracle_raw(graph, problem, 0.0, _edge_cost(graph))
    mass = np.exp(np.asarray(problem.log_prior))[raw <= eps].sum()
    event(f"F_R has prior mass: {mass > 0}")
    if mass > 0:
        assert not bool(res.hard_abstained)
        want = g.hard_log_posterior(problem.log_prior, raw, eps)  # Eq. (6)
        np.testing.assert_allclose(np.exp(res.hard_log_posterior), np.exp(want), **F64)
    else:  # p_theta(F_R) = 0: Eq. (6) undefined; ground abstains where the function raises
        assert bool(res.hard_abstained) and np.all(res.hard_log_posterior == -np.inf)
        with pytest.raises(ValueError, match="zero prior mass"):
            g.hard_log_posterior(problem.log_prior, raw, eps)


def _perturb(graph, rng):
    keep = rng.random(graph.n_edges) >= rng.uniform(0.0, 0.5)
    w = np.asarray(graph.reliability)[keep] * rng.uniform(0.5, 1.0, keep.sum())
    return dataclasses.replace(graph.subgraph(keep), reliability=jnp.asarray(w))


@oracle
@given(grounding_problems(), st.sampled_from([0.3, 1.0, 4.0]), kappas, taus, seeds)
def test_certificate_bounds_the_measured_tv_under_random_perturbations(gp, lam, kappa, tau, seed):
    graph, problem = gp
    res = g.ground(problem, graph, lam=lam, kappa=kappa, tau=tau, n_paths=0)
    other = g.ground(
        problem,
        _perturb(graph, np.random.default_rng(seed)),
        lam=lam,
        kappa=kappa,
        tau=tau,
        n_paths=0,
    )
    tv = float(g.tv_distance(res.log_posterior, other.log_posterior))
    omega = float(g.bounds.oscillation(res.energy, other.energy, problem.log_prior))
    c = res.certificate
    note(f"tv {tv}, omega {omega}, certificate {c}")
    assert bool(c.valid)
    # the declared default: the worst case over every evidence state, osc_S(E_R) + E_max
    support = np.asarray(problem.log_prior) > -np.inf
    e = np.asarray(res.energy)[support]
    e_max = 2 * kappa if problem.kind == "chain" else kappa  # kappa + kappa_c (default kappa)
    np.testing.assert_allclose(c.omega, e.max() - e.min() + e_max, **F64)
    assert omega <= float(c.omega) + 1e-12  # ... which this perturbation respects
    # the bounds are exactly the theorem's (two-sided: a larger constant would fail)
    np.testing.assert_allclose(c.tv_paper, np.tanh(lam * float(c.omega) / 2), **F64)
    np.testing.assert_allclose(c.tv_sharp, np.tanh(lam * float(c.omega) / 4), **F64)
    np.testing.assert_allclose(c.log_ratio, lam * float(c.omega), **F64)
    # and they hold: globally, and at the measured oscillation (Thm. 3)
    paper, sharp = (float(x) for x in c.tv_at(omega))
    assert tv <= sharp + 1e-12 <= paper + 2e-12
    assert tv <= float(c.tv_sharp) + 1e-12
    lr = np.abs(np.asarray(res.log_posterior)[support] - np.asarray(other.log_posterior)[support])
    assert np.all(lr <= lam * omega + 1e-9)  # the log-ratio claim of Thm. 3
    event(f"perturbation inside the radius: {omega < float(c.radius)}")
    if omega < float(c.radius):
        assert int(other.best) == int(res.best)  # the answer is certified


@oracle
@given(grounding_problems(c_min=2), st.sampled_from([0.3, 1.0, 4.0]), kappas)
def test_certificate_radius_is_exact(gp, lam, kappa):
    """Moving only the best candidate's energy by ``delta``: below the radius the best stays,
    just above it the runner-up takes over (the radius is neither loose nor wrong)."""
    graph, problem = gp
    res = g.ground(problem, graph, lam=lam, kappa=kappa, n_paths=0)
    r, b = float(res.certificate.radius), int(res.best)
    event(f"finite positive radius: {0 < r < np.inf}")
    if not 0 < r < np.inf:
        return
    lp, e = problem.log_prior, np.asarray(res.energy)
    for factor, same in ((1 - 1e-6, True), (1 + 1e-6, False)):
        moved = e + np.where(np.arange(len(e)) == b, factor * r, 0.0)  # osc(dE) = factor * r
        post = g.gibbs_log_posterior(lp, moved, lam)
        assert (int(g.map_index(post)) == b) is same


def test_answers_at_positive_tau_equal_the_oracle_on_a_cyclic_graph():
    """Pinned: Eq. (13) for answers, with the uniform prior over every walk of 1..2 edges from
    the anchor (cycles included), against the enumeration oracle."""
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "r", "c"), ("a", "r", "c"), ("c", "r", "a")], [0.9, 0.5, 0.7, 1.0]
    )
    p = g.GroundingProblem(
        "q", ("a", "b", "c"), jnp.log(jnp.full(3, 1 / 3)), anchors=("a",), max_hops=2
    )
    for tau in (0.1, 0.4, 2.0):
        res = g.ground(p, graph, lam=1.0, kappa=10.0, tau=tau)
        np.testing.assert_allclose(
            res.raw_energy, oracle_raw(graph, p, tau, _edge_cost(graph)), **F64
        )


def test_chain_statuses_contradiction_and_schema_with_a_realization():
    """Eqs. (8)-(11) under a TransE realization equal the enumeration oracle
    (:func:`grounding.paths.chain_path_energies`); counter-evidence gives CONTRADICTED and energy
    kappa + kappa_c (Axiom 4); an unknown relation gives OUT_OF_SCHEMA, raw +inf, energy kappa."""
    rng = np.random.default_rng(0)
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "c"), ("a", "s", "c"), ("c", "s", "a")], [1.0, 0.8, 0.5, 0.9]
    )
    state = g.EvidenceState(
        graph, negative=frozenset({("b", "s", "a")}), functional=frozenset({"r"})
    )
    emb = rng.normal(size=(3, 4))
    real = g.Realization(
        jnp.asarray(emb), g.geometry.Translation(jnp.asarray(rng.normal(size=(2, 4))))
    )
    chains = (
        g.ClaimChain(("a", "b", "c"), ("r", "s"), "ok"),
        g.ClaimChain(("a", "b", "a"), ("r", "s"), "negative"),  # (b, s, a) is a declared negative
        g.ClaimChain(("a", "c", None), ("r", "s"), "functional"),  # r is functional; a -r-> b seen
        g.ClaimChain(("a", "b", "c"), ("r", "won"), "schema"),  # "won" is not in the schema
    )
    problem = g.GroundingProblem("q", chains, jnp.log(jnp.full(4, 0.25)))
    res = g.ground(problem, state, lam=1.0, kappa=2.0, contradiction_penalty=3.0, realization=real)
    for i, c in enumerate(chains[:3]):
        psi = emb[[graph.entity_index(x) for x in c.entities if x is not None]]
        if len(psi) < c.n_hops + 1:  # a wildcard mention: its cost is 0 for every node
            continue
        _, e = g.paths.chain_path_energies(
            graph, emb, real.relation_map, psi, [graph.relation_index(r) for r in c.relations]
        )
        np.testing.assert_allclose(res.raw_energy[i], np.min(np.asarray(e)), **F64)
    S = g.EvidenceStatus
    assert [S(int(s)) for s in res.status] == [
        S.SUPPORTED if float(res.raw_energy[0]) <= 2.0 else S.UNSUPPORTED,
        S.CONTRADICTED,
        S.CONTRADICTED,
        S.OUT_OF_SCHEMA,
    ]
    np.testing.assert_allclose(res.energy[1:], [5.0, 5.0, 2.0], **F64)
    assert np.isinf(res.raw_energy[3])


def test_mixed_hop_chains_equal_their_separate_problems():
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "r", "c"), ("c", "r", "a")], [0.9, 0.5, 0.7]
    )
    chains = (
        g.ClaimChain(("a", "b"), ("r",)),
        g.ClaimChain(("a", None, "c"), ("r", "r")),
        g.ClaimChain(("b", "c"), (None,)),
    )
    for tau in (0.0, 0.5):
        mixed = g.ground(
            g.GroundingProblem("q", chains, jnp.log(jnp.full(3, 1 / 3))),
            graph,
            lam=1.0,
            kappa=5.0,
            tau=tau,
        )
        for i, c in enumerate(chains):
            one = g.ground(
                g.GroundingProblem("q", (c,), jnp.zeros(1)), graph, lam=1.0, kappa=5.0, tau=tau
            )
            np.testing.assert_allclose(mixed.raw_energy[i], one.raw_energy[0], **F64)
            np.testing.assert_allclose(
                one.raw_energy[0], oracle_chain(graph, c, tau, _edge_cost(graph)), **F64
            )


@oracle
@given(grounding_problems(), taus, st.integers(1, 4))
def test_supporting_paths_are_the_best_walks_with_their_nu_star(gp, tau, k):
    """The reported walks are the k lowest-energy walks of the family (Eq. (10)) and their
    weights are nu* of Prop. 2 among all of them (tau = 0: uniform over the minimizers)."""
    graph, problem = gp
    res = g.ground(problem, graph, lam=1.0, kappa=1.0, tau=tau, n_paths=k)
    cost = _edge_cost(graph)
    for i, cand in enumerate(problem.candidates):
        if problem.kind == "answer":
            fam = answer_walk_energies(graph, problem, cand, cost)
        else:
            fam = [e for e in chain_walk_energies(graph, cand, cost) if np.isfinite(e)]
        fam = np.sort(np.asarray(fam, float))
        n = min(k, len(fam))
        got = np.asarray(res.paths.cost[i])
        assert int(np.sum(np.asarray(res.paths.length[i]) >= 0)) == n
        np.testing.assert_allclose(got[:n], fam[:n], **F64)
        if n == 0:
            continue
        if tau == 0:
            want = np.where(
                np.isclose(fam[:n], fam[0], rtol=0, atol=0), 1.0 / np.sum(fam == fam[0]), 0.0
            )
        else:
            want = np.exp(-(fam[:n] - fam[0]) / tau) / np.sum(np.exp(-(fam - fam[0]) / tau))
        np.testing.assert_allclose(res.paths.weight[i, :n], want, **F64)
        for j, walk in enumerate(res.triples[i]):  # names agree with the edge indices
            edges = res.paths.edges[i, j][: res.paths.length[i, j]]
            assert list(walk) == [graph.triples()[e] for e in edges]


def _assert_same_result(batched, one):
    """A ``ground_batch`` result equals ``ground``'s for the same question."""
    for field in ("raw_energy", "energy", "status", "log_posterior", "best", "action"):
        np.testing.assert_allclose(getattr(batched, field), getattr(one, field), **F64)
    np.testing.assert_allclose(batched.certificate.radius, one.certificate.radius, **F64)
    np.testing.assert_allclose(batched.paths.weight, one.paths.weight, **F64)


@settings(max_examples=10)
@given(grounding_problems(kind="answer"), st.lists(seeds, min_size=1, max_size=4), lams, taus)
def test_ground_batch_equals_ground_question_by_question(gp, question_seeds, lam, tau):
    graph, _ = gp
    problems = []
    for s in question_seeds:  # questions of different sizes and anchors on one graph
        rng = np.random.default_rng(s)
        m = int(rng.integers(1, graph.n_nodes + 1))
        problems.append(
            g.GroundingProblem(
                "q",
                graph.entities[:m],
                g.log_normalize(rng.normal(size=m)),
                anchors=(graph.entities[int(rng.integers(graph.n_nodes))],),
                max_hops=2,
            )  # fmt: skip
        )
    for evidence in (graph, [graph] * len(problems)):
        batch = g.ground_batch(problems, evidence, lam=lam, kappa=1.0, tau=tau)
        for p, b in zip(problems, batch):
            _assert_same_result(b, g.ground(p, graph, lam=lam, kappa=1.0, tau=tau))


def test_ground_batch_defaults_and_large_graphs_per_question_equal_ground():
    """ground_batch counts counter-evidence of any reliability by default, as ground does, and
    questions over their own large graphs (ELL layout: one program call each, no stacking)
    equal ground question by question."""
    S = g.EvidenceStatus
    weak = g.TypedGraph.from_triples([("a", "r", "b")], [0.3], entities=["a", "b", "c"])
    state = g.EvidenceState(weak, functional=frozenset({"r"}))
    chains = (g.ClaimChain(("a", "c"), ("r",)), g.ClaimChain(("a", "b"), ("r",)))
    p = g.GroundingProblem("q", chains, jnp.log(jnp.full(2, 0.5)))
    (b,) = g.ground_batch([p], state, lam=1.0, kappa=2.0)
    assert [S(int(s)) for s in b.status] == [S.CONTRADICTED, S.SUPPORTED]
    np.testing.assert_array_equal(b.status, g.ground(p, state, lam=1.0, kappa=2.0).status)

    rng = np.random.default_rng(3)
    n, m = 300, g.semiring.layout.ELL_MIN_EDGES
    ents = [f"e{i}" for i in range(n)]
    big = g.TypedGraph.from_triples(
        [(ents[h], "r", ents[t]) for h, t in rng.integers(0, n, (m, 2))],
        rng.uniform(0.2, 1.0, m),
        entities=ents,
    )  # one graph: every new ELL layout compiles its own program
    states = [g.EvidenceState(big), g.EvidenceState(big)]  # a sequence: per-question evidence
    problems = [
        g.GroundingProblem("q", tuple(ents[1:4]), jnp.log(jnp.full(3, 1 / 3)), anchors=(ents[a],),
                           max_hops=2)
        for a in (0, 7)
    ]  # fmt: skip
    kw = dict(lam=1.0, kappa=3.0, n_paths=1)
    batch = g.ground_batch(problems, states, **kw)
    for p, b in zip(problems, batch):
        one = g.ground(p, big, **kw)
        _assert_same_result(b, one)
        assert np.isfinite(np.asarray(b.raw_energy)).all()
        assert b.triples == one.triples and len(b.triples[0]) == 1
    assert batch[0].raw_energy.tolist() != batch[1].raw_energy.tolist()  # anchors differ


def _mixed_batch(seed=0):
    """Per-question evidence of different sizes (subgraphs of one graph with uncertain edges,
    counter-evidence in one, and a graph of its own with many isolated entities, which
    compaction drops) and problems of both kinds: claim chains of one and two hops (some
    claiming an entity isolated in its state) and answer candidates from an anchor."""
    rng = np.random.default_rng(seed)
    ents = [f"e{i}" for i in range(12)]
    triples = sorted({(ents[h], f"r{rng.integers(2)}", ents[t])
                      for h, t in rng.integers(0, 12, (30, 2)) if h != t})  # fmt: skip
    graph = g.TypedGraph.from_triples(triples, rng.uniform(0.2, 1.0, len(triples)), entities=ents)
    E = graph.n_edges
    keep = [np.sort(rng.choice(E, k, replace=False)) for k in (E, E * 2 // 3, E // 3, E - 4)]
    states = [g.EvidenceState(graph.subgraph(k)) for k in keep]
    # counter-evidence against the first question's claim e0 -r0-> e1 (Axiom 4)
    states[0] = dataclasses.replace(states[0], negative=frozenset({("e0", "r0", "e1")}))
    other = g.TypedGraph.from_triples(
        [("x", "r0", "y"), ("y", "r1", "z"), ("x", "r0", "z")], [0.9, 0.4, 0.7],
        entities=["x", "y", "z", *(f"iso{i}" for i in range(70))],
    )  # fmt: skip
    states.append(g.EvidenceState(other))

    def chains(topic, rels, ends):
        mid = (None,) * (len(rels) - 1)
        return [g.ClaimChain((topic, *mid, e), rels) for e in ends]

    def prior(n):
        return g.log_normalize(rng.normal(size=n))

    problems = [
        g.GroundingProblem("c1", chains("e0", ("r0",), ents[1:7]), prior(6)),
        g.GroundingProblem("a", tuple(ents[2:9]), prior(7), anchors=("e1",), max_hops=2),
        g.GroundingProblem(
            "c2", chains("e3", ("r0", "r1"), ents[:5]) + chains("e3", ("r1",), ents[5:8]), prior(8)
        ),  # fmt: skip
        g.GroundingProblem("a2", tuple(ents[:4]), prior(4), anchors=("e5", "e6"), max_hops=3),
        g.GroundingProblem("o", chains("x", ("r0", "r1"), ["z", "y", "iso3"]), prior(3)),
    ]
    return graph, states, problems


def _assert_same_grounding(b, one):
    """A ``ground_batch`` result equals ``ground``'s: statuses, energies, posteriors (soft and
    hard), decision, walks."""
    for field in ("status", "raw_energy", "energy", "log_posterior", "hard_log_posterior",
                  "hard_abstained", "best", "action"):  # fmt: skip
        np.testing.assert_allclose(getattr(b, field), getattr(one, field), **F64)
    np.testing.assert_allclose(b.paths.weight, one.paths.weight, **F64)
    assert b.names == one.names and b.answers == one.answers and b.triples == one.triples


def test_ground_batch_of_mixed_kinds_on_evidence_of_different_sizes_equals_ground():
    """Per-question states of different sizes (compacted to one padded vocabulary inside
    ``ground_batch``), claim chains and answer candidates in one batch: each result equals
    ``ground`` of its question alone on its own (uncompacted) state."""
    graph, states, problems = _mixed_batch()
    sizes = {s.graph.n_edges for s in states}
    assert len(sizes) == len(states) and {p.kind for p in problems} == {"chain", "answer"}
    config = g.GroundingConfig(lam=1.5, kappa=1.0, n_paths=2, path_candidates=None)
    batch = g.ground_batch(problems, states, config)
    for p, s, b in zip(problems, states, batch):
        _assert_same_grounding(b, g.ground(p, s, config))
    # the statuses are not all alike: the comparison has something to compare
    statuses = {int(x) for b in batch for x in np.asarray(b.status)}
    assert {int(g.EvidenceStatus.SUPPORTED), int(g.EvidenceStatus.UNSUPPORTED)} <= statuses
    assert int(g.EvidenceStatus.CONTRADICTED) in statuses


def test_ground_batch_with_a_realization_equals_ground_without_compaction():
    """With a realization (indexed by the full vocabulary), per-question states are not
    compacted: each result equals ``ground`` with the same realization, and the mention costs
    of the realization (Eq. (9)) reach the energies."""
    graph, states, problems = _mixed_batch()
    states, problems = states[:4], problems[:4]  # one vocabulary: the realization's
    real = g.Realization(np.random.default_rng(1).normal(size=(graph.n_nodes, 3)))
    config = g.GroundingConfig(lam=1.5, kappa=1.0, n_paths=2, path_candidates=None)
    batch = g.ground_batch(problems, states, config, realization=real)
    for p, s, b in zip(problems, states, batch):
        _assert_same_grounding(b, g.ground(p, s, config, realization=real))
    plain = g.ground_batch(problems, states, config)
    assert any(not np.allclose(a.energy, b.energy) for a, b in zip(batch, plain))


def test_result_is_a_pytree_and_programs_are_reused():
    graph = g.TypedGraph.from_triples([("a", "r", "b"), ("b", "r", "c")])
    p = g.GroundingProblem(
        "q", ("b", "c"), jnp.log(jnp.array([0.5, 0.5])), anchors=("a",), max_hops=2
    )
    res = g.ground(p, graph, lam=1.0, kappa=1.0)
    leaves = jax.tree_util.tree_leaves(res)
    assert leaves and all(isinstance(x, (np.ndarray, np.generic, jax.Array)) for x in leaves)
    doubled = jax.tree_util.tree_map(lambda x: x, res)
    assert doubled.names == res.names and doubled.answer == res.answer
    before = programs.program_info()
    q = dataclasses.replace(p, log_prior=jnp.log(jnp.array([0.2, 0.8])))
    g.ground(q, graph.add_triples([("c", "r", "a")]), lam=2.0, kappa=0.5)  # same bucket
    # a graph with more nodes in the same node bucket (isolated padding nodes): same program
    bigger = g.TypedGraph.from_triples([("a", "r", "b"), ("b", "r", "c"), ("c", "r", "d")])
    bigger = g.ground(q, bigger, lam=2.0, kappa=0.5)
    after = programs.program_info()
    assert after["compilations"] == before["compilations"]  # both reuse the program
    assert np.isfinite(bigger.raw_energy).all()
    assert after["live"] <= after["max_programs"]  # the cache of compiled programs is bounded
    assert res.to_dict()["candidates"][0]["paths"][0]["triples"] == [["a", "r", "b"]]
    assert "decision" in res.summary()


_LONG = "an_entity_with_a_rather_long_name"  # 33 characters: the summary keeps it whole


def _assert_same_report(got, want, where="report"):
    """Nested dicts and lists equal, floats to 1e-12 (pytest.approx does not nest)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), where
        for k in want:
            _assert_same_report(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (x, y) in enumerate(zip(got, want)):
            _assert_same_report(x, y, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), where
    else:
        assert got == want, where


def _report_problem(min_hops):
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "r", _LONG), ("a", "r", _LONG)],
        [0.5, 1.0, 0.25],
        entities=["a", "b", _LONG, "c"],
    )
    p = g.GroundingProblem(
        "who?", ("a", "b", _LONG, "c"), np.log(np.full(4, 0.25)), anchors=("a",),
        max_hops=2, min_hops=min_hops,
    )  # fmt: skip
    return p, graph


def test_result_reports_are_the_result_worked_by_hand():
    """to_dict, summary and posterior on a four-candidate example computed by hand.

    Walks from the anchor ``a`` (0..2 hops, costs -log w): ``a`` by the empty walk (0), ``b``
    by a->b (log 2), LONG by a->b->LONG (log 2) and a->LONG (log 4), ``c`` by none. With
    kappa = 2 the energies are (0, log 2, log 2, 2), so at lam = 1 with a uniform prior the
    posterior is (1, 1/2, 1/2, e^-2) / (2 + e^-2). Certificate: omega = osc + kappa = 4,
    tanh(2), tanh(1), margin log 2. Hard set at eps = 0.5: {a}. ``c`` has no walk: its raw
    energy is null in the JSON report."""
    p, graph = _report_problem(min_hops=0)
    res = g.ground(p, graph, lam=1.0, kappa=2.0, eps=0.5, n_paths=2)
    z = 2 + np.exp(-2)
    post = [1 / z, 0.5 / z, 0.5 / z, np.exp(-2) / z]
    np.testing.assert_allclose(res.posterior(), post, **F64)
    d = res.to_dict()
    ln2 = np.log(2)
    walk = [["a", "r", "b"], ["b", "r", _LONG]]
    want = dict(
        question="who?",
        action="ANSWER",
        answer="a",
        answer_name="a",
        best="a",
        candidates=[
            dict(name="a", prior=0.25, raw_energy=0.0, status="SUPPORTED", energy=0.0,
                 posterior=post[0], paths=[dict(triples=[], energy=0.0, weight=1.0)]),
            dict(name="b", prior=0.25, raw_energy=ln2, status="SUPPORTED", energy=ln2,
                 posterior=post[1], paths=[dict(triples=[walk[0]], energy=ln2, weight=1.0)]),
            dict(name=_LONG, prior=0.25, raw_energy=ln2, status="SUPPORTED", energy=ln2,
                 posterior=post[2], paths=[dict(triples=walk, energy=ln2, weight=1.0),
                                           dict(triples=[["a", "r", _LONG]], energy=2 * ln2,
                                                weight=0.0)]),
            dict(name="c", prior=0.25, raw_energy=None, status="UNSUPPORTED", energy=2.0,
                 posterior=post[3], paths=[]),
        ],
        certificate=dict(lam=1.0, omega=4.0, log_ratio=4.0, tv_paper=np.tanh(2.0),
                         tv_sharp=np.tanh(1.0), margin=ln2, radius=ln2, valid=True),
        hard_abstained=False,
        hard_posterior=[1.0, 0.0, 0.0, 0.0],
    )  # fmt: skip
    _assert_same_report(d, want)
    assert d["certificate"]["valid"] is True and d["hard_abstained"] is False
    assert all(type(v) is float for k, v in d["certificate"].items() if k != "valid")
    assert res.summary().split("\n") == [
        "question: who?",
        "decision: ANSWER (best: a)",
        # the name column is as wide as the longest name (33 columns)
        "candidate                           prior   walk E status         energy    post",
        "a                                   0.250    0.000 SUPPORTED       0.000   0.468",
        "    best walk (energy 0.000, weight 1.000 among its walks): (empty walk)",
        "b                                   0.250    0.693 SUPPORTED       0.693   0.234",
        "    best walk (energy 0.693, weight 1.000 among its walks): a -r-> b",
        "an_entity_with_a_rather_long_name   0.250    0.693 SUPPORTED       0.693   0.234",
        f"    best walk (energy 0.693, weight 1.000 among its walks): a -r-> b ; b -r-> {_LONG}",
        "c                                   0.250      inf UNSUPPORTED     2.000   0.063",
        # margin ln 2 (0.468 / 0.234) over lam = 1; e^(ln 2) = 2
        "stability: a stays the best candidate unless new evidence raises its energy by 0.693 "
        "or more against a rival's, e.g. a rival gains a walk 0.693 cheaper, or its own "
        "support costs 0.693 more (a factor 2 in one edge's reliability)",
        # tanh(lam omega / 4) = tanh(1), tanh(lam omega / 2) = tanh(2)
        "  [paper, Thm. 3: radius = margin / lambda = 0.693; at osc(dE) = omega = 4: "
        "TV <= 0.762 (sharp), 0.964 (Eq. (21))]",
    ]


def test_summary_aligns_wide_names_and_cuts_only_past_its_column():
    """CJK characters take two terminal columns, combining marks none: the prior column
    lines up whatever the script; a name wider than the column is cut there with an ellipsis
    (to_dict keeps it whole); no energy prints as -0.000."""
    from grounding.result import NAME_COLUMN

    def columns(text: str) -> int:
        return sum(
            0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF"
            else 1 for ch in text
        )  # fmt: skip

    long = "x" * (NAME_COLUMN + 5)
    names = ["東京都", "Ciudad de Mx\u0301xico", long, "b"]  # x + accent: no precomposed form
    graph = g.TypedGraph.from_triples([("q", "r", "東京都")], entities=["q", *names])
    p = g.GroundingProblem("where?", names, jnp.log(jnp.full(4, 0.25)), anchors=("q",), max_hops=1)
    res = g.ground(p, graph, lam=2.0, kappa=1.0)
    lines = res.summary().split("\n")
    header, rows = lines[2], [line for line in lines[3:] if not line.startswith(" ")][:4]
    # the name cell (NAME_COLUMN wide: the longest name is wider), a space, the prior in 7
    assert columns(header[: header.index("prior")]) == NAME_COLUMN + 3
    assert [columns(r[: r.index("0.250")]) for r in rows] == [NAME_COLUMN + 3] * 4, rows
    assert rows[0].startswith("東京都 ") and rows[1].startswith("Ciudad de Mx\u0301xico ")
    assert rows[2].startswith("x" * (NAME_COLUMN - 1) + "\u2026 ")
    assert "-0.000" not in res.summary()
    assert res.to_dict()["candidates"][2]["name"] == long


def test_certificate_repr_reads_as_numbers():
    """print(result.certificate) shows numbers and a bool, not array(...) fields; a batch of
    certificates shows arrays."""
    graph = g.TypedGraph.from_triples([("q", "r", "a")], entities=["q", "a", "b"])
    p = g.GroundingProblem("?", ["a", "b"], jnp.log(jnp.full(2, 0.5)), anchors=("q",), max_hops=1)
    cert = g.ground(p, graph, lam=2.0, kappa=1.0).certificate
    assert repr(cert) == (
        "Certificate(lam=2, omega=2, log_ratio=4, tv_paper=0.964, tv_sharp=0.7616, margin=2, "
        "radius=1, valid=True)"
    )
    both = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), cert)
    assert "radius=[1., 1.]" in repr(both) and "valid=[ True,  True]" in repr(both)


def test_result_reports_without_paths_or_eps_hard_abstention_and_a_vacuous_certificate():
    """No walks asked for: empty path lists; no eps: no hard keys; an empty hard feasible set
    (no raw energy <= 0 without the empty walk): hard_abstained True and zero hard mass; a
    certificate where Thm. 3 does not apply is vacuous. The reports read float32 results in
    float64."""
    p, graph = _report_problem(min_hops=1)
    bare = g.ground(p, graph, lam=1.0, kappa=2.0, eps=None, n_paths=0).to_dict()
    assert [c["paths"] for c in bare["candidates"]] == [[]] * 4
    assert "hard_abstained" not in bare and "hard_posterior" not in bare
    res = g.ground(p, graph, lam=1.0, kappa=2.0, eps=0.0)
    d = res.to_dict()
    assert d["hard_abstained"] is True and d["hard_posterior"] == [0.0] * 4
    # a result whose walks were dropped reports none (the triples name them)
    assert [c["paths"] for c in dataclasses.replace(res, triples=()).to_dict()["candidates"]] == [
        []
    ] * 4
    # Thm. 3 at another oscillation; without slack (kappa = inf) candidate c has infinite
    # energy on the prior's support, so the theorem does not apply: vacuous bounds
    np.testing.assert_allclose(res.certificate.tv_at(3.0), [np.tanh(1.5), np.tanh(0.75)], **F64)
    cert = g.ground(p, graph, lam=1.0, kappa=np.inf).certificate
    assert not bool(cert.valid) and float(cert.radius) == 0.0 and float(cert.log_ratio) == np.inf
    assert [float(cert.tv_paper), float(cert.tv_sharp)] == [1.0, 1.0]
    assert [float(x) for x in cert.tv_at(3.0)] == [1.0, 1.0]
    lp32 = np.log(np.array([0.1, 0.2, 0.3, 0.4], np.float32))
    r32 = dataclasses.replace(res, log_posterior=lp32, hard_log_posterior=lp32)
    assert r32.posterior().dtype == np.float64
    np.testing.assert_array_equal(r32.posterior(), np.exp(lp32.astype(np.float64)))
    assert r32.to_dict()["hard_posterior"] == np.exp(lp32.astype(np.float64)).tolist()


def test_certificate_at_zero_strength_and_a_positive_contradiction_penalty():
    """At lam = 0 the posterior is the prior whatever the evidence: the best candidate is kept
    under any perturbation (radius inf) and every bound is 0. kappa_c must be > 0 (Axiom 4)."""
    programs.clear_solver_programs()  # trace the core in this test (mutation runs map it so)
    p, graph = _report_problem(min_hops=0)
    cert = g.ground(p, graph, lam=0.0, kappa=2.0).certificate
    assert float(cert.radius) == np.inf and float(cert.margin) == 0.0 and bool(cert.valid)
    assert [float(cert.log_ratio), float(cert.tv_paper), float(cert.tv_sharp)] == [0.0] * 3
    with pytest.raises(ValueError, match="^contradiction_penalty"):
        g.ground(p, graph, lam=1.0, kappa=2.0, contradiction_penalty=0.0)
    # an infinite margin threshold is valid: no margin reaches it, so the rule asks to verify
    res = g.ground(p, graph, lam=1.0, kappa=2.0, margin_threshold=np.inf)
    assert res.decision is g.Action.VERIFY and res.answer is None
    # a declared omega may be infinite (vacuous bounds); eps_s reaches the statuses
    cert = g.ground(p, graph, lam=1.0, kappa=2.0, omega=np.inf).certificate
    assert [float(cert.tv_paper), float(cert.tv_sharp), float(cert.log_ratio)] == [1.0, 1.0, np.inf]
    S = g.EvidenceStatus
    res = g.ground(p, graph, lam=1.0, kappa=2.0, eps_s=0.5)  # raw energies 0, log 2, log 2, inf
    assert [S(int(x)) for x in res.status] == [S.SUPPORTED] + [S.UNSUPPORTED] * 3


def test_the_answer_is_the_entity_and_the_answer_name_the_candidate():
    """An ANSWER decision names the best candidate's answer entity (a claim chain's last
    mention) as ``answer`` and the candidate itself as ``answer_name``, in the result and its
    report; answer candidates are their own name; another decision names neither; a chain
    that leaves its answer open answers no entity."""
    graph = g.TypedGraph.from_triples(
        [("lou_seal", "mascot_of", "giants"), ("giants", "plays_in", "sf")]
    )
    chains = [g.ClaimChain(("lou_seal", t), ("mascot_of",)) for t in ("giants", "sf")]
    p = g.GroundingProblem("q", chains, jnp.log(jnp.array([0.4, 0.6])))
    res = g.ground(p, graph, lam=4.0, kappa=1.0)
    assert res.decision is g.Action.ANSWER
    assert (res.answer, res.answer_name) == ("giants", "lou_seal->giants")
    d = res.to_dict()
    assert (d["answer"], d["answer_name"], d["best"]) == ("giants", "lou_seal->giants",
                                                          "lou_seal->giants")  # fmt: skip
    two = g.GroundingProblem(
        "q", [g.ClaimChain(("lou_seal", None, "sf"), ("mascot_of", "plays_in"))], jnp.zeros(1)
    )
    res = g.ground(two, graph, lam=4.0, kappa=1.0)
    assert (res.answer, res.answer_name) == ("sf", "lou_seal->*->sf")
    answers = g.GroundingProblem(
        "q", ("giants", "sf"), jnp.log(jnp.array([0.6, 0.4])), anchors=("lou_seal",), max_hops=1
    )
    res = g.ground(answers, graph, lam=4.0, kappa=1.0)
    assert (res.answer, res.answer_name) == ("giants", "giants")
    res = g.ground(p, graph, lam=4.0, kappa=1.0, margin_threshold=np.inf)  # VERIFY
    assert res.decision is not g.Action.ANSWER and (res.answer, res.answer_name) == (None, None)
    assert res.to_dict()["answer"] is None and res.to_dict()["answer_name"] is None
    open_end = g.GroundingProblem(
        "q", [g.ClaimChain(("lou_seal", None), ("mascot_of",))], jnp.zeros(1)
    )
    res = g.ground(open_end, graph, lam=4.0, kappa=1.0)
    assert res.decision is g.Action.ANSWER
    assert (res.answer, res.answer_name) == (None, "lou_seal->*")


def test_claim_chain_stores_tuples_and_names_wildcards():
    c = g.ClaimChain(["a", None, "c"], ["r", None])
    assert c.entities == ("a", None, "c") and type(c.entities) is tuple
    assert c.relations == ("r", None) and type(c.relations) is tuple
    assert c.name == "a->*->c" and c.answer == "c" and c.n_hops == 2
    assert c.hops == [("a", "r", None), (None, None, "c")] and c.named_hops() == []
    assert g.ClaimChain(("a", "b"), ("r",), name="mine").name == "mine"


def test_realization_stores_a_float_array_of_one_row_per_entity():
    real = g.Realization([[0, 1], [1, 0]])
    assert isinstance(real.embeddings, jax.Array)
    assert jnp.issubdtype(real.embeddings.dtype, jnp.floating)
    for bad in (np.zeros(3), np.zeros((2, 2, 2))):
        with pytest.raises(ValueError, match=r"^embeddings must be \[n_entities, d\]"):
            g.Realization(bad)


def test_padding_buckets_edge_padding_and_the_bounded_edge_cache():
    """Candidates and edge sets pad to the next power of two (at least ``floor``; edges at
    least ``MIN_EDGES``);
    padded edges are masked out with reliability 1; the edge-array cache keeps the last 8
    graphs and answers for the graph it is asked about."""
    for floor in (1, 8):
        for n in range(70):
            want = 1
            while want < n or want < floor:
                want *= 2
            assert _shapes.bucket(n, floor=floor) == want, (n, floor)
    assert _shapes.bucket(5) == 8  # default floor 8
    graphs = [
        g.TypedGraph.from_triples([("a", "r", "b")] * k, np.linspace(0.5, 1.0, k))
        for k in range(1, 11)
    ]
    prepare._EDGES.clear()  # entries of earlier tests' graphs may share an id with these
    for graph in graphs:
        ev, layout = prepare._edge_arrays(graph)
        E = graph.n_edges
        assert layout is None and len(ev["head"]) == prepare.MIN_EDGES == 128  # a small graph
        np.testing.assert_array_equal(ev["reliability"][:E], np.asarray(graph.reliability))
        np.testing.assert_array_equal(ev["reliability"][E:], 1.0)
        np.testing.assert_array_equal(ev["edge_mask"], np.arange(len(ev["head"])) < E)
        assert prepare._edge_arrays(graph)[0] is ev  # memoized
    assert len(prepare._EDGES) == 8 and graphs[0] not in prepare._EDGES
    assert graphs[-1] in prepare._EDGES
    above = g.TypedGraph.from_triples([("a", "r", "b")] * 200, np.full(200, 0.5))
    assert len(prepare._edge_arrays(above)[0]["head"]) == 256  # above the floor: a power of two
    # another key (another float dtype) is not served; a graph freed and another built in
    # its place (possibly at the same id) is never served the old one's value
    memo = GraphMemo(size=2)
    assert memo.find(graphs[0]) is None and memo.keep(graphs[0], None, "a") == "a"
    assert memo.find(graphs[0]) == "a" and memo.find(graphs[0], "float64") is None
    other = g.TypedGraph.from_triples([("a", "r", "b")])
    memo.keep(other, None, "stale")
    del other  # freed: its id may be reused by one of these
    fresh = [g.TypedGraph.from_triples([("a", "r", "c")]) for _ in range(50)]
    assert all(memo.find(x) is None for x in fresh)  # whether or not CPython reused the id
    memo.keep(graphs[1], None, "b")
    memo.keep(graphs[2], None, "c")
    assert len(memo) == 2 and graphs[0] not in memo and graphs[2] in memo  # oldest first
    for bad in (-1, True, 1.0):
        with pytest.raises(ValueError, match="^n_paths must be an int >= 0"):
            g.GroundingConfig(lam=1.0, kappa=1.0, n_paths=bad)
    assert g.GroundingConfig(lam=1.0, kappa=1.0, n_paths=np.int64(2)).n_paths == 2


def test_edge_cost_uses_the_realizations_metric():
    """Eq. (8) with d_M = Manhattan: the residual is the L1 distance of T_r eta(u) to eta(v)."""
    graph = g.TypedGraph.from_triples([("a", "r", "b"), ("b", "r", "a")], [1.0, 0.5])
    emb = np.array([[0.0, 0.0], [1.0, 2.0]])
    real = g.Realization(jnp.asarray(emb), metric="manhattan")
    np.testing.assert_allclose(g.edge_cost(graph, real), [3.0, 3.0 + np.log(2)], **F64)


def test_edge_cost_is_eqs_8_to_10():
    rng = np.random.default_rng(1)
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "a"), ("a", "s", "a")], [1.0, 0.5, 0.25]
    )
    np.testing.assert_allclose(g.edge_cost(graph), [0.0, np.log(2), np.log(4)], **F64)
    np.testing.assert_allclose(
        g.edge_cost(graph, xi=2.0, hop_cost=0.1),
        0.1 + 2 * np.array([0.0, np.log(2), np.log(4)]),
        **F64,
    )
    emb, t = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    real = g.Realization(jnp.asarray(emb), g.geometry.Translation(jnp.asarray(t)))
    h, r, tl = (np.asarray(a) for a in (graph.head, graph.relation, graph.tail))
    geo = np.linalg.norm(emb[h] + t[r] - emb[tl], axis=1)  # d(T_r eta(u), eta(v)), Eq. (8)
    want = 0.2 + 0.5 * (geo + 1.5 * -np.log(np.asarray(graph.reliability)))
    np.testing.assert_allclose(
        g.edge_cost(graph, real, alpha=0.5, xi=1.5, hop_cost=0.2), want, **F64
    )


# ----------------------------------------------------------------------------- bad input
@functools.cache
def _g3():  # built on first use: importing a test module must not start JAX (forked workers)
    return g.TypedGraph.from_triples([("a", "r", "b")], entities=["a", "b", "c"])


@functools.cache
def _p3():
    return g.GroundingProblem("q", ("b", "c"), np.log([0.5, 0.5]), anchors=("a",), max_hops=2)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (
            lambda: g.ground(
                dataclasses.replace(_p3(), anchors=("zz",)), _g3(), lam=1.0, kappa=1.0
            ),
            ValueError,
            "'zz' is not in the evidence",  # a missing anchor (a missing candidate is no error)
        ),
        (
            lambda: g.ground(_p3(), g.TypedGraph.from_triples([]), lam=1.0, kappa=1.0),
            ValueError,
            "evidence is empty",
        ),
        (lambda: g.ground(_p3(), _g3(), lam=-1.0, kappa=1.0), ValueError, "lam"),
        (
            lambda: g.ground(_p3(), _g3(), lam=jnp.ones(3), kappa=1.0),
            ValueError,
            "lam must be a scalar",
        ),
        (lambda: g.ground(_p3(), _g3(), lam=1.0, kappa=0.0), ValueError, "kappa"),
        (lambda: g.ground(_p3(), _g3(), lam=1.0, kappa=1.0, tau=-0.1), ValueError, "tau"),
        (lambda: g.ground(_p3(), _g3(), lam=1.0, kappa=1.0, n_paths=-1), ValueError, "n_paths"),
        (lambda: g.ground(_p3(), "graph", lam=1.0, kappa=1.0), TypeError, "EvidenceState"),
        (
            lambda: g.ground(
                _p3(), _g3(), lam=1.0, kappa=1.0, realization=g.Realization(jnp.zeros((2, 2)))
            ),
            ValueError,
            "2 rows",
        ),
        (
            lambda: g.edge_cost(_g3(), g.Realization(jnp.zeros((2, 2)))),
            ValueError,
            "2 rows",
        ),
        (
            lambda: g.ground(
                dataclasses.replace(_p3(), max_hops=None), _g3(), lam=1.0, kappa=1.0, tau=0.5
            ),
            ValueError,
            "tau == 0",
        ),
        (
            lambda: g.ground(
                dataclasses.replace(_p3(), candidates=("c",), log_prior=jnp.zeros(1)),
                _g3(),
                lam=1.0,
                kappa=np.inf,
            ),
            ValueError,
            "Z_R",
        ),
        (
            lambda: g.GroundingProblem("q", ("b", "c"), jnp.log(jnp.full((3, 1), 1 / 3))),
            ValueError,
            "log_prior",
        ),
        (
            lambda: g.GroundingProblem("q", ("b", "c", "a", "x"), jnp.log(jnp.full(3, 1 / 3))),
            ValueError,
            r"log_prior must have shape \(4,\)",
        ),
        (
            lambda: g.GroundingProblem("q", ("b", "c"), jnp.log(jnp.array([0.5, 0.6]))),
            ValueError,
            "normalize",
        ),
        (lambda: g.GroundingProblem("q", (), jnp.zeros(0)), ValueError, "empty"),
        (lambda: g.GroundingProblem("q", ("b",), jnp.zeros(1)), ValueError, "anchors"),
        (
            lambda: g.GroundingProblem(
                "q", ("b", g.ClaimChain(("a", "b"), ("r",))), jnp.log(jnp.full(2, 0.5))
            ),
            TypeError,
            "all ClaimChains",
        ),
        (
            lambda: g.GroundingProblem(
                "q", ("b",), jnp.zeros(1), anchors=("a",), claim_energy=[-1.0]
            ),
            ValueError,
            "claim_energy",
        ),
        (lambda: g.ClaimChain(("a",), ()), ValueError, "T >= 1"),
        (lambda: g.ClaimChain(("a", 3), ("r",)), TypeError, "entities"),
        (lambda: g.ground_batch([], _g3(), lam=1.0, kappa=1.0), ValueError, "no problems"),
        (
            lambda: g.ground_batch([_p3()], [_g3(), _g3()], lam=1.0, kappa=1.0),
            ValueError,
            "1 problems but 2",
        ),
        (lambda: g.ground_batch([_p3()], _g3(), lam=1.0), TypeError, "kappa"),
    ],
)
def test_bad_input_is_a_clear_error_naming_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_an_edgeless_evidence_state_is_valid_and_asks_to_retrieve():
    """No edges: every candidate is unsupported, keeps positive mass (finite slack), and the
    decision is RETRIEVE (Axiom 8), never an answer or a hard negative."""
    bare = g.TypedGraph.from_triples([], entities=["a", "b", "c"])
    res = g.ground(_p3(), bare, lam=5.0, kappa=1.0, eps=0.5)
    assert np.all(res.status == g.EvidenceStatus.UNSUPPORTED)
    assert np.all(np.asarray(res.log_posterior) > -np.inf)
    assert res.decision is g.Action.RETRIEVE and res.answer is None and bool(res.hard_abstained)


def test_every_combination_of_flags_compiles_and_agrees_with_its_parts():
    """eps, theta, omega and margin_threshold each reach the result as the parts compute."""
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("a", "r", "c"), ("b", "r", "c")], [0.9, 0.3, 0.8]
    )
    p = g.GroundingProblem(
        "q", ("b", "c"), jnp.log(jnp.array([0.45, 0.55])), anchors=("a",), max_hops=2
    )
    for eps, theta, omega, margin in itertools.product(
        (None, 0.5), (None, 0.9), (None, 0.25), (0.0, 5.0)
    ):
        res = g.ground(
            p, graph, lam=2.0, kappa=1.0, eps=eps, theta=theta, omega=omega, margin_threshold=margin
        )
        want = g.decide(np.asarray(res.log_posterior), np.asarray(res.status), margin, theta)
        assert res.decision is want
        assert (res.hard_log_posterior is None) is (eps is None)
        if omega is not None:
            np.testing.assert_allclose(res.certificate.tv_sharp, np.tanh(2.0 * omega / 4), **F64)


def test_a_large_group_runs_in_two_parts_and_each_question_keeps_its_result():
    """70 questions of one shape would be padded to 128 rows: they run as 64 and 6 (padded to
    8), and every result is still its own question's (``ground`` alone)."""
    from grounding.solver.solve import SPLIT_ROWS, _parts

    assert _parts(list(range(70))) == [list(range(64)), list(range(64, 70))]
    assert _parts(list(range(100))) == [list(range(100))]  # 28 padding rows: one call
    assert 128 - 70 > SPLIT_ROWS >= 128 - 100
    rng = np.random.default_rng(7)
    ents = [f"e{i}" for i in range(10)]
    triples = sorted({(ents[h], "r", ents[t]) for h, t in rng.integers(0, 10, (25, 2)) if h != t})
    graph = g.TypedGraph.from_triples(triples, rng.uniform(0.3, 1.0, len(triples)), entities=ents)
    problems, states = [], []
    for _ in range(70):  # each question its own topic, prior and evidence
        topic = ents[int(rng.integers(10))]
        ends = [e for e in ents if e != topic][:4]
        chains = [g.ClaimChain((topic, e), ("r",)) for e in ends]
        problems.append(g.GroundingProblem("q", chains, g.log_normalize(rng.normal(size=4))))
        keep = np.sort(rng.choice(graph.n_edges, graph.n_edges * 2 // 3, replace=False))
        states.append(g.EvidenceState(graph.subgraph(keep)))
    config = g.GroundingConfig(lam=1.5, kappa=1.0, n_paths=1)
    batch = g.ground_batch(problems, states, config)
    for p, s, b in zip(problems, states, batch):
        _assert_same_grounding(b, g.ground(p, s, config))
