"""Real knowledge graphs: the shipped datasets and the split loader (loaders only; the models
learned on them are tested in tests/learn/test_kge.py)."""

from __future__ import annotations

import re

import pytest

from grounding.datasets import load_kg, load_kg_splits
from grounding.datasets.kg import KG_DATASETS

STATS = {  # (entities, relations, train, valid, test) as documented by PyKEEN
    "umls": (135, 46, 5216, 652, 661),
    "nations": (14, 55, 1592, 199, 201),
    "kinships": (104, 25, 8544, 1068, 1074),
    "codex-s": (2034, 42, 32888, 1827, 1828),  # CoDEx README
    "codex-m": (17050, 51, 185584, 10310, 10311),
    "wn18rr": (40943, 11, 86835, 3034, 3134),  # Dettmers et al. 2018
}


# ----------------------------------------------------------------------------- loaders
@pytest.mark.parametrize("name", KG_DATASETS)
def test_shipped_kg_statistics_and_round_trip(name):
    kg = load_kg(name)
    got = (kg.n_entities, kg.n_relations, len(kg.train), len(kg.valid), len(kg.test))
    assert got == STATS[name]
    assert list(kg.entities) == sorted(kg.entities)
    # every id triple maps back to a line of the shipped file, and splits are disjoint
    every = {tuple(t) for t in kg.all_triples()}
    assert len(every) == sum(STATS[name][2:])
    g = kg.graph()
    assert g.n_nodes == kg.n_entities and g.n_edges == len(kg.train)
    assert g.has_triple(kg.names(kg.train[:1])[0])
    assert not g.has_triple(kg.names(kg.test[:1])[0])  # held out: true but unobserved
    assert kg.graph("train", "valid", "test").n_edges == len(every)


def test_load_kg_is_case_insensitive_and_rejects_unknown_names():
    assert load_kg("UMLS").name == "umls"
    with pytest.raises(ValueError, match="unknown dataset 'fb15k'"):
        load_kg("fb15k")
    with pytest.raises(ValueError, match="split must be one of"):
        load_kg("nations").split("dev")


def _splits(tmp_path, train, valid, test):
    paths = []
    for name, text in (("train", train), ("valid", valid), ("test", test)):
        (tmp_path / f"{name}.tsv").write_text(text, encoding="utf-8")
        paths.append(tmp_path / f"{name}.tsv")
    return paths


def test_load_kg_splits_vocabulary_is_the_sorted_union(tmp_path):
    kg = load_kg_splits(*_splits(tmp_path, "b\tr\ta\n", "a\ts\tc\n", "c\tr\tb\n"))
    assert kg.entities == ("a", "b", "c") and kg.relations == ("r", "s")
    assert kg.train.tolist() == [[1, 0, 0]] and kg.test.tolist() == [[2, 0, 1]]


@pytest.mark.parametrize(
    ("files", "what", "where"),
    [
        (("a\tr\tb\n", "a\tr\n", "a\tr\tb2\n"), "expected 3 or 4", r"valid\.tsv:1"),
        (("a\tr\tb\n", "x\tr\ty\n", "# c\na\tr\tb\n"), "also occurs in train", r"test\.tsv"),
        (("a\tr\tb\t0.5\n", "x\tr\ty\n", "a\tr\tc\n"), "expected 1", r"train\.tsv"),
        (("", "x\tr\ty\n", "a\tr\tc\n"), "no triples", r"train\.tsv"),
    ],
)
def test_load_kg_splits_malformed_files_name_the_file(tmp_path, files, what, where):
    with pytest.raises(ValueError, match=what) as info:
        load_kg_splits(*_splits(tmp_path, *files))
    assert re.search(where, str(info.value)), str(info.value)
