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
from scipy.spatial.distance import cdist
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


@given(sequence_tuples(2, min_len=0))
def test_eq3_ground_cost_matches_scipy_cdist(xy):
    """The ground cost c(z_i, z'_j) of Eq. (3) against scipy's cdist, empty sequences too."""
    x, y = xy
    for metric in ("euclidean", "sqeuclidean"):
        got = np.asarray(pairwise_cost(x, y, metric))
        assert got.shape == (x.shape[0], y.shape[0])
        assert close(got, cdist(x, y, metric))
    assert close(pairwise_cost(x, y), pairwise_cost(x, y, metric="euclidean"))


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


def table_dp(c: np.ndarray, kind: str, param: float = 0.0) -> float:
    """The four recursions of Eq. (3) as a plain row-by-row table with a +inf border."""
    n, m = c.shape
    D = np.full((n + 1, m + 1), np.inf)
    if kind == "edit":
        D[0, :] = param * np.arange(m + 1)
        D[:, 0] = param * np.arange(n + 1)
    else:
        D[0, 0] = -np.inf if kind == "frechet" else 0.0
    for i in range(n):
        for j in range(m):
            prev = np.array([D[i, j + 1], D[i + 1, j], D[i, j]])  # up, left, diagonal
            if kind == "dtw":
                D[i + 1, j + 1] = c[i, j] + prev.min()
            elif kind == "soft":
                D[i + 1, j + 1] = c[i, j] - param * np_logsumexp(-prev / param)
            elif kind == "frechet":
                D[i + 1, j + 1] = max(c[i, j], prev.min())
            else:
                D[i + 1, j + 1] = min(D[i, j] + c[i, j], prev[0] + param, prev[1] + param)
    return float(D[n, m])


@pytest.mark.parametrize("shape", [(8, 8), (1, 8), (8, 1), (2, 8), (7, 7), (16, 3), (9, 16)])
def test_eq3_alignment_costs_at_the_padding_buckets(shape):
    """Grids that fill their padding bucket (8, 16; 7 + the edit distance's empty prefix) read
    the last row, column and anti-diagonal: against the textbook table, and the defaults
    gamma = 0.1 (soft-DTW) and gap = 1 (edit distance)."""
    c = np.random.default_rng(sum(shape)).uniform(0.0, 3.0, size=shape)
    assert close(dtw(c), table_dp(c, "dtw"))
    assert close(discrete_frechet(c), table_dp(c, "frechet"))
    assert close(soft_dtw(c, 0.5), table_dp(c, "soft", 0.5))
    assert close(soft_dtw(c), table_dp(c, "soft", 0.1))
    assert close(edit_distance(c, 0.7), table_dp(c, "edit", 0.7))
    assert close(edit_distance(c), table_dp(c, "edit", 1.0))


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


def np_sinkhorn(c, a, b, eps, n_iter):
    """Sinkhorn in its scaling form (u = a / K v, v = b / K^T u, K = exp(-C / eps)), the
    textbook iteration the log-domain kernel restates; returns (cost, plan, objective,
    marginal error) after exactly ``n_iter`` sweeps."""
    K = np.exp(-c / eps)
    v = np.ones(c.shape[1])
    for _ in range(n_iter):
        u = a / (K @ v)
        v = b / (K.T @ u)
    P = u[:, None] * K * v[None, :]
    logP = np.log(np.where(P > 0, P, 1.0))
    cost = float(np.sum(P * c))
    return cost, P, cost + eps * float(np.sum(P * logP)), float(np.abs(P.sum(1) - a).sum())


C_SLOW = np.random.default_rng(0).integers(0, 10, size=(6, 6)).astype(float)  # tied costs
A3, B5 = np.array([0.5, 0.0, 0.5]), np.array([0.1, 0.2, 0.3, 0.0, 0.4])  # zero masses too
C35 = np.random.default_rng(3).uniform(0.0, 2.0, size=(3, 5))


@pytest.mark.parametrize(
    ("c", "a", "b", "eps", "n_iter"),
    [
        (C35, A3, B5, 0.3, 1),
        (C35, A3, B5, 0.3, 3),
        (C35, A3, B5, 0.05, 200),
        (C35, None, B5, 0.3, 5),
        (C35, A3, None, 0.3, 5),
        (C_SLOW, None, None, 0.1, 1000),  # the defaults, on an instance still moving at 1000
    ],
)
def test_eq3_sinkhorn_matches_the_scaling_iteration(c, a, b, eps, n_iter):
    """Every field of SinkhornResult after exactly n_iter sweeps, weighted marginals
    (zeros included), against the scaling-form iteration."""
    n, m = c.shape
    wa = np.full(n, 1 / n) if a is None else a
    wb = np.full(m, 1 / m) if b is None else b
    cost, P, objective, err = np_sinkhorn(c, wa, wb, eps, n_iter)
    r = sinkhorn(c, a, b, epsilon=eps, n_iter=n_iter)
    assert r.plan.shape == (n, m)
    assert close(r.plan, P) and close(r.cost, cost)
    assert close(r.objective, objective) and close(r.marginal_error, err)
    assert close(r.plan.sum(0), wb)  # the last sweep fits the columns exactly
    assert close(entropic_ot(c, a, b, epsilon=eps, n_iter=n_iter), cost)
    if a is None and b is None and (eps, n_iter) == (0.1, 1000):
        assert close(sinkhorn(c).plan, P) and close(entropic_ot(c), cost)
        assert not close(np_sinkhorn(c, wa, wb, eps, 1001)[0], cost)  # the check has power


