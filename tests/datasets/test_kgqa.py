"""The templated question benchmark (grounding.datasets.kgqa) against brute force over the
triples, and how a relation reads in a question."""

from __future__ import annotations

import re

import pytest
from _brute import follow

from grounding.datasets import kgqa_benchmark, load_kg
from grounding.query import relation_phrase


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
