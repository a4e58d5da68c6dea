"""The KGE answerer (grounding.prior.answerer) against explicit chain scoring."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grounding.datasets import KGQuestion
from grounding.learn import KGEModel, ReciprocalModel
from grounding.prior import (
    KGEAnswerer,
)


def _random_model(kind, n=7, n_rel=3, d=4, seed=0):
    rng = np.random.default_rng(seed)
    ent = rng.normal(size=(n, d))
    rel = rng.normal(size=(n_rel, d)) if kind == "transe" else rng.uniform(-3, 3, (n_rel, d // 2))
    return KGEModel(kind, jnp.asarray(ent), jnp.asarray(rel), p=2)


@given(
    kind=st.sampled_from(["transe", "rotate"]),
    chain=st.lists(
        st.sampled_from(["a", "b", "c", "a^-1", "b^-1", "c^-1"]), min_size=1, max_size=3
    ),
    topic=st.integers(0, 6),
    seed=st.integers(0, 100),
)
def test_answerer_composition_equals_explicit_chain_scoring(kind, chain, topic, seed):
    m = _random_model(kind, seed=seed)
    names = [f"e{i}" for i in range(7)]
    ans = KGEAnswerer(m, names, ["a", "b", "c"], temperature=0.7)
    E, R = np.asarray(m.entity), np.asarray(m.relation)
    r_ix = {"a": 0, "b": 1, "c": 2}
    if kind == "transe":
        x = E[topic].copy()
        for r in chain:
            x = x - R[r_ix[r[:-3]]] if r.endswith("^-1") else x + R[r_ix[r]]
        d = np.linalg.norm(E - x, axis=1)
    else:
        z = E[:, 0::2] + 1j * E[:, 1::2]
        x = z[topic].copy()
        for r in chain:
            sign = -1 if r.endswith("^-1") else 1
            x = x * np.exp(1j * sign * R[r_ix[r.removesuffix("^-1")]])
        d = np.abs(z - x).sum(axis=1)
    want = -d / 0.7
    want[topic] = -np.inf
    got = ans.log_scores(names[topic], chain)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    q = KGQuestion("q", "?", names[topic], tuple(chain), (), (), "test")
    c = ans.propose(q, 3)
    top = np.argsort(-want, kind="stable")[:3]
    assert c.entities == tuple(names[i] for i in top)
    np.testing.assert_allclose(c.log_prior, want[top] - np.logaddexp.reduce(want[top]), atol=1e-9)


@given(
    kind=st.sampled_from(["transe", "complex"]),
    chain=st.lists(st.sampled_from(["a", "b", "a^-1", "b^-1"]), min_size=1, max_size=3),
    topic=st.integers(0, 5),
    seed=st.integers(0, 100),
)
def test_reciprocal_answerer_uses_learned_reciprocals(kind, chain, topic, seed):
    rng = np.random.default_rng(seed)
    E, W = rng.normal(size=(6, 4)), rng.normal(size=(4, 4))  # rows 2, 3: a^-1, b^-1
    m = ReciprocalModel(kind, jnp.asarray(E), jnp.asarray(W))
    ans = KGEAnswerer(m, [f"e{i}" for i in range(6)], ["a", "b"], temperature=0.5)
    row = {"a": 0, "b": 1, "a^-1": 2, "b^-1": 3}
    if kind == "transe":
        x = E[topic] + sum(W[row[r]] for r in chain)
        want = -np.linalg.norm(E - x, axis=1) / 0.5
    else:
        z = E[:, :2] + 1j * E[:, 2:]
        x = z[topic] * np.prod([W[row[r], :2] + 1j * W[row[r], 2:] for r in chain], axis=0)
        want = (z.conj() @ x).real / 0.5
    want[topic] = -np.inf
    got = ans.log_scores(f"e{topic}", chain)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    # the host composition is the model's own (compose, then answer_scores) on the device
    device = m.answer_scores(ans.composed(f"e{topic}", chain)) / 0.5
    device[topic] = -np.inf
    np.testing.assert_allclose(got, device, rtol=1e-9, atol=1e-9)


def test_answerer_abstains_or_raises_with_reasons():
    m = _random_model("transe")
    ans = KGEAnswerer(m, [f"e{i}" for i in range(7)], ["a", "b", "c"])
    out = ans.propose(KGQuestion("q", "?", "nobody", ("a",), (), (), "test"), 3)
    assert out.abstained and "nobody" in out.abstain_reason
    out = ans.propose(KGQuestion("q", "?", "e0", ("zzz",), (), (), "test"), 3)
    assert out.abstained and "zzz" in out.abstain_reason
    with pytest.raises(ValueError, match="temperature"):
        KGEAnswerer(m, [f"e{i}" for i in range(7)], ["a", "b", "c"], temperature=0.0)
    with pytest.raises(ValueError, match="entity names"):
        KGEAnswerer(m, ["e0"], ["a", "b", "c"])
    with pytest.raises(ValueError, match="composes transe, rotate"):
        KGEAnswerer(dataclasses.replace(m, kind="linear"), [f"e{i}" for i in range(7)], "abc")


@given(
    kind=st.sampled_from(["transe", "complex"]),
    chain=st.lists(st.sampled_from(["a", "b", "a^-1", "b^-1"]), min_size=2, max_size=3),
    topic=st.integers(0, 5),
    seed=st.integers(0, 100),
)
def test_a_full_beam_is_the_exact_soft_walk_over_predicted_links(kind, chain, topic, seed):
    """With a beam as wide as the vocabulary, ``log p(a)`` is the sum over every intermediate
    entity of the hops' softmax probabilities (brute force); a beam of 1 follows the single
    most probable entity of each hop."""
    from scipy.special import log_softmax

    rng = np.random.default_rng(seed)
    E, W = rng.normal(size=(6, 4)), rng.normal(size=(4, 4))
    m = ReciprocalModel(kind, jnp.asarray(E), jnp.asarray(W))
    names, row = [f"e{i}" for i in range(6)], {"a": 0, "b": 1, "a^-1": 2, "b^-1": 3}

    def hop(x, r):  # [6] log p(. | x, r)
        if kind == "transe":
            s = -np.linalg.norm(E - (E[x] + W[row[r]]), axis=1)
        else:
            z = E[:, :2] + 1j * E[:, 2:]
            s = (z.conj() @ (z[x] * (W[row[r], :2] + 1j * W[row[r], 2:]))).real
        return log_softmax(s / 0.5)

    p = hop(topic, chain[0])
    for r in chain[1:]:
        p = np.logaddexp.reduce([p[x] + hop(x, r) for x in range(6)], axis=0)
    p[topic] = -np.inf
    full = KGEAnswerer(m, names, ["a", "b"], temperature=0.5, beam=6)
    np.testing.assert_allclose(full.log_scores(f"e{topic}", chain), p, rtol=1e-9, atol=1e-9)
    first = int(np.argmax(hop(topic, chain[0])))
    one = KGEAnswerer(m, names, ["a", "b"], temperature=0.5, beam=1)
    if len(chain) == 2:
        want = hop(topic, chain[0])[first] + hop(first, chain[1])
        want[topic] = -np.inf
        np.testing.assert_allclose(one.log_scores(f"e{topic}", chain), want, rtol=1e-9, atol=1e-9)


def test_beam_needs_a_link_predictor_and_fits_its_temperature_on_one_hop():
    with pytest.raises(ValueError, match="ReciprocalModel"):
        KGEAnswerer(_random_model("transe"), [f"e{i}" for i in range(7)], ["a", "b", "c"], beam=4)
    rng = np.random.default_rng(0)
    m = ReciprocalModel(
        "complex", jnp.asarray(rng.normal(size=(6, 4))), jnp.asarray(rng.normal(size=(4, 4)))
    )
    names = [f"e{i}" for i in range(6)]
    one_hop = [KGQuestion("q", "?", "e0", ("a",), (), (), "valid")]
    two_hop = [KGQuestion("q", "?", "e1", ("a", "b"), (), (), "valid")]
    a = KGEAnswerer(m, names, ["a", "b"], beam=2)
    t = a.fit_temperature(one_hop + two_hop, [("e3",), ("e4",)])
    b = KGEAnswerer(m, names, ["a", "b"], beam=2)
    assert b.fit_temperature(one_hop, [("e3",)]) == t  # the two-hop question is not read
    with pytest.raises(ValueError, match="no question"):
        KGEAnswerer(m, names, ["a", "b"], beam=2).fit_temperature(two_hop, [("e4",)])
