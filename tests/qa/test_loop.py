"""Grounded question answering: the templated benchmark against brute force, the KGE answerer
against explicit chain scoring, the loop against ``ground`` called by hand, and the metrics
against direct formulas."""

from __future__ import annotations

import dataclasses
import re

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grounding import GroundingConfig, ground
from grounding.datasets import KGQuestion, kgqa_benchmark, load_kg
from grounding.learn import KGEModel, ReciprocalModel
from grounding.problem import ClaimChain, GroundingProblem
from grounding.qa import (
    Candidates,
    GroundedQA,
    KGEAnswerer,
    answer_f1,
    answer_set,
    expected_calibration_error,
    grounding_problem,
    risk_coverage,
    score_probabilities,
)
from grounding.query import relation_phrase
from grounding.retrieval import PCR, TextIndex


def _follow(triples, frontier, rel):
    """Brute force: one step of a chain over name triples (``r^-1`` reads ``r`` backwards)."""
    if rel.endswith("^-1"):
        base = rel[:-3]
        return {h for h, r, t in triples if r == base and t in frontier}
    return {t for h, r, t in triples if r == rel and h in frontier}


@pytest.fixture(scope="module")
def nations_bench():
    return kgqa_benchmark("nations", questions_per_hop=40, max_answers=8, seed=3)


def test_benchmark_answers_match_brute_force(nations_bench):
    kg = nations_bench.kg
    world = kg.names(kg.all_triples())
    observed = kg.names(kg.train)
    assert len(nations_bench.questions) == 120
    for q in nations_bench.questions:
        ans, obs = {q.topic}, {q.topic}
        for r in q.chain:
            ans, obs = _follow(world, ans, r), _follow(observed, obs, r)
        ans.discard(q.topic)
        obs.discard(q.topic)
        assert set(q.answers) == ans and 0 < len(ans) <= 8
        assert set(q.observed) == obs
        assert set(q.unobserved) == ans - obs
        for a, b in zip(q.chain, q.chain[1:]):  # never straight back
            assert b != (a[:-3] if a.endswith("^-1") else a + "^-1")


def test_benchmark_is_deterministic_and_split(nations_bench):
    again = kgqa_benchmark("nations", questions_per_hop=40, max_answers=8, seed=3)
    assert again.questions == nations_bench.questions
    other = kgqa_benchmark("nations", questions_per_hop=40, max_answers=8, seed=4)
    assert other.questions != nations_bench.questions
    for h in (1, 2, 3):
        assert [len(nations_bench.split(s, h)) for s in ("train", "valid", "test")] == [32, 4, 4]
    stats = nations_bench.statistics()
    assert [r["questions"] for r in stats] == [40, 40, 40]
    assert all(0 <= r["with_unobserved"] <= 1 for r in stats)


def test_benchmark_graph_is_train_with_inverses(nations_bench):
    g, kg = nations_bench.graph, nations_bench.kg
    assert g.n_edges == 2 * len(kg.train)
    triples = set(g.triples())
    for h, r, t in kg.names(kg.train)[:50]:
        assert (h, r, t) in triples and (t, r + "^-1", h) in triples
    q = nations_bench.questions[0]
    assert q.query().anchor == q.topic and q.query().relevant == q.answers


@pytest.mark.parametrize(
    "label, inverse, phrase",
    [
        ("capital", False, "the capital of X"),
        ("capital", True, "the entity whose capital is X"),
        ("member of", False, "the entity that X is member of"),
        ("member of", True, "the entity that is member of X"),
        ("founded by", False, "the entity that X is founded by"),
        ("located in the administrative territorial entity", True,
         "the entity that is located in the administrative territorial entity X"),
        ("treats", False, "the entity that X treats"),
        ("shares border with", True, "the entity that shares border with X"),
        ("isa", False, "the entity that X is a kind of"),
        ("symptoms", False, "the symptoms of X"),
        ("languages spoken, written, or signed", False, "the languages spoken, written, or signed of X"),
    ],
)  # fmt: skip
def test_relation_phrase_reads_the_label_form(label, inverse, phrase):
    assert relation_phrase(label, "X", inverse=inverse) == phrase


