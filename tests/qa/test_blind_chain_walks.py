"""BlindQA with chain-walk evidence: the evidence is the walks of the predicted chains, and
``walk_candidates`` makes the entities they reach candidates, with the answerer's prior."""

from __future__ import annotations

import numpy as np
import pytest

from grounding import GroundingConfig, TypedGraph
from grounding.qa import BlindQA
from grounding.query import BlindQuestion
from grounding.retrieval import ChainWalks

GRAPH = TypedGraph.from_triples(
    [("m1", "directed_by", "d1"), ("m1", "written_by", "w1"), ("m2", "directed_by", "d2")]
)
PRIOR = {"d2": 0.6, "w1": 0.3, "d1": 0.1}  # the answerer ranks the true director last


class Answerer:
    entities = GRAPH.entities

    def log_scores(self, topic, chain):
        return np.array([np.log(PRIOR[e]) if e in PRIOR else -np.inf for e in self.entities])


class Predictor:
    def predict(self, questions, k):
        return [[(("directed_by",), 1.0)] for _ in questions]


def _qa(**kw):
    return BlindQA(
        Answerer(), Predictor(), ChainWalks(GRAPH), GroundingConfig(lam=20.0, kappa=1.0), **kw
    )


def test_walk_candidates_bring_in_what_the_evidence_states():
    q = BlindQuestion("who directed [m1]", "m1")
    without = _qa(k_candidates=1).answer(q)
    with_walks = _qa(k_candidates=1, walk_candidates=5).answer(q)
    assert without.result.answers == ("d2",)
    assert set(with_walks.result.answers) == {"d2", "d1"}
    names, probs = with_walks.answer_probabilities("prior")
    assert dict(zip(names, probs))["d1"] == pytest.approx(0.1 / 0.7)  # the answerer's prior
    assert with_walks.answer == "d1"  # grounded: the only supported candidate
    assert sorted(with_walks.evidence.graph.triples()) == [("m1", "directed_by", "d1")]


def test_walk_candidates_need_chain_walks():
    with pytest.raises(ValueError, match="ChainWalks"):
        BlindQA(
            Answerer(),
            Predictor(),
            lambda d: None,
            GroundingConfig(lam=1.0, kappa=1.0),
            walk_candidates=3,
        )


def test_a_topic_the_graph_lacks_fails_with_its_reason():
    out = _qa(walk_candidates=3).answer(BlindQuestion("who directed [zz]", "zz"))
    assert out.result is None and "zz" in out.reason
