"""Answers the evidence graph does not show (the paper's *unobserved* case) in the QA floor:
every loop keeps a question whose candidates are out of graph (grounded as unsupported) while a
missing topic fails it. The linking rules are tested in ``tests/language/test_linking.py``,
``Candidates.from_answers`` in ``tests/prior/test_candidates.py``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import grounding as g
from grounding.datasets import KGQuestion
from grounding.plans import Plan, SubQuestion
from grounding.qa import (
    AnswerLinker,
    BlindQA,
    Candidates,
    GroundedQA,
    PankRAG,
    grounding_problem,
)
from grounding.qa.pipeline import unknown_entities
from grounding.query import BlindQuestion
from grounding.retrieval import PCR, TextIndex

S = g.EvidenceStatus
CONFIG = g.GroundingConfig(lam=2.0, kappa=1.0)


def test_the_evidence_picks_the_supported_reading_of_an_ambiguous_answer():
    """Rule (b) end to end: ``bank`` is split equally over two entities; the evidence supports
    one, which wins the posterior; the other reading stays, unsupported."""
    graph = g.TypedGraph.from_triples(
        [("money", "kept_at", "bank_fin")], entities=["money", "bank_fin", "bank_river"],
        texts=["money", "bank", "bank"],
    )  # fmt: skip
    c = Candidates.from_answers(["bank"], [0.0], AnswerLinker(graph.entities, graph.texts))
    np.testing.assert_allclose(np.exp(c.log_prior), [0.5, 0.5])
    q = KGQuestion("q", "Where is money kept?", "money", (), (), (), "test")
    res = g.ground(grounding_problem(q, c, max_hops=1), graph, CONFIG)
    assert res.answer == "bank_fin"
    assert [S(int(s)) for s in res.status] == [S.SUPPORTED, S.UNSUPPORTED]


# ------------------------------------------------------------------------------ the loops
def _graph() -> g.TypedGraph:
    """t -r1-> b1 -r2-> c1 ; t -r1-> b2."""
    return g.TypedGraph.from_triples(
        [("t", "r1", "b1"), ("t", "r1", "b2"), ("b1", "r2", "c1")],
        entities=["t", "b1", "b2", "c1"],
    )


class Model:
    """Proposes a table's answers for a (topic, chain): ``zz`` is no entity of the graph."""

    TABLE = {
        ("t", ("r1",)): {"zz": 0.6, "b1": 0.4},
        ("t", ()): {"zz": 0.6, "b1": 0.4},
        ("b1", ("r2",)): {"c1": 0.7, "zz": 0.3},
        ("zz", ("r1",)): {"b1": 1.0},
    }

    def propose(self, question, k):
        row = self.TABLE[(question.topic, tuple(question.chain or ()))]
        return Candidates.from_scores(list(row), np.log(list(row.values())), k=k)


def _isolated(graph, *names):
    return dataclasses.replace(graph, entities=graph.entities + names)


def _assert_unsupported_beside_supported(res: g.GroundingResult, energy: float = 1.0):
    status = dict(zip(res.answers, (S(int(s)) for s in res.status)))
    assert status == {"zz": S.UNSUPPORTED, "b1": S.SUPPORTED}, status
    assert dict(zip(res.answers, np.asarray(res.energy)))["zz"] == energy  # kappa
    assert dict(zip(res.answers, np.asarray(res.hard_log_posterior)))["zz"] == -np.inf


@pytest.mark.parametrize("chain", [("r1",), ()])
def test_grounded_qa_keeps_out_of_graph_candidates_as_unsupported(chain):
    """A chain question and a free-text one: ``zz`` is unsupported with energy kappa, the
    posterior equals the one on the graph with ``zz`` as an isolated node, the answer is b1."""
    q = KGQuestion("q", "What is the r1 of t?", "t", chain, ("b1",), ("b1",), "test")
    out = GroundedQA(Model(), PCR(TextIndex(_graph()), max_hops=1), CONFIG, max_hops=1).answer(q)
    assert out.reason is None and out.answer == "b1"
    _assert_unsupported_beside_supported(out.result)
    problem = grounding_problem(q, out.candidates, max_hops=1)
    assert problem.anchors == ("t",)
    want = g.ground(problem, _isolated(out.evidence.graph, "zz"), CONFIG)
    np.testing.assert_allclose(out.result.log_posterior, want.log_posterior, rtol=1e-12)


