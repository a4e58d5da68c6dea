"""Relation paths predicted from blind questions: blind by type (scrambling every gold field
leaves the predictions unchanged), walkable from the topic, scored as documented."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from grounding.datasets import kgqa_benchmark
from grounding.graph import TypedGraph
from grounding.language import HashingEncoder
from grounding.plans import RelationChainPredictor, chain_accuracy
from grounding.query import BlindQuestion, blind


@pytest.fixture(scope="module")
def umls():
    bench = kgqa_benchmark("umls", questions_per_hop=60, seed=0)
    pred = RelationChainPredictor(HashingEncoder().encode, bench.relation_labels, bench.graph)
    return bench, pred.fit(bench.split("train"))


def test_scrambling_every_gold_field_leaves_the_predictions_unchanged(umls):
    bench, pred = umls
    test = bench.split("test")
    rng = np.random.default_rng(0)
    chains = [q.chain for q in test]
    scrambled = [
        dataclasses.replace(
            q, chain=chains[rng.integers(len(chains))], answers=("nobody",), observed=()
        )
        for q in test
    ]
    assert any(a.chain != b.chain for a, b in zip(test, scrambled))
    want = pred.predict([blind(q) for q in test], k=3)
    assert pred.predict([blind(q) for q in scrambled], k=3) == want
    with pytest.raises(TypeError, match="BlindQuestion"):
        pred.predict(test[:1])  # a question with gold fields is refused, not read


def test_blind_keeps_text_topic_and_id_only(umls):
    q = umls[0].split("test")[0]
    b = blind(q)
    assert b == BlindQuestion(q.text, q.topic, q.id)
    assert {f.name for f in dataclasses.fields(b)} == {"text", "topic", "id"}


def test_predictions_are_walkable_ranked_and_normalized(umls):
    bench, pred = umls
    g = bench.graph
    for q, paths in zip(bench.split("test"), pred.predict([blind(q) for q in bench.split("test")])):
        probs = [p for _, p in paths]
        assert probs == sorted(probs, reverse=True) and abs(sum(probs) - 1) < 1e-9
        leaving = {
            g.relations[r] for r in np.asarray(g.relation)[g.edges_from([g.entity_index(q.topic)])]
        }
        assert all(path[0] in leaving for path, _ in paths)


def test_scores_are_prototype_plus_weighted_label_cosines():
    vocab = ["capital", "currency", "country", "whose"]

    def encode(texts):
        return np.array([[t.count(w) + 0.1 for w in vocab] for t in texts])

    labels = {"capital": "capital", "currency": "currency", "country": "country"}
    train = [
        SimpleNamespace(text="the capital of the country of A", chain=("country", "capital")),
        SimpleNamespace(text="the currency of B", chain=("currency",)),
        SimpleNamespace(text="the entity whose country is C", chain=("country^-1",)),
    ]
    pred = RelationChainPredictor(encode, labels, label_weight=0.5).fit(train)
    q = BlindQuestion("what is the currency of the country of D", "d")
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    x = unit(encode([q.text]))[0]
    for j, path in enumerate(pred.chains):
        proto = unit(encode([t.text for t in train if t.chain == path]).sum(0))
        label = unit(encode([pred.chain_text(path)])[0])
        assert pred.scores([q])[0, j] == pytest.approx(x @ proto + 0.5 * x @ label)
    assert pred.chain_text(("country", "capital")) == "the capital of the country of"
    assert pred.chain_text(("country^-1",)) == "the entity whose country is"


def test_a_graph_removes_paths_that_cannot_leave_the_topic():
    g = TypedGraph.from_triples([("a", "currency", "eur"), ("b", "country", "fr")])
    train = [
        SimpleNamespace(text="currency of a", chain=("currency",)),
        SimpleNamespace(text="country of b", chain=("country",)),
    ]
    enc = HashingEncoder(dim=64).encode
    pred = RelationChainPredictor(enc, {"currency": "currency", "country": "country"}, g).fit(train)
    assert [p for p, _ in pred.predict([BlindQuestion("country of a", "a")])[0]] == [("currency",)]
    assert pred.predict([BlindQuestion("country of z", "z")]) == [[]]  # unknown topic: none


def test_chain_accuracy_and_its_ceiling():
    train = [SimpleNamespace(text="currency of a", chain=("currency",))]
    enc = HashingEncoder(dim=64).encode
    pred = RelationChainPredictor(enc, {"currency": "currency"}).fit(train)
    test = [
        SimpleNamespace(text="currency of b", topic="b", chain=("currency",)),
        SimpleNamespace(text="capital of b", topic="b", chain=("capital",)),
    ]
    acc = chain_accuracy(pred, test, k=3)
    assert acc == {1: dict(n=2.0, top1=0.5, topk=0.5, ceiling=0.5)}


def test_bad_settings_and_unfitted_use():
    enc = HashingEncoder(dim=8).encode
    for kw in (dict(label_weight=-1.0), dict(temperature=0.0), dict(temperature=float("nan"))):
        with pytest.raises(ValueError):
            RelationChainPredictor(enc, {}, **kw)
    with pytest.raises(ValueError, match="not fitted"):
        RelationChainPredictor(enc, {}).predict([BlindQuestion("q", "a")])
    with pytest.raises(ValueError, match="at least one"):
        RelationChainPredictor(enc, {}).fit([])


def test_blind_qa_grounds_each_candidate_on_its_own_predicted_claim(umls):
    """``BlindQA``: candidates are claim chains along the predicted paths, with prior
    ``w_j p(a | pi_j)``; the outcome keeps the predicted chains; gold fields are never read
    (a scrambled question gives the same outcome) and gold-bearing questions are refused."""
    from grounding import GroundingConfig
    from grounding.learn import init_model
    from grounding.qa import BlindQA, KGEAnswerer
    from grounding.retrieval import PCR, TextIndex

    bench, pred = umls
    g = bench.graph
    base = [r for r in g.relations if not r.endswith("^-1")]
    answerer = KGEAnswerer(init_model("transe", g.n_nodes, len(base), 8), g.entities, base)
    index = TextIndex(g)
    qa = BlindQA(answerer, pred, lambda d: PCR(index, max_hops=d),
                 GroundingConfig(lam=1.0, kappa=1.0), k_chains=2, k_candidates=4)  # fmt: skip
    test = list(bench.split("test")[:6])
    outs = qa.answer_batch([blind(q) for q in test])
    for o in outs:
        assert o.reason is None, o.reason
        claimed = {c.relations for c in qa.problem(o.question, o.chains).candidates}
        assert claimed == {p for p, _ in o.chains}
        names, probs = o.answer_probabilities()
        assert abs(float(np.sum(probs)) - 1) < 1e-6 and len(names) == len(set(names))
    scrambled = [dataclasses.replace(q, chain=test[0].chain, answers=("x",)) for q in test]
    again = qa.answer_batch([blind(q) for q in scrambled])
    for a, b in zip(outs, again):
        np.testing.assert_array_equal(a.result.log_posterior, b.result.log_posterior)
    with pytest.raises(TypeError, match="BlindQuestion"):
        qa.answer_batch(test[:1])