@pytest.mark.parametrize("name", ["codex-m", "umls"])
def test_question_texts_never_double_a_preposition(name):
    bench = kgqa_benchmark(name, questions_per_hop=60)
    prep = "(of|by|at|with|to|in)"
    doubled = re.compile(rf"\b{prep} {prep}\b")  # "the member of of X"
    whose = re.compile(rf"whose ((?! is ).)*? {prep} is\b")  # "the entity whose member of is X"
    bad = [q.text for q in bench.questions if doubled.search(q.text) or whose.search(q.text)]
    assert not bad, bad[:3]


def test_benchmark_bad_arguments():
    for kw in (
        dict(hops=(4,)),
        dict(hops=()),
        dict(questions_per_hop=0),
        dict(max_answers=-1),
        dict(split_fractions=(0.5, 0.5, 0.5)),
    ):
        with pytest.raises(ValueError):
            kgqa_benchmark("nations", **kw)
    with pytest.raises(ValueError, match="unknown dataset"):
        kgqa_benchmark("freebase")


def test_codex_loader_texts_and_negatives():
    kg = load_kg("codex-s")
    assert (kg.n_entities, kg.n_relations) == (2034, 42)
    assert len(kg.negative_triples("valid")) == 1827 and len(kg.negative_triples("test")) == 1828
    assert len(kg.negative_triples("train")) == 0
    assert all(t.startswith(e) for e, t in zip(kg.entities, kg.node_texts))
    assert kg.graph().node_texts == kg.node_texts
    with pytest.raises(TypeError):
        load_kg(None)