def test_grounded_qa_fails_only_a_question_whose_topic_is_missing():
    q = KGQuestion("q", "What is the r1 of zz?", "zz", ("r1",), (), (), "test")
    ok = KGQuestion("q2", "What is the r1 of t?", "t", ("r1",), (), (), "test")
    bad, good = GroundedQA(Model(), PCR(TextIndex(_graph()), max_hops=1), CONFIG).answer_batch(
        [q, ok]
    )
    assert bad.result is None and bad.reason == "topic entity 'zz' is not in the evidence graph"
    assert good.reason is None and good.answer == "b1"


def test_unknown_entities_names_every_missing_topic_and_no_candidate():
    state = g.EvidenceState(_graph())
    chains = (g.ClaimChain(("t", "zz"), ("r1",)),)
    p = g.GroundingProblem("?", chains, np.zeros(1), anchors=("t",))
    assert unknown_entities(p, state) is None
    p = g.GroundingProblem("?", ("zz",), np.zeros(1), anchors=("n1", "t", "n2"), max_hops=1)
    assert unknown_entities(p, state) == "topic entities 'n1', 'n2' are not in the evidence graph"


class Answerer:
    """BlindQA's answerer over a vocabulary larger than the graph (``zz`` is not in it)."""

    entities = ("t", "b1", "b2", "c1", "zz")

    def log_scores(self, topic, chain):
        return np.log(np.array([1e-9, 0.4, 1e-9, 1e-9, 0.6]))


class Predictor:
    def predict(self, questions, k):
        return [[(("r1",), 1.0)] for _ in questions]


def test_blind_qa_keeps_out_of_graph_candidates_as_unsupported():
    qa = BlindQA(Answerer(), Predictor(), PCR(TextIndex(_graph()), max_hops=1), CONFIG,
                 k_candidates=2)  # fmt: skip
    out, bad = qa.answer_batch(
        [BlindQuestion("What is the r1 of t?", "t"), BlindQuestion("What is the r1 of zz?", "zz")]
    )
    assert out.reason is None and out.answer == "b1"
    _assert_unsupported_beside_supported(out.result)
    assert bad.result is None and "topic entity 'zz'" in bad.reason


def test_blind_qa_names_a_topic_its_predictor_cannot_read():
    """A predictor over a graph predicts no chain from a topic the graph lacks: the reason
    names the topic (and says why); a known topic without a chain is named too."""

    class GraphPredictor:  # as the package's predictors: no chain from a topic it cannot walk
        graph = _graph()

        def predict(self, questions, k):
            return [[(("r1",), 1.0)] if q.topic == "t" else [] for q in questions]

    qa = BlindQA(Answerer(), GraphPredictor(), PCR(TextIndex(_graph()), max_hops=1), CONFIG)
    ok, missing, stuck = qa.answer_batch([BlindQuestion("r1 of t?", "t"),
                                          BlindQuestion("r1 of nowhere?", "nowhere"),
                                          BlindQuestion("r1 of c1?", "c1")])  # fmt: skip
    assert ok.reason is None
    assert "topic entity 'nowhere' is not in the predictor's graph" in missing.reason
    assert "no relation chain is predicted from the topic 'c1'" in stuck.reason


def test_pankrag_keeps_out_of_graph_answers_and_anchors_the_next_step_at_graph_ones():
    """Step 1's candidates include ``zz`` (unsupported, kept in its answers); step 2 is
    anchored at step 1's answers that are graph entities (``zz`` anchors no walk)."""
    s1 = SubQuestion("q1", "What is the r1 of t?", anchors=("t",), relations=("r1",))
    s2 = SubQuestion("q2", "What is the r2 of {q1}?", depends_on=("q1",), relations=("r2",))

    class OnePlan:
        def plan(self, question):
            return Plan(question.text, (s1, s2))

    q = KGQuestion("q", "What is the r2 of the r1 of t?", "t", ("r1", "r2"), (), (), "test")
    out = PankRAG(OnePlan(), Model(), TextIndex(_graph()), CONFIG, beam=2).answer(q)
    first, second = out.steps["q1"], out.steps["q2"]
    assert first.reason is None and set(first.answers) == {"b1", "zz"}
    _assert_unsupported_beside_supported(first.result)
    assert second.anchors == ("b1",) and second.reason is None
    assert second.answers[0] == "c1" and out.answer == "c1"
    status = dict(zip(second.result.answers, (S(int(s)) for s in second.result.status)))
    assert status == {"c1": S.SUPPORTED, "zz": S.UNSUPPORTED}
