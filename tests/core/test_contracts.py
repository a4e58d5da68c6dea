"""The core's contract beyond the single-instance theorem checks: batch axes, the edges of
domains (zero and infinite strengths, boundary arguments), two-sided constants, zero-prior
candidates, input validation. Each test here was written against a mutant of
``grounding.bounds``, ``decision``, ``energy`` or ``worlds`` that the theorem tests let
through (see the mutation table in docs/theory.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _batches import prior_energy_rows
from _tol import F64
from hypothesis import given
from hypothesis import strategies as st

import grounding as g
from grounding.testing.strategies import lambdas, prior_energy, seeds


def _rows(seed):
    rng = np.random.default_rng(seed)
    return rng, *prior_energy_rows(rng)


BATCHED = {
    "oscillation": lambda rng, lp, e: (  # row 1 has an infinite energy on the support
        np.where(np.arange(3)[:, None] * 5 + np.arange(5) == 5, np.inf, e),
        np.maximum(e + rng.normal(0, 0.3, e.shape), 0),
        lp,
    ),
    "concentration_tv_bound": lambda rng, lp, e: (lp, e, 1.3),
    "hard_limit_tv": lambda rng, lp, e: (
        lp,
        (rng.random(e.shape) < 0.5) | (np.arange(5) == 0),
        0.7,
    ),
    "margin_condition": lambda rng, lp, e: (lp, e, 0.9, 0),
    "coverage_independent": lambda rng, lp, e: (np.exp(-e),),
    "suppression_log_ratio_bound": lambda rng, lp, e: (
        lp,
        np.arange(5) >= 3,
        np.arange(5) < 3,
        2.0,
        0.5,
    ),
    "amplification": lambda rng, lp, e: (lp, np.ones(e.shape, bool), np.arange(5) == 0),
}


@pytest.mark.parametrize("name", sorted(BATCHED))
@given(seeds)
def test_batched_bounds_equal_row_by_row(name, seed):
    """Leading axes are batch axes: a batch of rows gives each row's own value."""
    rng, lp, e = _rows(seed)
    args = BATCHED[name](rng, lp, e)
    f = getattr(g.bounds, name)
    whole = f(*args)
    whole = whole if isinstance(whole, tuple) else (whole,)
    for i in range(lp.shape[0]):
        row = f(*(a[i] if np.ndim(a) == 2 else a for a in args))
        for w, r in zip(whole, row if isinstance(row, tuple) else (row,)):
            assert np.shape(w) == (lp.shape[0],)
            np.testing.assert_allclose(np.asarray(w)[i], r, **F64)


@pytest.mark.parametrize(
    "bound",
    [
        g.bounds.tv_bound,
        g.bounds.tv_bound_sharp,
        g.bounds.tv_bound_delta,
        g.bounds.tv_bound_delta_sharp,
    ],
)
def test_thm3_bounds_at_zero_and_infinite_strength(bound):
    """lambda = inf with any movement: TV up to 1; no movement or lambda = 0: TV 0 (0*inf = 0)."""
    assert float(bound(np.inf, 1.0)) == 1.0
    assert float(bound(2.0, np.inf)) == 1.0
    assert float(bound(0.0, np.inf)) == 0.0
    assert float(bound(np.inf, 0.0)) == 0.0


@given(lambdas(max_value=1e2), st.floats(0.0, 10.0))
def test_thm3_uniform_perturbation_constants(lam, delta):
    """sup|dE| <= delta gives omega <= 2 delta: the paper's tanh(lam delta) and the sharp
    tanh(lam delta / 2), both pinned (two-sided) and related to the omega forms."""
    assert float(g.bounds.tv_bound_delta(lam, delta)) == pytest.approx(
        math.tanh(lam * delta), abs=1e-12
    )
    sharp = float(g.bounds.tv_bound_delta_sharp(lam, delta))
    assert sharp == pytest.approx(math.tanh(lam * delta / 2), abs=1e-12)
    assert sharp == pytest.approx(float(g.bounds.tv_bound_sharp(lam, 2 * delta)), abs=1e-12)
    assert float(g.bounds.tv_bound_delta(lam, delta)) == pytest.approx(
        float(g.bounds.tv_bound(lam, 2 * delta)), abs=1e-12
    )


def test_thm3_oscillation_with_an_infinite_energy_on_the_support_is_infinite():
    for e1, e2 in (([np.inf], [1.0]), ([1.0], [np.inf]), ([np.inf, 0.0], [1.0, 0.0])):
        assert (
            float(
                g.bounds.oscillation(
                    np.array(e1), np.array(e2), np.zeros(len(e1)) - np.log(len(e1))
                )
            )
            == np.inf
        )
    # off the support an infinite energy does not enter
    lp = np.log([1.0, 0.0 + 1e-300])
    lp[1] = -np.inf
    assert float(g.bounds.oscillation(np.array([1.0, np.inf]), np.array([0.5, 2.0]), lp)) == 0.0