# ----------------------------------------------------------------------------- the answerer
def _random_model(kind, n=7, n_rel=3, d=4, seed=0):
    rng = np.random.default_rng(seed)
    ent = rng.normal(size=(n, d))
    rel = rng.normal(size=(n_rel, d)) if kind == "transe" else rng.uniform(-3, 3, (n_rel, d // 2))
    return KGEModel(kind, jnp.asarray(ent), jnp.asarray(rel), p=2)


@given(
    kind=st.sampled_from(["transe", "rotate"]),
    chain=st.lists(
        st.sampled_from(["a", "b", "c", "a^-1", "b^-1", "c^-1"]), min_size=1, max_size=3
    ),
    topic=st.integers(0, 6),
    seed=st.integers(0, 100),
)
def test_answerer_composition_equals_explicit_chain_scoring(kind, chain, topic, seed):
    m = _random_model(kind, seed=seed)
    names = [f"e{i}" for i in range(7)]
    ans = KGEAnswerer(m, names, ["a", "b", "c"], temperature=0.7)
    E, R = np.asarray(m.entity), np.asarray(m.relation)
    r_ix = {"a": 0, "b": 1, "c": 2}
    if kind == "transe":
        x = E[topic].copy()
        for r in chain:
            x = x - R[r_ix[r[:-3]]] if r.endswith("^-1") else x + R[r_ix[r]]
        d = np.linalg.norm(E - x, axis=1)
    else:
        z = E[:, 0::2] + 1j * E[:, 1::2]
        x = z[topic].copy()
        for r in chain:
            sign = -1 if r.endswith("^-1") else 1
            x = x * np.exp(1j * sign * R[r_ix[r.removesuffix("^-1")]])
        d = np.abs(z - x).sum(axis=1)
    want = -d / 0.7
    want[topic] = -np.inf
    got = ans.log_scores(names[topic], chain)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    q = KGQuestion("q", "?", names[topic], tuple(chain), (), (), "test")
    c = ans.propose(q, 3)
    top = np.argsort(-want, kind="stable")[:3]
    assert c.entities == tuple(names[i] for i in top)
    np.testing.assert_allclose(c.log_prior, want[top] - np.logaddexp.reduce(want[top]), atol=1e-9)


@given(
    kind=st.sampled_from(["transe", "complex"]),
    chain=st.lists(st.sampled_from(["a", "b", "a^-1", "b^-1"]), min_size=1, max_size=3),
    topic=st.integers(0, 5),
    seed=st.integers(0, 100),
)
def test_reciprocal_answerer_uses_learned_reciprocals(kind, chain, topic, seed):
    rng = np.random.default_rng(seed)
    E, W = rng.normal(size=(6, 4)), rng.normal(size=(4, 4))  # rows 2, 3: a^-1, b^-1
    m = ReciprocalModel(kind, jnp.asarray(E), jnp.asarray(W))
    ans = KGEAnswerer(m, [f"e{i}" for i in range(6)], ["a", "b"], temperature=0.5)
    row = {"a": 0, "b": 1, "a^-1": 2, "b^-1": 3}
    if kind == "transe":
        x = E[topic] + sum(W[row[r]] for r in chain)
        want = -np.linalg.norm(E - x, axis=1) / 0.5
    else:
        z = E[:, :2] + 1j * E[:, 2:]
        x = z[topic] * np.prod([W[row[r], :2] + 1j * W[row[r], 2:] for r in chain], axis=0)
        want = (z.conj() @ x).real / 0.5
    want[topic] = -np.inf
    np.testing.assert_allclose(ans.log_scores(f"e{topic}", chain), want, rtol=1e-9, atol=1e-9)


def test_answerer_abstains_or_raises_with_reasons():
    m = _random_model("transe")
    ans = KGEAnswerer(m, [f"e{i}" for i in range(7)], ["a", "b", "c"])
    out = ans.propose(KGQuestion("q", "?", "nobody", ("a",), (), (), "test"), 3)
    assert out.abstained and "nobody" in out.abstain_reason
    out = ans.propose(KGQuestion("q", "?", "e0", ("zzz",), (), (), "test"), 3)
    assert out.abstained and "zzz" in out.abstain_reason
    with pytest.raises(ValueError, match="temperature"):
        KGEAnswerer(m, [f"e{i}" for i in range(7)], ["a", "b", "c"], temperature=0.0)
    with pytest.raises(ValueError, match="entity names"):
        KGEAnswerer(m, ["e0"], ["a", "b", "c"])
    with pytest.raises(ValueError, match="composes transe, rotate"):
        KGEAnswerer(dataclasses.replace(m, kind="linear"), [f"e{i}" for i in range(7)], "abc")


# ----------------------------------------------------------------------------- the loop
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
                reach = _follow(ev, reach, r)
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


# ----------------------------------------------------------------------------- metrics
def test_candidates_from_scores_and_validation():
    c = Candidates.from_scores(["a", "b", "a", "c"], [0.0, np.log(2), 0.0, -np.inf], k=2)
    assert c.entities == ("a", "b")
    np.testing.assert_allclose(np.exp(c.log_prior), [0.5, 0.5])
    assert Candidates.from_scores(["a"], [-np.inf]).abstained
    for bad in (
        dict(entities=(), log_prior=[]),
        dict(entities=("a", "a"), log_prior=[0.0, 0.0]),
        dict(entities=("a",), log_prior=[0.5]),
        dict(entities=("a",), log_prior=[np.nan]),
    ):
        with pytest.raises(ValueError):
            Candidates(**bad)
    with pytest.raises(ValueError, match="reason"):
        Candidates.abstain("")


@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=30))
def test_risk_coverage_matches_brute_force(rows):
    conf = np.array([c for c, _ in rows])
    ok = np.array([float(y) for _, y in rows])
    out = risk_coverage(conf, ok)
    n = len(rows)
    # brute force: expected risk over random tie-breaking, by averaging over orderings
    rng = np.random.default_rng(0)
    want = np.zeros(n)
    for _ in range(200):
        order = np.lexsort((rng.permutation(n), -conf))
        want += np.cumsum(1 - ok[order]) / np.arange(1, n + 1)
    want /= 200
    # exact on blocks' ends; within blocks the tie rule is the mean increment
    ends = np.r_[np.flatnonzero(np.diff(np.sort(-conf)) != 0), n - 1]
    np.testing.assert_allclose(out["risk"][ends], want[ends], atol=1e-9)
    assert out["aurc"] == pytest.approx(out["risk"].mean())


def test_ece_and_f1_by_hand():
    conf = np.array([0.95, 0.9, 0.55, 0.2])
    ok = np.array([1, 0, 1, 0])
    want = 0.5 * abs(0.5 - 0.925) + 0.25 * abs(1 - 0.55) + 0.25 * abs(0 - 0.2)
    assert expected_calibration_error(conf, ok) == pytest.approx(want)
    assert answer_f1(["a"], ["a"]) == 1.0 and answer_f1([], ["a"]) == 0.0
    assert answer_set(["a", "b", "c"], np.array([0.5, 0.3, 0.2])) == ("a", "b")
    s = score_probabilities(["a", "b"], np.array([0.2, 0.8]), ["b"])
    assert (s["hit"], s["confidence"]) == (1.0, 0.8)
    with pytest.raises(ValueError):
        risk_coverage(np.array([0.5]), np.array([2.0]))
    with pytest.raises(ValueError):
        expected_calibration_error(np.array([1.5]), np.array([1]))


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


