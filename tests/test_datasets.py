"""The TSV triple loader and the Lou Seal running example (Sec. 5.4, Thm. 1, Fig. 2)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from grounding import EvidenceStatus, TypedGraph
from grounding.datasets import load_triples, lou_seal, lou_seal_evidence
from grounding.datasets.lou_seal import STAND_IN_PRIOR
from grounding.examples import lou_seal_example
from grounding.paths import chain_path_energies
from grounding.worlds import hard_rule_requirements, truth

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


@pytest.mark.parametrize("name", ["", " ", "a\tb", "a\nb", " a", "a "])
def test_graph_names_must_round_trip_through_tsv(name):
    with pytest.raises(ValueError, match="round-trip"):
        TypedGraph.from_triples([(name, "r", "b")])
    with pytest.raises(ValueError, match="round-trip"):
        TypedGraph.from_triples([("a", name, "b")])
    with pytest.raises(ValueError, match="round-trip"):
        TypedGraph.from_triples([("a", "r", "b")], entities=["a", "b", name])


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


# ----------------------------------------------------------------------------- example
@pytest.fixture(scope="module")
def ex():
    return lou_seal_example()


def test_observed_state_lacks_the_championship_edge(ex):
    assert ex.world_1.has_triple(ex.claim)
    assert not ex.observed.has_triple(ex.claim)
    assert not any(h == ex.claim[0] and r == ex.claim[1] for h, r, _ in ex.observed.triples())
    # R is W1 minus exactly that edge.
    assert sorted(ex.observed.triples()) == sorted(t for t in ex.world_1.triples() if t != ex.claim)


def test_two_worlds_have_identical_observations_and_disagree_on_the_claim(ex):
    alt = (ex.claim[0], ex.claim[1], ex.alternative_tail)
    assert ex.world_2.has_triple(alt) and not ex.world_2.has_triple(ex.claim)
    o1, o2 = ex.observe(ex.world_1), ex.observe(ex.world_2)
    assert sorted(o1.graph.triples()) == sorted(o2.graph.triples()) == sorted(ex.observed.triples())
    assert o1.negative == o2.negative and o1.functional == o2.functional
    assert truth(ex.world_1, ex.claim) and not truth(ex.world_2, ex.claim)


def test_thm1_hard_rule_cannot_satisfy_both_requirements(ex):
    keeps, rejects = hard_rule_requirements(
        ex.hard_rule, [ex.world_1, ex.world_2], ex.observe, ex.claim
    )
    assert (keeps, rejects) == (False, True)  # rejected in both worlds: wrong in W1
    assert ex.hard_rule(lou_seal_evidence(ex.world_1), ex.claim) == 1  # kept once observed


def test_candidate_statuses_and_slack_energies(ex):
    names = ex.names
    st_r = [EvidenceStatus(int(s)) for s in np.asarray(ex.grounded_R.status)]
    assert st_r[names.index("correct_2014")] is EvidenceStatus.UNSUPPORTED
    assert st_r[names.index("wrong_team_drift")] is EvidenceStatus.CONTRADICTED
    assert st_r[names.index("relation_reversal")] is EvidenceStatus.CONTRADICTED
    assert st_r[names.index("unsupported_generic")] is EvidenceStatus.UNSUPPORTED
    e = np.asarray(ex.grounded_R.energy)
    assert np.all(np.isfinite(e))  # finite slack everywhere
    assert e[ex.correct_index] == pytest.approx(ex.kappa)
    full = ex.ground(lou_seal_evidence(ex.world_1))
    assert EvidenceStatus(int(full.status[ex.correct_index])) is EvidenceStatus.SUPPORTED
    assert float(full.energy[ex.correct_index]) <= ex.eps_s
    # The correct route is the lowest-energy candidate once its edge is observed.
    assert int(np.argmin(np.asarray(full.energy))) == ex.correct_index


def test_jitted_chain_energy_matches_eager_enumeration(ex):
    """The example's compiled grounding equals Eq. (11) by explicit walk enumeration."""
    g = ex.world_1
    for k, c in enumerate(ex.candidates):
        psi = np.asarray(ex.embeddings)[[g.entity_index(e) for e in c.entities]]
        rels = [g.relation_index(r) for r in c.relations]
        _, e = chain_path_energies(
            g, ex.embeddings, ex.relation_map, psi, rels, alpha=ex.alpha, xi=ex.xi
        )
        expected = float(np.min(np.asarray(e))) if e.shape[0] else np.inf
        got = float(ex.ground(lou_seal_evidence(g)).raw_energy[k])
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_example_is_deterministic_and_prior_is_a_declared_stand_in(ex):
    again = lou_seal_example()
    np.testing.assert_array_equal(np.asarray(again.embeddings), np.asarray(ex.embeddings))
    np.testing.assert_array_equal(
        np.asarray(again.grounded_R.energy), np.asarray(ex.grounded_R.energy)
    )
    assert ex.embeddings.shape == (ex.world_1.n_nodes, 8)
    assert "stand-in" in ex.prior_note
    assert sum(STAND_IN_PRIOR.values()) == pytest.approx(1.0)
    np.testing.assert_allclose(
        np.exp(np.asarray(ex.log_prior)), [STAND_IN_PRIOR[n] for n in ex.names]
    )