@given(seeds, lambdas(max_value=50.0, zero=False))
def test_prop5_rate_is_attained_and_ignores_zero_prior_candidates(seed, lam):
    """Every non-minimizer at the same gap: TV(P_lambda, P0(.|M_R)) equals u/(1+u) exactly.
    Zero-prior candidates with lower energy than every supported one are not in M_R."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    p = rng.dirichlet(np.ones(n))
    p[-1] = 0.0  # a zero-prior candidate ...
    p /= p.sum()
    with np.errstate(divide="ignore"):
        lp = np.log(p)
    gap = float(rng.uniform(0.1, 2.0))
    in_m = np.arange(n) < int(rng.integers(1, n - 1))
    e = np.where(in_m, 1.0, 1.0 + gap)
    e[-1] = 0.0  # ... with the lowest energy of all
    log_post = np.asarray(g.gibbs_log_posterior(lp, e, lam))
    limit = np.where(in_m, p, 0.0) / p[in_m].sum()
    rate = float(g.bounds.concentration_tv_bound(lp, e, lam))
    assert rate == pytest.approx(0.5 * np.abs(np.exp(log_post) - limit).sum(), rel=1e-9, abs=1e-12)
    outside = np.logaddexp.reduce(log_post[~in_m])  # TV = P_lambda(M^c), in log-space
    assert rate == pytest.approx(np.exp(outside), rel=1e-9, abs=1e-300)


@given(prior_energy(n_min=2, zeros=True, allow_inf=True), lambdas(max_value=1e3), st.integers(0, 7))
def test_prop7_premise_is_the_strict_per_competitor_margin(pe, lam, target):
    """margin_condition checks lam (E_rho - E_dagger) > log P0(rho)/P0(dagger) for every
    positive-prior competitor, recomputed here (one-sided checks miss a wrong premise)."""
    log_prior, e = pe
    target = target % len(e)
    want = True
    for j in range(len(e)):
        if j == target or log_prior[j] == -np.inf:
            continue
        if np.isinf(e[j]) and np.isfinite(e[target]) and np.isfinite(log_prior[target]):
            continue  # a competitor with infinite energy has no mass at any lambda >= 0
        # (a zero-prior target never meets it: log P0(rho)/P0(dagger) = +inf)
        with np.errstate(invalid="ignore"):  # lam * (inf - inf) or 0 * inf: nan, not > anything
            want &= bool(lam * (e[j] - e[target]) > log_prior[j] - log_prior[target])
    assert bool(g.bounds.margin_condition(log_prior, e, lam, target)) == want


def test_prop7_premise_without_positive_prior_competitors_holds():
    """Zero-prior candidates are not competitors, whatever their energies (docstring)."""
    lp = np.array([0.0, -np.inf])
    for e in ([np.inf, 1.0], [1.0, 0.0], [2.0, np.inf]):
        assert bool(g.bounds.margin_condition(lp, np.array(e), 0.5, 0))


def test_prop7_ties_do_not_satisfy_the_strict_premise():
    lp = np.log([0.5, 0.5])
    assert not bool(g.bounds.margin_condition(lp, np.array([1.0, 1.0]), 2.0, 0))
    assert not bool(g.bounds.pairwise_ranking_condition(lp[0], lp[1], 1.0, 1.0, 2.0))
    assert bool(g.bounds.pairwise_ranking_condition(np.log(0.4), np.log(0.6), 0.0, 1.0, 2.0))
    assert not bool(g.bounds.pairwise_ranking_condition(np.log(0.4), np.log(0.6), 0.0, 0.1, 2.0))


def test_prop7_probability_floor_domain():
    assert g.bounds.map_probability_lower_bound(0.0, 3) == 1.0
    assert g.bounds.map_probability_lower_bound(1.0, 3) == 0.0
    assert g.bounds.map_probability_lower_bound(0.3, 0) == 1.0
    assert g.bounds.map_probability_lower_bound(0.5, 1) == 0.5
    for eps, k in ((-0.1, 1), (1.5, 1), (0.5, -1)):
        with pytest.raises(ValueError):
            g.bounds.map_probability_lower_bound(eps, k)


def test_prop12_eq27_with_non_unit_constants_and_its_domain():
    """Eq. (27) at lam = 2, B = 0.5, gamma = 0.25, |Gamma| = 3, m = 10 (computed by hand:
    2*3*exp(-10 * 0.0625 / (2 * 4 * 0.25)) = 6 exp(-0.3125)), and the sample size as the
    smallest m whose failure bound is at most delta."""
    assert g.bounds.hoeffding_failure_bound(10, 0.25, 2.0, 0.5, 3) == pytest.approx(
        6 * math.exp(-0.3125), rel=1e-12
    )
    for lam, bound, gamma, n, delta in ((2.0, 0.5, 0.25, 3, 0.1), (0.7, 3.0, 0.4, 5, 0.01)):
        m = g.bounds.hoeffding_sample_size(gamma, lam, bound, n, delta)
        assert g.bounds.hoeffding_failure_bound(m, gamma, lam, bound, n) <= delta
        assert m == 1 or g.bounds.hoeffding_failure_bound(m - 1, gamma, lam, bound, n) > delta
    assert g.bounds.hoeffding_sample_size(10.0, 0.1, 0.1, 2, 0.5) == 1  # at least one sample
    assert g.bounds.hoeffding_failure_bound(1, 1.0, 1.0, 1.0, 2) > 0  # m = 1, |Gamma| = 2 allowed
    for bad in ((0, 1.0, 1.0, 1.0, 2), (1, 0.0, 1.0, 1.0, 2), (1, 1.0, 0.0, 1.0, 2),
                (1, 1.0, 1.0, 0.0, 2), (1, 1.0, 1.0, 1.0, 1)):  # fmt: skip
        with pytest.raises(ValueError):
            g.bounds.hoeffding_failure_bound(*bad)
    assert g.bounds.hoeffding_sample_size(1.0, 1.0, 1.0, 2, 0.999) >= 1
    for bad in ((0.0, 1.0, 1.0, 2, 0.1), (1.0, 0.0, 1.0, 2, 0.1), (1.0, 1.0, 0.0, 2, 0.1),
                (1.0, 1.0, 1.0, 1, 0.1), (1.0, 1.0, 1.0, 2, 0.0), (1.0, 1.0, 1.0, 2, 1.0)):  # fmt: skip
        with pytest.raises(ValueError):
            g.bounds.hoeffding_sample_size(*bad)


def test_eq15_coverage_domain():
    assert g.bounds.coverage_any_path([], [0.5]) == 0.0
    assert g.bounds.coverage_any_path([[0]], [0.0]) == 0.0
    assert g.bounds.coverage_any_path([[0]], [1.0]) == 1.0
    for bad in ([-0.1], [1.1]):
        with pytest.raises(ValueError):
            g.bounds.coverage_any_path([[0]], bad)


def test_prop8_every_budget_is_checked():
    kw = dict(
        m_max=2, k_max=3, eps_ent=0.1, eps_rel=0.2, eps_w=0.3, eps_slack=0.4, alpha=0.5, xi=0.6
    )
    assert g.bounds.energy_perturbation_delta(**kw) == pytest.approx(
        2 * 0.1 + 0.5 * 3 * (0.2 + 0.6 * 0.3) + 0.4
    )
    assert (
        g.bounds.energy_perturbation_delta(**dict.fromkeys(kw, 0)) == 0.0
    )  # zero budgets are valid
    for key in kw:
        for bad in (-1.0, np.inf, np.nan):
            with pytest.raises(ValueError, match=f"^{key} must"):
                g.bounds.energy_perturbation_delta(**{**kw, key: bad})


def test_prop15_integer_masks_are_masks():
    """0/1 integer masks mean what boolean masks mean, including the premise check."""
    lp = np.log([0.2, 0.3, 0.5])
    a = g.bounds.amplification(lp, np.array([1, 1, 0]), np.array([1, 0, 0]))
    b = g.bounds.amplification(lp, np.array([True, True, False]), np.array([True, False, False]))
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), **F64)
    with pytest.raises(ValueError, match="Gamma"):
        g.bounds.amplification(lp, np.array([1, 0, 0]), np.array([0, 1, 0]))


# ----------------------------------------------------------------------------- decision
def test_sec33_counter_evidence_of_any_reliability_counts_by_default():
    graph = g.TypedGraph.from_triples([("giants", "won", "ws2014")], reliability=[0.5])
    state = g.EvidenceState(graph, functional={"won"})
    claim = ("giants", "won", "ws2010")
    assert g.classify_claim(state, claim, 3.0, 0.5) == g.EvidenceStatus.CONTRADICTED
    assert (
        g.classify_claim(state, claim, 3.0, 0.5, min_reliability=0.6)
        == g.EvidenceStatus.UNSUPPORTED
    )


@given(seeds, st.floats(0.0, 1.0))
def test_eq22_selective_rule_per_row(seed, theta):
    s = np.random.default_rng(seed).random((3, 4))
    emit, idx = (np.asarray(x) for x in g.selective_rule(s, theta))
    assert emit.shape == idx.shape == (3,)
    np.testing.assert_array_equal(emit, s.max(axis=1) >= theta)
    np.testing.assert_array_equal(idx, s.argmax(axis=1))


def test_prop9_isotonic_fit_by_hand():
    """Pool-adjacent-violators on worked examples: violators pooled, ties in the score kept
    in one block whatever their label order, steps read off between and beyond the scores."""
    cal = g.IsotonicCalibrator().fit([4.0, 1.0, 3.0, 2.0], [1, 1, 1, 0])  # sorted: 1 0 1 1
    np.testing.assert_allclose(cal.values_, [0.5, 1.0])
    np.testing.assert_allclose(cal.thresholds_, [1.0, 3.0])
    np.testing.assert_allclose(cal.predict([0.0, 1.0, 2.5, 3.0, 9.0]), [0.5, 0.5, 0.5, 1.0, 1.0])
    cal = g.IsotonicCalibrator().fit([1.0, 2.0, 3.0], [1, 0, 0])  # one block: all violate
    np.testing.assert_allclose(cal.values_, [1 / 3])
    cal = g.IsotonicCalibrator().fit([1.0, 2.0, 3.0], [0, 0, 1])  # equal neighbors pool
    np.testing.assert_allclose(cal.predict([1.0, 2.0, 3.0]), [0.0, 0.0, 1.0])
    cal = g.IsotonicCalibrator().fit([1.0, 2.0, 3.0, 4.0], [0, 1, 1, 0])  # 1 1 0 pools to 2/3
    np.testing.assert_allclose(cal.predict([1.0, 2.0, 3.0, 4.0]), [0.0, 2 / 3, 2 / 3, 2 / 3])
    for labels in ([1, 0, 1], [0, 1, 1]):  # a tied score is one level, whatever the order
        cal = g.IsotonicCalibrator().fit([1.0, 1.0, 2.0], labels)
        np.testing.assert_allclose(cal.predict([1.0, 2.0]), [0.5, 1.0])
    one = g.IsotonicCalibrator().fit([0.3], [1])  # a single observation is a valid fit
    np.testing.assert_allclose(one.predict([0.0, 1.0]), [1.0, 1.0])


def test_sec33_status_boundary_and_integer_flags():
    """E = eps_s is supported (Sec. 3.3 uses <=); 0/1 integer flags mean what booleans mean."""
    e = np.array([0.5, 0.5, 0.7, 0.2])
    want = [g.EvidenceStatus.SUPPORTED, g.EvidenceStatus.CONTRADICTED,
            g.EvidenceStatus.UNSUPPORTED, g.EvidenceStatus.OUT_OF_SCHEMA]  # fmt: skip
    for counter, schema in (
        ([0, 1, 0, 0], [1, 1, 1, 0]),
        ([False, True, False, False], [True, True, True, False]),
    ):
        got = np.asarray(g.classify_status(e, np.array(counter), np.array(schema), 0.5))
        np.testing.assert_array_equal(got, [int(s) for s in want])


@pytest.mark.parametrize(
    "scores, labels",
    [
        ([[0.1, 0.2]], [[0, 1]]),
        ([0.1, 0.2], [0, 1, 1]),
        ([], []),
        ([0.1, np.nan], [0, 1]),
        ([0.1, 0.2], [0, 2]),
    ],  # fmt: skip
)
def test_prop9_isotonic_rejects_bad_input(scores, labels):
    with pytest.raises(ValueError, match="1-D|NaN|0/1"):
        g.IsotonicCalibrator().fit(scores, labels)


def test_axiom8_decide_needs_one_candidate_set():
    for bad in (np.zeros((2, 2)), np.zeros(0)):
        with pytest.raises(ValueError, match="1-D"):
            g.decide(bad, np.zeros(bad.shape, int))


# ----------------------------------------------------------------------------- energy
def test_eq10_path_energy_batches_and_needs_a_term_axis():
    ent, rel = np.array([[0.5, 0.25], [1.0, 0.0]]), np.array([[1.0, 2.0], [0.5, 0.5]])
    np.testing.assert_allclose(np.asarray(g.energy.path_energy(ent, rel, 0.5)), [2.25, 1.5])
    for bad, name in (((0.5, [1.0]), "entity_costs"), (([0.5], 1.0), "relation_residuals")):
        with pytest.raises(ValueError, match=f"^{name} must have at least 1 dimension"):
            g.energy.path_energy(*bad, 0.5)


def test_eqs28_29_objectives_term_by_term():
    """Eq. (29): d^2/2 + lam E + mu Omega; Eq. (28): L + lam E + beta dist^2 + mu Omega, each
    at values where every term differs from its neighbors (d = 3: d^2 != d^3 != 2d)."""
    assert float(g.energy.revision_objective(3.0, 2.0, 4.0, 0.5, 0.25)) == 4.5 + 1.0 + 1.0
    assert float(g.energy.revision_objective(3.0, np.inf, 4.0, 0.0, 0.25)) == np.inf  # lam * inf
    assert (
        float(g.energy.unified_objective(1.0, 2.0, 3.0, 4.0, 0.5, 0.25, 0.125))
        == 1 + 1 + 2.25 + 0.5
    )


def test_def3_support_region_boundary_scalars_and_projection_under_jit():
    """E = eps is inside C_R(q; eps) (Eq. (12) uses <=); a scalar energy is a one-candidate
    region; under jit a non-empty region projects as eagerly (the emptiness check is eager)."""
    import jax

    assert bool(g.energy.support_region(1.0, 1.0)) and not bool(
        g.energy.support_region(1.0 + 1e-12, 1.0)
    )
    np.testing.assert_array_equal(
        np.asarray(g.energy.support_region([0.5, 1.0, 2.0], 1.0)), [1, 1, 0]
    )
    xs, energy = np.array([[0.0], [2.0], [5.0]]), np.array([3.0, 0.5, 0.2])

    def dist(a, b):
        return jax.numpy.abs(a - b).sum()

    eager = g.energy.projection(np.array([0.0]), xs, energy, 1.0, dist)
    jitted = jax.jit(lambda x0: g.energy.projection(x0, xs, energy, 1.0, dist))(np.array([0.0]))
    assert int(eager[0]) == int(jitted[0]) == 1 and float(eager[1]) == float(jitted[1]) == 4.0


# ----------------------------------------------------------------------------- worlds
def _star():
    return g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "c"), ("c", "r", "a"), ("a", "s", "a")],
        entities=["a", "b", "c", "d"],
    )


def test_failure_processes_at_the_extremes_and_their_shapes():
    from grounding import worlds

    w, rng = _star(), np.random.default_rng(0)
    for keep in (worlds.entity_dropout(w, 0.0, rng), worlds.relation_dropout(w, [0.0, 0.0], rng)):
        assert keep.shape == (w.n_edges,) and keep.dtype == bool and keep.all()
    for keep in (worlds.entity_dropout(w, 1.0, rng), worlds.relation_dropout(w, [1.0, 1.0], rng)):
        assert keep.shape == (w.n_edges,) and not keep.any()
    with pytest.raises(ValueError, match="one entry per relation"):
        worlds.relation_dropout(w, [0.5], rng)


def test_failure_processes_retain_edges_at_their_stated_rates():
    """Entity dropout keeps an edge iff both endpoints survive ((1-p)^2, or 1-p for a self-loop);
    relation dropout keeps all edges of a relation or none (1 - p_r, perfectly correlated)."""
    from grounding import worlds

    w, rng, n = _star(), np.random.default_rng(1), 4000
    keep = np.array([worlds.entity_dropout(w, 0.3, rng) for _ in range(n)])
    loop = np.asarray(w.head) == np.asarray(w.tail)
    want = np.where(loop, 0.7, 0.49)
    assert np.all(np.abs(keep.mean(axis=0) - want) < 4 * np.sqrt(0.25 / n))
    keep = np.array([worlds.relation_dropout(w, [0.2, 0.6], rng) for _ in range(n)])
    rel = np.asarray(w.relation)
    for r, p in enumerate((0.2, 0.6)):
        on = keep[:, rel == r]
        assert np.all(on == on[:, :1])  # a relation is kept whole or lost whole
        assert abs(on[:, 0].mean() - (1 - p)) < 4 * np.sqrt(0.25 / n)
    both = keep[:, rel == 0][:, 0] & keep[:, rel == 1][:, 0]  # relations fail independently
    assert abs(both.mean() - 0.8 * 0.4) < 4 * np.sqrt(0.25 / n)


def test_thm1_hard_rule_requirements_reads_truth_observation_and_decision():
    """The two requirements, checked on Thm. 1's two worlds for rules with known answers:
    accept-all keeps the true claim and fails to reject the false one, reject-all the reverse,
    and a claim the observation shows does not count against either."""
    from grounding import worlds

    observed = g.TypedGraph.from_triples([("a", "r", "b")], entities=["a", "b", "c", "d"])
    claim = ("c", "r", "d")
    w1, w2, obs = worlds.two_world_witness(observed, claim, "a")
    both = [w1, w2]
    assert worlds.hard_rule_requirements(lambda r, c: 1, both, obs, claim) == (True, False)
    assert worlds.hard_rule_requirements(lambda r, c: 0, both, obs, claim) == (False, True)
    shown = g.TypedGraph.from_triples([claim, ("a", "r", "b")])  # true and observed
    assert worlds.hard_rule_requirements(
        lambda r, c: 0, [shown], lambda w: g.EvidenceState(w), claim
    ) == (True, True)
    assert worlds.hard_rule_requirements(lambda r, c: 1, [w2], obs, claim) == (True, False)
    assert worlds.hard_rule_requirements(lambda r, c: 0, [w1], obs, claim) == (False, True)


def test_thm1_hiding_observation_keeps_coverage_and_handles_an_empty_world():
    from grounding import worlds

    obs = worlds.HidingObservation(frozenset({("a", "r")}), coverage=0.4)
    w = g.TypedGraph.from_triples([("a", "r", "b"), ("b", "r", "a")])
    state = obs(w)
    assert state.coverage == 0.4 and sorted(state.graph.triples()) == [("b", "r", "a")]
    empty = obs(g.TypedGraph.from_triples([], entities=["a"]))
    assert empty.graph.n_edges == 0


def test_axiom8_decision_rule_case_by_case():
    """decide_action's rule, one clause at a time (statuses: 0 supported, 1 unsupported,
    2 contradicted, 3 out of schema), with the boundaries of the margin and of theta."""
    A, S = g.Action, g.EvidenceStatus
    lp = np.log([0.6, 0.3, 0.1])
    ok = np.array([int(S.SUPPORTED)] * 3)

    def act(log_p, status, *args):
        return A(int(g.decide_action(log_p, status, *args)))

    assert act(lp, ok) == A.ANSWER  # defaults: margin 0 never VERIFYs, no theta
    for code, want in (
        (S.CONTRADICTED, A.ABSTAIN),
        (S.UNSUPPORTED, A.RETRIEVE),
        (S.OUT_OF_SCHEMA, A.RETRIEVE),
    ):
        assert act(lp, np.array([int(code), 0, 0])) == want  # the best candidate's status decides
        assert act(lp, np.array([0, int(code), int(code)])) == A.ANSWER  # others' do not
    gap = np.log(0.6) - np.log(0.3)  # the margin to the runner-up, not to the third
    assert act(lp, ok, gap + 1e-9) == A.VERIFY
    assert act(lp, ok, gap - 1e-9) == A.ANSWER
    assert act(lp, ok, gap) == A.ANSWER  # VERIFY only strictly below
    assert act(np.log([0.5, 0.5]), ok[:2], 1e-12) == A.VERIFY  # a tie has margin 0
    assert act(np.array([0.0]), ok[:1], 5.0) == A.ANSWER  # one candidate: no runner-up
    assert act(lp, ok, 0.0, 0.7) == A.ABSTAIN  # Eq. (22): mass of the best below theta
    assert act(lp, ok, 0.0, 0.6) == A.ANSWER  # not strictly below
    assert act(lp, ok, 0.0, 0.5) == A.ANSWER
    assert g.decide(lp, ok, 0.0, 0.7) == A.ABSTAIN  # decide passes theta and the margin on
    assert g.decide(lp, ok, gap + 1e-9) == A.VERIFY
    assert g.decide(lp, ok) == A.ANSWER


def test_status_energy_accepts_a_scalar_energy_and_infinite_penalties():
    S = g.EvidenceStatus
    assert float(g.status_energy(0.3, int(S.SUPPORTED), 1.0)) == 0.3
    assert float(g.status_energy(5.0, int(S.UNSUPPORTED), 1.0)) == 1.0
    assert float(g.status_energy(5.0, int(S.UNSUPPORTED), np.inf)) == 5.0  # kappa = inf: hard
    assert float(g.status_energy(5.0, int(S.CONTRADICTED), 1.0, 2.5)) == 3.5  # kappa + kappa_c
    assert float(g.status_energy(5.0, int(S.CONTRADICTED), 1.0, np.inf)) == np.inf
    for kappa, kc in ((0.0, None), (1.0, 0.0)):  # both must be > 0
        with pytest.raises(ValueError):
            g.status_energy(5.0, int(S.UNSUPPORTED), kappa, kc)


def test_eq15_monte_carlo_coverage_contract():
    """One sample is allowed; the estimate is a frequency (0 when the path never survives,
    1 when it always does) and is reproducible from its seed."""
    from grounding import worlds

    w = g.TypedGraph.from_triples([("a", "r", "b"), ("b", "r", "c")])
    path = [[("a", "r", "b"), ("b", "r", "c")]]
    keep_all = lambda world, rng: np.ones(world.n_edges, int)  # noqa: E731  (0/1 is a mask)
    drop_all = lambda world, rng: np.zeros(world.n_edges, bool)  # noqa: E731
    assert worlds.coverage_monte_carlo(w, path, keep_all, 1, 0) == (1.0, 0.0)
    assert worlds.coverage_monte_carlo(w, path, drop_all, 5, 0)[0] == 0.0
    half = lambda world, rng: worlds.independent_edge_retention(world, 0.5, rng)  # noqa: E731
    a = worlds.coverage_monte_carlo(w, path, half, 200, 7, lambda r: r.n_edges == 2)
    assert a == worlds.coverage_monte_carlo(w, path, half, 200, 7, lambda r: r.n_edges == 2)
    assert 0.1 < a[0] < 0.4 and a[1] == a[0]  # both edges kept: 1/4; the rule sees the same event
    with pytest.raises(ValueError):
        worlds.coverage_monte_carlo(w, path, keep_all, 0, 0)


def test_eq15_monte_carlo_integer_mask_reaches_the_rule_as_a_mask():
    """A process may return a 0/1 integer keep-mask; the optional hard rule must see the
    edges it keeps (a mask), not the edges whose indices are 0 and 1."""
    from grounding import worlds

    w = g.TypedGraph.from_triples([("a", "r", "b"), ("b", "r", "c"), ("c", "r", "d")])
    path = [[("a", "r", "b")]]
    seen = []

    def rule(sub):
        seen.append(sorted(sub.triples()))
        return True

    keep_ends = lambda world, rng: np.array([1, 0, 1])  # noqa: E731
    assert worlds.coverage_monte_carlo(w, path, keep_ends, 1, 0, rule) == (1.0, 1.0)
    assert seen == [[("a", "r", "b"), ("c", "r", "d")]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eq13_large_tau_stays_within_its_bounds_in_either_precision(dtype):
    """At large ``tau`` Eq. (13) tends to the prior mean of the energies; the log-sum-exp form
    lost every digit there (float32: 1.502, then -0.0, for bounds [1, 1.5])."""
    import jax

    e = np.asarray([1.0, 2.0], dtype)
    lw = np.log(np.asarray([0.5, 0.5], dtype))
    for tau in (1e3, 1e5, 1e8, 1e12, 1e30):
        agg = float(g.energy.aggregate_paths(e, lw, tau))
        lo, hi = (float(v) for v in g.energy.aggregation_bounds(e, lw, tau))
        assert lo <= agg <= hi
        # E_w exp(-e/tau) = exp(-1.5/tau) cosh(0.5/tau), and cosh(y) - 1 = 2 sinh(y/2)^2
        want = 1.5 - tau * np.log1p(2 * np.sinh(0.25 / tau) ** 2)
        np.testing.assert_allclose(agg, want, rtol=2 * np.finfo(dtype).eps)
        nu = np.asarray(jax.grad(lambda x, t=tau: g.energy.aggregate_paths(x, lw, t))(e))
        np.testing.assert_allclose(nu, np.exp(np.asarray(g.energy.path_posterior(e, lw, tau))),
                                   rtol=8 * np.finfo(dtype).eps)  # fmt: skip


def test_eq7_huge_lam_times_energy_does_not_empty_the_posterior_in_float32():
    """``lam * E`` above the float32 range used to make every numerator 0 ("Z_R = 0"); the
    posterior is all on the least energy (Eq. (7) is invariant to a shift of E)."""
    lp = np.log(np.asarray([0.25, 0.75], np.float32))
    for e in ([1e30, 2e30], [3.0, 1e30], [np.inf, 5e37]):
        lpost = np.asarray(g.gibbs_log_posterior(lp, np.asarray(e, np.float32), 1e10))
        want = np.where(np.asarray(e) == min(e), 0.0, -np.inf)
        np.testing.assert_array_equal(lpost, want)
    with pytest.raises(ValueError, match="Z_R"):
        g.gibbs_log_posterior(lp, np.asarray([np.inf, np.inf], np.float32), 1.0)


@pytest.mark.parametrize(
    ("dtype", "lam", "big"), [(np.float32, 1e10, 1e30), (np.float64, 1e300, 1e10)]
)
def test_eq7_is_shifted_per_row_by_the_least_energy_of_the_prior_support(dtype, lam, big):
    """The shift that keeps ``lam * E`` finite is taken per row and over the prior's support
    only: a zero-prior candidate far below it gets no mass (it used to give
    ``-inf - (-inf) = NaN`` and an all ``-inf`` row), and a row whose energies are all large
    is not shifted by another row's small ones."""
    lp = np.asarray([-np.inf, np.log(0.5), np.log(0.5)], dtype)
    e = np.asarray([0.0, big, big * (1 + 1e-6)], dtype)
    lpost = np.asarray(g.gibbs_log_posterior(lp, e, lam))
    assert lpost[0] == -np.inf and lpost[1] == 0.0  # the third: e^{-lam * 1e-6 * big} ~ 0
    np.testing.assert_array_equal(np.exp(lpost.astype(np.float64)), [0.0, 1.0, 0.0])
    lp2 = np.log(np.full((2, 2), 0.5, dtype))
    e2 = np.asarray([[0.0, 1.0], [big, big * (1 + 1e-6)]], dtype)
    lpost2 = np.asarray(g.gibbs_log_posterior(lp2, e2, lam)).astype(np.float64)
    np.testing.assert_array_equal(np.exp(lpost2), [[1.0, 0.0], [1.0, 0.0]])