# ----------------------------------------------------------------------------- four systems
# One small world the four systems can all answer: alice received prize1 (certain) and prize2
# (reliability 0.5: a walk of energy log 2 ~ 0.69 < kappa = 1, so supported but not at
# eps = 0); film1 is what the award was for, so the claim "alice -award-> film1" has no walk.
# The hypergraph carries the same facts as statements (film1 a qualifier of prize1's
# statement): PRoH's claims run over role relations, and its evidence (the bipartite graph of
# the hyperedges its beam search visits, here all of them) gives each answer entity the same
# walk energies, so the four systems are compared candidate by candidate by answer entity.
_WORLD_PRIOR = {"prize1": 0.2, "prize2": 0.5, "film1": 0.3}
_WORLD_TEXT = "Which award did alice receive?"


def _world_graph():
    from grounding import TypedGraph

    return TypedGraph.from_triples(
        [
            ("alice", "award", "prize1"),
            ("alice", "award", "prize2"),
            ("alice", "for_work", "film1"),
        ],
        reliability=[1.0, 0.5, 1.0],
        entities=["alice", "prize1", "prize2", "film1", "bob"],
    )


def _world_hypergraph():
    from grounding.hypergraph import KnowledgeHypergraph

    return KnowledgeHypergraph.from_statements(
        [("alice", "award", "prize1", (("for_work", "film1"),)), ("alice", "award", "prize2", ())],
        reliability=[1.0, 0.5],
    )


class _WorldModel:
    """The candidate model: the same three answers and prior for every question."""

    def propose(self, question, k):
        return Candidates.from_scores(list(_WORLD_PRIOR), np.log(list(_WORLD_PRIOR.values())), k=k)


class _WorldAnswerer:
    """BlindQA's answerer: the same prior along any chain (entities outside it: -inf)."""

    def __init__(self, entities):
        self.entities = tuple(entities)

    def log_scores(self, topic, chain):
        return np.array([np.log(_WORLD_PRIOR[e]) if e in _WORLD_PRIOR else -np.inf
                         for e in self.entities])  # fmt: skip


class _WorldPredictor:
    """BlindQA's predictor: the chain ``award`` with probability 1."""

    def predict(self, questions, k):
        return [[(("award",), 1.0)] for _ in questions]


class _WholeGraph:
    """A retriever whose evidence is the whole graph."""

    def __init__(self, graph):
        self.graph = graph

    def retrieve(self, query, k):
        from grounding import EvidenceState
        from grounding.retrieval import Retrieval

        n = self.graph.n_nodes
        return Retrieval(query, np.arange(n), np.zeros(n), self.graph, "whole",
                         given_evidence=EvidenceState(self.graph))  # fmt: skip


class _OnePlan:
    def __init__(self, plan):
        self._plan = plan

    def plan(self, question):
        return self._plan


def _four_systems(config):
    """The world's question through GroundedQA, BlindQA, PankRAG and PRoH with ``config``:
    each outcome and the PRoH step's problem and evidence graph."""
    from grounding.hypergraph import hop_relations
    from grounding.plans import Plan, SubQuestion
    from grounding.qa import BlindQA, PankRAG, PRoH
    from grounding.query import BlindQuestion
    from grounding.retrieval import HypergraphIndex

    graph, kh = _world_graph(), _world_hypergraph()
    q = KGQuestion("q", _WORLD_TEXT, "alice", ("award",), ("prize1",), ("prize1",), "test")
    step = SubQuestion("q1", _WORLD_TEXT, anchors=("alice",), relations=("award",))
    roles = hop_relations("subject:award", "object:award")
    hstep = SubQuestion("q1", _WORLD_TEXT, anchors=("alice",), relations=roles)
    index = HypergraphIndex(kh)
    outs = {
        "GroundedQA": GroundedQA(_WorldModel(), _WholeGraph(graph), config).answer(q),
        "BlindQA": BlindQA(
            _WorldAnswerer(graph.entities), _WorldPredictor(), _WholeGraph(graph), config
        ).answer(BlindQuestion(_WORLD_TEXT, "alice")),
        "PankRAG": PankRAG(
            _OnePlan(Plan(_WORLD_TEXT, (step,))), _WorldModel(), TextIndex(graph), config
        ).answer(q),
        "PRoH": PRoH(_OnePlan(Plan(_WORLD_TEXT, (hstep,))), index, config).answer(q),
    }
    return outs, index.graph


