"""The chain reader (grounding.plans.ChainReader) reads a question's relation chain from its
words: the direction of a hop from the side of its mention the topic lies on, the order of
the hops from how they nest around the topic, phrasings learned from training questions;
and it beats the label-lookup baseline where reading matters (on UMLS, whose questions the
labels alone do not find)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from grounding import TypedGraph
from grounding.datasets import kgqa_benchmark
from grounding.graph import inverse_relation
from grounding.plans import ChainReader, LabelLookup, chain_accuracy
from grounding.plans.chain_reader import FEATURES, GRID
from grounding.query import BlindQuestion


class Q:
    def __init__(self, text, topic, chain):
        self.text, self.topic, self.chain = text, topic, tuple(chain)


def with_inverses(triples):
    return TypedGraph.from_triples(
        [*triples, *((t, inverse_relation(r), h) for h, r, t in triples)]
    )


def people(n=12, seed=0):
    """People who like one another (each likes two and is liked by two) and have a mother
    and a father, so every order and direction below can be walked."""
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(n)]
    triples = []
    for i, p in enumerate(names):
        for j in (1, 3):
            triples.append((p, "likes", names[(i + j) % n]))
        triples.append((p, "mother", names[(i + 5) % n]))
        triples.append((p, "father", names[(i + 7) % n]))
    rng.shuffle(triples)
    return names, with_inverses(triples)


LABELS = {"likes": "likes", "mother": "mother", "father": "father"}
#: direction read from position: the topic before the verb reads it forwards
TRAIN_WORDINGS = {False: "Name the entity that {X} likes.", True: "Name the entity that likes {X}."}
TEST_WORDINGS = {False: "Tell me whatever {X} likes.", True: "Tell me whichever one likes {X}."}


def likes_questions(names, wordings):
    return [
        Q(wordings[inv].replace("{X}", p), p, ["likes^-1" if inv else "likes"])
        for p in names
        for inv in (False, True)
    ]


def top1(reader, questions):
    preds = reader.predict([BlindQuestion(q.text, q.topic) for q in questions], 1)
    return float(np.mean([bool(p) and p[0][0] == q.chain for p, q in zip(preds, questions)]))


def test_direction_is_read_from_the_side_the_topic_lies_on():
    names, g = people()
    train = likes_questions(names[:8], TRAIN_WORDINGS)
    test = likes_questions(names[8:], TEST_WORDINGS)  # wordings no training question used
    reader = ChainReader(LABELS, g, learn=False).fit(train)
    assert top1(reader, test) == 1.0
    # the lookup reads no direction: both are walkable with one answer each, so it answers
    # every question the same way, right for half of them
    assert top1(LabelLookup(LABELS, g).fit(train), test) == 0.5


def test_order_is_read_from_how_the_hops_nest_around_the_topic():
    names, g = people()
    qs = [Q(f"Who is the father of the mother of {p}?", p, ["mother", "father"]) for p in names] + [
        Q(f"Name {p}'s father's mother.", p, ["father", "mother"]) for p in names
    ]
    reader = ChainReader(LABELS, g, learn=False)  # default weights, nothing fitted
    assert top1(reader, qs) == 1.0
    assert reader.mentions(BlindQuestion(qs[0].text, qs[0].topic)) == [
        ("father", ("father",)),
        ("mother", ("mother",)),
    ]


def test_hop_count_is_the_number_of_mentions_and_phrasings_are_learned():
    names, g = people()
    labels = {"likes": "likes", "mother": "mother", "father": "father"}
    train = (
        [Q(f"Who is {p}'s mum?", p, ["mother"]) for p in names[:6]]
        + [Q(f"Who is the dad of {p}?", p, ["father"]) for p in names[:6]]
        + [Q(f"Name the dad of the mum of {p}.", p, ["mother", "father"]) for p in names[:6]]
    )
    test = [Q(f"Which person is the mum of the dad of {p}?", p, ["father", "mother"])
            for p in names[6:]]  # fmt: skip
    reader = ChainReader(labels, g).fit(train)
    # "dad of the mum" predicts both relations: it spans two mentions and is no phrase
    assert reader.learned["mother"] == ["mum"] and reader.learned["father"] == ["dad"]
    assert top1(reader, test) == 1.0
    assert top1(LabelLookup(labels, g).fit(train), test) == 0.0  # no label in the text
    assert ChainReader(labels, g, learn=False).fit(train).predict(
        [BlindQuestion(test[0].text, test[0].topic)]
    ) == [[]]


def test_a_chain_the_evidence_can_walk_from_the_topic_ranks_first():
    g = with_inverses([("fr", "capital", "paris"), ("de", "capital", "berlin")])
    reader = ChainReader({"capital": "capital"}, g, learn=False)  # nothing read of direction
    for topic, chain in (("fr", ("capital",)), ("paris", ("capital^-1",))):
        best = reader.predict([BlindQuestion(f"What is the capital of {topic}?", topic)], 2)[0]
        assert best[0][0] == chain and best[0][1] > best[1][1]


def test_the_topic_is_blanked_before_relations_are_looked_for():
    g = with_inverses([("mother", "mother", "x"), ("x", "father", "y")])
    reader = ChainReader(LABELS, g, learn=False)
    (best, p), *_ = reader.predict([BlindQuestion("Who is the father of mother?", "mother")])[0]
    assert best == ("father",)


def test_questions_may_come_as_any_iterable():
    names, g = people()
    reader = ChainReader(LABELS, g, learn=False)
    qs = [BlindQuestion("Name the entity that p1 likes.", "p1")] * 2
    assert reader.predict(q for q in qs) == reader.predict(qs) != [[], []]


def test_a_question_without_a_mention_or_outside_the_graph_gets_no_chain():
    names, g = people()
    reader = ChainReader(LABELS, g, learn=False)
    assert reader.predict([BlindQuestion("Who is p1?", "p1"), BlindQuestion("likes?", "zz")]) == [
        [],
        [],
    ]


@pytest.mark.parametrize("temperature", [0.3, 1.0, 4.0])
def test_probabilities_are_a_tempered_softmax_of_the_best_scores(temperature):
    names, g = people()
    # fitted, so the direction read from position separates likes from likes^-1
    reader = ChainReader(LABELS, g, temperature=temperature).fit(
        likes_questions(names, TRAIN_WORDINGS)
    )
    assert reader.temperature == temperature  # fitted without validation: T as given
    q = BlindQuestion("Name the entity that p1 likes.", "p1")
    out = reader.predict([q], k=2)[0]
    assert len(out) == 2 and out[0][1] >= out[1][1]
    assert sum(p for _, p in out) == pytest.approx(1.0)
    # p_i / p_j = exp((s_i - s_j) / T), the scores of Eq. (s) with the reader's weights
    chains, feats = reader._candidates(q)
    s = feats @ np.array([reader.weights[f] for f in FEATURES])
    score = {c: x for c, x in zip(chains, s)}
    (c0, p0), (c1, p1) = out
    assert score[c0] == max(s) and score[c0] > score[c1]
    assert np.log(p0 / p1) == pytest.approx((score[c0] - score[c1]) / temperature, rel=1e-9)


@pytest.fixture(scope="module")
def umls():
    b = kgqa_benchmark("umls", questions_per_hop=300, seed=0)
    train, valid, test = b.split("train"), b.split("valid"), b.split("test")
    reader = ChainReader(b.relation_labels, b.graph).fit(train, valid)
    lookup = LabelLookup(b.relation_labels, b.graph).fit(train, valid)
    return b, valid, test, reader, lookup


def test_the_reader_beats_label_lookup_on_umls_held_out_wordings(umls):
    """UMLS's questions (held-out test wordings) name their relations with words the labels
    do not hold ("is a kind of" for ``isa``): reading beats the lookup at every hop."""
    b, _, test, reader, lookup = umls
    ours, base = chain_accuracy(reader, test), chain_accuracy(lookup, test)
    for h in (1, 2, 3):
        assert ours[h]["top1"] > base[h]["top1"] + 0.1, (h, ours[h], base[h])
        assert ours[h]["topk"] >= ours[h]["top1"]


def test_weights_chosen_on_validation_are_the_grids_best_there(umls):
    _, valid, _, reader, _ = umls
    chosen = dict(reader.weights)

    def hits(values) -> float:  # validation questions read right, all hops pooled
        reader.weights = dict(zip(FEATURES, values))
        try:
            return sum(r["top1"] * r["n"] for r in chain_accuracy(reader, valid, seen=[]).values())
        finally:
            reader.weights = chosen

    ours = hits([chosen[f] for f in FEATURES])
    grid = list(itertools.product(*(GRID[f] for f in FEATURES)))
    assert ours > 0 and all(hits(v) <= ours + 1e-9 for v in random.Random(0).sample(grid, 12))
    assert 0 < reader.temperature < np.inf


def test_bad_input_gets_a_clear_error():
    names, g = people()
    with pytest.raises(TypeError, match="BlindQuestion"):
        ChainReader(LABELS, g).predict([Q("Who likes p1?", "p1", ["likes"])])
    with pytest.raises(ValueError, match="max_hops must be at most 4"):
        ChainReader(LABELS, g, max_hops=5)
    with pytest.raises(TypeError, match="label must be a str"):
        ChainReader({"likes": None}, g)
    with pytest.raises(ValueError, match="names no relation"):
        ChainReader({}, g)
    with pytest.raises(TypeError, match="TypedGraph"):
        ChainReader(LABELS, [("a", "likes", "b")])
    with pytest.raises(ValueError, match="weights must name"):
        ChainReader(LABELS, g, weights={"walk": 1.0})
    with pytest.raises(ValueError, match="temperature"):
        ChainReader(LABELS, g, temperature=float("nan"))
    with pytest.raises(ValueError, match="weights must be finite"):
        ChainReader(LABELS, g, weights={f: float("nan") for f in FEATURES})
    with pytest.raises(ValueError, match="at least one training question"):
        ChainReader(LABELS, g).fit([])
    bare = Q("Who likes p1?", "p1", ["likes"])
    bare.chain = "likes"
    with pytest.raises(TypeError, match="not a string"):
        ChainReader(LABELS, g).fit([bare])
