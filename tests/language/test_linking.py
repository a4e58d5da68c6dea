"""The one linking rule (:mod:`grounding.language.linking`): the matching form, the surface
forms, whole answers (:meth:`AnswerLinker.link`) and the mentions inside free text
(:meth:`AnswerLinker.mentions`), read one way."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from grounding.language import AnswerLinker, normalize_answer, surface_forms, tokenize
from grounding.prior import Candidates


def test_the_linker_links_every_entity_whose_name_or_text_matches():
    linker = AnswerLinker(
        ["bank.n.01", "bank.n.02", "river_bank", "Q1"], ["bank", "Bank", "river bank", "bank."]
    )
    assert linker.link(" BANK ") == ("bank.n.01", "bank.n.02", "Q1")  # vocabulary order
    assert linker.link("River_Bank.") == ("river_bank",)
    assert linker.link("a bank loan") == () and linker.link("") == ()
    with pytest.raises(ValueError, match="entities is empty"):
        AnswerLinker([])
    with pytest.raises(ValueError, match="texts has 1 entries"):
        AnswerLinker(["a", "b"], ["a"])
    with pytest.raises(TypeError, match="not a string"):
        AnswerLinker("ab")


def test_a_leading_article_is_set_aside_only_when_nothing_matches_with_it():
    linker = AnswerLinker(["mapk_pathway", "the_beatles", "beatles", "the_hague", "a"])
    assert linker.link("The MAPK pathway.") == ("mapk_pathway",)
    assert linker.link("an MAPK pathway") == ("mapk_pathway",)
    assert linker.link("The Beatles") == ("the_beatles",)  # the name itself first
    assert linker.link("Beatles") == ("beatles",)
    assert linker.link("Hague") == linker.link("a Hague") == ("the_hague",)
    assert linker.link("A") == ("a",) and linker.link("the") == ()
    assert linker.link("theatre") == () and linker.link("another pathway") == ()
    c = Candidates.from_answers(["The MAPK pathway.", "The Shore"], [0.0, -1.0], linker)
    assert c.entities == ("mapk_pathway", "the shore") and c.out_of_graph == ("the shore",)


def test_surface_forms_are_the_name_the_text_and_its_head():
    assert surface_forms("Q42", "Douglas Adams (human)") == (
        "q42",
        "douglas adams (human)",
        "douglas adams",
    )
    assert surface_forms("lou_seal", "Lou Seal: the Giants' mascot") == (
        "lou seal",
        "lou seal: the giants' mascot",
    )
    assert surface_forms("a_b") == ("a b",) and surface_forms("a", "") == ("a",)
    assert surface_forms("x", "  ") == ("x",)  # an empty form names nothing


def test_an_answer_links_to_an_entity_by_any_of_its_surface_forms():
    """Whole answers and mentions read the same forms: the name, the text, the text's head."""
    linker = AnswerLinker(["Q42", "Q5"], ["Douglas Adams (human)", "Lou Seal: mascot"])
    for answer in ("q42", "Douglas Adams", "douglas adams (human)."):
        assert linker.link(answer) == ("Q42",)
    assert linker.link("Lou Seal") == ("Q5",)
    found = linker.mentions("Did Douglas Adams meet Lou Seal, or Q42?")
    assert [(m.text, m.entities) for m in found] == [
        ("douglas adams", ("Q42",)),
        ("lou seal", ("Q5",)),
        ("q42", ("Q42",)),
    ]
    assert [(m.start, m.end) for m in found] == [(1, 3), (4, 6), (7, 8)]


def test_mentions_take_the_longest_form_and_never_a_function_word():
    linker = AnswerLinker(
        ["new_york", "york", "the", "of_mice"], ["New York", "York", "the", "of mice"]
    )
    assert [m.text for m in linker.mentions("Is New York the city of mice?")] == [
        "new york",
        "of mice",
    ]  # "the" alone is a function word; "of mice" is two tokens
    assert AnswerLinker(["a"], max_tokens=1).mentions("a b") == []  # "a": a function word
    long = AnswerLinker(["x"], ["one two three"], max_tokens=2)
    assert long.mentions("one two three") == [] and long.link("one two three") == ("x",)
    with pytest.raises(TypeError, match="must be a str"):
        linker.mentions(b"New York")


@given(st.text(max_size=30), st.text(max_size=30))
@example("Straße", "")  # case folding: the whole answer and the mention read it alike
def test_a_mention_of_an_entitys_form_is_what_the_whole_answer_links_to(name, noise):
    """One reading: text that is exactly an entity's form links to that entity whole, and is
    found as a mention of that entity inside any text around it (when it has tokens and is not
    a lone function word)."""
    linker = AnswerLinker(["e"], [name]) if normalize_answer(name) else None
    if linker is None:
        return
    assert "e" in linker.link(name)
    toks = tokenize(normalize_answer(name))
    if not toks or len(toks) > 12 or (len(toks) == 1 and toks[0] in {"a", "the", "of"}):
        return
    found = linker.mentions(f"zzqx {name} zzqy")
    assert any("e" in m.entities for m in found), (name, found)
