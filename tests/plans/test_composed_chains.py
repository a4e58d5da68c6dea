"""Relation chains composed relation by relation (grounding.plans.composed_chains): chains no
training question used, the graph's constraints, and bad input."""

from __future__ import annotations

from types import SimpleNamespace as Q

import numpy as np
import pytest

from grounding import TypedGraph
from grounding.datasets import kgqa_benchmark
from grounding.language import HashingEncoder
from grounding.plans import ComposedChainPredictor, RelationChainPredictor, chain_accuracy
from grounding.query import BlindQuestion, blind

VOCAB = ["capital", "currency", "country", "mayor"]


def _encode(texts):
    """Relation words and the nesting depth (how often "of the" occurs)."""
    return np.array([[t.count(w) for w in VOCAB] + [t.count("of the"), 1.0] for t in texts])


def _graph():
    return TypedGraph.from_triples(
        [
            ("a", "country", "fr"),
            ("fr", "capital", "paris"),
            ("fr", "currency", "euro"),
            ("paris", "mayor", "m"),
            ("b", "country", "de"),
        ]
    )


TRAIN = [
    Q(text="What is the capital of Y?", chain=("capital",)),
    Q(text="What is the currency of the country of Z?", chain=("country", "currency")),
    Q(
        text="What is the currency of the country of the mayor of W?",
        chain=("mayor", "country", "currency"),
    ),
]


def test_it_composes_a_chain_no_training_question_used():
    p = ComposedChainPredictor(_encode, {r: r for r in VOCAB}, _graph()).fit(TRAIN)
    q = BlindQuestion("What is the mayor of the capital of the country of a?", "a")
    [best] = p.predict([q], k=1)
    assert best[0][0] == ("country", "capital", "mayor")
    assert ("country", "capital", "mayor") not in {t.chain for t in TRAIN}
    # the training-chain predictor cannot propose it at all
    old = RelationChainPredictor(_encode, {r: r for r in VOCAB}, _graph()).fit(TRAIN)
    assert all(c != ("country", "capital", "mayor") for c, _ in old.predict([q], k=9)[0])


def test_the_beam_walks_the_graph():
    g = _graph()
    p = ComposedChainPredictor(_encode, {r: r for r in VOCAB}, g).fit(TRAIN)
    [chains] = p.predict([BlindQuestion("What is the capital of a?", "a")], k=50)
    assert chains and abs(sum(w for _, w in chains) - 1) < 1e-9
    leaving = {"country", "country^-1"} & set(g.relations)
    assert all(c[0] in leaving | {"country"} for c, _ in chains)  # only "country" leaves a
    for c, _ in chains:  # never straight back along the edge just taken
        assert all(b != f"{a}^-1" and a != f"{b}^-1" for a, b in zip(c, c[1:]))
    # a topic outside the graph gets no chain
    assert p.predict([BlindQuestion("What is the capital of zz?", "zz")]) == [[]]


def test_where_the_evidence_stops_the_schema_extends_the_chain():
    # "b" has a country (de) with no edges in the evidence: de's capital is unobserved
    p = ComposedChainPredictor(_encode, {r: r for r in VOCAB}, _graph()).fit(TRAIN)
    [chains] = p.predict([BlindQuestion("What is the capital of the country of b?", "b")], k=3)
    assert chains[0][0] == ("country", "capital")


def test_bad_input_is_refused():
    g = _graph()
    with pytest.raises(ValueError, match="not fitted"):
        ComposedChainPredictor(_encode, {}, g).predict([BlindQuestion("x", "a")])
    p = ComposedChainPredictor(_encode, {}, g).fit(TRAIN)
    with pytest.raises(TypeError, match="BlindQuestion"):
        p.predict([Q(text="x", topic="a")])
    with pytest.raises(ValueError, match="at least one"):
        ComposedChainPredictor(_encode, {}, g).fit([])
    for kw in (dict(label_weight=-1), dict(hop_weight=np.nan), dict(temperature=0), dict(beam=0)):
        with pytest.raises(ValueError):
            ComposedChainPredictor(_encode, {}, g, **kw)


def test_on_a_real_graph_it_passes_the_training_chain_ceiling():
    """UMLS, held-out wordings: at three hops the composed predictor's top 3 hold more gold
    chains than any predictor over training chains could (its ceiling)."""
    bench = kgqa_benchmark("umls", questions_per_hop=300)
    enc = HashingEncoder().encode
    train, test = bench.split("train"), bench.split("test")
    p = ComposedChainPredictor(enc, bench.relation_labels, bench.graph).fit(train)
    acc = chain_accuracy(p, test, k=3, seen=[q.chain for q in train])
    assert acc[2]["topk"] > acc[2]["ceiling"]
    preds = p.predict([blind(q) for q in test], 3)
    assert any(c not in {q.chain for q in train} for row in preds for c, _ in row)
