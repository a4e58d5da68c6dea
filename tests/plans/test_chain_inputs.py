"""Chains given to the predictors and planners are sequences of relation names (role chains:
of role pairs), never a bare string read letter by letter; and an encoder whose output is not
finite is a clear error naming the encoder and the text, not every chain silently dropped."""

from __future__ import annotations

from types import SimpleNamespace as Q

import numpy as np
import pytest

from grounding import TypedGraph
from grounding.hypergraph import KnowledgeHypergraph
from grounding.language import HashingEncoder
from grounding.plans import (
    ComposedChainPredictor,
    FlatPlanner,
    HypergraphTemplatePlanner,
    PredictedPathPlanner,
    RelationChainPredictor,
    RoleChainPredictor,
    TemplatePlanner,
    chain_accuracy,
)
from grounding.plans.role_chains import role_chain_accuracy
from grounding.query import BlindQuestion

LABELS = {"currency": "currency", "country": "country"}
GRAPH = TypedGraph.from_triples([("a", "currency", "eur"), ("a", "country", "fr")])
ENC = HashingEncoder(dim=64).encode
GOOD = Q(text="currency of b", chain=("currency",))


def _predictors():
    return [
        RelationChainPredictor(ENC, LABELS),
        ComposedChainPredictor(ENC, LABELS, GRAPH),
    ]


@pytest.mark.parametrize("make", [0, 1], ids=["relation", "composed"])
def test_fit_refuses_a_chain_given_as_a_string_naming_the_question(make):
    pred = _predictors()[make]
    bad = Q(text="what is the currency of a", chain="currency")
    with pytest.raises(
        TypeError, match=r"question 1 \('what is the currency of a'\).*not a string"
    ):
        pred.fit([GOOD, bad])
    with pytest.raises(TypeError, match="question 0 .*relation names"):
        pred.fit([Q(text="currency of a", chain=("currency", 3))])
    with pytest.raises(ValueError, match="question 0 .*empty"):
        pred.fit([Q(text="currency of a", chain=())])
    fitted = pred.fit([GOOD, Q(text="country of a", chain=["country"])])  # a list is a sequence
    (top,) = fitted.predict([BlindQuestion("currency of a", "a")], k=1)
    assert top[0][0] == ("currency",)


def test_chain_accuracy_refuses_string_chains():
    pred = RelationChainPredictor(ENC, LABELS).fit([GOOD])
    with pytest.raises(TypeError, match="question 0 .*not a string"):
        chain_accuracy(pred, [Q(text="currency of b", topic="b", chain="currency")])
    with pytest.raises(TypeError, match=r"seen\[0\].*not a string"):
        chain_accuracy(pred, [Q(text="currency of b", topic="b", chain=("currency",))],
                       seen=["currency"])  # fmt: skip


def test_planners_refuse_string_chains():
    q = Q(text="What is the currency of a?", topic="a", chain="currency")
    for planner in (TemplatePlanner(LABELS), FlatPlanner()):
        with pytest.raises(TypeError, match="the question .*not a string"):
            planner.plan(q)
    assert (
        FlatPlanner().plan(Q(text="currency of a?", topic="a", chain=None)).steps[0].relations == ()
    )

    class Letters:
        def predict(self, questions, k):
            return [[("currency", 1.0)] for _ in questions]

    with pytest.raises(TypeError, match="predicted chain .*not a string"):
        PredictedPathPlanner(Letters(), LABELS).plan(BlindQuestion("currency of a?", "a"))


def _hypergraph():
    return KnowledgeHypergraph.from_statements(
        [("alice", "award", "prize1", (("for_work", "film1"),)), ("film1", "director", "bob", ())]
    )


def test_role_chains_refuse_strings_and_pairs_that_are_strings():
    kh = _hypergraph()
    text = "What is the object of award of the statement whose subject of award is alice?"
    good = Q(text=text, topic="alice", roles=(("subject:award", "object:award"),))
    pred = RoleChainPredictor(kh, ENC)
    for roles, error, match in (
        ("subject:award", TypeError, "question 1 .*not a string"),
        (("ab",), TypeError, "question 1 .*pair of role names"),
        ((("subject:award",),), TypeError, "question 1 .*pair of role names"),
        ((), ValueError, "question 1 .*empty"),
    ):
        bad = Q(text=text, topic="alice", roles=roles)
        with pytest.raises(error, match=match):
            pred.fit([good, bad])
        with pytest.raises(error, match=match.replace("question 1", "the question")):
            HypergraphTemplatePlanner(kh).plan(bad)
    pred.fit([good])
    with pytest.raises(TypeError, match="question 0 .*pair of role names"):
        role_chain_accuracy(pred, [Q(text=text, topic="alice", roles=("ab",))])


def _nan_at(bad_text):
    def encode(texts):
        x = np.array([[t.count(w) + 0.1 for w in ("currency", "country")] for t in texts])
        x[[t == bad_text for t in texts]] = np.nan
        return x

    return encode


def test_a_non_finite_encoder_output_is_an_error_naming_the_encoder_and_the_text():
    train = [GOOD, Q(text="country of a", chain=("country",))]
    for pred in (
        RelationChainPredictor(_nan_at("currency of c"), LABELS),
        ComposedChainPredictor(_nan_at("currency of c"), LABELS, GRAPH),
    ):
        pred.fit(train)
        with pytest.raises(ValueError, match=r"encoder '.*_nan_at.*encode' returned non-finite"
                                             r" values \(NaN or inf\) for text 1 \('currency of c'\)"):  # fmt: skip
            pred.predict([BlindQuestion("currency of a", "a"), BlindQuestion("currency of c", "a")])
        pred.encode = _nan_at("currency of b")
        with pytest.raises(ValueError, match=r"non-finite values .*for text 0 \('currency of b'\)"):
            pred.fit([GOOD])


def test_the_encoder_is_named_by_its_name_and_its_output_shape_is_checked():
    enc = HashingEncoder(dim=64)

    class Broken:
        name = "broken-encoder"

        def encode(self, texts):
            out = enc.encode(texts).astype(np.float64)
            out[0, 0] = np.inf
            return out

        def short(self, texts):
            return np.zeros((len(texts) + 1, 4))

    with pytest.raises(ValueError, match="encoder 'broken-encoder' returned non-finite"):
        RelationChainPredictor(Broken().encode, LABELS).fit([GOOD])
    with pytest.raises(ValueError, match=r"returned shape \[2, 4\] for 1 texts"):
        RelationChainPredictor(Broken().short, LABELS).fit([GOOD])
    kh = _hypergraph()
    text = "What is the object of award of the statement whose subject of award is alice?"
    good = Q(text=text, topic="alice", roles=(("subject:award", "object:award"),))
    with pytest.raises(ValueError, match="encoder 'broken-encoder' returned non-finite"):
        RoleChainPredictor(kh, Broken().encode).fit([good])
