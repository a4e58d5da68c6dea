"""The grounded loop (grounding.qa.grounded): the loop against ``ground`` called by hand,
abstentions, evidence, free-text questions."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest
from _brute import follow

from grounding import GroundingConfig, ground
from grounding.datasets import kgqa_benchmark
from grounding.learn import KGEModel
from grounding.problem import ClaimChain, GroundingProblem
from grounding.qa import (
    Candidates,
    GroundedQA,
    KGEAnswerer,
    grounding_problem,
    score_probabilities,
)
from grounding.retrieval import PCR, TextIndex


@pytest.fixture(scope="module")
def umls_loop():
    bench = kgqa_benchmark("umls", questions_per_hop=40, seed=1)
    rng = np.random.default_rng(0)
    kg = bench.kg
    model = KGEModel(
        "transe",
        jnp.asarray(rng.normal(size=(kg.n_entities, 8))),
        jnp.asarray(rng.normal(size=(kg.n_relations, 8))),
    )
    answerer = KGEAnswerer(model, kg.entities, kg.relations, temperature=2.0)
    index = TextIndex(bench.graph)
    pcr = {h: PCR(index, max_hops=h) for h in (1, 2, 3)}
    return bench, answerer, pcr


def test_loop_equals_ground_called_by_hand(umls_loop):
    bench, answerer, pcr = umls_loop
    qs = bench.split("test")[:8]
    qa = GroundedQA(
        answerer, lambda d: pcr[d], GroundingConfig(lam=2.0, kappa=1.0), k_candidates=10, k_nodes=30
    )
    outs = qa.answer_batch(qs)
    for q, o in zip(qs, outs):
        cands = answerer.propose(q, 10)
        chains = tuple(
            ClaimChain((q.topic, *([None] * (q.hops - 1)), a), q.chain) for a in cands.entities
        )
        problem = GroundingProblem(q.text, chains, cands.log_prior)
        state = pcr[q.hops].retrieve(q.query(), 30).evidence
        ref = ground(problem, state, lam=2.0, kappa=1.0, eps=0.0)
        np.testing.assert_allclose(o.result.log_posterior, ref.log_posterior, atol=1e-12)
        np.testing.assert_allclose(o.result.hard_log_posterior, ref.hard_log_posterior, atol=1e-12)
        assert o.result.names == ref.names and int(o.result.action) == int(ref.action)
        assert o.best == cands.entities[int(ref.best)]
        assert o.answer == (o.best if ref.answer is not None else None)
        # the oracle: a candidate has a finite raw energy iff its typed chain walks the evidence
        ev = state.graph.triples()
        for j, a in enumerate(cands.entities):
            reach = {q.topic}
            for r in q.chain:
                reach = follow(ev, reach, r)
            assert np.isfinite(float(o.result.raw_energy[j])) == (a in reach)


def test_loop_reports_model_abstention(umls_loop):
    bench, answerer, pcr = umls_loop
    q = dataclasses.replace(bench.split("test")[0], topic="not_an_entity")
    qa = GroundedQA(answerer, lambda d: pcr[d], GroundingConfig(lam=1.0, kappa=1.0))
    [o] = qa.answer_batch([q])
    assert o.result is None and o.answer is None and "not_an_entity" in o.reason
    assert score_probabilities((), np.zeros(0), q.answers, abstained=True)["hit"] == 0.0
    with pytest.raises(TypeError, match="kappa"):
        GroundingConfig(lam=1.0)
    with pytest.raises(TypeError, match="config must be a GroundingConfig"):
        GroundedQA(answerer, pcr[1], {"lam": 1.0, "kappa": 1.0})
    with pytest.raises(TypeError, match="config"):
        GroundedQA(answerer, pcr[1])
    with pytest.raises(ValueError, match="k_nodes"):
        GroundedQA(answerer, pcr[1], GroundingConfig(lam=1.0, kappa=1.0), k_nodes=0)
    with pytest.raises(ValueError, match="abstained"):
        grounding_problem(q, Candidates.abstain("no idea"))


def test_retrieval_evidence_keeps_shortest_paths(umls_loop):
    """Every retrieved node is reachable from the anchor in the evidence subgraph at its
    distance in the full graph (the walk-back keeps one shortest path)."""
    bench, _, pcr = umls_loop
    g = bench.graph
    for q in bench.split("test")[:5]:
        r = pcr[2].retrieve(q.query(), 20)
        full = g.distances(r.anchors)[0]
        sub = r.evidence.graph.distances(r.anchors)[0]
        np.testing.assert_array_equal(sub[r.index], full[r.index])


def test_edges_from_and_subgraph_by_indices(umls_loop):
    g = umls_loop[0].graph
    rng = np.random.default_rng(0)
    nodes = rng.choice(g.n_nodes, 7, replace=False)
    want = np.flatnonzero(np.isin(np.asarray(g.head), nodes))
    np.testing.assert_array_equal(g.edges_from(nodes), want)
    mask = np.zeros(g.n_edges, bool)
    mask[want] = True
    assert g.subgraph(want).triples() == g.subgraph(mask).triples()
    assert g.subgraph(want).entity_index(g.entities[5]) == 5
    with pytest.raises(ValueError, match="increasing"):
        g.subgraph(want[::-1])
    with pytest.raises(ValueError, match="increasing"):  # a repeated edge
        g.subgraph(want[[0, 1, 1, 2]])
    with pytest.raises(ValueError, match="lie in"):
        g.subgraph(np.array([g.n_edges]))


def test_free_text_questions_are_grounded_as_answer_candidates(umls_loop):
    """Without a relation chain (e.g. an LLM's free-text question) candidates are answers
    grounded by any walk of 1..3 hops from the topic: equal to ``ground`` by hand."""
    bench, _, pcr = umls_loop
    q0 = bench.split("test", 2)[0]
    q = dataclasses.replace(q0, chain=())
    cands = Candidates.from_scores(list(q0.answers[:2]) + [bench.kg.entities[0]], [0.0, -1.0, -2.0])

    class Fixed:
        def propose(self, question, k):
            return cands

    [o] = GroundedQA(Fixed(), pcr[2], GroundingConfig(lam=1.0, kappa=1.0), k_nodes=30).answer_batch(
        [q]
    )
    problem = grounding_problem(q, cands)
    assert problem.kind == "answer" and problem.anchors == (q.topic,) and problem.max_hops == 3
    state = pcr[2].retrieve(q.query(), 30).evidence
    ref = ground(problem, state, lam=1.0, kappa=1.0, eps=0.0)
    np.testing.assert_allclose(o.result.log_posterior, ref.log_posterior, atol=1e-12)


def test_soft_pcr_prior_normalizes_on_a_large_graph():
    """Regression: the semantic prior of soft PCR over CoDEx-M's 17,050 nodes was normalized
    in float32 and missed by 4.5e-4, which ``ground`` rejects; it is now float64."""
    from grounding.retrieval import SoftPCR

    bench = kgqa_benchmark("codex-m", questions_per_hop=500)
    q = bench.split("test", 2)[7]  # its float32 normalization missed by 1.8e-3
    soft = SoftPCR(TextIndex(bench.graph), max_hops=2)
    r = soft.retrieve(q.query(), 50)
    assert len(r.index) == 50 and np.all(np.isfinite(r.scores))


def test_release_programs_after_each_batch(umls_loop):
    """``release_programs=True`` leaves no compiled program behind a batch, and the answers
    are those of a loop that keeps its programs."""
    from grounding import programs

    bench, answerer, pcr = umls_loop
    qs = bench.split("test")[:4]
    cfg = GroundingConfig(lam=2.0, kappa=1.0)
    keep = GroundedQA(answerer, lambda d: pcr[d], cfg, k_candidates=5, k_nodes=20)
    want = [o.answer for o in keep.answer_batch(qs)]
    assert programs.program_info()["live"] > 0
    free = GroundedQA(
        answerer, lambda d: pcr[d], cfg, k_candidates=5, k_nodes=20, release_programs=True
    )
    assert [o.answer for o in free.answer_batch(qs)] == want
    assert programs.program_info()["live"] == 0
    with pytest.raises(TypeError, match="release_programs"):
        GroundedQA(answerer, pcr[1], cfg, release_programs=1)


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_claim_chains_are_the_chains_claimchain_builds(hops):
    """The loop's chains (built without re-checking each) equal ClaimChain's own, name
    included; input ClaimChain would refuse is refused the same way."""
    from grounding.qa.pipeline import claim_chains

    rels = tuple(f"r{i}" for i in range(hops))
    pairs = [("topic", f"a{i}") for i in range(5)] + [("other", "a0")]
    got = claim_chains(pairs, rels)
    want = tuple(ClaimChain((d, *(None,) * (hops - 1), a), rels) for d, a in pairs)
    assert got == want
    assert [c.name for c in got] == [c.name for c in want]
    assert [c.description for c in got] == [""] * len(pairs)
    assert claim_chains([("topic", None)], rels)[0].entities[-1] is None  # an open answer
    for bad_pairs, bad_rels in (([("topic", "")], rels), ([("topic", 3)], rels), (pairs, ())):
        with pytest.raises((TypeError, ValueError)):
            claim_chains(bad_pairs, bad_rels)
