"""The TSV triple loader (:func:`grounding.datasets.load_triples`) and the shipped Lou Seal graph
it reads (the running example itself: tests/datasets/test_lou_seal.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from grounding import TypedGraph
from grounding.datasets import load_triples, lou_seal

GOOD = "# a comment\n\nlou_seal\tmascot_of\tgiants\t0.9\ngiants\tlocated_in\tsf\n"


def _write(tmp_path, text, name="g.tsv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- loader
def test_load_triples_parses_comments_blank_lines_and_default_reliability(tmp_path):
    g = load_triples(_write(tmp_path, GOOD))
    assert g.triples() == [("lou_seal", "mascot_of", "giants"), ("giants", "located_in", "sf")]
    np.testing.assert_allclose(np.asarray(g.reliability), [0.9, 1.0])
    assert load_triples(str(_write(tmp_path, GOOD, "h.tsv"))).n_edges == 2  # str paths too


@pytest.mark.parametrize(
    ("bad_line", "what"),
    [
        ("a\tr", "expected 3 or 4"),  # too few columns
        ("a\tr\tb\t0.5\textra", "expected 3 or 4"),  # too many columns
        ("a r b", "expected 3 or 4"),  # spaces, not tabs
        ("a\tr\tb\tabc", "not a number"),  # non-numeric reliability
        ("a\tr\tb\t1.5", r"\(0, 1\]"),  # above 1
        ("a\tr\tb\t0", r"\(0, 1\]"),  # zero
        ("a\tr\tb\t-0.2", r"\(0, 1\]"),  # negative
        ("a\tr\tb\tnan", r"\(0, 1\]"),  # NaN
        ("a\t\tb", "empty"),  # empty relation
        ("a\x00b\tr\tc", "control character"),  # NUL inside a name
        ("a\tr\tb\x7f", "control character"),
        ("\ufeffa\tr\tb", "byte-order mark"),  # a second file's BOM, mid-file
        ("New York \tr\tb", "head 'New York ' has leading or trailing whitespace"),
        ("a\t r\tb", "relation ' r' has leading or trailing whitespace"),
        ("a\tr\tb ", "tail 'b ' has leading or trailing whitespace"),
        ("a\tr\tb\t0.5_0", "not a number"),  # float() would read 0.5
        ("a\tr\tb\t 0.5", "not a number"),
        ("a\tr\tb\t\u0660.5", "not a number"),  # an Arabic-Indic zero
    ],
)
def test_load_triples_malformed_line_names_file_and_line(tmp_path, bad_line, what):
    path = _write(tmp_path, GOOD + "# another comment\n" + bad_line + "\n", "bad_graph.tsv")
    lineno = GOOD.count("\n") + 2
    with pytest.raises(ValueError, match=what) as info:
        load_triples(path)
    msg = str(info.value)
    assert "bad_graph.tsv" in msg
    assert re.search(rf":{lineno}\b", msg), msg


def test_load_triples_keeps_names_exactly_and_errors_stay_short(tmp_path):
    """A padded name is an error, never merged with the unpadded one; a huge malformed line is
    quoted in at most a few hundred characters."""
    path = _write(tmp_path, "New York\tr\tb\nNew York \tr\tc\n", "padded.tsv")
    with pytest.raises(ValueError, match=r"padded.tsv:2: head 'New York '"):
        load_triples(path)
    huge = "x" * 5_000_000
    for line in (huge, f"a\tr\tb\t{huge}", f" {huge}\tr\tb", f"a\x00{huge}\tr\tb"):
        with pytest.raises(ValueError, match="huge.tsv:1") as info:
            load_triples(_write(tmp_path, line + "\n", "huge.tsv"))
        assert len(str(info.value)) < 400, str(info.value)[:500]


def test_load_triples_byte_order_mark_and_non_utf8_bytes(tmp_path):
    """A UTF-8 byte-order mark is not part of the first name; a byte that is not UTF-8 is a
    ValueError naming the file and the line (not a bare UnicodeDecodeError)."""
    bom = tmp_path / "bom.tsv"
    bom.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert load_triples(bom).triples() == load_triples(_write(tmp_path, GOOD)).triples()
    bad = tmp_path / "latin1.tsv"
    bad.write_bytes(GOOD.encode() + "caf\u00e9\tr\tb\n".encode("latin-1"))
    with pytest.raises(ValueError, match=rf"latin1.tsv:{GOOD.count(chr(10)) + 1}: not UTF-8"):
        load_triples(bad)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "is empty"),
        (" ", "has leading or trailing whitespace"),
        (" a", "has leading or trailing whitespace"),
        ("a ", "has leading or trailing whitespace"),
        ("a\tb", r"holds the control character '\\t' at column 2"),
        ("a\nb", r"holds the control character '\\n' at column 2"),
        ("ab\x00", r"holds the control character '\\x00' at column 3"),
        ("a\u200bb", r"holds the format character U\+200B \(ZERO WIDTH SPACE\) at column 2"),
        ("a\ufeff", r"holds a byte-order mark \(U\+FEFF\) at column 2"),
    ],
)
def test_graph_names_follow_the_one_name_rule_of_the_file_loaders(tmp_path, name, why):
    """The graph constructors refuse what a TSV file cannot carry, with the loaders' message
    (the one name rule): the kind, the index and the offending character's column."""
    with pytest.raises(ValueError, match=rf"entity name 0 \(.*\) {why}"):
        TypedGraph.from_triples([(name, "r", "b")])
    with pytest.raises(ValueError, match=rf"relation name 0 \(.*\) {why}"):
        TypedGraph.from_triples([("a", name, "b")])
    with pytest.raises(ValueError, match=rf"entity name 2 \(.*\) {why}"):
        TypedGraph.from_triples([("a", "r", "b")], entities=["a", "b", name])
    with pytest.raises(ValueError, match=rf"entities\[1\] .* {why}"):  # named by the argument
        load_triples(_write(tmp_path, "a\tr\tb\n"), entities=["c", name])
    if name.strip() and "\t" not in name and "\n" not in name:  # a line the file can hold
        with pytest.raises(ValueError, match=rf"f.tsv:1: head .* {why}"):
            load_triples(_write(tmp_path, f"{name}\tr\tb\n", "f.tsv"))


