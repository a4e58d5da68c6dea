"""The templated question benchmark (grounding.datasets.kgqa) against brute force over the
triples, and how a relation reads in a question."""

from __future__ import annotations

import re

import pytest
from _brute import follow

from grounding.datasets import kgqa_benchmark, load_kg
from grounding.datasets.kgqa import WORDINGS
from grounding.query import (
    FRAMES,
    TEST_FRAMES,
    TRAIN_FRAMES,
    question_text,
    relation_phrase,
)


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
            ans, obs = follow(world, ans, r), follow(observed, obs, r)
        ans.discard(q.topic)
        obs.discard(q.topic)
        assert set(q.answers) == ans and 0 < len(ans) <= 8
        assert set(q.observed) == obs
        assert set(q.unobserved) == ans - obs
        for a, b in zip(q.chain, q.chain[1:]):  # never straight back
            assert b != (a[:-3] if a.endswith("^-1") else a + "^-1")


def test_fitting_answers_are_read_off_train_and_valid_triples_only(nations_bench):
    """What a system may fit on (a temperature, lambda): the chain followed in train + valid,
    brute force; never a test triple."""
    kg = nations_bench.kg
    fitting = kg.names(kg.train) + kg.names(kg.valid)
    differs_from_world = differs_from_evidence = 0
    for q in nations_bench.questions:
        ans = {q.topic}
        for r in q.chain:
            ans = follow(fitting, ans, r)
        ans.discard(q.topic)
        got = set(nations_bench.fitting_answers(q))
        assert got == ans and set(q.observed) <= got <= set(q.answers)
        differs_from_world += got != set(q.answers)
        differs_from_evidence += got != set(q.observed)
    assert differs_from_world and differs_from_evidence  # neither the world nor train alone


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


@pytest.mark.parametrize("label", ["capital", "member of", "treats", "isa", "symptoms"])
@pytest.mark.parametrize("inverse", [False, True])
def test_every_wording_names_the_relation_and_the_inner_phrase(label, inverse):
    phrases = [relation_phrase(label, "X", inverse=inverse, phrasing=i) for i in range(6)]
    words = "is a kind of" if label == "isa" else label
    assert all(words in p and "X" in p for p in phrases), phrases
    assert len(set(phrases)) == 6  # six distinct wordings, not one prefix per relation
    for bad in (-1, 6, 1.5):
        with pytest.raises(ValueError, match="phrasing"):
            relation_phrase(label, "X", inverse=inverse, phrasing=bad)
    with pytest.raises(ValueError, match="frame"):
        question_text("the capital of X", len(FRAMES))


@pytest.mark.parametrize("name", ["codex-m", "umls"])
def test_held_out_wordings_change_the_texts_only(name):
    held, single = (kgqa_benchmark(name, questions_per_hop=60, wording=w) for w in WORDINGS)
    assert held.wording == "held-out" and single.wording == "single"
    for a, b in zip(held.questions, single.questions, strict=True):
        assert (a.id, a.topic, a.chain, a.answers, a.observed, a.split) == (
            b.id, b.topic, b.chain, b.answers, b.observed, b.split
        )  # fmt: skip
        assert b.text.startswith("What is ") and b.text.endswith("?")
        frames = TEST_FRAMES if a.split == "test" else TRAIN_FRAMES
        opening = [FRAMES[i].split("{P}")[0] for i in frames]
        assert any(a.text.startswith(o) for o in opening), (a.split, a.text)
    # several wordings of the same chain in training; test wordings never seen there
    train_frames = {t.split()[0] for t in (q.text for q in held.split("train"))}
    test_frames = {t.split()[0] for t in (q.text for q in held.split("test"))}
    assert len(train_frames) == 3 and len(test_frames) == 2 and not train_frames & test_frames
    with pytest.raises(ValueError, match="wording"):
        kgqa_benchmark("nations", questions_per_hop=10, wording="other")


def test_a_new_question_is_worded_like_its_split():
    bench = kgqa_benchmark("nations", questions_per_hop=30)
    q = bench.questions[0]
    test_q = bench.make_question(q.topic, q.chain, "n:new", "test")
    train_q = bench.make_question(q.topic, q.chain, "n:new", "train")
    assert test_q.text.split()[0] in ("Tell", "Identify")
    assert train_q.text.split()[0] in ("What", "Which", "Name")
    assert test_q == bench.make_question(q.topic, q.chain, "n:new", "test")  # deterministic


def test_chains_over_chosen_relations_with_chosen_labels_and_held_out_first_hops():
    """``relations`` bounds every hop, ``labels`` words the texts, ``held_out_share`` makes that
    share of questions start with a test triple (answers checked by brute force as above)."""
    kg = load_kg("nations")
    rels = list(kg.relations[:30])
    labels = {rels[0]: "zorbling partner"}
    b = kgqa_benchmark(
        "nations",
        questions_per_hop=20,
        hops=(1, 2),
        max_answers=8,
        relations=rels,
        labels=labels,
        held_out_share=0.5,
        seed=1,
    )
    test = {tuple(t) for t in kg.names(kg.test)}
    world = kg.names(kg.all_triples())
    for h in (1, 2):
        qs = [q for q in b.questions if q.hops == h]
        assert all(set(q.chain) <= set(rels) for q in qs)
        first_held = [any((q.topic, q.chain[0], a) in test for a in kg.entities) for q in qs]
        assert len(qs) == 20 and sum(first_held) >= 10  # half by construction, or more
    for q in b.questions:
        ans = {q.topic}
        for r in q.chain:
            ans = follow(world, ans, r)
        assert set(q.answers) == ans - {q.topic}
        assert ("zorbling partner" in q.text) == (rels[0] in q.chain)


def test_bad_relation_options_are_named():
    with pytest.raises(ValueError, match="unknown"):
        kgqa_benchmark("nations", questions_per_hop=5, relations=["no such relation"])
    with pytest.raises(ValueError, match="labels name relations"):
        kgqa_benchmark("nations", questions_per_hop=5, labels={"nope": "x"})
    with pytest.raises(ValueError, match="held_out_share"):
        kgqa_benchmark("nations", questions_per_hop=5, held_out_share=1.5)
    with pytest.raises(TypeError, match="sequence of relation names"):
        kgqa_benchmark("nations", questions_per_hop=5, relations="intergovorgs")
