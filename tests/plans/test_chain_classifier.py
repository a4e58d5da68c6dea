"""ChainClassifier: relation chains classified from a question's words and its topic's edges."""

from types import SimpleNamespace as Q

import numpy as np
import pytest

from grounding import TypedGraph
from grounding.plans import ChainClassifier, wording_split
from grounding.query import BlindQuestion

DIRECTED = ("directed_by",)
WROTE = ("written_by",)
DIRECTED_MOVIES = ("directed_by^-1",)
GRAPH = TypedGraph.from_triples(
    [
        ("m1", "directed_by", "d1"),
        ("d1", "directed_by^-1", "m1"),
        ("m2", "written_by", "w1"),
        ("w1", "written_by^-1", "m2"),
    ]
)


def _train():
    return (
        [Q(text=f"who directed [{m}]", topic=m, chain=DIRECTED) for m in ("m1", "m2", "m3")]
        + [Q(text=f"who wrote [{m}]", topic=m, chain=WROTE) for m in ("m1", "m2", "m3")]
        + [Q(text=f"what did [{d}] direct", topic=d, chain=DIRECTED_MOVIES) for d in ("d1", "d2")]
    )


def test_reads_the_words_around_the_topic():
    c = ChainClassifier().fit(_train())
    got = c.predict(
        [BlindQuestion("who directed [m9]", "m9"), BlindQuestion("what did [d7] direct", "d7")], 2
    )
    assert [p[0][0] for p in got] == [DIRECTED, DIRECTED_MOVIES]
    for p in got:
        probs = [w for _, w in p]
        assert probs == sorted(probs, reverse=True) and np.isclose(sum(probs), 1.0)


def test_the_topic_is_blanked():
    """A topic name made of a chain's words does not move the prediction: the name is one
    token ``<topic>``."""
    c = ChainClassifier().fit(_train())
    plain = c.scores([BlindQuestion("who directed [m9]", "m9")])
    named = c.scores([BlindQuestion("who directed [wrote direct]", "wrote direct")])
    np.testing.assert_allclose(plain, named)


def test_the_topics_relations_are_features():
    """With a graph, an unseen wording is read by the kind of its topic: a director (edges
    ``directed_by^-1``) against a movie (``directed_by``)."""
    c = ChainClassifier(GRAPH).fit(_train())
    s_movie = c.scores([BlindQuestion("tell me about [m1]", "m1")])[0]
    s_person = c.scores([BlindQuestion("tell me about [d1]", "d1")])[0]
    j = c.chains.index(DIRECTED_MOVIES)
    assert s_person[j] - s_person.max() > s_movie[j] - s_movie.max()
    no_graph = ChainClassifier().fit(_train())
    a, b = no_graph.scores(
        [BlindQuestion("tell me about [m1]", "m1"), BlindQuestion("tell me about [d1]", "d1")]
    )
    np.testing.assert_allclose(a, b)


def test_validation_chooses_the_penalty_and_temperature():
    train, valid = _train(), [Q(text="which person directed [m4]", topic="m4", chain=DIRECTED)]
    c = ChainClassifier(penalties=(1e-1, 1e-3)).fit(train, valid)
    assert set(c.validation) == {1e-1, 1e-3} and c.penalty in (1e-1, 1e-3)
    assert c.validation[c.penalty] == max(c.validation.values())
    assert 1e-2 <= c.temperature <= 10


def test_regression_reaches_its_minimum():
    """The L-BFGS solution is stationary: the gradient of the penalized loss vanishes."""
    from grounding.plans.chain_classifier import _softmax_regression

    c = ChainClassifier().fit(_train())
    x = c.features(_train())
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    counts = np.array([1.0, 2, 1, 1, 1, 3, 1, 1])
    w = _softmax_regression(x, y, counts, 3, 1e-2)
    s = np.asarray(x @ w)
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    share = counts[:, None] / counts.sum()
    grad = np.asarray(x.T @ (share * (p - np.eye(3)[y]))) + 1e-2 * w
    assert np.abs(grad).max() < 1e-6
    # a row counted twice is the row given twice
    twice = _softmax_regression(x[[0, 1, 1]], y[[0, 1, 1]], np.ones(3), 3, 1e-2)
    once = _softmax_regression(x[[0, 1]], y[[0, 1]], np.array([1.0, 2.0]), 3, 1e-2)
    np.testing.assert_allclose(twice, once, atol=1e-6)


def test_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        ChainClassifier().fit([])
    with pytest.raises(ValueError, match="not fitted"):
        ChainClassifier().predict([BlindQuestion("who", "x")])
    with pytest.raises(ValueError, match="penalties"):
        ChainClassifier(penalties=(0.0,))
    with pytest.raises(TypeError, match="BlindQuestion"):
        ChainClassifier().fit(_train()).predict([_train()[0]])
    with pytest.raises(ValueError, match="empty"):
        ChainClassifier().fit([Q(text="who [x]", topic="x", chain=())])


def test_wording_split_holds_out_whole_wordings():
    qs = [
        Q(text=f"{w} [{m}]", topic=m, chain=DIRECTED)
        for w in ("who directed", "which person directed", "the director of", "who made")
        for m in ("m1", "m2", "m3")
    ] + [Q(text="who wrote [m1]", topic="m1", chain=WROTE)]
    train, valid = wording_split(qs, 0.5, seed=1)
    words = lambda part: {q.text.split("[")[0] for q in part}  # noqa: E731
    assert words(train).isdisjoint(words(valid)) and len(train) + len(valid) == len(qs)
    assert len(words(valid)) == 2  # half of 4 wordings; the chain with one wording stays
    assert any(q.chain == WROTE for q in train)
    assert wording_split(qs, 0.5, seed=1) == (train, valid)
    with pytest.raises(ValueError, match="share"):
        wording_split(qs, 1.0)


def test_refit_keeps_the_choices_and_learns_validation():
    train = _train()
    valid = [Q(text="which films were made by [d3]", topic="d3", chain=DIRECTED_MOVIES)]
    plain = ChainClassifier(penalties=(1e-1, 1e-3)).fit(train, valid)
    refit = ChainClassifier(penalties=(1e-1, 1e-3)).fit(train, valid, refit=True)
    assert (refit.penalty, refit.temperature) == (plain.penalty, plain.temperature)
    assert refit.validation == plain.validation and refit.penalties == (plain.penalty,)
    q = [BlindQuestion("which films were made by [d9]", "d9")]
    j = refit.chains.index(DIRECTED_MOVIES)
    assert refit.scores(q)[0][j] > plain.scores(q)[0][j]


def test_a_second_fit_forgets_the_first():
    c = ChainClassifier(penalties=(1e-1, 1e-3))
    c.fit(_train(), [Q(text="which person directed [m4]", topic="m4", chain=DIRECTED)])
    c.penalties = (1e-2,)
    c.fit(_train(), [Q(text="who wrote [m5]", topic="m5", chain=WROTE)])
    assert set(c.validation) == {1e-2} and c.penalty == 1e-2