def _statuses(result):
    from grounding import EvidenceStatus

    return {a: EvidenceStatus(int(s)).name for a, s in zip(result.answers, result.status)}


_S, _U = "SUPPORTED", "UNSUPPORTED"


@pytest.mark.parametrize(
    "settings, want, hard_kept",
    [
        # the default eps follows the support tolerance (kappa): prize1 and prize2 are kept
        ({}, dict(prize1=_S, prize2=_S, film1=_U), {"prize1", "prize2"}),
        # the strict rule keeps only the walk of energy 0
        ({"eps": 0.0}, dict(prize1=_S, prize2=_S, film1=_U), {"prize1"}),
        # a support tolerance below log 2 (and the hard one following it) drops prize2
        ({"eps_s": 0.5}, dict(prize1=_S, prize2=_U, film1=_U), {"prize1"}),
        # no hard posterior at all
        ({"eps": None}, dict(prize1=_S, prize2=_S, film1=_U), None),
    ],
)
def test_the_four_systems_given_one_config_agree_on_one_question(settings, want, hard_kept):
    """GroundedQA, BlindQA, PankRAG and PRoH on the same facts with the same config: the same
    status per answer entity, the same presence of a hard posterior, and the same hard
    feasible set (exactly the candidates the config's hard tolerance keeps); PRoH's result is
    also ``ground`` of its own problem on its own evidence with that config."""
    config = GroundingConfig(lam=2.0, kappa=1.0, **settings)
    outs, bipartite = _four_systems(config)
    for name, out in outs.items():
        assert out.reason is None, (name, out.reason)
        [result] = out.groundings()
        assert _statuses(result) == want, name
        assert sorted(result.answers) == sorted(_WORLD_PRIOR), name
        if hard_kept is None:
            assert result.hard_log_posterior is None and result.hard_abstained is None, name
            with pytest.raises(ValueError, match="no hard posterior"):
                out.answer_probabilities("hard")
            continue
        assert result.hard_log_posterior is not None, name
        hard = dict(zip(result.answers, np.exp(np.asarray(result.hard_log_posterior))))
        assert {a for a, p in hard.items() if p > 0} == hard_kept, (name, hard)
        names, probs = out.answer_probabilities("hard")
        assert {a for a, p in zip(names, probs) if p > 0} == hard_kept, name
        assert probs.sum() == pytest.approx(1.0), name
    # PRoH's evidence is the bipartite graph of the hyperedges it visited (both, here): its
    # result is ground's on its own problem with the same config
    final = outs["PRoH"].solutions[0].final
    ref = ground(final.problem, bipartite, config=config)
    np.testing.assert_array_equal(np.asarray(final.result.status), np.asarray(ref.status))
    np.testing.assert_allclose(final.result.log_posterior, ref.log_posterior, atol=1e-12)
    assert (final.result.hard_log_posterior is None) == (ref.hard_log_posterior is None)
    if ref.hard_log_posterior is not None:
        np.testing.assert_allclose(
            final.result.hard_log_posterior, ref.hard_log_posterior, atol=1e-12
        )
    # the three systems with the model's prior agree on the posterior too
    posts = {
        name: dict(zip(*out.groundings()[0].answer_probabilities("soft")))
        for name, out in outs.items()
        if name != "PRoH"
    }
    for name, post in posts.items():
        for a, p in posts["GroundedQA"].items():
            assert post[a] == pytest.approx(p, abs=1e-12), (name, a)


