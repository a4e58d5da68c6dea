"""Eq. (2) product distance and Eq. (3) alignment costs (``grounding.alignment``).

Oracles: every alignment cost equals explicit enumeration of ALL admissible alignments
on short sequences. Metric properties are tested, not assumed: DTW fails the triangle
inequality (explicit counterexample); Fréchet, edit distance and exact W1 satisfy it.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _tol import F32, F64
from hypothesis import example, given, note, settings
from hypothesis import strategies as st
from scipy.special import logsumexp as np_logsumexp

from grounding.alignment import (
    discrete_frechet,
    dtw,
    edit_distance,
    entropic_ot,
    ot_exact,
    pairwise_cost,
    product_distance,
    sinkhorn,
    soft_dtw,
)
from grounding.testing._alignment_strategies import (
    cost_matrices,
    euclidean_cost,
    gaps,
    sequence_tuples,
    step_weights,
)


# ------------------------------------------------------------------ brute-force oracles
def warping_paths(n: int, m: int) -> list[list[tuple[int, int]]]:
    """All monotone continuous couplings from (0, 0) to (n-1, m-1) (DTW and Fréchet)."""
    if (n, m) == (1, 1):
        return [[(0, 0)]]
    paths = []
    for di, dj in ((1, 0), (0, 1), (1, 1)):
        if n - di >= 1 and m - dj >= 1:
            paths += [p + [(n - 1, m - 1)] for p in warping_paths(n - di, m - dj)]
    return paths


def partial_matchings(n: int, m: int):
    """All strictly increasing partial matchings {(i_1, j_1), ...} (edit distance)."""
    for k in range(min(n, m) + 1):
        for rows in itertools.combinations(range(n), k):
            for cols in itertools.combinations(range(m), k):
                yield list(zip(rows, cols, strict=True))


def brute_dtw(c: np.ndarray) -> float:
    return min(sum(c[i, j] for i, j in p) for p in warping_paths(*c.shape))


def brute_soft_dtw(c: np.ndarray, gamma: float) -> float:
    costs = np.array([sum(c[i, j] for i, j in p) for p in warping_paths(*c.shape)])
    return float(-gamma * np_logsumexp(-costs / gamma))


def brute_frechet(c: np.ndarray) -> float:
    return min(max(c[i, j] for i, j in p) for p in warping_paths(*c.shape))


def brute_edit(c: np.ndarray, gap: float) -> float:
    n, m = c.shape
    return min(
        sum(c[i, j] for i, j in a) + gap * (n + m - 2 * len(a)) for a in partial_matchings(n, m)
    )


def brute_assignment(c: np.ndarray) -> float:
    n = c.shape[0]
    return min(np.mean([c[i, p[i]] for i in range(n)]) for p in itertools.permutations(range(n)))


def close(a, b, tol=F64) -> bool:
    return bool(np.allclose(a, b, **tol))


# ------------------------------------------------------------------------------ Eq. (2)
@given(sequence_tuples(3, equal_length=True), st.data())
def test_eq2_product_distance_metric_axioms(xyz, data):
    x, y, z = xyz
    w = data.draw(step_weights(x.shape[0]))
    d = lambda u, v: float(product_distance(u, v, weights=w))  # noqa: E731
    d_xy, d_yz, d_xz = d(x, y), d(y, z), d(x, z)
    note(f"d(x,y)={d_xy}, d(y,z)={d_yz}, d(x,z)={d_xz}")
    assert close(d_xy, np.sqrt((w * ((x - y) ** 2).sum(-1)).sum()))  # the formula of Eq. (2)
    assert d_xy == d(y, x)
    assert d(x, x) == 0.0
    assert (d_xy > 0) == bool(np.any(x != y))
    assert d_xz <= d_xy + d_yz + F64["atol"]


# ------------------------------------------------------------------- Eq. (3): oracles
@given(cost_matrices())
def test_eq3_dtw_equals_brute_force(c):
    assert close(dtw(c), brute_dtw(c))


@given(cost_matrices(), st.sampled_from([1.0, 0.1, 0.01]))
def test_eq3_soft_dtw_equals_brute_force(c, gamma):
    """Soft-DTW = -gamma log sum_paths exp(-cost/gamma), within gamma log N of DTW."""
    value, hard = float(soft_dtw(c, gamma)), brute_dtw(c)
    assert close(value, brute_soft_dtw(c, gamma))
    n_paths = len(warping_paths(*c.shape))
    assert hard - gamma * np.log(n_paths) - F64["atol"] <= value <= hard + F64["atol"]


@given(cost_matrices(min_n=0, min_m=0), gaps())
@example(np.zeros((0, 0)), 1.0).via("both sequences empty")
@example(np.full((3, 2), 5.0), 1.0).via("deleting everything beats substituting")
def test_eq3_edit_equals_brute_force(c, gap):
    assert close(edit_distance(c, gap), brute_edit(c, gap))


@given(cost_matrices())
def test_eq3_frechet_equals_brute_force(c):
    assert close(discrete_frechet(c), brute_frechet(c))


@given(cost_matrices(square=True))
def test_eq3_ot_equals_brute_force(c):
    """Exact OT = min over permutations; entropic OT within its stated bound of it.

    Bound (Sinkhorn plan ``P`` is entropic-optimal for its own marginals ``(P1, b)``):
    ``OT - M delta <= <P, C> <= OT + eps log n + M delta``, ``M = max C``,
    ``delta = ||P1 - a||_1``, so ``<P_eps, C> -> OT`` as ``eps -> 0``.
    """
    exact = ot_exact(c)
    assert close(exact, brute_assignment(c))
    n, big_m = c.shape[0], float(c.max())
    for eps in (0.1, 0.01):
        r = sinkhorn(c, epsilon=eps, n_iter=1000)
        slack = big_m * float(r.marginal_error) + F64["atol"]
        note(f"eps={eps}: cost={float(r.cost)}, exact={exact}, delta={float(r.marginal_error)}")
        assert r.plan.shape == c.shape and close(r.plan.sum(0), np.full(n, 1 / n))
        assert float(r.objective) <= float(r.cost) + F64["atol"]  # H(P) >= 0
        assert exact - slack <= float(r.cost) <= exact + eps * np.log(n) + slack


@given(cost_matrices(min_n=2, min_m=2))
def test_eq3_ot_unequal_sizes_matches_linprog(c):
    """Uniform marginals of different sizes: entropic -> the LP optimum within eps min(H)."""
    exact = ot_exact(c)
    eps = 0.01
    r = sinkhorn(c, epsilon=eps, n_iter=1000)
    slack = float(c.max()) * float(r.marginal_error) + F64["atol"]
    assert exact - slack <= float(r.cost) <= exact + eps * np.log(min(c.shape)) + slack


@given(cost_matrices())
def test_eq3_entropic_ot_monotone_in_epsilon(c):
    """``<P_eps, C>`` is non-decreasing in ``eps``: entropic OT converges monotonically.

    Exchange argument: optimality of ``P_1`` at ``eps_1`` and of ``P_2`` at ``eps_2 > eps_1``
    gives ``H(P_1) <= H(P_2)`` and then ``<P_1, C> <= <P_2, C>``. Checked on converged runs.
    """
    small, large = (sinkhorn(c, epsilon=eps) for eps in (0.3, 1.0))
    assert max(float(small.marginal_error), float(large.marginal_error)) <= 1e-9
    assert float(small.cost) <= float(large.cost) + 1e-8


# ------------------------------------------------- Eq. (3): which costs are metrics
def _cost_1d(u, v):
    return euclidean_cost(np.array(u, float)[:, None], np.array(v, float)[:, None])


def test_eq3_dtw_violates_triangle_inequality():
    """x = [0], y = [1], z = [1, 2] (1-D, |.| ground metric): DTW(x,z) = 3 > 1 + 1."""
    x, y, z = [0.0], [1.0], [1.0, 2.0]
    d_xy, d_yz, d_xz = (float(dtw(_cost_1d(u, v))) for u, v in ((x, y), (y, z), (x, z)))
    assert (d_xy, d_yz, d_xz) == (1.0, 1.0, 3.0)
    assert d_xz > d_xy + d_yz
    assert float(dtw(_cost_1d([0.0], [0.0, 0.0]))) == 0.0  # nor identity of indiscernibles


@given(sequence_tuples(3))
def test_eq3_frechet_triangle_inequality(xyz):
    """Discrete Fréchet is a pseudometric: symmetric, d(x,x)=0, triangle inequality."""
    x, y, z = xyz
    d = lambda u, v: float(discrete_frechet(euclidean_cost(u, v)))  # noqa: E731
    assert d(x, y) == d(y, x)
    assert d(x, x) == 0.0
    assert d(x, z) <= d(x, y) + d(y, z) + F64["atol"]


def test_eq3_frechet_is_only_a_pseudometric():
    assert float(discrete_frechet(_cost_1d([0.0, 1.0], [0.0, 0.0, 1.0]))) == 0.0


@given(sequence_tuples(3, min_len=0), gaps(min_value=0.05))
def test_eq3_edit_triangle_inequality(xyz, gap):
    """Metric substitution cost and constant gap > 0: the edit distance is a metric.

    Composing alignments x->y->z: matched-matched costs d(x_i,z_k) <= d(x_i,y_j) +
    d(y_j,z_k); every other composition replaces >= 1 gap by <= 1 gap.
    """
    x, y, z = xyz
    d = lambda u, v: float(edit_distance(euclidean_cost(u, v), gap))  # noqa: E731
    assert d(x, y) == d(y, x)
    assert d(x, x) == 0.0
    assert (d(x, y) > 0) == (x.shape != y.shape or bool(np.any(x != y)))
    assert d(x, z) <= d(x, y) + d(y, z) + F64["atol"]


@given(sequence_tuples(3, equal_length=True))
def test_eq3_ot_triangle_inequality(xyz):
    """Exact W1 between equal-size uniform claim sets is a metric (on multisets)."""
    x, y, z = xyz
    d = lambda u, v: ot_exact(euclidean_cost(u, v))  # noqa: E731
    assert close(d(x, y), d(y, x))
    assert d(x, x) == 0.0
    assert d(x, x[::-1]) == 0.0  # sets, not sequences: order is irrelevant
    assert d(x, z) <= d(x, y) + d(y, z) + F64["atol"]


def test_eq3_entropic_ot_is_not_a_metric():
    """For eps > 0 the entropic plan spreads mass: entropic_ot(x, x) > 0 = W1(x, x)."""
    c = _cost_1d([0.0, 1.0], [0.0, 1.0])
    assert float(entropic_ot(c, epsilon=1.0)) > 0.1
    assert ot_exact(c) == 0.0


# ----------------------------------------------------------------------- transforms
SHAPE = (3, 4)
COST_FNS = {
    "dtw": dtw,
    "soft_dtw": lambda c: soft_dtw(c, 0.1),
    "edit_distance": lambda c: edit_distance(c, 0.7),
    "discrete_frechet": discrete_frechet,
    "entropic_ot": lambda c: entropic_ot(c, epsilon=0.1),
    "pairwise_cost": lambda c: pairwise_cost(c[:, :2], c[:, 2:]),
    "product_distance": lambda c: product_distance(c, c[::-1], jnp.arange(1.0, 4.0)),
}
JITTED = {name: jax.jit(f) for name, f in COST_FNS.items()}
VMAPPED = {name: jax.jit(jax.vmap(f)) for name, f in COST_FNS.items()}
DIFFERENTIABLE = ["soft_dtw", "entropic_ot", "product_distance", "pairwise_cost"]
GRADS = {
    name: jax.jit(jax.grad(lambda c, f=COST_FNS[name]: jnp.sum(f(c)))) for name in DIFFERENTIABLE
}


# Transforms exercise code paths, not values: a quarter of the profile's examples each
# (25 under ``ci``), over 7 functions x 4 transforms, keeps the file under 30 s.
transform_settings = settings(max_examples=max(10, settings.default.max_examples // 4))


@pytest.mark.parametrize("name", COST_FNS)
@transform_settings
@given(c=cost_matrices(shape=SHAPE))
def test_alignment_jit_matches_eager(name, c):
    assert close(JITTED[name](c), COST_FNS[name](c))


@pytest.mark.parametrize("name", COST_FNS)
@transform_settings
@given(batch=st.lists(cost_matrices(shape=SHAPE), min_size=3, max_size=3))
def test_alignment_vmap_matches_loop(name, batch):
    looped = np.stack([np.asarray(COST_FNS[name](c)) for c in batch])
    assert close(VMAPPED[name](np.stack(batch)), looped)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@transform_settings
@given(c=cost_matrices(shape=SHAPE))
@example(c=np.zeros(SHAPE)).via("coincident points: zero distances")
def test_alignment_grad_finite(name, c):
    grad = GRADS[name](c)
    assert bool(jnp.all(jnp.isfinite(grad)))


C0 = np.arange(12.0).reshape(3, 4) % 5 / 4
FD_CASES = {  # scalar function of two arguments, and the point to differentiate at
    "soft_dtw": (lambda c, g: soft_dtw(c, g), (C0, 0.3)),
    "entropic_ot": (lambda c, e: entropic_ot(c, epsilon=e), (4 * C0, 0.3)),
    "product_distance": (lambda x, y: product_distance(x, y), (np.eye(3)[:, :2], np.ones((3, 2)))),
}


@pytest.mark.parametrize("case", FD_CASES)
def test_alignment_grad_matches_finite_differences(case):
    """Gradients in both arguments (costs/points and gamma/epsilon), through the scans and
    the masked ``+inf`` cells, equal central differences along a fixed direction."""
    f, args = FD_CASES[case]
    args = tuple(np.asarray(a, float) for a in args)
    dirs = tuple(np.cos(np.arange(a.size) + 1.0 + k).reshape(a.shape) for k, a in enumerate(args))
    grads = jax.jit(jax.grad(f, argnums=(0, 1)))(*args)
    ad = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(grads, dirs, strict=True))
    h = 1e-5
    shifted = [[a + s * h * d for a, d in zip(args, dirs, strict=True)] for s in (1, -1)]
    fd = (float(f(*shifted[0])) - float(f(*shifted[1]))) / (2 * h)
    assert np.isclose(ad, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", COST_FNS)
@transform_settings
@given(c=cost_matrices(shape=SHAPE))
def test_alignment_float32_matches_float64(name, c):
    out32 = COST_FNS[name](c.astype(np.float32))
    assert out32.dtype == jnp.float32
    out64 = np.asarray(COST_FNS[name](c))
    scale = np.maximum(np.abs(out64), 1.0)  # F32 is relative to the float64 scale
    assert np.allclose(np.asarray(out32) / scale, out64 / scale, **F32)


# ----------------------------------------------------------------------- bad input
C = np.ones((2, 3))
BAD = [
    (dtw, (np.ones(3),), ValueError, "^cost"),
    (dtw, (np.ones((0, 3)),), ValueError, "^cost"),
    (dtw, ([[np.nan, 1.0]],), ValueError, "^cost"),
    (dtw, ("abc",), TypeError, "^cost"),
    (discrete_frechet, ([[-np.inf]],), ValueError, "^cost"),
    (soft_dtw, (C, 0.0), ValueError, "^gamma"),
    (soft_dtw, (C, -1.0), ValueError, "^gamma"),
    (edit_distance, (C, -1.0), ValueError, "^gap"),
    (edit_distance, (C, [1.0, 2.0]), ValueError, "^gap"),
    (edit_distance, (np.ones((2, 2, 2)), 1.0), ValueError, "^cost"),
    (entropic_ot, (C, None, None, 0.0), ValueError, "^epsilon"),
    (entropic_ot, (C, None, None, -0.1), ValueError, "^epsilon"),
    (entropic_ot, (C, [1.0], None), ValueError, "^a"),
    (entropic_ot, (C, [0.3, 0.3], None), ValueError, "^a"),
    (entropic_ot, (C, None, [1.5, -0.5, 0.0]), ValueError, "^b"),
    (entropic_ot, (C, None, None, 0.1, 0), ValueError, "^n_iter"),
    (sinkhorn, (C, None, None, np.nan), ValueError, "^epsilon"),
    (ot_exact, ([[np.nan]],), ValueError, "^cost"),
    (jax.jit(ot_exact), (C,), TypeError, "cost"),
    (product_distance, (np.ones((2, 1)), np.ones((3, 1))), ValueError, "^x and y"),
    (product_distance, (np.ones((2, 1)), np.ones((2, 1)), [1.0, 0.0]), ValueError, "^weights"),
    (product_distance, (np.ones(2), np.ones(2)), ValueError, "^x"),
    (product_distance, (np.ones((2, 1)), [[np.nan], [1.0]]), ValueError, "^y"),
    (pairwise_cost, (np.ones((2, 1)), np.ones((2, 2))), ValueError, "^x and y"),
    (pairwise_cost, (np.ones((2, 1)), np.ones((2, 1)), "cosine"), ValueError, "^metric"),
    (pairwise_cost, (None, np.ones((2, 1))), TypeError, "^x"),
]


BAD_IDS = [
    f"{getattr(f, '__name__', 'jit')}-{m.strip('^').replace(' ', '_')}-{i}"
    for i, (f, _, _, m) in enumerate(BAD)
]


@pytest.mark.parametrize("fn, args, exc, match", BAD, ids=BAD_IDS)
def test_alignment_rejects_bad_input(fn, args, exc, match):
    """The error names the offending argument (messages start with it)."""
    with pytest.raises(exc, match=match):
        fn(*args)
