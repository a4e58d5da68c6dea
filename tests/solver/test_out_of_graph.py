"""Out-of-graph candidates (the paper's *unobserved* case): a candidate that names an entity
the evidence graph lacks is grounded exactly as if that entity were in the graph without
edges — raw energy ``+inf``, status unsupported (unless out of schema or contradicted), slack
energy ``kappa`` (Eq. (19)), outside the hard feasible set (Eq. (5)); a missing anchor is an
error naming every missing anchor.

The oracle: the same problem grounded on the graph with each missing entity added as an
isolated node (no edges) must give the same result, field by field.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest
from _tol import F64
from hypothesis import given, note, settings
from hypothesis import strategies as st

import grounding as g
from grounding.testing.strategies import grounding_problems, seeds

S = g.EvidenceStatus
lams = st.sampled_from([0.0, 1.0, 4.0])
kappas = st.sampled_from([0.5, 1.0, 3.0])
taus = st.sampled_from([0.0, 0.4])
FIELDS = ("raw_energy", "energy", "status", "log_posterior", "best", "action")


def _with_isolated(graph: g.TypedGraph, names) -> g.TypedGraph:
    """``graph`` with ``names`` added as entities without edges (same edges, same indices)."""
    extra = tuple(n for n in dict.fromkeys(names) if not graph.has_entity(n))
    return dataclasses.replace(graph, entities=graph.entities + extra)


def _out_of_graph(problem: g.GroundingProblem, rng: np.random.Generator):
    """``problem`` with some candidates' entities renamed to names the graph lacks (``zz0``,
    ``zz1``, ...; never an anchor), at least one; and the names used."""
    missing = [f"zz{i}" for i in range(3)]
    anchors = set(problem.anchors)
    if problem.kind == "answer":
        cands = list(problem.candidates)
        which = rng.permutation(len(cands))[: int(rng.integers(1, len(cands) + 1))]
        for j, i in enumerate(sorted(which)):
            if cands[i] not in anchors:
                cands[i] = missing[j % len(missing)]
        if not set(cands) & set(missing):  # every chosen one was an anchor: add one
            cands = [*cands, missing[0]]
            lp = np.append(np.asarray(problem.log_prior) + np.log(0.5), np.log(0.5))
            return dataclasses.replace(problem, candidates=tuple(cands), log_prior=lp)
        # keep the answers distinct: a renamed duplicate merges its mass
        return g.GroundingProblem.merged(
            problem.question, cands, problem.log_prior, anchors=problem.anchors,
            max_hops=problem.max_hops, min_hops=problem.min_hops,
        )  # fmt: skip
    chains = []
    for c in problem.candidates:
        ents = list(c.entities)
        for t in range(len(ents)):
            if rng.random() < 0.35:
                ents[t] = str(rng.choice(missing))
        chains.append(dataclasses.replace(c, entities=tuple(ents)))
    if not any(set(c.entities) & set(missing) for c in chains):
        c = chains[0]
        chains[0] = dataclasses.replace(c, entities=(*c.entities[:-1], missing[0]))
    return dataclasses.replace(problem, candidates=tuple(chains))


def _assert_same(got: g.GroundingResult, want: g.GroundingResult) -> None:
    for field in FIELDS:
        np.testing.assert_allclose(getattr(got, field), getattr(want, field), **F64, err_msg=field)
    np.testing.assert_allclose(got.certificate.radius, want.certificate.radius, **F64)
    if want.hard_log_posterior is not None:
        np.testing.assert_allclose(got.hard_log_posterior, want.hard_log_posterior, **F64)
        assert bool(got.hard_abstained) == bool(want.hard_abstained)


@settings(max_examples=max(6, settings.default.max_examples // 3))
@given(grounding_problems(), lams, kappas, taus, seeds, st.booleans())
def test_an_out_of_graph_entity_is_grounded_as_an_entity_without_edges(
    gp, lam, kappa, tau, seed, functional
):
    """Eq. (19), Sec. 3.3: the oracle is the graph with the missing entities added as
    isolated nodes; statuses, energies, posteriors (soft and hard), action and certificate
    are equal, for answer candidates and claim chains, with or without counter-evidence."""
    graph, problem = gp
    rng = np.random.default_rng(seed)
    problem = _out_of_graph(problem, rng)
    names = [e for e in problem.entities() if not graph.has_entity(e)]
    assert names
    negative = frozenset()
    if problem.kind == "chain":  # a declared negative naming a missing entity counts in both
        hop = next(h for c in problem.candidates for h in c.hops)
        if None not in hop and rng.random() < 0.5:
            negative = frozenset({hop})
    fun = frozenset(graph.relations[:1]) if functional else frozenset()
    state = g.EvidenceState(graph, negative=negative, functional=fun)
    plus = g.EvidenceState(_with_isolated(graph, names), negative=negative, functional=fun)
    kw = dict(lam=lam, kappa=kappa, tau=tau, eps=0.5, n_paths=0)
    try:
        want = g.ground(problem, plus, **kw)
    except ValueError as err:  # Z = 0 cannot happen at finite kappa
        raise AssertionError(err) from None
    got = g.ground(problem, state, **kw)
    note(f"status {np.asarray(got.status)}, raw {np.asarray(got.raw_energy)}")
    _assert_same(got, want)
    out = np.asarray(
        [
            any(e in names for e in (c.entities if isinstance(c, g.ClaimChain) else (c,)))
            for c in problem.candidates
        ]
    )
    assert np.all(np.isinf(got.raw_energy[out]))  # no walk
    assert np.all(got.hard_log_posterior[out] == -np.inf)  # outside F_R
    plain = np.asarray(got.status)[out] == int(S.UNSUPPORTED)
    np.testing.assert_array_equal(np.asarray(got.energy)[out][plain], kappa)  # Eq. (19)
    # ground_batch agrees (per-question evidence: compacted, the missing names kept out)
    for b in g.ground_batch([problem, problem], [state, state], **kw):
        _assert_same(b, want)


def _lou_seal():
    graph = g.TypedGraph.from_triples(
        [("lou_seal", "mascot_of", "giants"), ("giants", "won", "ws_2014")],
        [0.9, 0.8],
        entities=["giants", "lou_seal", "ws_2014", "cardinals"],  # node 0 has a walk
    )
    return graph


def test_an_answer_out_of_the_graph_is_unsupported_with_slack_energy_and_not_hard_feasible():
    """The numbers by hand: ``ws_2014`` is supported (two hops, reliabilities 0.9 and 0.8),
    ``ws_2099`` is not in the graph: raw ``+inf``, energy ``kappa``, status UNSUPPORTED,
    posterior ``prior * exp(-lam * kappa) / Z`` and zero hard mass."""
    graph = _lou_seal()
    prior = np.array([0.3, 0.7])
    p = g.GroundingProblem(
        "when?", ("ws_2014", "ws_2099"), jnp.log(prior), anchors=("lou_seal",), max_hops=2
    )
    res = g.ground(p, graph, lam=2.0, kappa=1.0, eps=1.0)
    e = -np.log(0.9) - np.log(0.8)
    np.testing.assert_allclose(res.raw_energy, [e, np.inf], **F64)
    np.testing.assert_allclose(res.energy, [e, 1.0], **F64)
    assert [S(int(s)) for s in res.status] == [S.SUPPORTED, S.UNSUPPORTED]
    w = prior * np.exp(-2.0 * np.array([e, 1.0]))
    np.testing.assert_allclose(np.exp(res.log_posterior), w / w.sum(), **F64)
    np.testing.assert_allclose(np.exp(res.hard_log_posterior), [1.0, 0.0], **F64)
    assert res.answer == "ws_2014" and res.paths.length[1, 0] == -1  # no walk reported
    # the same as a claim chain with a missing last mention, and a missing intermediate
    chains = (
        g.ClaimChain(("lou_seal", "giants", "ws_2014"), ("mascot_of", "won")),
        g.ClaimChain(("lou_seal", "giants", "ws_2099"), ("mascot_of", "won")),
        g.ClaimChain(("lou_seal", "dodgers", None), ("mascot_of", "won")),
    )
    pc = g.GroundingProblem("when?", chains, jnp.log(jnp.array([0.3, 0.4, 0.3])))
    rc = g.ground(pc, graph, lam=2.0, kappa=1.0, eps=1.0)
    np.testing.assert_allclose(rc.raw_energy, [e, np.inf, np.inf], **F64)
    np.testing.assert_allclose(rc.energy, [e, 1.0, 1.0], **F64)
    assert [S(int(s)) for s in rc.status] == [S.SUPPORTED, S.UNSUPPORTED, S.UNSUPPORTED]
    np.testing.assert_allclose(np.exp(rc.hard_log_posterior), [1.0, 0.0, 0.0], **F64)


def test_when_every_candidate_is_out_of_the_graph_the_hard_rule_abstains():
    """An empty feasible set, as today for any: ``hard_abstained`` and all ``-inf`` hard
    posterior (Eq. (6) undefined); the soft posterior keeps the prior (every energy is
    ``kappa``) and the decision is RETRIEVE (Axiom 8: absence is not falsity)."""
    graph = _lou_seal()
    prior = np.array([0.6, 0.4])
    p = g.GroundingProblem("?", ("x1", "x2"), jnp.log(prior), anchors=("lou_seal",), max_hops=2)
    for res in (g.ground(p, graph, lam=3.0, kappa=1.0), *g.ground_batch([p], [graph], lam=3.0,
                                                                         kappa=1.0)):  # fmt: skip
        assert bool(res.hard_abstained) and np.all(res.hard_log_posterior == -np.inf)
        np.testing.assert_allclose(np.exp(res.log_posterior), prior, **F64)
        assert res.decision is g.Action.RETRIEVE and res.answer is None
        assert [S(int(s)) for s in res.status] == [S.UNSUPPORTED] * 2
    # at kappa = inf nothing has finite energy: Z_R = 0, as for isolated entities
    with pytest.raises(ValueError, match="Z_R"):
        g.ground(p, graph, lam=3.0, kappa=np.inf)


def test_missing_anchors_are_an_error_naming_each_and_the_fix():
    graph = _lou_seal()
    p = g.GroundingProblem(
        "?", ("giants", "zz"), jnp.log(jnp.array([0.5, 0.5])), anchors=("nobody", "lou_seal",
                                                                        "noone"), max_hops=2
    )  # fmt: skip
    for call in (
        lambda: g.ground(p, graph, lam=1.0, kappa=1.0),
        lambda: g.ground_batch([p], graph, lam=1.0, kappa=1.0),
        lambda: g.ground_batch([p], [graph], lam=1.0, kappa=1.0),
    ):
        with pytest.raises(ValueError) as err:
            call()
        msg = str(err.value)
        assert "'nobody', 'noone' are not in the evidence graph" in msg, msg
        assert "'zz'" not in msg and "lou_seal" not in msg
        assert "link the topic to a graph entity" in msg
    # a claim chain's declared anchor too; its missing mentions are not an error
    chain = g.ClaimChain(("nobody", "giants"), ("mascot_of",))
    pc = g.GroundingProblem("?", (chain,), jnp.zeros(1), anchors=("nobody",))
    with pytest.raises(ValueError, match="anchor \\(topic\\) entity 'nobody' is not in"):
        g.ground(pc, graph, lam=1.0, kappa=1.0)
    res = g.ground(dataclasses.replace(pc, anchors=()), graph, lam=1.0, kappa=1.0)
    assert S(int(res.status[0])) is S.UNSUPPORTED


def test_out_of_graph_candidates_add_no_compiled_program():
    """The out-of-graph flag is an input array: a question with out-of-graph candidates uses
    the program of the same question without them (same shapes), compiled once."""
    from grounding import programs

    graph = _lou_seal()
    lp = jnp.log(jnp.array([0.5, 0.5]))
    inside = g.GroundingProblem("?", ("giants", "ws_2014"), lp, anchors=("lou_seal",), max_hops=2)
    outside = dataclasses.replace(inside, candidates=("giants", "ws_2099"))
    g.ground(inside, graph, lam=1.0, kappa=1.0)
    before = programs.program_info()["compilations"]
    g.ground(outside, graph, lam=1.0, kappa=1.0)
    assert programs.program_info()["compilations"] == before