def test_eq19_slack_on_scalars_and_without_slack():
    """A scalar energy is one candidate; ``kappa = inf`` is 'no slack' (Eq. (19) leaves the
    energies as they are, ``+inf`` included)."""
    assert (
        float(g.energy.slack_energy(3.0, 1.0)) == 1.0
        and float(g.energy.slack_energy(0.5, 1.0)) == 0.5
    )
    np.testing.assert_array_equal(
        np.asarray(g.energy.slack_energy([1.0, np.inf], np.inf)), [1.0, np.inf]
    )


def test_eq13_aggregation_bounds_per_row_of_a_batch():
    """Each row of a ``[batch, paths]`` input gets its own bounds (a row's minimum is not the
    batch's)."""
    e = np.array([[1.0, 3.0], [5.0, 4.0]])
    lw = np.log(np.array([[0.5, 0.5], [0.25, 0.75]]))
    lo, hi = (np.asarray(v) for v in g.energy.aggregation_bounds(e, lw, 2.0))
    for r in range(2):
        lo_r, hi_r = (float(v) for v in g.energy.aggregation_bounds(e[r], lw[r], 2.0))
        assert lo[r] == lo_r and hi[r] == hi_r
    np.testing.assert_allclose(lo, [1.0, 4.0])
    np.testing.assert_allclose(hi, [min(1 + 2 * np.log(2), 2.0), min(4 - 2 * np.log(0.75), 4.25)])