def test_a_name_has_one_spelling_whatever_its_unicode_form():
    """Unicode NFC is the one spelling of a name: "café" with a combining accent and with the
    precomposed letter are one entity, at every entry point (graph, problem, linker)."""
    import grounding as g
    from grounding.language import AnswerLinker

    nfd, nfc = "cafe\u0301", "caf\u00e9"
    graph = TypedGraph.from_triples([("paris", "has", nfd)])
    assert graph.entities == ("paris", nfc) and graph.has_entity(nfd) and graph.has_entity(nfc)
    assert graph.entity_index(nfd) == graph.entity_index(nfc) == 1
    with pytest.raises(ValueError, match="duplicate"):
        TypedGraph.from_triples([("a", "r", "b")], entities=["a", "b", nfd, nfc])
    problem = g.GroundingProblem.from_logprobs("q", [nfd, "tea"], [-0.5, -1.0], anchors=("paris",))
    result = g.ground(problem, graph, lam=1.0, kappa=1.0)
    assert problem.candidates == (nfc, "tea")
    assert [g.EvidenceStatus(int(s)).name for s in result.status] == ["SUPPORTED", "UNSUPPORTED"]
    assert AnswerLinker(graph.entities).link(nfd.upper()) == (nfc,)
    merged = g.GroundingProblem.merged("q", [nfd, nfc], np.log([0.5, 0.5]), anchors=("paris",))
    assert merged.candidates == (nfc,)


def test_load_triples_empty_file_raises(tmp_path):
    with pytest.raises(ValueError, match="empty.tsv"):
        load_triples(_write(tmp_path, "# only comments\n\n", "empty.tsv"))


def test_lou_seal_graph_is_the_shipped_tsv():
    g = lou_seal()
    assert 10 <= g.n_edges <= 20
    for t in [
        ("lou_seal", "mascot_of", "san_francisco_giants"),
        ("san_francisco_giants", "most_recent_world_series_win", "2014_world_series"),
        ("fredbird", "mascot_of", "st_louis_cardinals"),
        ("st_louis_cardinals", "most_recent_world_series_win", "2011_world_series"),
        ("san_francisco_giants", "located_in", "san_francisco"),
        ("san_francisco_giants", "plays_in", "national_league"),
    ]:
        assert g.has_triple(t), t
    w = np.asarray(g.reliability)
    assert np.all((w > 0) & (w <= 1))
