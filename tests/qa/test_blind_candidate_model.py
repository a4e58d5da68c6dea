"""BlindQA with a candidate model as its answerer (a language model, say): every predicted
chain claims the model's candidates, with prior ``w_j p(a)``; an answer the graph lacks stays a
candidate (unsupported); an abstaining model's reason reaches the outcome."""

from __future__ import annotations

import numpy as np
import pytest

from grounding import GroundingConfig, TypedGraph
from grounding.prior import CandidateModel, Candidates
from grounding.qa import BlindQA
from grounding.query import BlindQuestion
from grounding.retrieval import ChainWalks

GRAPH = TypedGraph.from_triples(
    [("m1", "directed_by", "d1"), ("m1", "written_by", "w1"), ("m2", "directed_by", "d2")]
)
CHAINS = [(("directed_by",), 0.75), (("written_by",), 0.25)]


class Model(CandidateModel):
    """Proposes d2 (wrong), w1 and an answer the graph lacks; abstains on topic ``m2``."""

    def __init__(self):
        self.asked = []

    def propose(self, question, k):
        self.asked.append(question)
        if question.topic == "m2":
            return Candidates.abstain("no idea")
        return Candidates.from_scores(["d2", "w1", "a sentence"], np.log([0.6, 0.3, 0.1]))


class Predictor:
    def predict(self, questions, k):
        return [list(CHAINS) for _ in questions]


def _qa(model, lam=20.0, **kw):
    return BlindQA(model, Predictor(), ChainWalks(GRAPH), GroundingConfig(lam=lam, kappa=1.0), **kw)


def test_every_chain_claims_every_candidate_with_the_chain_weight_times_the_model_prior():
    q = BlindQuestion("who made [m1]", "m1")
    qa = _qa(Model())
    problem = qa.problem(q, CHAINS)
    got = {(c.relations, c.entities[-1]): float(np.exp(lp))
           for c, lp in zip(problem.candidates, problem.log_prior)}  # fmt: skip
    want = {(chain, a): w * p for chain, w in CHAINS
            for a, p in zip(["d2", "w1", "a sentence"], [0.6, 0.3, 0.1])}  # fmt: skip
    assert got.keys() == want.keys()
    for key, p in want.items():
        assert got[key] == pytest.approx(p, abs=1e-12)


def test_grounding_moves_the_answer_to_what_a_chain_supports():
    out = _qa(Model()).answer(BlindQuestion("who made [m1]", "m1"))
    names, prior = out.answer_probabilities("prior")
    assert names[0] == "d2" and dict(zip(names, prior))["d2"] == pytest.approx(0.6)
    assert "a sentence" in names  # unsupported, still a candidate
    assert out.answer_probabilities("soft")[0][0] == "w1"  # written_by supports w1 (lam = 20)


def test_the_model_sees_the_blind_question_and_its_abstention_is_the_reason():
    model = Model()
    outs = _qa(model).answer_batch(
        [BlindQuestion("who made [m1]", "m1"), BlindQuestion("who made [m2]", "m2")]
    )
    assert outs[0].result is not None
    assert outs[1].result is None and "no idea" in outs[1].reason
    assert all(isinstance(q, BlindQuestion) for q in model.asked)


def test_walk_candidates_need_an_answerer_that_scores_entities():
    with pytest.raises(ValueError, match="scores every entity"):
        _qa(Model(), walk_candidates=3)
    with pytest.raises(TypeError, match="log_scores"):
        _qa(object())