def test_eqs11_13_prop2_every_row_of_a_batch_is_its_own_family():
    """Eq. (11), Eq. (13) and nu* (Prop. 2) over ``[2, 3, P]`` path families with a per-row
    ``tau`` (zeros included): every row equals the row alone."""
    rng = np.random.default_rng(7)
    e = rng.uniform(0.0, 3.0, (2, 3, 4))
    e[0, 1, 2] = np.inf
    e[1, 2] = np.inf  # a row without any admissible path
    w = rng.uniform(0.1, 1.0, (2, 3, 4))
    w[1, 0, 0] = 0.0
    with np.errstate(divide="ignore"):
        lw = np.log(w / w.sum(-1, keepdims=True))
    tau = np.array([[0.0, 0.7, 5.0], [0.3, 0.0, 2.0]])
    agg = np.asarray(g.energy.aggregate_paths(e, lw, tau))
    post = np.asarray(g.energy.path_posterior(e, lw, tau))
    best = np.asarray(g.energy.best_path_energy(e))
    for i in np.ndindex(2, 3):
        assert agg[i] == float(g.energy.aggregate_paths(e[i], lw[i], tau[i]))
        np.testing.assert_array_equal(
            post[i], np.asarray(g.energy.path_posterior(e[i], lw[i], tau[i]))
        )
        assert best[i] == float(g.energy.best_path_energy(e[i]))
    assert agg[1, 2] == np.inf and best[1, 2] == np.inf