def test_sinkhorn_under_jit_with_traced_marginals_and_its_gradient_in_them():
    """Marginals may be traced (no host checks then), the plan is cropped to [n, m] under
    jit, and d/da of the entropic cost is finite through the zero-mass padding."""
    f = jax.jit(lambda c, a, b: sinkhorn(c, a, b, epsilon=0.3, n_iter=50))
    r, ref = f(C35, A3, B5), sinkhorn(C35, A3, B5, epsilon=0.3, n_iter=50)
    assert r.plan.shape == (3, 5) and close(r.plan, ref.plan) and close(r.cost, ref.cost)
    a = np.array([0.5, 0.2, 0.3])

    def g(a):
        return entropic_ot(C35, a, B5, epsilon=0.3, n_iter=50)

    d = np.array([1.0, -1.0, 0.0])  # keeps sum(a) = 1
    ad = float(jax.grad(g)(a) @ d)
    h = 1e-6
    fd = (float(g(a + h * d)) - float(g(a - h * d))) / (2 * h)
    assert np.isfinite(ad) and np.isclose(ad, fd, rtol=1e-6, atol=1e-8)
    assert np.all(np.isfinite(jax.grad(g)(A3)))  # a zero-mass point of a itself


def test_marginals_are_read_in_the_working_precision():
    """float32 weights normalized in float32 are accepted by a float64 cost (and by the
    exact LP); float64 weights a float32 rounding off are not; the plan keeps the cost's
    dtype whatever the marginals' dtype."""
    c = np.random.default_rng(0).uniform(size=(7, 3))
    a32 = np.full(7, 1 / 7, np.float32)  # sums to 1 + 4.5e-8 in float64
    assert close(ot_exact(c, a32), ot_exact(c)) and close(entropic_ot(c, a32), entropic_ot(c))
    assert close(ot_exact(c.T, None, a32), ot_exact(c.T))
    a64 = np.full(7, 1 / 7) * (1 + 1e-6)  # within float32's tolerance, not float64's
    assert close(entropic_ot(c.astype(np.float32), a64), entropic_ot(c.astype(np.float32)), F32)
    with pytest.raises(ValueError, match="^a must be non-negative weights summing to one"):
        entropic_ot(c, np.full(7, 1 / 7) * (1 + 1e-6))
    r = sinkhorn(c.astype(np.float32), np.full(7, 1 / 7), n_iter=5)
    assert r.plan.dtype == np.float32 and r.cost.dtype == np.float32


def expanded(c, counts_a, counts_b):
    """The cost between point multisets: row i repeated counts_a[i] times, column j
    counts_b[j] times (equal totals N: a uniform assignment problem of size N)."""
    return np.repeat(np.repeat(c, counts_a, axis=0), counts_b, axis=1)


@pytest.mark.parametrize(
    ("counts_a", "counts_b"),
    [([2, 0, 4], [1, 1, 3, 0, 1]), ([2, 2, 2], [3, 0, 1, 1, 1]), ([1, 5, 0], [2, 1, 1, 1, 1])],
)
def test_eq3_ot_exact_with_weighted_marginals_equals_the_expanded_assignment(counts_a, counts_b):
    """Rational marginals k_i / N are N equal-mass points: OT(a, b) is the mean cost of the
    best permutation of the expanded N x N problem (Birkhoff), found by enumeration here.
    Also with only one marginal given on a square cost (the LP path, not the assignment)."""
    a, b = np.array(counts_a) / 6, np.array(counts_b) / 6
    assert close(ot_exact(C35, a, b), brute_assignment(expanded(C35, counts_a, counts_b)))
    sq = C35[:, :3]
    assert close(ot_exact(sq, a), brute_assignment(expanded(sq, counts_a, [2, 2, 2])))
    assert close(ot_exact(sq, None, a), brute_assignment(expanded(sq, [2, 2, 2], counts_a)))
    big = np.array([[2.0**24, 9e9], [9e9, 1.0]], np.float32)  # mean in float64: 2**23 + 0.5
    assert ot_exact(big) == 2.0**23 + 0.5


@pytest.mark.parametrize("traced", ["cost", "a", "b"])
def test_ot_exact_refuses_traced_input_by_name(traced):
    args = {"cost": C35, "a": A3, "b": B5}
    f = jax.jit(lambda x: ot_exact(**{**args, traced: x}))
    with pytest.raises(TypeError, match="^ot_exact is a numpy reference"):
        f(args[traced])


def test_padding_buckets_are_powers_of_two_from_8():
    """Sizes share a compiled kernel per bucket (the one rule, ``grounding._shapes.bucket``):
    8 up to 8, then the next power of two."""
    from grounding._shapes import bucket

    assert [bucket(k) for k in (1, 7, 8, 9, 16, 17, 33)] == [8, 8, 8, 16, 16, 32, 64]


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
