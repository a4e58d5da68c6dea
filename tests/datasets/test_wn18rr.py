"""WN18RR (WordNet 3.0): the shipped splits, the synsets' names and glosses, the map from a name
to its synsets, the licences that travel with the files, and errors naming file and line."""

from __future__ import annotations

import fnmatch
import hashlib
import re
import tomllib
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from grounding.datasets import (
    SynsetText,
    load_kg,
    normalize_lemma,
    read_synset_texts,
    synsets_by_name,
    wordnet_texts,
)
from grounding.datasets.kg import KG_DATASETS

ROOT = Path(__file__).resolve().parents[2]
DATA = resources.files("grounding.datasets") / "data" / "wn18rr"
SHIPPED = (
    "train.tsv",
    "dev.tsv",
    "test.tsv",
    "entity2text.txt",
    "relations.txt",
    "LICENSE.apache-2.0.txt",
    "LICENSE.wordnet.txt",
    "README.md",
    "SHA256SUMS",
)


@pytest.fixture(scope="module")
def kg():
    return load_kg("wn18rr")


# ----------------------------------------------------------------------------- the graph
def test_counts_are_the_standard_wn18rr_ones(kg):
    assert "wn18rr" in KG_DATASETS
    got = (kg.n_entities, kg.n_relations, len(kg.train), len(kg.valid), len(kg.test))
    assert got == (40943, 11, 86835, 3034, 3134)
    assert list(kg.entities) == sorted(kg.entities)
    assert all(len(e) == 8 and e.isdigit() for e in kg.entities)  # synset offsets
    assert len({tuple(t) for t in kg.all_triples()}) == 86835 + 3034 + 3134
    per_relation = Counter(kg.relations[r] for r in kg.all_triples()[:, 1])
    assert per_relation["_hypernym"] == 37221  # counts of the data README
    assert per_relation["_derivationally_related_form"] == 31867
    assert per_relation["_similar_to"] == 86


def test_triples_read_back_as_the_files_lines(kg):
    first = (DATA / "train.tsv").read_text(encoding="utf-8").split("\n")[0].split("\t")
    assert kg.names(kg.train[:1]) == [tuple(first)]
    last = (DATA / "test.tsv").read_text(encoding="utf-8").split("\n")[-1].split("\t")
    assert kg.names(kg.test[-1:]) == [tuple(last)]  # the last line has no line feed


def test_entity_texts_are_lemma_names_and_relation_labels_drop_the_underscores(kg):
    texts = dict(zip(kg.entities, kg.node_texts))
    assert texts["02106662"] == "german shepherd dog"
    assert texts["09213565"] == "bank"
    assert texts["08420278"] == "depository financial institution"
    assert kg.relation_labels[kg.relations.index("_member_of_domain_region")] == (
        "member of domain region"
    )
    assert kg.graph().node_texts == kg.node_texts


# ----------------------------------------------------------------------------- names, glosses
def test_known_synsets_have_their_names_and_glosses():
    texts = wordnet_texts()
    assert len(texts) == 40943
    assert texts["02106662"] == SynsetText(
        "german shepherd dog",
        "breed of large shepherd dogs used in police work and as a guide for the blind",
    )
    assert texts["09213565"].gloss.startswith("sloping land (especially the slope beside")
    assert texts["02343056"] == SynsetText("bank", "be in the banking business")
    texts["02106662"] = SynsetText("x", "y")  # a copy: the next call is unchanged
    assert wordnet_texts()["02106662"].name == "german shepherd dog"


def test_a_shared_name_lists_every_synset_it_names():
    by_name = synsets_by_name()
    assert by_name["bank"] == ("02343056", "02343374", "09213565", "13368318")
    assert len(by_name["run"]) == 33
    assert by_name["german shepherd dog"] == ("02106662",)
    texts = wordnet_texts()
    every = [s for synsets in by_name.values() for s in synsets]
    assert sorted(every) == sorted(texts)  # each synset under exactly one name
    assert len(by_name) == 32547
    for name, synsets in by_name.items():
        assert all(normalize_lemma(texts[s].name) == name for s in synsets)


def test_names_are_normalized_lower_case_with_underscores_as_spaces():
    assert normalize_lemma("  German_Shepherd   Dog ") == "german shepherd dog"
    texts = {"1": SynsetText("New_York", "a city"), "2": SynsetText("new york", "a state")}
    assert synsets_by_name(texts) == {"new york": ("1", "2")}


# ----------------------------------------------------------------------------- shipped files
def test_the_licences_and_checksums_ship_in_the_package():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["package-data"]["grounding.datasets"]
    for name in SHIPPED:
        assert (DATA / name).is_file(), name
        assert any(fnmatch.fnmatch(f"data/wn18rr/{name}", g) for g in globs), name
    wordnet = " ".join((DATA / "LICENSE.wordnet.txt").read_text(encoding="utf-8").split())
    assert "WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved." in wordnet
    assert "Permission to use, copy, modify and distribute this software" in wordnet
    assert "Apache License" in (DATA / "LICENSE.apache-2.0.txt").read_text(encoding="utf-8")
    sums = (DATA / "SHA256SUMS").read_text(encoding="utf-8").split("\n")
    listed = dict(reversed(line.split()) for line in sums if line.strip())
    assert set(listed) == set(SHIPPED) - {"LICENSE.wordnet.txt", "README.md", "SHA256SUMS"}
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name


# ----------------------------------------------------------------------------- malformed files
@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("02106662 german shepherd dog, breed", "expected <offset><TAB>"),
        ("02106662\tgerman shepherd dog\tbreed", "got 3 tab-separated fields"),
        ("0210666x\tgerman shepherd dog, breed", "not decimal digits"),
        ("\tgerman shepherd dog, breed", "not decimal digits"),
        ("02106662\tgerman shepherd dog", "no comma"),
        ("02106662\t , breed", "empty name"),
        ("02106662\tgerman shepherd dog, ", "empty gloss"),
        ("02106662\tgerman\x00dog, breed", "control character"),
        ("00001740\tentity, again", "already listed on line 1"),
    ],
)
def test_a_malformed_text_line_names_the_file_and_the_line(tmp_path, line, what):
    path = tmp_path / "entity2text.txt"
    path.write_text(f"00001740\tentity, that which exists\n\n{line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(what)) as info:
        read_synset_texts(path)
    assert f"{path}, line 3:" in str(info.value)


def test_text_files_that_are_empty_or_not_utf8_are_refused(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no synset texts"):
        read_synset_texts(empty)
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"00001740\tentity, x\n00002137\tcaf\xe9, y\n")
    with pytest.raises(ValueError, match=r"latin1\.txt, line 2: not UTF-8"):
        read_synset_texts(bad)
    ok = tmp_path / "crlf.txt"
    ok.write_bytes(b"00001740\tentity, that which exists\r\n")
    assert read_synset_texts(ok, label="x") == {
        "00001740": SynsetText("entity", "that which exists")
    }
