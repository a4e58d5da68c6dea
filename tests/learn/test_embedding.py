"""Composing relation chains in the learned models (:mod:`grounding.learn.embedding`,
:mod:`grounding.learn.reciprocal`) against NumPy: translations add, rotations and ComplEx
relations multiply complex numbers, an inverse row undoes its relation."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grounding.learn import KGEModel, ReciprocalModel, complex_product


def _halves(z: np.ndarray) -> np.ndarray:
    return np.concatenate([z.real, z.imag], axis=-1)


@given(st.integers(0, 2**31 - 1))
def test_complex_product_is_complex_multiplication(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
    w = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
    got = complex_product(jnp.asarray(_halves(x)), jnp.asarray(_halves(w)))
    np.testing.assert_allclose(np.asarray(got), _halves(x * w), rtol=1e-12, atol=1e-12)


@given(st.sampled_from(["transe", "rotate"]), st.lists(st.integers(0, 5), max_size=4),
       st.integers(0, 2**31 - 1))  # fmt: skip
def test_compose_follows_the_maps_and_an_inverse_row_undoes_its_relation(kind, rows, seed):
    rng = np.random.default_rng(seed)
    n_rel, d = 3, 4
    rel = rng.normal(size=(n_rel, d)) if kind == "transe" else rng.uniform(-3, 3, (n_rel, d // 2))
    m = KGEModel(kind, jnp.asarray(rng.normal(size=(5, d))), jnp.asarray(rel))
    x = rng.normal(size=d)
    want = x.copy()
    for r in rows:  # rows >= n_rel: the inverse of relation r - n_rel
        sign = 1.0 if r < n_rel else -1.0
        p = rel[r % n_rel]
        if kind == "transe":
            want = want + sign * p
        else:  # rotate adjacent pairs by the angle (pairs: GGUF-free RotatE layout)
            z = (want[0::2] + 1j * want[1::2]) * np.exp(1j * sign * p)
            want = np.stack([z.real, z.imag], axis=-1).reshape(-1)
    got = np.asarray(m.compose(jnp.asarray(x), rows))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    back = np.asarray(
        m.compose(
            m.compose(jnp.asarray(x), rows), [(r + n_rel) % (2 * n_rel) for r in reversed(rows)]
        )
    )
    np.testing.assert_allclose(back, x, rtol=1e-9, atol=1e-9)
    diff = np.asarray(m.entity) - x  # d_M: euclidean (transe), sum of complex moduli (rotate)
    d = np.linalg.norm(diff, axis=1) if kind == "transe" else np.abs(
        diff[:, 0::2] + 1j * diff[:, 1::2]).sum(axis=1)  # fmt: skip
    np.testing.assert_allclose(m.answer_scores(jnp.asarray(x)), -d, rtol=1e-9)


def test_compose_refuses_linear_maps_and_rows_out_of_range():
    m = KGEModel("transe", jnp.zeros((2, 2)), jnp.zeros((1, 2)))
    with pytest.raises(ValueError, match="relation rows must lie in"):
        m.compose(jnp.zeros(2), [2])
    with pytest.raises(ValueError, match="linear maps are not composed"):
        KGEModel("linear", jnp.zeros((2, 2)), jnp.zeros((1, 2, 2))).compose(jnp.zeros(2), [0])
    r = ReciprocalModel("complex", jnp.zeros((2, 2)), jnp.zeros((2, 2)))
    with pytest.raises(ValueError, match="relation rows must lie in"):
        r.compose(jnp.zeros(2), [2])


@given(st.sampled_from(["transe", "complex"]), st.lists(st.integers(0, 3), max_size=3),
       st.integers(0, 2**31 - 1))  # fmt: skip
def test_reciprocal_compose_and_scores_match_numpy(kind, rows, seed):
    rng = np.random.default_rng(seed)
    ent, rel = rng.normal(size=(5, 4)), rng.normal(size=(4, 4))  # 2 relations, 2 reciprocals
    m = ReciprocalModel(kind, jnp.asarray(ent), jnp.asarray(rel))
    x = rng.normal(size=4)
    if kind == "complex":
        z = x[:2] + 1j * x[2:]
        for r in rows:
            z = z * (rel[r, :2] + 1j * rel[r, 2:])
        want = _halves(z)
        want_scores = ent @ want  # Re<x, conj(e)>
    else:
        want = x + rel[rows].sum(axis=0) if rows else x
        want_scores = -np.linalg.norm(ent - want, axis=1)
    got = m.compose(jnp.asarray(x), rows)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(m.answer_scores(got), want_scores, rtol=1e-9, atol=1e-9)
