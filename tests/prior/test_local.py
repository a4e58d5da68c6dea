"""The in-process candidate model (:mod:`grounding.prior.local`) around a stand-in language
model: proposals memoized by text, topic and ``k`` (the model runs once per question), the
model's own answers kept beside them, and ``Blinded`` showing it text and topic only. The real
model's answers as candidates: ``tests/language/test_local.py``."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from grounding.language import AnswerLinker, LocalLM
from grounding.prior import Blinded, Candidates, LocalCandidateModel, propose_batch
from grounding.query import BlindQuestion


class StandIn(LocalLM):
    """The two calls ``LocalCandidateModel`` makes of a model, recorded; no weights."""

    def __init__(self):  # (LocalLM's own loads a GGUF file)
        self.max_answer_tokens, self.calls = 4, []

    def propose_batch(self, questions, k, *, group=4):
        self.calls.append(list(questions))
        return [[(f"Paris {q[-1]}", -0.5), ("Lyon", -1.0)][:k] for q in questions]

    def score_batch(self, questions, answers, *, chunk=64):
        return [np.full(len(a), -2.0) for a in answers]


def _q(text, topic="fr", **kw):
    return SimpleNamespace(text=text, topic=topic, **kw)


def test_proposals_are_memoized_by_text_topic_and_k():
    lm = StandIn()
    model = LocalCandidateModel(lm, AnswerLinker(["lyon"], ["Lyon"]), pool=lambda q: ["Nice"])
    a, b, a2 = _q("capital 1"), _q("capital 2"), _q("capital 1")
    first = model.propose_batch([a, b, a2], 2)
    assert lm.calls == [["capital 1", "capital 2"]]  # each question once
    assert first[0] is first[2] and isinstance(first[1], Candidates)
    assert set(first[0].entities) == {"paris 1", "lyon", "nice"}
    assert model.propose(_q("capital 2"), 2) is first[1] and len(lm.calls) == 1
    assert model.answers(a, 2) == [("Paris 1", -0.5), ("Lyon", -1.0)]
    model.propose(_q("capital 1", topic="de"), 2)  # another topic: asked again
    model.propose(a, 1)  # another k: asked again
    assert lm.calls[1:] == [["capital 1"], ["capital 1"]]
    model.cache_clear()
    model.propose(a, 2)
    assert len(lm.calls) == 4


def test_blinded_shows_the_model_text_and_topic_only():
    lm = StandIn()
    seen = []
    model = LocalCandidateModel(lm, AnswerLinker(["lyon"]), pool=lambda q: seen.append(q) or [])
    shown = Blinded(model)
    q = _q("capital 1", chain=("capital",), answers=("paris",))
    [c] = propose_batch(shown, [q], 2)
    assert c is shown.propose(q, 2) and all(type(x) is BlindQuestion for x in seen)
    assert seen[0] == BlindQuestion("capital 1", "fr", "")
    with pytest.raises(TypeError, match="propose"):
        Blinded(object())


def test_arguments_are_checked():
    with pytest.raises(TypeError, match="LocalLM"):
        LocalCandidateModel(object(), AnswerLinker(["a"]))
    with pytest.raises(TypeError, match="AnswerLinker"):
        LocalCandidateModel(StandIn(), ["a"])
    with pytest.raises(TypeError, match="pool"):
        LocalCandidateModel(StandIn(), AnswerLinker(["a"]), pool=["x"])
    with pytest.raises(ValueError, match="k must be an int"):
        LocalCandidateModel(StandIn(), AnswerLinker(["a"])).propose(_q("x"), 0)


def test_propose_batch_checks_what_a_model_returns():
    class Short:
        def propose_batch(self, questions, k):
            return []

    class Wrong:
        def propose(self, question, k):
            return ["a"]

    with pytest.raises(TypeError, match="0 answers for 1 questions"):
        propose_batch(Short(), [_q("x")], 1)
    with pytest.raises(TypeError, match="returned list, not Candidates"):
        propose_batch(Wrong(), [_q("x")], 1)
