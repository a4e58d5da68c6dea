"""Phrases found inside a text (grounding.language.phrases): the index reads longest first,
never overlaps, never reads a blanked stretch, looks for secondary phrases only where the
primary ones left words; labels give their plain inflections; learned phrases are the word
sequences that predict a key at the stated count and precision."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grounding.language import PhraseIndex, label_phrases, learned_phrases
from grounding.language.phrases import FUNCTION_WORDS, words
from grounding.query import (
    FRAMES,
    TEST_FRAMES,
    TEST_PHRASINGS,
    TRAIN_FRAMES,
    TRAIN_PHRASINGS,
    relation_phrase,
)


def spans(found):
    return [(m.start, m.end, m.keys) for m in found]


def test_longest_phrase_wins_and_mentions_are_in_text_order():
    index = PhraseIndex({"pob": ["place of birth"], "place": ["place"], "birth": ["birth"]})
    assert spans(index.find("the place of birth of the place")) == [
        (1, 4, ("pob",)),
        (6, 7, ("place",)),
    ]


def test_a_phrase_may_name_several_keys():
    index = PhraseIndex({"a": ["capital"], "b": ["capital"]})
    assert spans(index.find("the capital")) == [(1, 2, ("a", "b"))]


def test_blanked_words_are_never_read():
    index = PhraseIndex({"c": ["capital"]})
    assert spans(index.find("capital of capital city", blank=[(0, 1)])) == [(2, 3, ("c",))]
    assert index.find("capital", blank=[(0, 1)]) == []


def test_secondary_phrases_never_cut_through_a_primary_one():
    index = PhraseIndex({"pob": ["place of birth"]}, {"b": ["birth"], "x": ["of birth city"]})
    assert spans(index.find("place of birth city birth")) == [(0, 3, ("pob",)), (4, 5, ("b",))]


def test_a_lone_function_word_names_nothing():
    index = PhraseIndex({"k": ["of", "is part of"]})
    assert spans(index.find("it is part of the whole of")) == [(1, 4, ("k",))]


def test_phrases_are_read_in_the_packages_one_form_of_words():
    index = PhraseIndex({"c": ["Capital City"]})
    assert spans(index.find("What is the CAPITAL city?")) == [(3, 5, ("c",))]
    assert words("Q42's  Capital") == words("q42's capital")


@given(
    st.lists(st.sampled_from("a b c d of the".split()), max_size=14),
    st.lists(st.tuples(st.integers(0, 14), st.integers(0, 4)), max_size=2),
)
def test_mentions_never_overlap_nor_touch_a_blank_and_are_phrases_of_their_keys(toks, blanks):
    phrases = {"ab": ["a b"], "a": ["a"], "bcd": ["b c d"], "c": ["c"], "dd": ["d of d"]}
    index = PhraseIndex(phrases, {"d": ["d"]})
    blank = [(lo, lo + n) for lo, n in blanks]
    found = index.find(toks, blank)
    taken = set()
    for m in found:
        cover = set(range(m.start, m.end))
        assert not cover & taken
        assert not any(lo <= i < hi for i in cover for lo, hi in blank)
        taken |= cover
        text = " ".join(toks[m.start : m.end])
        assert all(text in {" ".join(words(p)) for p in {**phrases, "d": ["d"]}[k]} for k in m.keys)
    assert [m.start for m in found] == sorted(m.start for m in found)


def test_label_inflections():
    assert label_phrases("produces") == ["produces", "produce"]
    assert label_phrases("is part of") == ["is part of", "part of"]
    assert label_phrases("place_of_birth") == ["place of birth"]
    assert label_phrases("glass") == ["glass"]  # a double s is not a third person


def test_learned_phrases_keep_sequences_that_predict_their_key():
    texts = ["who directed X", "who directed Y", "who directed Z", "who wrote X", "who wrote Y",
             "who wrote Z", "directed or wrote W"]  # fmt: skip
    keys = [["dir"], ["dir"], ["dir"], ["wrote"], ["wrote"], ["wrote"], ["wrote"]]
    out = learned_phrases(texts, keys, min_count=3, min_precision=0.75)
    assert out["dir"] == ["directed"]  # 3 of 4 texts with "directed" are "dir"
    assert "wrote" in out["wrote"]
    assert "who" not in sum(out.values(), [])  # a function word never starts or ends one
    assert learned_phrases(texts, keys, min_count=3, min_precision=0.9).get("dir") is None


def test_learned_phrases_never_read_a_blanked_stretch():
    texts = ["paris capital", "paris capital", "paris capital"]
    out = learned_phrases(texts, [["c"]] * 3, blank=[[(0, 1)]] * 3)
    assert out == {"c": ["capital"]}
    assert all(w not in FUNCTION_WORDS for p in out["c"] for w in p.split())


def test_no_function_word_comes_from_the_held_out_test_wordings():
    """The reader's fixed word list may hold English function words and the words of the
    training wordings, never a word only the held-out test wordings use (blind by
    construction)."""

    def wording_words(frames, phrasings):
        out = set()
        for f in frames:
            out |= set(words(FRAMES[f].replace("{P}", "")))
        for ph in phrasings:
            for label in ("capital", "produces"):
                for inverse in (False, True):
                    text = relation_phrase(label, "xx", inverse=inverse, phrasing=ph)
                    out |= set(words(text)) - {"xx", "capital", "produces", "produce"}
        return out

    test_only = wording_words(TEST_FRAMES, TEST_PHRASINGS) - wording_words(
        TRAIN_FRAMES, TRAIN_PHRASINGS
    )
    assert {"tell", "identify", "serving", "counts"} <= test_only  # the check reads them
    # English pronouns, articles, prepositions and conjunctions are no knowledge of the wording
    english = set(
        "a an and are as at be by did do does for from has have he her his how i in is it its me "
        "of on or she that the their they this to was we were what when where which who whom "
        "whose why with you".split()
    )
    assert FUNCTION_WORDS & test_only <= english, sorted(FUNCTION_WORDS & test_only - english)


def test_learned_phrases_reject_mismatched_inputs():
    with pytest.raises(ValueError, match="2 texts but 1 key lists"):
        learned_phrases(["a", "b"], [["k"]])
    with pytest.raises(ValueError, match="blank span lists"):
        learned_phrases(["a", "b"], [["k"], ["k"]], blank=[[]])
    with pytest.raises(TypeError, match="not one string"):
        learned_phrases(["a"], ["k"])
    with pytest.raises(ValueError, match="min_precision"):
        learned_phrases(["a"], [["k"]], min_precision=float("nan"))
    with pytest.raises(ValueError, match="0 <= start <= end"):
        learned_phrases(["a"], [["k"]], blank=[[(2, 1)]])
    with pytest.raises(TypeError, match="not one string"):
        PhraseIndex({"k": "capital"})
    with pytest.raises(ValueError, match="max_words"):
        PhraseIndex({"k": ["a"]}, max_words=0)