# ----------------------------------------------------------------------------- calibration
def _synthetic_groundings(n_questions=600, lam=2.0, seed=0):
    """Questions of six one-hop claims each on one graph of uncertain edges (some answers
    without an edge: the slack kappa), grounded at ``lam``; each question's gold answer drawn
    from its posterior at ``lam``, so ``lam`` generated the labels."""
    from grounding import ClaimChain, GroundingProblem, TypedGraph, ground_batch, log_normalize

    rng = np.random.default_rng(seed)
    graph = TypedGraph.from_triples(
        [("t", "r", f"a{i}") for i in range(9)],
        reliability=rng.uniform(0.05, 1.0, 9),
        entities=["t"] + [f"a{i}" for i in range(12)],
    )
    problems = [
        GroundingProblem(
            f"q{i}",
            [ClaimChain(("t", f"a{j}"), ("r",)) for j in rng.choice(12, 6, replace=False)],
            log_normalize(rng.normal(size=6)),
        )
        for i in range(n_questions)
    ]
    config = GroundingConfig(lam=lam, kappa=2.0, n_paths=0)
    results = ground_batch(problems, graph, config)
    gold = [{r.answers[rng.choice(6, p=r.posterior() / r.posterior().sum())]} for r in results]
    return problems, graph, config, results, gold


def _gold_nll(results, gold):
    """Minus the mean log-probability of the gold answers under each result's posterior."""
    return -np.mean(
        [
            np.log(sum(p for a, p in zip(r.answers, r.posterior()) if a in s))
            for r, s in zip(results, gold)
        ]  # fmt: skip
    )


def test_fit_lambda_recovers_the_strength_that_generated_the_labels():
    """Labels drawn from the posterior at lambda = 2: the fit finds it roughly; the fitted
    lambda minimizes the gold answers' loss under ``ground``'s posterior (grounding again at
    lambda * 1.2 and lambda / 1.2 loses); and ``ground``'s posterior at the fitted lambda is
    Eq. (7) on the first grounding's energies at that lambda (the energies do not depend on
    lambda, which the calibration relies on)."""
    from _tol import F64

    from grounding import ground_batch
    from grounding.posterior import gibbs_log_posterior
    from grounding.qa import fit_lambda

    problems, graph, config, results, gold = _synthetic_groundings()
    lam = fit_lambda(results, gold)
    assert lam == pytest.approx(2.0, rel=0.25)
    at = {
        x: ground_batch(problems, graph, config.replace(lam=x)) for x in (lam, lam * 1.2, lam / 1.2)
    }
    best = _gold_nll(at[lam], gold)
    assert _gold_nll(at[lam * 1.2], gold) >= best and _gold_nll(at[lam / 1.2], gold) >= best
    for r0, r in zip(results, at[lam]):
        np.testing.assert_allclose(r.energy, r0.energy, **F64)
        want = gibbs_log_posterior(r0.log_prior, r0.energy, lam)  # Eq. (7)
        np.testing.assert_allclose(r.log_posterior, want, **F64)


def test_fit_lambda_refuses_what_it_cannot_calibrate_on():
    from grounding.qa import fit_lambda

    _, _, _, results, gold = _synthetic_groundings(n_questions=4)
    with pytest.raises(ValueError, match="4 outcomes but 3 gold answer sets"):
        fit_lambda(results, gold[:3])
    with pytest.raises(ValueError, match="no validation outcome has a gold answer"):
        fit_lambda(results, [{"nobody"}] * 4)
    with pytest.raises(ValueError, match="no validation outcome has a gold answer"):
        fit_lambda(results, [set()] * 4)
    with pytest.raises(ValueError, match="no grounding to calibrate on"):
        fit_lambda([None, None], [{"a0"}, {"a1"}])
    # outcomes without a grounding (None, or a failed question) are skipped
    assert fit_lambda([None, *results], [{"a0"}, *gold]) == fit_lambda(results, gold)


def test_fit_lambda_reads_every_outcome_type_through_its_groundings():
    """An outcome of each system calibrates as its grounding does; a supported gold answer
    (prize1, energy 0) asks for more grounding strength than the start (lambda = 1), an
    unsupported one (film1) for less."""
    from grounding.qa import Outcome, fit_lambda

    outs, _ = _four_systems(GroundingConfig(lam=2.0, kappa=1.0))
    for name, out in outs.items():
        assert isinstance(out, Outcome), name
        [result] = out.groundings()
        lam = fit_lambda([out], [{"prize1"}], steps=50)
        assert lam == fit_lambda([result], [{"prize1"}], steps=50) and lam > 1.0, name
    every = list(outs.values())
    results = [o.groundings()[0] for o in every]
    lam = fit_lambda(every, [{"film1"}] * 4, steps=50)
    assert lam == fit_lambda(results, [{"film1"}] * 4, steps=50) and lam < 1.0
