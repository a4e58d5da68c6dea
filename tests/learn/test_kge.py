"""Filtered ranking (vs brute force) and learned relation maps on real knowledge graphs (the
loaders are tested in tests/datasets/test_kg.py)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest
from _tol import F64
from hypothesis import given, settings
from hypothesis import strategies as st

from grounding.datasets import KGSplits, load_kg
from grounding.geometry import edge_residuals
from grounding.learn import (
    KGEModel,
    TrainConfig,
    evaluate_link_prediction,
    filtered_ranks,
    init_model,
    load_checkpoint,
    mrr_interval,
    rank_metrics,
    save_checkpoint,
    train,
)
from grounding.regularize import typed_residual_regularizer


# ----------------------------------------------------------------------------- filtered ranks
def _brute_force(energy, queries, known):
    """Ranks by the definition, one candidate at a time (dict-of-tables energies)."""
    known = {tuple(t) for t in known}
    out = {"tail": [], "head": []}
    for h, r, t in queries:
        for side in ("tail", "head"):
            target = t if side == "tail" else h
            table = energy[side][(h if side == "tail" else t, r)]
            better = worse_or_tied = 0
            for e, value in enumerate(table):
                cand = (h, r, e) if side == "tail" else (e, r, t)
                if e == target or cand in known:
                    continue
                better += value < table[target]
                worse_or_tied += value <= table[target]
            out[side].append((1 + better, 1 + worse_or_tied))
    return out


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_filtered_ranks_match_brute_force_with_ties(data):
    n = data.draw(st.integers(2, 7))
    R = data.draw(st.integers(1, 3))
    trip = st.tuples(st.integers(0, n - 1), st.integers(0, R - 1), st.integers(0, n - 1))
    known = np.array(data.draw(st.lists(trip, max_size=25)) or [(0, 0, 0)], np.int64).reshape(-1, 3)
    queries = np.array(data.draw(st.lists(trip, min_size=1, max_size=8)), np.int64)
    levels = data.draw(st.integers(1, 3))  # few distinct energies: many ties
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    energy = {
        side: {(a, r): rng.integers(0, levels, n).astype(float) for a in range(n) for r in range(R)}
        for side in ("tail", "head")
    }

    def scorer(side, anchor, rel):
        return np.stack([energy[side][(a, r)] for a, r in zip(anchor, rel)])

    got = filtered_ranks(scorer, queries, known, n, R, batch_size=3)
    ref = _brute_force(energy, queries.tolist(), known.tolist())
    for side in ("tail", "head"):
        np.testing.assert_array_equal(got[side].optimistic, [o for o, _ in ref[side]])
        np.testing.assert_array_equal(got[side].pessimistic, [p for _, p in ref[side]])


def test_realistic_rank_of_a_constant_scorer_is_the_middle_and_metrics_pool_both_sides():
    n = 9
    ranks = filtered_ranks(
        lambda s, a, r: np.zeros((len(a), n)), np.array([[0, 0, 1]]), np.array([[0, 0, 2]]), n, 1
    )
    # tail side: 7 competitors (entity 2 filtered) -> ranks 1..8, realistic 4.5
    assert ranks["tail"].realistic.tolist() == [4.5]
    assert ranks["head"].realistic.tolist() == [5.0]  # nothing filtered: 8 competitors
    m = rank_metrics(ranks)
    assert m["mrr"] == pytest.approx((1 / 4.5 + 1 / 5.0) / 2)
    assert m["hits1"] == 0.0 and m["hits10"] == 1.0


def test_mrr_interval_resamples_triples_with_both_directions_paired():
    from grounding.learn.linkpred import Ranks

    def ranks(tail, head):
        return {s: Ranks(np.asarray(x, float), np.asarray(x, float)) for s, x in
                (("tail", tail), ("head", head))}  # fmt: skip

    # every triple alike: no spread, the interval is the MRR itself
    same = ranks([2.0] * 50, [4.0] * 50)
    lo, hi = mrr_interval(same)
    assert lo == pytest.approx(rank_metrics(same)["mrr"]) == pytest.approx(hi)
    # tail and head of a triple move together: pairing keeps a spread-out pair's mean exact
    paired = ranks([1.0, 100.0] * 50, [100.0, 1.0] * 50)
    lo, hi = mrr_interval(paired)
    assert lo == pytest.approx(hi) == pytest.approx(rank_metrics(paired)["mrr"])
    spread = ranks([1.0, 100.0] * 50, [1.0, 100.0] * 50)
    lo, hi = mrr_interval(spread)
    assert lo < rank_metrics(spread)["mrr"] < hi and hi - lo > 0.1
    with pytest.raises(ValueError, match="tail and head rank of every triple"):
        mrr_interval(ranks([1.0, 2.0], [1.0]))


def test_filtered_ranks_bad_input():
    ok = lambda s, a, r: np.zeros((len(a), 3))  # noqa: E731
    q = np.array([[0, 0, 1]])
    with pytest.raises(ValueError, match=r"\[m, 3\]"):
        filtered_ranks(ok, np.array([0, 0, 1]), q, 3, 1)
    with pytest.raises(ValueError, match="outside"):
        filtered_ranks(ok, np.array([[0, 0, 3]]), q, 3, 1)
    with pytest.raises(ValueError, match="non-finite"):
        filtered_ranks(lambda s, a, r: np.full((len(a), 3), np.nan), q, q, 3, 1)
    with pytest.raises(ValueError, match="shape"):
        filtered_ranks(lambda s, a, r: np.zeros((len(a), 2)), q, q, 3, 1)
    with pytest.raises(ValueError, match="empty"):
        filtered_ranks(ok, np.empty((0, 3), np.int64), q, 3, 1)


# ----------------------------------------------------------------------------- learned maps
@pytest.mark.parametrize("kind", ["transe", "rotate", "linear"])
def test_model_energy_is_eq8_and_candidate_energies_agree(kind):
    model = init_model(kind, 6, 3, 4, seed=1)
    rng = np.random.default_rng(0)
    trip = np.stack([rng.integers(0, 6, 10), rng.integers(0, 3, 10), rng.integers(0, 6, 10)], 1)
    e = np.asarray(model.energy(jnp.asarray(trip)))
    # Eq. (8) through the geometry module, with the model's learned maps and metric
    g = KGSplits("t", tuple("abcdef"), ("r", "s", "u"), trip, trip[:0], trip[:0]).graph()
    np.testing.assert_allclose(
        edge_residuals(g, model.entity, model.geometry_map(), 1.0, model.metric), e, **F64
    )
    tails = np.asarray(
        model.candidate_energies("tail", jnp.asarray(trip[:, 0]), jnp.asarray(trip[:, 1]))
    )
    heads = np.asarray(
        model.candidate_energies("head", jnp.asarray(trip[:, 2]), jnp.asarray(trip[:, 1]))
    )
    np.testing.assert_allclose(tails[np.arange(10), trip[:, 2]], e, **F64)
    np.testing.assert_allclose(heads[np.arange(10), trip[:, 0]], e, **F64)


def test_squared_positive_term_is_the_typed_residual_regularizer_eq24():
    model = init_model("linear", 5, 2, 3, seed=2)
    trip = np.array([[0, 0, 1], [1, 1, 2], [3, 0, 4]])
    omega = typed_residual_regularizer(
        model.entity, trip[:, 0], trip[:, 1], trip[:, 2], np.ones(3), model.relation_map
    )
    assert float(omega) == pytest.approx(
        0.5 * float(jnp.sum(model.energy(jnp.asarray(trip)) ** 2)), rel=1e-12
    )


def _tiny_kg():
    kg = load_kg("nations")
    return type(kg)(kg.name, kg.entities, kg.relations, kg.train[:300], kg.valid[:40], kg.test[:40])


CFG = TrainConfig(dim=8, epochs=4, batch_size=64, eval_every=2, patience=1, n_negatives=4)


@pytest.mark.parametrize("kind", ["transe", "rotate"])
def test_training_is_deterministic_given_the_seed_and_learns(kind):
    kg = _tiny_kg()
    a = train(kg, kind, CFG, progress=False)
    b = train(kg, kind, CFG, progress=False)
    np.testing.assert_array_equal(np.asarray(a.model.entity), np.asarray(b.model.entity))
    np.testing.assert_array_equal(np.asarray(a.model.relation), np.asarray(b.model.relation))
    assert a.history == b.history and a.best_epoch in (2, 4)
    c = train(kg, kind, TrainConfig(**{**CFG.__dict__, "seed": 1}), progress=False)
    assert not np.array_equal(np.asarray(a.model.entity), np.asarray(c.model.entity))
    init = init_model(kind, kg.n_entities, kg.n_relations, CFG.dim, CFG.seed, CFG.p)
    assert a.best_valid_mrr > evaluate_link_prediction(init, kg, "valid")["mrr"]  # training helped


def test_early_stopping_keeps_the_best_and_checkpoints_atomically(tmp_path):
    kg = _tiny_kg()
    cfg = TrainConfig(dim=8, epochs=40, batch_size=64, eval_every=1, patience=2, lr=0.5)
    path = tmp_path / "ckpt" / "best.npz"
    res = train(kg, "transe", cfg, checkpoint=path, progress=False)
    mrrs = [h["valid_mrr"] for h in res.history]
    assert res.best_valid_mrr == max(mrrs)
    assert res.epochs_run < 40  # stopped early: patience 2 at a huge step size
    assert mrrs.index(max(mrrs)) + 1 + cfg.patience == len(mrrs)
    model, meta = load_checkpoint(path)
    assert meta["epoch"] == res.best_epoch and meta["valid_mrr"] == res.best_valid_mrr
    np.testing.assert_array_equal(np.asarray(model.entity), np.asarray(res.model.entity))
    assert [p.name for p in path.parent.iterdir()] == ["best.npz"]  # no temp files left
    save_checkpoint(path, model, {"note": "x"})
    assert load_checkpoint(path)[1] == {"note": "x"}


def test_kge_checkpoints_share_the_archive_and_refuse_foreign_or_damaged_files(tmp_path):
    """KG-embedding checkpoints are the package's one archive format: another trainer's
    archive, a truncated file and non-finite parameters are errors naming the file."""
    from grounding.learn.checkpoint import read_archive, write_archive

    model = init_model("transe", 4, 2, 2)
    path = save_checkpoint(tmp_path / "m.npz", model, {"note": "x"})
    meta, leaves = read_archive(path, "archive")
    assert meta["kind"] == "transe" and len(leaves) == 2
    foreign = write_archive(tmp_path / "f.npz", {"version": 2}, [np.zeros((4, 2))] * 2)
    with pytest.raises(ValueError, match="f.npz: not a grounding KGE checkpoint"):
        load_checkpoint(foreign)
    (tmp_path / "t.npz").write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match="t.npz: not a readable grounding KGE checkpoint"):
        load_checkpoint(tmp_path / "t.npz")
    meta["meta"] = {}
    nan = write_archive(tmp_path / "n.npz", meta, [np.full((4, 2), np.nan), leaves[1]])
    with pytest.raises(ValueError, match="n.npz: parameter p0 must be a finite"):
        load_checkpoint(nan)


def test_divergence_stops_with_the_epoch_and_nan_models_are_not_evaluated():
    """A run whose parameters blow up stops with an error naming the epoch (it used to report
    MRR 0.27, Hits@10 1.0 from NaN scores); evaluating a NaN model is refused."""
    kg = _tiny_kg()
    cfg = TrainConfig(dim=8, epochs=4, batch_size=64, eval_every=2, patience=1, lr=1e300)
    with pytest.raises(FloatingPointError, match="diverged at epoch 1"):
        train(kg, "rotate", cfg, progress=False)
    model = init_model("transe", kg.n_entities, kg.n_relations, 8)
    nan = dataclasses.replace(model, entity=model.entity.at[0].set(jnp.nan))
    with pytest.raises(ValueError, match="non-finite"):
        evaluate_link_prediction(nan, kg, "valid")


def test_kge_bad_input(tmp_path):
    with pytest.raises(ValueError, match="kind"):
        init_model("distmult", 3, 1, 2)
    with pytest.raises(ValueError, match="kind"):
        train(_tiny_kg(), "distmult")
    with pytest.raises(ValueError, match="even"):
        init_model("rotate", 3, 1, 3)
    with pytest.raises(ValueError, match="an int >= 1"):
        TrainConfig(dim=0)
    with pytest.raises(ValueError, match="loss"):
        TrainConfig(loss="hinge")
    for name, bad_values in (
        ("lr", (-1.0, 0.0, float("inf"), float("nan"), "0.1")),
        ("margin", (-1.0, float("inf"), float("nan"))),
        ("adversarial_temperature", (-1.0, float("inf"))),
    ):
        for v in bad_values:
            with pytest.raises(ValueError, match=f"^{name} must be a finite number"):
                TrainConfig(**{name: v})
    bad = tmp_path / "bad.npz"
    np.savez(bad, entity=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="not a grounding KGE checkpoint"):
        load_checkpoint(bad)
    assert isinstance(init_model("transe", 3, 1, 2), KGEModel)


def test_model_selection_never_reads_the_test_triples():
    """Validation is filtered by train + valid only: changing the test split (the facts the
    QA test questions ask about) leaves every validation score, hence the chosen epoch and
    model, unchanged; changing the validation split does change them."""
    kg = load_kg("nations")
    rng = np.random.default_rng(0)
    scrambled = kg.test.copy()
    scrambled[:, 2] = rng.permutation(scrambled[:, 2])
    other = dataclasses.replace(kg, test=scrambled)
    a, b = (train(k, "transe", CFG, progress=False) for k in (kg, other))
    assert a.history == b.history and a.best_epoch == b.best_epoch
    # the filter of a test evaluation does hold every split
    model = a.model
    assert evaluate_link_prediction(model, kg, "test") != evaluate_link_prediction(
        model, other, "test"
    )
    # and the check can fail: the validation filter does change validation scores
    fewer = dataclasses.replace(kg, valid=kg.valid[: len(kg.valid) // 2])
    assert evaluate_link_prediction(model, fewer, "valid") != evaluate_link_prediction(
        model, kg, "valid"
    )
