"""Property tests for the posterior results: Eqs. (1), (5)-(7), (16)-(20), Thm. 2,
Props. 3, 5, 6, 7, 11, 13, 14, 15, Cor. 1. One test per numbered result."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp
from _batches import prior_energy_rows
from _tol import F64, TIGHT
from hypothesis import event, example, given, note
from hypothesis import strategies as st

import grounding as g
from grounding.testing.strategies import (
    binary_partitions,
    lambdas,
    log_simplex,
    prior_energy,
    seeds,
)


def _p(logp):
    return np.exp(np.asarray(logp))


# ----------------------------------------------------------------------------- Eq. (1)
@given(prior_energy(zeros=True, allow_inf=False), lambdas())
def test_eq1_prior_normalized_and_zero_prior_stays_zero(pe, lam):
    log_prior, e = pe
    assert abs(float(g._numerics.logsumexp(jnp.asarray(log_prior)))) < 1e-12
    post = g.gibbs_log_posterior(log_prior, e, lam)
    assert np.all(_p(post)[np.isneginf(log_prior)] == 0.0)
    assert np.isclose(_p(post).sum(), 1.0, **F64)


# ----------------------------------------------------------------------------- Eq. (5)-(6)
@given(prior_energy(allow_inf=True), st.floats(0.0, 5.0), st.booleans(), st.integers(0, 7))
def test_eq6_hard_posterior_is_conditioned_prior(pe, eps, at_candidate, i):
    log_prior, e = pe
    if at_candidate and np.isfinite(e[i % len(e)]):  # eps at a candidate's energy: F_R not empty
        eps = float(e[i % len(e)])
    feasible = e <= eps
    p = _p(log_prior)
    event(f"F_R has prior mass: {p[feasible].sum() > 0}")
    if p[feasible].sum() == 0:
        with pytest.raises(ValueError, match="zero prior mass"):
            g.hard_log_posterior(log_prior, e, eps)
        return
    post = _p(g.hard_log_posterior(log_prior, e, eps))
    np.testing.assert_allclose(post, np.where(feasible, p, 0) / p[feasible].sum(), **F64)
    np.testing.assert_array_equal(np.asarray(g.hard_feasible(e, eps)), feasible)


def test_eq6_zero_feasible_mass_gives_error_or_abstain():
    lp = np.log([0.5, 0.5])
    with pytest.raises(ValueError, match="zero prior mass"):
        g.hard_log_posterior(lp, np.array([1.0, np.inf]), 0.5)
    assert g.decide(np.array([-np.inf, -np.inf]), np.array([2, 2])) != g.Action.ANSWER


# ----------------------------------------------------------------------------- Eq. (7)
@given(prior_energy(zeros=True, allow_inf=True), lambdas(max_value=1e2, zero=False))
@example((np.log([0.5, 0.5]), np.array([0.0, 1.0])), 1.0)
def test_eq7_gibbs_is_prior_times_exp_minus_lambda_energy(pe, lam):
    """Eq. (7) stated itself: p(rho) proportional to p0(rho) exp(-lam E(rho)) for lam > 0,
    recomputed with NumPy (an exponent of -2 lam E, or any other, fails)."""
    log_prior, e = pe
    ok = np.isfinite(e) & np.isfinite(log_prior)
    event(f"Z_R > 0: {ok.any()}")
    if not ok.any():
        return
    w = np.where(
        ok,
        np.exp(
            log_prior
            - lam * np.where(ok, e, 0.0)
            - np.max((log_prior - lam * np.where(ok, e, 0.0))[ok])
        ),
        0.0,
    )
    want = w / w.sum()
    got = _p(g.gibbs_log_posterior(log_prior, e, lam))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300)


@given(prior_energy(zeros=True, allow_inf=True), lambdas(), st.floats(-50, 50))
@example((np.log([0.5, 0.5]), np.array([0.0, 1.0])), 1e6, 0.0)
@example((np.log([0.5, 0.5]), np.array([0.0, 1.0])), 1e-6, 0.0)
def test_eq7_gibbs_normalized_prior_at_zero_shift_invariant(pe, lam, shift):
    log_prior, e = pe
    ok = np.isfinite(e) & np.isfinite(log_prior)
    event(f"Z_R > 0: {ok.any()}")
    if not ok.any():
        with pytest.raises(ValueError, match="Z_R"):
            g.gibbs_log_posterior(log_prior, e, lam)
        return
    post = np.asarray(g.gibbs_log_posterior(log_prior, e, lam))
    assert not np.any(np.isnan(post))
    assert np.isclose(_p(post).sum(), 1.0, **F64)
    assert np.all(post[~np.isfinite(e)] == -np.inf)  # +inf energy => -inf log-mass
    np.testing.assert_allclose(
        _p(g.gibbs_log_posterior(log_prior, e + shift - min(shift, 0), lam)),
        _p(post),
        rtol=1e-7,
        atol=1e-12,
    )
    at0 = _p(g.gibbs_log_posterior(log_prior, e, 0.0))
    p = np.where(np.isfinite(e), _p(log_prior), 0)
    np.testing.assert_allclose(at0, p / p.sum(), **F64)


# ----------------------------------------------------------------------------- Eq. (16)/(18), Thm. 2
@given(prior_energy(n_min=2, zeros=True), log_simplex(n_min=2), lambdas(max_value=1e3))
def test_eq18_kl_decomposition_identity(pe, other, lam):
    log_prior, e = pe
    n = len(e)
    rng = np.random.default_rng(len(other))
    q = rng.dirichlet(np.ones(n)) * np.isfinite(log_prior)  # P << P0
    with np.errstate(divide="ignore"):
        lq = np.log(q / q.sum())
    lhs = float(g.kl_objective(lq, log_prior, e, lam))
    rhs = float(g.kl_objective_decomposition(lq, log_prior, e, lam))
    note(f"lhs={lhs} rhs={rhs}")
    assert np.isclose(lhs, rhs, rtol=1e-9, atol=1e-9)


@given(prior_energy(n_min=2, zeros=True), lambdas(max_value=1e3), seeds)
def test_thm2_gibbs_is_unique_minimizer(pe, lam, seed):
    log_prior, e = pe
    post = g.gibbs_log_posterior(log_prior, e, lam)
    best = float(g.kl_objective(post, log_prior, e, lam))
    assert np.isclose(best, -float(g.log_partition(log_prior, e, lam)), rtol=1e-9, atol=1e-9)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        q = rng.dirichlet(np.ones(len(e))) * np.isfinite(log_prior)
        with np.errstate(divide="ignore"):
            lq = np.log(q / q.sum())
        gap = float(g.kl_objective(lq, log_prior, e, lam)) - best
        # Eq. (18): the gap is exactly KL(P || P_lambda) >= 0, zero only at the Gibbs posterior.
        assert np.isclose(gap, float(g.kl_divergence(lq, post)), rtol=1e-7, atol=1e-8)
        assert gap >= -1e-10


def test_thm2_symbolic_identity():
    """Eq. (18) per candidate: log P/P_lambda = log P/P0 + lambda E + log Z (symbolic)."""
    p, p0, lam, e, z = sp.symbols("p p0 lambda E Z", positive=True)
    p_lam = p0 * sp.exp(-lam * e) / z
    assert (
        sp.simplify(
            sp.expand_log(sp.log(p / p_lam) - (sp.log(p / p0) + lam * e + sp.log(z)), force=True)
        )
        == 0
    )


# ----------------------------------------------------------------------------- Eq. (20), Cor. 1
@given(prior_energy(n_min=2), lambdas(max_value=1e3))
def test_eq20_log_odds_identity(pe, lam):
    log_prior, e = pe
    post = np.asarray(g.gibbs_log_posterior(log_prior, e, lam))
    for i, j in [(0, 1), (1, 0), (0, len(e) - 1)]:
        direct = post[i] - post[j]
        assert np.isclose(
            direct, float(g.log_odds(log_prior, e, lam, i, j)), rtol=1e-9, atol=1e-7 * (1 + lam)
        )


@given(prior_energy(n_min=2, n_max=2), lambdas(max_value=1e3))
@example(
    (np.log([0.25, 0.75]), np.array([0.0, np.log(3.0)])), 1.0
)  # exact tie: neither ranks above
def test_cor1_pairwise_ranking_iff(pe, lam):
    log_prior, e = pe
    post = np.asarray(g.gibbs_log_posterior(log_prior, e, lam))
    cond = bool(g.bounds.pairwise_ranking_condition(log_prior[0], log_prior[1], e[0], e[1], lam))
    margin = lam * (e[1] - e[0]) - (log_prior[1] - log_prior[0])
    event(f"condition holds: {cond}" if abs(margin) >= 1e-9 else "tie")
    if abs(margin) < 1e-9:  # boundary: the two are tied up to rounding
        return
    assert cond == (post[0] > post[1])


# ----------------------------------------------------------------------------- Prop. 3
@given(prior_energy(n_min=2, allow_inf=False), st.floats(0, 3), lambdas())
def test_prop3_hard_collapse_soft_positivity(pe, eps, lam):
    log_prior, e = pe
    outside = e > eps
    event(f"F_R proper, non-empty subset: {outside.any() and not outside.all()}")
    if not outside.any() or outside.all():
        return
    hard = _p(g.hard_log_posterior(log_prior, e, eps))
    assert np.all(hard[outside] == 0.0)
    soft = np.asarray(g.gibbs_log_posterior(log_prior, e, lam))
    assert np.all(np.isfinite(soft))  # positive mass in log-space, at every finite lambda
    note(
        f"min soft log-mass {soft.min():.1f}; underflows as a probability: {bool(np.exp(soft.min()) == 0)}"
    )


def test_prop3_log_space_avoids_underflow():
    """At lambda*E = 1e6 the probability underflows to 0.0 in float64, the log-mass does not."""
    post = g.gibbs_log_posterior(np.log([0.5, 0.5]), np.array([0.0, 1.0]), 1e6)
    assert float(post[1]) == pytest.approx(-1e6, rel=1e-12)
    assert np.exp(float(post[1])) == 0.0


# ----------------------------------------------------------------------------- Prop. 5
@given(prior_energy(n_min=2), lambdas(min_value=1e-3, max_value=1e3, zero=False))
def test_prop5_concentration_with_explicit_rate(pe, lam):
    log_prior, e = pe
    e = np.round(e, 1)  # create ties so M_R can have several members
    post = np.asarray(g.gibbs_log_posterior(log_prior, e, lam))
    m = e == e.min()
    limit = np.where(m, _p(log_prior), 0) / _p(log_prior)[m].sum()
    tv = float(
        g.tv_distance(
            post, np.log(np.where(limit > 0, limit, 1e-300)) + np.where(limit > 0, 0, -np.inf)
        )
    )
    bound = float(g.bounds.concentration_tv_bound(log_prior, e, lam))
    # the log-posterior subtracts terms of size lam * |E|: its float64 rounding error, and so
    # the computed TV's, is a few eps * (1 + lam * max|E|) even where the bound underflows to 0
    rounding = 8 * np.finfo(float).eps * (1 + lam * np.max(np.abs(e)))
    assert tv <= bound * (1 + 1e-9) + rounding


def test_prop5_rate_is_attained_with_equal_gaps():
    lp = np.log([0.2, 0.3, 0.5])
    e = np.array([0.0, 1.0, 1.0])  # every non-minimizer at the same gap
    for lam in [0.1, 1.0, 5.0]:
        post = g.gibbs_log_posterior(lp, e, lam)
        limit = np.log([1.0, 1e-300, 1e-300])
        limit[1:] = -np.inf
        tv = float(g.tv_distance(post, limit))
        assert tv == pytest.approx(float(g.bounds.concentration_tv_bound(lp, e, lam)), rel=TIGHT)


# ----------------------------------------------------------------------------- Prop. 6
@given(log_simplex(n_min=2), seeds, st.floats(-3, 3))
def test_prop6_hard_limit_with_exact_rate(log_prior, seed, log_lam_m):
    s = np.random.default_rng(seed).random(len(log_prior)) < 0.5
    s[0] = True
    lam_m = 10.0**log_lam_m
    soft = g.gibbs_log_posterior(
        log_prior, np.where(s, 0.0, 1.0), lam_m
    )  # truncated E_M, lambda=lam_m, M=1
    hard = g.hard_log_posterior(log_prior, np.where(s, 0.0, 1.0), 0.0)
    tv = float(g.tv_distance(soft, hard))
    rate = float(g.bounds.hard_limit_tv(log_prior, s, lam_m))
    assert tv == pytest.approx(rate, rel=1e-9, abs=1e-15)  # an equality: the rate is tight
    assert float(g.bounds.hard_limit_tv(log_prior, s, 10 * lam_m)) <= rate + 1e-15


# ----------------------------------------------------------------------------- Prop. 7
@given(prior_energy(n_min=2), lambdas(max_value=1e3), st.booleans(), st.integers(0, 7))
def test_prop7_margin_condition_gives_unique_map(pe, lam, best, target):
    log_prior, e = pe
    if best:  # the best-scoring candidate, for which the premise holds unless tied
        target = int(
            np.argmax(np.where(np.isfinite(e), log_prior - lam * np.nan_to_num(e), -np.inf))
        )
    target = target % len(e)
    post = np.asarray(g.gibbs_log_posterior(log_prior, e, lam))
    holds = bool(g.bounds.margin_condition(log_prior, e, lam, target))
    event(f"margin premise holds: {holds}")
    if holds:
        others = np.delete(post, target)
        assert np.all(post[target] > others)


def test_prop7_probability_by_simulation():
    """Pr[MAP = rho_dagger] >= Pr(M) >= (1 - eps)^k, with k edges retrieved independently."""
    rng = np.random.default_rng(7)
    k, eps, lam, kappa, n = 3, 0.2, 4.0, 1.0, 20000
    log_prior = np.log([0.3, 0.4, 0.3])  # the prior prefers a wrong candidate
    retrieved = rng.random((n, k)) > eps
    all_edges = retrieved.all(axis=1)
    e_dagger = np.where(all_edges, 0.0, kappa)  # supported iff its k-edge path is retrieved
    wins = 0
    for ed in (0.0, kappa):
        e = np.array([ed, kappa, kappa])
        map_ok = int(g.map_index(g.gibbs_log_posterior(log_prior, e, lam))) == 0
        wins += map_ok * np.sum(e_dagger == ed)
    p_map = wins / n
    bound = g.bounds.map_probability_lower_bound(eps, k)
    # Binomial standard error at n = 20000 is < 0.0036; 4 sigma margin.
    assert p_map >= bound - 4 * np.sqrt(bound * (1 - bound) / n)
    assert g.bounds.margin_condition(log_prior, np.array([0.0, kappa, kappa]), lam, 0)


# ----------------------------------------------------------------------------- Prop. 11
@given(prior_energy(n_min=2), lambdas(max_value=1e3), st.integers(0, 7))
def test_prop11_soft_floor(pe, lam, i):
    log_prior, e = pe
    i = i % len(e)
    post = np.asarray(g.gibbs_log_posterior(log_prior, e, lam))
    floor = float(g.bounds.soft_floor(log_prior[i], lam, e[i]))
    assert post[i] >= floor - 1e-9 * (1 + abs(floor))


def test_prop11_soft_floor_tight_when_others_have_zero_energy():
    # ratio floor / posterior = Z_R(lambda) = p0 e^{-lambda B} + (1 - p0) -> 1 as p0 -> 0.
    lp = np.log([1e-4, 1 - 1e-4])
    e = np.array([3.0, 0.0])
    lam = 0.01
    post = np.asarray(g.gibbs_log_posterior(lp, e, lam))
    floor = float(g.bounds.soft_floor(lp[0], lam, 3.0))
    assert np.exp(floor) / np.exp(post[0]) == pytest.approx(1.0, abs=TIGHT)


# ----------------------------------------------------------------------------- Prop. 13
@given(prior_energy(n_min=2), st.lists(lambdas(max_value=1e3), min_size=2, max_size=6))
def test_prop13_tradeoff_on_gibbs_family(pe, lams):
    log_prior, e = pe
    lams = np.sort(np.asarray(lams))
    f, gg = (np.asarray(a) for a in g.bounds.constraint_tradeoff(log_prior, e, lams))
    assert np.all(np.diff(gg) <= 1e-9 * (1 + np.abs(gg[:-1])))
    assert np.all(np.diff(f) >= -1e-9 * (1 + np.abs(f[:-1])))


@given(seeds, st.floats(0, 5), st.floats(0, 5))
def test_prop13_generic_finite_instance(seed, l1, l2):
    """Any finite family {(F, G)}: minimizers of F + lambda G trade F against G."""
    rng = np.random.default_rng(seed)
    f, gv = rng.normal(size=30), rng.exponential(size=30)
    lo, hi = sorted((l1, l2))
    i1, i2 = np.argmin(f + lo * gv), np.argmin(f + hi * gv)
    assert gv[i2] <= gv[i1] + 1e-12 and f[i2] >= f[i1] - 1e-12


# ----------------------------------------------------------------------------- Prop. 14
@given(prior_energy(n_min=2, n_max=8), lambdas(max_value=1e3))
def test_prop14_set_level_suppression(pe, lam):
    log_prior, e = pe
    n = len(e)
    order = np.argsort(e)
    s_set = np.zeros(n, bool)
    s_set[order[: n // 2 or 1]] = True
    b_set = ~s_set
    gap = e[b_set].min() - e[s_set].max() if b_set.any() else -np.inf
    event(f"energy gap premise holds: {gap > 0}")
    if gap <= 0:
        return
    post = np.asarray(g.gibbs_log_posterior(log_prior, e, lam))
    lhs = float(g._numerics.logsumexp(post[b_set]) - g._numerics.logsumexp(post[s_set]))
    rhs = float(g.bounds.suppression_log_ratio_bound(log_prior, b_set, s_set, lam, gap))
    assert lhs <= rhs + 1e-9 * (1 + abs(rhs))


def test_prop14_tight_for_single_level_sets():
    lp = np.log([0.1, 0.2, 0.3, 0.4])
    e = np.array([0.0, 0.0, 1.5, 1.5])
    b, s = np.array([0, 0, 1, 1], bool), np.array([1, 1, 0, 0], bool)
    post = np.asarray(g.gibbs_log_posterior(lp, e, 2.0))
    lhs = float(g._numerics.logsumexp(post[b]) - g._numerics.logsumexp(post[s]))
    assert lhs == pytest.approx(
        float(g.bounds.suppression_log_ratio_bound(lp, b, s, 2.0, 1.5)), rel=1e-12
    )


# ----------------------------------------------------------------------------- Prop. 15
@given(log_simplex(n_min=2), binary_partitions(8), seeds)
def test_prop15_amplification(log_prior, mask, seed):
    n = len(log_prior)
    feasible = mask[:n].copy()
    feasible[0] = True
    rng = np.random.default_rng(seed)
    correct = feasible & (rng.random(n) < 0.7)
    p_plus, p_hard = (float(v) for v in g.bounds.amplification(log_prior, feasible, correct))
    assert p_hard >= p_plus - 1e-12
    removed = _p(log_prior)[~feasible].sum()
    event(f"strict amplification premise: {removed > 1e-9 and p_plus > 0}")
    if removed > 1e-9 and p_plus > 0:
        assert p_hard > p_plus
    if not feasible.all():  # a correct candidate outside F_R violates the premise
        with pytest.raises(ValueError, match="Gamma"):
            g.bounds.amplification(log_prior, feasible, ~feasible)


# ----------------------------------------------------------------------------- Prop. 12
def test_prop12_hoeffding_simulation():
    rng = np.random.default_rng(12)
    lam, bound, trials = 1.0, 1.0, 4000
    prior_cost = np.array([0.0, 0.1, 0.2, 0.0])
    mean_e = np.array([0.2, 0.6, 0.7, 0.65])  # candidate 0 is the correct one (Gamma+ = {0})
    s_bar = prior_cost + lam * mean_e
    gamma = s_bar[1:].min() - s_bar[0]
    for m in (5, 20, 60):
        draws = rng.binomial(1, mean_e, size=(trials, m, 4)).mean(axis=1)  # energies in {0, B}
        s_hat = prior_cost + lam * draws
        fail = np.mean(np.argmin(s_hat, axis=1) != 0)
        b = g.bounds.hoeffding_failure_bound(m, gamma, lam, bound, 4)
        assert fail <= min(b, 1.0) + 3 * np.sqrt(0.25 / trials)


def test_prop12_sample_size_symbolic_inversion():
    m, gam, lam, b, n, delta = sp.symbols("m gamma lambda B n delta", positive=True)
    tail = 2 * n * sp.exp(-m * gam**2 / (2 * lam**2 * b**2))
    m_star = sp.solve(sp.Eq(tail, delta), m)[0]
    assert sp.simplify(m_star - 2 * lam**2 * b**2 / gam**2 * sp.log(2 * n / delta)) == 0
    need = g.bounds.hoeffding_sample_size(0.1, 1.0, 1.0, 10, 0.05)
    assert g.bounds.hoeffding_failure_bound(need, 0.1, 1.0, 1.0, 10) <= 0.05
    assert g.bounds.hoeffding_failure_bound(need - 1, 0.1, 1.0, 1.0, 10) > 0.05


# ----------------------------------------------------------------------------- batch axes
def _batch(seed, n_rows=3, n=5):
    """Rows of log-priors (with zero-prior entries) and energies (with ties and +inf); a
    per-row strength. Row 0 keeps every candidate feasible at eps = 2."""
    rng = np.random.default_rng(seed)
    lp, e = prior_energy_rows(rng, n_rows, n)
    e[1:, -1] = np.inf
    e[:, 0] = 0.0
    q = rng.dirichlet(np.ones(n), n_rows)
    return lp, e, np.log(q), rng.uniform(0.1, 3.0, n_rows)


POSTERIOR_BATCHED = {
    "log_partition": lambda lp, e, lq, lam: (lp, e, lam),
    "gibbs_log_posterior": lambda lp, e, lq, lam: (lp, e, lam),
    "hard_log_posterior": lambda lp, e, lq, lam: (lp, e, 1.0),
    "kl_divergence": lambda lp, e, lq, lam: (lq, lp),
    "expected_energy": lambda lp, e, lq, lam: (lq, e),
    "kl_objective": lambda lp, e, lq, lam: (
        np.asarray(g.gibbs_log_posterior(lp, e, 0.5)),
        lp,
        e,
        lam,
    ),
    "kl_objective_decomposition": lambda lp, e, lq, lam: (
        np.asarray(g.gibbs_log_posterior(lp, e, 0.5)),
        lp,
        e,
        lam,
    ),  # fmt: skip
    "log_odds": lambda lp, e, lq, lam: (lp, e, lam, 0, 1),
    "map_index": lambda lp, e, lq, lam: (lq,),
    "tv_distance": lambda lp, e, lq, lam: (lq, lp),
    "log_normalize": lambda lp, e, lq, lam: (lq + 3.0,),
}


def test_posterior_batch_parameters_follow_every_leading_axis():
    """A [2, 3, 5] batch with a [2, 3] lambda / eps: each row is its own problem; a NaN eps
    and a row with no feasible mass are errors even when other rows are fine."""
    lp, e, _, lam = _batch(5, n_rows=6)
    lp, e, lam = lp.reshape(2, 3, 5), e.reshape(2, 3, 5), lam.reshape(2, 3)
    eps = np.full((2, 3), 1.0)
    z = np.asarray(g.log_partition(lp, e, lam))
    post = np.asarray(g.gibbs_log_posterior(lp, e, lam))
    np.testing.assert_allclose(
        post[1, 2], np.asarray(g.gibbs_log_posterior(lp[1, 2], e[1, 2], lam[1, 2])), **F64
    )
    hard = np.asarray(g.hard_log_posterior(lp, e, eps))
    feas = np.asarray(g.hard_feasible(e, eps))
    assert z.shape == (2, 3) and hard.shape == feas.shape == (2, 3, 5)
    for i, j in np.ndindex(2, 3):
        np.testing.assert_allclose(
            z[i, j], np.asarray(g.log_partition(lp[i, j], e[i, j], lam[i, j])), **F64
        )
    with pytest.raises(ValueError, match="eps contains NaN"):
        g.hard_log_posterior(lp[0, 0], e[0, 0], np.nan)
    # under jit the eager checks step aside and the result is the same
    np.testing.assert_allclose(np.asarray(jax.jit(g.hard_log_posterior)(lp, e, eps)), hard, **F64)
    np.testing.assert_allclose(
        np.asarray(jax.jit(g.log_normalize)(lp)), np.asarray(g.log_normalize(lp)), **F64
    )
    e_bad = e.copy()
    e_bad[1, 2] = np.inf  # one row with no feasible candidate (and Z = 0)
    with pytest.raises(ValueError, match="Z_R"):
        g.gibbs_log_posterior(lp, e_bad, lam)
    with pytest.raises(ValueError, match="zero prior mass"):
        g.hard_log_posterior(lp, e_bad, eps)


@pytest.mark.parametrize("name", sorted(POSTERIOR_BATCHED))
@given(seeds)
def test_posterior_functions_treat_leading_axes_as_batch_axes(name, seed):
    """Each row of a batch (with a per-row lambda) gives what that row gives alone."""
    lp, e, lq, lam = _batch(seed)
    args = POSTERIOR_BATCHED[name](lp, e, lq, lam)
    f = getattr(g, name)
    whole = np.asarray(f(*args))
    assert whole.shape[0] == lp.shape[0]
    for i in range(lp.shape[0]):
        row = f(*(a[i] if np.ndim(a) >= 1 and np.shape(a)[0] == lp.shape[0] else a for a in args))
        np.testing.assert_allclose(whole[i], np.asarray(row), **F64)


def test_eq1_log_normalize_contract():
    """Rows of logits become log-priors; a scalar, NaN, +inf, or a row with no mass is an error
    (even when the other rows are fine)."""
    lw = np.array([[0.0, np.log(3.0)], [-np.inf, 1.0]])
    np.testing.assert_allclose(
        np.exp(np.asarray(g.log_normalize(lw))), [[0.25, 0.75], [0.0, 1.0]], **F64
    )
    for bad in (np.array(1.0), np.array([0.0, np.nan]), np.array([0.0, np.inf]),
                np.array([[0.0, 1.0], [-np.inf, -np.inf]])):  # fmt: skip
        with pytest.raises(ValueError):
            g.log_normalize(bad)


def test_kl_and_expected_energy_conventions():
    """KL(P||Q) = +inf when P is not << Q; E_P[E] uses 0 * inf = 0 off the support of P."""
    assert float(g.kl_divergence(np.log([0.5, 0.5]), np.log([1.0, 1e-300]) - [0, np.inf])) == np.inf
    assert (
        float(g.expected_energy(np.log([1.0, 1e-300]) - [0, np.inf], np.array([2.0, np.inf])))
        == 2.0
    )
    assert float(g.expected_energy(np.log([0.5, 0.5]), np.array([2.0, np.inf]))) == np.inf
