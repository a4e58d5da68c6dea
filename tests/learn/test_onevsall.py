"""Reciprocal 1-vs-all training (TransE, ComplEx): scores against explicit formulas, the loss
against a brute-force NumPy cross-entropy, training, checkpoints and bad configurations."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grounding.datasets import load_kg
from grounding.learn import (
    OneVsAllConfig,
    ReciprocalModel,
    evaluate_link_prediction,
    load_checkpoint,
    save_checkpoint,
    train_one_vs_all,
)
from grounding.learn.onevsall import one_vs_all_loss


def _model(kind, seed, n=6, n_rel=2, d=4):
    rng = np.random.default_rng(seed)
    return ReciprocalModel(
        kind, jnp.asarray(rng.normal(size=(n, d))), jnp.asarray(rng.normal(size=(2 * n_rel, d)))
    )


def _explicit_score(kind, x, w, y):
    if kind == "transe":
        return -np.linalg.norm(x + w - y, axis=-1)
    c = lambda v: v[..., :2] + 1j * v[..., 2:]  # noqa: E731
    return np.sum(c(x) * c(w) * np.conj(c(y)), axis=-1).real


@given(kind=st.sampled_from(["transe", "complex"]), seed=st.integers(0, 1000))
def test_scores_and_energies_match_explicit_formulas(kind, seed):
    m = _model(kind, seed)
    E, W = np.asarray(m.entity), np.asarray(m.relation)
    anchor, r = np.array([0, 3, 5]), np.array([1, 0, 1])
    want_tail = np.stack([_explicit_score(kind, E[a], W[q], E) for a, q in zip(anchor, r)])
    want_head = np.stack([_explicit_score(kind, E[a], W[q + 2], E) for a, q in zip(anchor, r)])
    np.testing.assert_allclose(-m.candidate_energies("tail", anchor, r), want_tail, atol=1e-9)
    np.testing.assert_allclose(-m.candidate_energies("head", anchor, r), want_head, atol=1e-9)
    triples = jnp.array([[0, 1, 2], [4, 0, 3]])
    want = [-_explicit_score(kind, E[h], W[q], E[t]) for h, q, t in np.asarray(triples)]
    np.testing.assert_allclose(m.energy(triples), want, atol=1e-9)


@given(
    kind=st.sampled_from(["transe", "complex"]),
    seed=st.integers(0, 1000),
    shared=st.booleans(),
    smoothing=st.sampled_from([0.0, 0.2]),
    n3=st.sampled_from([0.0, 0.05]),
)
def test_loss_equals_brute_force_cross_entropy(kind, seed, shared, smoothing, n3):
    m = _model(kind, seed)
    E, W = np.asarray(m.entity), np.asarray(m.relation)
    batch = np.array([[0, 1, 2], [3, 2, 1], [5, 3, 0]])  # (anchor, relation row, target)
    negs = np.array([4, 4, 1]) if shared else None
    cfg = OneVsAllConfig(n3=n3, label_smoothing=smoothing)
    got = one_vs_all_loss(m, jnp.asarray(batch), None if negs is None else jnp.asarray(negs), cfg)
    total = 0.0
    for i, (a, q, t) in enumerate(batch):
        pool = np.arange(6) if negs is None else np.concatenate([batch[:, 2], negs])
        s = np.array([_explicit_score(kind, E[a], W[q], E[e]) for e in pool])
        logp = s - np.log(np.sum(np.exp(s - s.max()))) - s.max()
        gold = t if negs is None else i
        total += -(1 - smoothing) * logp[gold] - smoothing * logp.mean()
    want = total / len(batch)
    if n3:
        for x in (E[batch[:, 0]], W[batch[:, 1]], E[batch[:, 2]]):
            want += n3 * np.mean(np.sum(np.abs(x) ** 3, axis=-1))
    assert float(got) == pytest.approx(want, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("kind", ["transe", "complex"])
def test_training_on_nations_beats_the_initial_model_and_round_trips(kind, tmp_path):
    kg = load_kg("nations")
    cfg = OneVsAllConfig(dim=16, epochs=10, batch_size=256, lr=0.1, eval_every=5, init_scale=0.1)
    res = train_one_vs_all(kg, kind, cfg, checkpoint=tmp_path / "m.npz", progress=False)
    init = dataclasses.replace(cfg, epochs=1)
    first = train_one_vs_all(kg, kind, dataclasses.replace(init, lr=1e-9), progress=False)
    assert res.best_valid_mrr > first.best_valid_mrr + 0.05
    model, meta = load_checkpoint(tmp_path / "m.npz")
    assert isinstance(model, ReciprocalModel) and model.kind == kind
    assert meta["valid_mrr"] == pytest.approx(res.best_valid_mrr)
    ours = evaluate_link_prediction(res.model, kg, "valid")["mrr"]
    assert evaluate_link_prediction(model, kg, "valid")["mrr"] == pytest.approx(ours)
    save_checkpoint(tmp_path / "again.npz", model)
    again, _ = load_checkpoint(tmp_path / "again.npz")
    np.testing.assert_array_equal(again.relation, model.relation)


def test_divergence_and_bad_configurations_raise():
    kg = load_kg("nations")
    with pytest.raises(FloatingPointError, match="diverged at epoch 1"):
        cfg = OneVsAllConfig(dim=8, epochs=3, lr=1e200, init_scale=1.0)
        train_one_vs_all(kg, "transe", cfg, progress=False)
    for kw in (
        dict(lr=float("inf")),
        dict(lr=0.0),
        dict(n3=-1.0),
        dict(label_smoothing=1.0),
        dict(dim=0),
        dict(n_shared_negatives=-1),
        dict(init_scale=float("nan")),
        dict(optimizer="sgd"),
        dict(dropout=1.0),
    ):
        with pytest.raises(ValueError):
            OneVsAllConfig(**kw)
    with pytest.raises(ValueError, match="even dim"):
        train_one_vs_all(kg, "complex", OneVsAllConfig(dim=7), progress=False)
    with pytest.raises(ValueError, match="kind"):
        train_one_vs_all(kg, "rotate", progress=False)
    with pytest.raises(ValueError, match="bilinear"):
        _model("complex", 0).relation_map  # noqa: B018
