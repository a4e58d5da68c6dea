"""What a batch of questions may be: any iterable, read once (a generator gives the same
outcomes as a list), and a question the encoder cannot read fails alone, with its reason, the
others answered exactly as in a batch without it."""

from __future__ import annotations

from types import SimpleNamespace as Q

import numpy as np
import pytest

from grounding import GroundingConfig, TypedGraph
from grounding.datasets import KGQuestion
from grounding.language import HashingEncoder
from grounding.learn import init_model
from grounding.plans import Plan, RelationChainPredictor, SubQuestion
from grounding.qa import BlindQA, KGEAnswerer, PankRAG, PRoH
from grounding.qa._checks import check_questions
from grounding.query import BlindQuestion
from grounding.retrieval import PCR, TextIndex
from tests._systems import WORLD_PRIOR, _OnePlan, _world_graph, _world_hypergraph, _WorldModel

CONFIG = GroundingConfig(lam=1.0, kappa=1.0)
UNREADABLE = ["北京的货币是什么", "", "Ποιο είναι το νόμισμα;", "?!"]


@pytest.fixture(scope="module")
def blind_qa():
    g = TypedGraph.from_triples(
        [("a", "currency", "eur"), ("a", "country", "fr"), ("b", "country", "de")]
    )
    train = [
        Q(text="currency of a", chain=("currency",)),
        Q(text="country of b", chain=("country",)),
    ]
    labels = {"currency": "currency", "country": "country"}
    pred = RelationChainPredictor(HashingEncoder(dim=64).encode, labels, g).fit(train)
    answerer = KGEAnswerer(init_model("transe", g.n_nodes, 2, 8), g.entities, list(labels))
    index = TextIndex(g)
    return BlindQA(answerer, pred, lambda d: PCR(index, max_hops=d), CONFIG)


GOOD = [BlindQuestion("currency of a", "a"), BlindQuestion("country of b", "b")]


def _same(a, b) -> None:
    assert (a.question, a.chains, a.answer, a.reason) == (b.question, b.chains, b.answer, b.reason)
    np.testing.assert_array_equal(a.result.log_posterior, b.result.log_posterior)
    np.testing.assert_array_equal(a.result.log_prior, b.result.log_prior)


@pytest.mark.parametrize("text", UNREADABLE)
def test_blind_qa_an_unreadable_question_fails_alone(blind_qa, text):
    alone = blind_qa.answer_batch(GOOD)
    assert all(o.reason is None and o.answer is not None for o in alone)
    bad = BlindQuestion(text, "a")
    outs = blind_qa.answer_batch([GOOD[0], bad, GOOD[1]])
    assert len(outs) == 3
    assert outs[1].question == bad and outs[1].answer is None and outs[1].result is None
    assert outs[1].chains == () and outs[1].groundings() == ()
    assert outs[1].reason.startswith("chain prediction failed (ValueError)")
    assert repr(text) in outs[1].reason
    _same(outs[0], alone[0])
    _same(outs[2], alone[1])
    only_bad = blind_qa.answer_batch([bad])
    assert only_bad[0].reason == outs[1].reason


def test_blind_qa_reads_a_generator_once(blind_qa):
    want = blind_qa.answer_batch(GOOD)
    got = blind_qa.answer_batch(q for q in GOOD)
    assert len(got) == 2
    for a, b in zip(got, want):
        _same(a, b)
    assert blind_qa.answer_batch(iter(())) == []


def _kg_question() -> KGQuestion:
    text = "Which award did alice receive?"
    return KGQuestion("q", text, "alice", ("award",), ("prize1",), ("prize1",), "test")


def test_pankrag_and_proh_read_a_generator_once():
    from grounding.hypergraph import hop_relations
    from grounding.retrieval import HypergraphIndex

    q = _kg_question()
    step = SubQuestion("q1", q.text, anchors=("alice",), relations=("award",))
    pank = PankRAG(
        _OnePlan(Plan(q.text, (step,))), _WorldModel(), TextIndex(_world_graph()), CONFIG
    )
    roles = hop_relations("subject:award", "object:award")
    hstep = SubQuestion("q1", q.text, anchors=("alice",), relations=roles)
    proh = PRoH(_OnePlan(Plan(q.text, (hstep,))), HypergraphIndex(_world_hypergraph()), CONFIG)
    for system in (pank, proh):
        want = system.answer_batch([q, q])
        got = system.answer_batch(x for x in [q, q])
        assert [o.answer for o in got] == [o.answer for o in want] and len(got) == 2
        assert got[0].answer in WORLD_PRIOR
    got = pank.answer_batch((x for x in [q]), inject=(d for d in [{"q1": "bob"}]))
    assert len(got) == 1 and "bob" in got[0].answer_probabilities("soft")[0]


def test_check_questions_materializes_once_and_refuses_strings_and_non_iterables():
    seen = []

    def gen():
        for x in "ab":
            seen.append(x)
            yield x

    assert check_questions(gen()) == ["a", "b"] and seen == ["a", "b"]
    with pytest.raises(TypeError, match="not a string"):
        check_questions("what is the currency of a?")
    with pytest.raises(TypeError, match="questions must be an iterable of questions"):
        check_questions(GOOD[0])


def test_blind_qa_refuses_a_predictor_that_loses_questions(blind_qa):
    class Short:
        def predict(self, questions, k):
            return [[(("currency",), 1.0)]]  # one prediction, whatever the batch

    qa = BlindQA(blind_qa.answerer, Short(), blind_qa.retriever.spec, CONFIG)
    with pytest.raises(TypeError, match="chain prediction returned 1 outputs for 2 questions"):
        qa.answer_batch(GOOD)


def test_blind_qa_a_non_finite_encoding_fails_its_question_naming_the_encoder(blind_qa):
    enc = HashingEncoder(dim=64)

    class Flaky:
        name = "flaky-encoder"

        def encode(self, texts):
            x = enc.encode(texts)
            x[[t == "currency of z" for t in texts]] = np.nan
            return x

    p = blind_qa.predictor
    pred = RelationChainPredictor(Flaky().encode, p.labels, p.graph).fit(
        [Q(text="currency of a", chain=("currency",)), Q(text="country of b", chain=("country",))]
    )
    qa = BlindQA(blind_qa.answerer, pred, blind_qa.retriever.spec, CONFIG)
    outs = qa.answer_batch([GOOD[0], BlindQuestion("currency of z", "a"), GOOD[1]])
    assert outs[1].answer is None and outs[1].reason == (
        "chain prediction failed (ValueError): the encoder 'flaky-encoder' returned non-finite "
        "values (NaN or inf) for text 0 ('currency of z')"
    )
    alone = blind_qa.answer_batch(GOOD)
    _same(outs[0], alone[0])
    _same(outs[2], alone[1])
