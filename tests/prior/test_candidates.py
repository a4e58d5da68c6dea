"""Candidate sets (grounding.prior.candidates): normalization, merging, validation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from grounding.language import AnswerLinker, normalize_answer
from grounding.prior import (
    Candidates,
)


def test_candidates_from_scores_and_validation():
    c = Candidates.from_scores(["a", "b", "a", "c"], [0.0, np.log(2), 0.0, -np.inf], k=2)
    assert c.entities == ("a", "b")
    np.testing.assert_allclose(np.exp(c.log_prior), [0.5, 0.5])
    assert Candidates.from_scores(["a"], [-np.inf]).abstained
    for bad in (
        dict(entities=(), log_prior=[]),
        dict(entities=("a", "a"), log_prior=[0.0, 0.0]),
        dict(entities=("a",), log_prior=[0.5]),
        dict(entities=("a",), log_prior=[np.nan]),
    ):
        with pytest.raises(ValueError):
            Candidates(**bad)
    with pytest.raises(ValueError, match="reason"):
        Candidates.abstain("")


# ----------------------------------------------------------- from_answers
def test_from_answers_applies_the_three_rules():
    """(a) an unlinked answer is an out-of-graph candidate named by its normalized text;
    (b) an answer naming ``m`` entities gives each ``log w - log m``; (c) names that recur
    merge by log-sum-exp; empty answers are dropped."""
    linker = AnswerLinker(["bank.n.01", "bank.n.02", "river"], ["bank", "bank", "River"])
    answers = ["Bank", "river", "The Shore.", "the shore", "bank.n.02", "  "]
    lw = np.log([0.4, 0.2, 0.1, 0.1, 0.1, 0.1])
    c = Candidates.from_answers(answers, lw, linker)
    want = {  # by hand, before normalization over the kept mass (0.9)
        "bank.n.01": 0.2,
        "bank.n.02": 0.2 + 0.1,
        "river": 0.2,
        "the shore": 0.1 + 0.1,
    }
    z = sum(want.values())
    assert set(c.entities) == set(want) and c.out_of_graph == ("the shore",)
    got = dict(zip(c.entities, np.exp(c.log_prior)))
    for e, x in want.items():
        np.testing.assert_allclose(got[e], x / z, atol=1e-12)
    assert c.entities[0] == "bank.n.02" and c.dropped == ("  ",)
    assert abs(logsumexp(c.log_prior)) < 1e-12
    # k keeps the most probable (out-of-graph ones compete on their prior)
    top = Candidates.from_answers(answers, lw, linker, k=2)
    assert top.entities[0] == "bank.n.02" and len(top.entities) == 2
    assert set(top.out_of_graph) <= set(top.entities)
    # nothing usable: an abstention naming why, the dropped texts kept
    none = Candidates.from_answers(["", " . "], [0.0, 0.0], linker)
    assert none.abstained and "all empty" in none.abstain_reason and none.dropped == ("", " . ")
    with pytest.raises(ValueError, match="2 answers but log_weights"):
        Candidates.from_answers(["a", "b"], [0.0], linker)
    with pytest.raises(TypeError, match="not a string"):
        Candidates.from_answers("ab", [0.0, 0.0], linker)
    with pytest.raises(ValueError, match="out_of_graph must list entries"):
        Candidates(("a",), np.zeros(1), out_of_graph=("b",))


def test_an_out_of_graph_name_is_never_an_entity_name_of_the_linker():
    """An entity named like the normalized form of an answer links to it: the out-of-graph
    name of an unlinked answer cannot be one of the linker's entities."""
    names = ["a.", "a. .", "x_y", "'q'", "Straße"]
    linker = AnswerLinker(names)
    for text in ["a. .", "A.", "x y", "X_Y.", "q", "strasse", "'Q'."]:
        c = Candidates.from_answers([text], [0.0], linker)
        assert not (set(c.out_of_graph) & set(names)), text
        assert normalize_answer(normalize_answer(text)) == normalize_answer(text)


def test_a_custom_linker_that_skips_an_entitys_own_name_is_refused():
    class Odd:
        def link(self, answer):
            return ("x",) if answer == "first" else ()

    with pytest.raises(ValueError, match="must link each entity's name"):
        Candidates.from_answers(["first", "x"], [0.0, 0.0], Odd())