def test_prop2_tau_zero_limit_is_the_prior_on_the_least_energy_paths():
    e = np.array([1.0, 1.0, 2.0, np.inf])
    lw = np.log([0.1, 0.3, 0.2, 0.4])
    np.testing.assert_allclose(
        np.exp(np.asarray(g.energy.path_posterior(e, lw, 0.0))), [0.25, 0.75, 0, 0]
    )


def test_eq11_empty_path_axis_keeps_batch_shape_and_dtype():
    out = g.energy.best_path_energy(np.zeros((2, 0), np.float32))
    assert out.shape == (2,) and out.dtype == np.float32 and np.all(np.isinf(np.asarray(out)))


def test_eq13_small_tau_with_a_tiny_weight_on_the_best_path_is_exact():
    """Where the log of Eq. (13) is far below log(1/2) the log-sum-exp form is used: log1p
    there would cancel (1 + s with s ~ -1 + 1e-10)."""
    e, w, tau = np.array([0.0, 10.0]), np.array([1e-10, 1 - 1e-10]), 0.1
    want = -tau * np.log(w[0] + w[1] * np.exp(-e[1] / tau))  # exact in float64 here
    assert float(g.energy.aggregate_paths(e, np.log(w), tau)) == pytest.approx(want, rel=1e-12)
