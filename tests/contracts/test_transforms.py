"""Transforms are part of the contract: every public numeric function of the core under
``jit`` (equals eager), ``vmap`` (equals a Python loop), ``grad`` (finite where
differentiable, including at ``+inf`` energies and extreme ``lambda``), and float32
agreement with float64 within ``_tol.F32``. Bad input gives a clear error naming the argument."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _tol import F32

import grounding as g

LP = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
E = np.array([0.5, 1.0, np.inf, 0.0])
EF = np.array([0.5, 1.0, 2.0, 0.0])
E2 = np.array([0.7, 0.9, 2.5, 0.1])


# Built on first use, not at import: collecting this module must not start JAX (mutation
# workers fork from a process that has only collected the tests). Concrete even when first
# used inside a traced function, so the cached value is never a tracer.
@functools.cache
def translation():
    with jax.ensure_compile_time_eval():
        return g.geometry.Translation(jnp.asarray([[1.0, 0.0, -1.0]]))


@functools.cache
def graph():
    with jax.ensure_compile_time_eval():
        return g.TypedGraph.from_triples([("a", "r", "b"), ("b", "r", "c")])


# name -> (function of arrays, example arrays, differentiable argument indices)
CASES = {
    "gibbs_log_posterior": (
        lambda lp, e, lam: g.gibbs_log_posterior(lp, e, lam),
        (LP, E, 2.0),
        (1, 2),
    ),
    "gibbs_log_posterior_extreme_lam": (
        lambda lp, e, lam: g.gibbs_log_posterior(lp, e, lam),
        (LP, E, 1e6),
        (1, 2),
    ),
    "gibbs_log_posterior_tiny_lam": (
        lambda lp, e, lam: g.gibbs_log_posterior(lp, e, lam),
        (LP, E, 1e-6),
        (1, 2),
    ),
    "hard_log_posterior": (lambda lp, e: g.hard_log_posterior(lp, e, 0.6), (LP, E), ()),
    "aggregate_paths": (
        lambda e, lw, tau: g.energy.aggregate_paths(e, lw, tau),
        (E, LP, 0.5),
        (0, 1, 2),
    ),
    "aggregate_paths_tau0": (lambda e, lw: g.energy.aggregate_paths(e, lw, 0.0), (E, LP), (0,)),
    "path_posterior": (
        lambda e, lw, tau: g.energy.path_posterior(e, lw, tau),
        (E, LP, 0.5),
        (0, 2),
    ),
    "slack_energy": (lambda e, k: g.energy.slack_energy(e, k), (E, 1.5), (0, 1)),
    "tv_distance": (lambda a, b: g.tv_distance(a, b), (LP, LP[::-1].copy()), (0, 1)),
    "tv_bound": (lambda lam, om: g.bounds.tv_bound(lam, om), (2.0, 0.7), (0, 1)),
    "tv_bound_sharp": (lambda lam, om: g.bounds.tv_bound_sharp(lam, om), (2.0, 0.7), (0, 1)),
    "kl_objective": (
        lambda p, lp, e, lam: g.kl_objective(p, lp, e, lam),
        (LP[::-1].copy(), LP, EF, 2.0),
        (0, 2, 3),
    ),
    "kl_divergence": (lambda p, q: g.kl_divergence(p, q), (LP[::-1].copy(), LP), (0, 1)),
    "log_partition": (lambda lp, e, lam: g.log_partition(lp, e, lam), (LP, E, 2.0), (1, 2)),
    "oscillation": (lambda a, b, lp: g.bounds.oscillation(a, b, lp), (EF, E2, LP), (0, 1)),
    "concentration_tv_bound": (
        lambda lp, e, lam: g.bounds.concentration_tv_bound(lp, e, lam),
        (LP, EF, 2.0),
        (2,),
    ),
    "typed_residual": (
        lambda u, v, w: g.geometry.typed_residual(u, v, 0, translation(), w),
        (np.zeros(3), np.array([1.0, 0.0, -1.0]), 0.5),
        (0, 1, 2),
    ),
    "entity_cost": (
        lambda psi, eta: g.geometry.entity_cost(psi, eta),
        (np.ones((3, 2)), np.ones((3, 2))),
        (0, 1),
    ),
    "path_energy": (lambda a, b, al: g.energy.path_energy(a, b, al), (EF, E2, 0.3), (0, 1, 2)),
    "aggregation_bounds": (
        lambda e, lw: g.energy.aggregation_bounds(e, lw, 0.5)[1],
        (EF, LP),
        (0, 1),
    ),
    "best_path_energy": (lambda e: g.energy.best_path_energy(e), (E,), (0,)),
    "expected_energy": (lambda lp, e: g.expected_energy(lp, e), (LP, EF), (0, 1)),
    "hard_limit_tv": (
        lambda lp, lm: g.bounds.hard_limit_tv(lp, np.array([1, 0, 1, 0], bool), lm),
        (LP, 3.0),
        (0, 1),
    ),
    "suppression_log_ratio_bound": (
        lambda lp, lam: g.bounds.suppression_log_ratio_bound(
            lp, np.array([1, 1, 0, 0], bool), np.array([0, 0, 1, 1], bool), lam, 0.5
        ),
        (LP, 2.0),
        (0, 1),
    ),
    "soft_floor": (
        lambda lp0, lam, b: g.bounds.soft_floor(lp0, lam, b),
        (-1.2, 2.0, 0.7),
        (0, 1, 2),
    ),
    "coverage_independent": (
        lambda c: g.bounds.coverage_independent(c),
        (np.array([0.9, 0.5, 0.7]),),
        (0,),
    ),
    "margin_condition": (
        lambda lp, e, lam: g.bounds.margin_condition(lp, e, lam, 3),
        (LP, EF, 2.0),
        (),
    ),
    "pairwise_ranking_condition": (
        lambda a, b, c, d, lam: g.bounds.pairwise_ranking_condition(a, b, c, d, lam),
        (-1.0, -0.5, 0.2, 0.9, 2.0),
        (),
    ),
    "status_energy": (lambda e, k: g.status_energy(e, np.array([0, 1, 2, 3]), k), (E, 1.5), (0, 1)),
    "classify_status": (
        lambda e: g.classify_status(
            e, np.array([0, 1, 0, 0], bool), np.array([1, 1, 1, 0], bool), 0.6
        ),
        (E,),
        (),
    ),
    "edge_residuals": (
        lambda emb, t: g.geometry.edge_residuals(graph(), emb, g.geometry.Translation(t[None])),
        (np.arange(9.0).reshape(3, 3) / 9, np.array([1.0, 0.0, -1.0])),
        (0, 1),
    ),
    "tv_bound_delta_sharp": (
        lambda lam, d: g.bounds.tv_bound_delta_sharp(lam, d),
        (2.0, 0.3),
        (0, 1),
    ),
    "log_ratio_bound": (lambda lam, om: g.bounds.log_ratio_bound(lam, om), (2.0, 0.7), (0, 1)),
    "variational_path_objective": (
        lambda nu, e, lw: g.energy.variational_path_objective(nu, e, lw, 0.5),
        (LP[::-1].copy(), EF, LP),
        (0, 1),
    ),
}


def _close(a, b, **tol):
    a, b = np.asarray(a), np.asarray(b)
    assert np.array_equal(np.isinf(a), np.isinf(b))
    fin = np.isfinite(a)
    np.testing.assert_allclose(a[fin], b[fin], **tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_equals_eager(name):
    fn, args, _ = CASES[name]
    _close(jax.jit(fn)(*args), fn(*args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_equals_loop(name):
    fn, args, _ = CASES[name]
    # three queries: the example, and copies whose scalar parameters are scaled (kept valid)
    batch = [
        tuple(np.asarray(a) * (c if np.ndim(a) == 0 else 1.0) for a in args)
        for c in (1.0, 0.5, 2.0)
    ]
    stacked = [np.stack([b[i] for b in batch]) for i in range(len(args))]
    out = jax.vmap(fn)(*stacked)
    for k, b in enumerate(batch):
        _close(np.asarray(out)[k], fn(*b), rtol=1e-12, atol=1e-12)


# hard_log_posterior, classify_status and the boolean conditions are piecewise constant in
# their inputs: they have no gradient to test.
@pytest.mark.parametrize("name", sorted(k for k, v in CASES.items() if v[2]))
def test_grad_finite(name):
    fn, args, diff = CASES[name]
    scalar = lambda *a: jnp.sum(jnp.where(jnp.isfinite(fn(*a)), fn(*a), 0.0))  # noqa: E731
    grads = jax.grad(scalar, argnums=diff)(*[jnp.asarray(a, dtype=jnp.float64) for a in args])
    for gr in grads:
        assert np.all(np.isfinite(np.asarray(gr))), (name, gr)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_agrees_with_float64(name):
    fn, args, _ = CASES[name]
    out64 = fn(*[jnp.asarray(a, dtype=jnp.float64) for a in args])
    out32 = fn(*[jnp.asarray(np.asarray(a, dtype=np.float32)) for a in args])
    if jnp.issubdtype(jnp.asarray(out32).dtype, jnp.floating):  # codes and flags stay integral
        assert np.asarray(out32).dtype == np.float32 or np.ndim(out32) == 0
    a64, a32 = np.asarray(out64), np.asarray(out32, dtype=np.float64)
    assert np.array_equal(np.isinf(a64), np.isinf(a32))
    fin = np.isfinite(a64)
    scale = np.maximum(np.abs(a64[fin]), 1.0)  # relative to the value, absolute near zero
    np.testing.assert_allclose(a32[fin] / scale, a64[fin] / scale, **F32)


def test_vmap_over_a_batch_of_queries_matches_leading_axis_broadcast():
    lps = np.log(np.random.default_rng(0).dirichlet(np.ones(5), size=4))
    es = np.random.default_rng(1).exponential(size=(4, 5))
    lams = np.array([0.0, 0.5, 3.0, 1e6])
    batched = g.gibbs_log_posterior(lps, es, lams)
    vm = jax.vmap(g.gibbs_log_posterior)(lps, es, lams)
    np.testing.assert_allclose(np.asarray(batched), np.asarray(vm), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- bad input
BAD = [
    (lambda: g.gibbs_log_posterior(LP, E[:3], 1.0), ValueError, "differ"),
    (
        lambda: g.gibbs_log_posterior(np.zeros((3, 1)), E, 1.0),
        ValueError,
        "differ",
    ),  # [3, 1] vs [4]
    (lambda: g.gibbs_log_posterior(LP, E, np.ones(3)), ValueError, "lam must be a scalar"),
    (lambda: g.log_partition(LP, E, np.ones(3)), ValueError, "lam must be a scalar"),
    (lambda: g.hard_log_posterior(LP, E, np.ones(2)), ValueError, "eps must be a scalar"),
    (lambda: g.energy.aggregate_paths(E, LP, np.ones(2)), ValueError, "tau must be a scalar"),
    (
        lambda: g.gibbs_log_posterior(np.log([0.5, 0.6]), [0.0, 1.0], 1.0),
        ValueError,
        "log_prior.*normalize",
    ),
    (
        lambda: g.gibbs_log_posterior([np.nan, 0.0], [0.0, 1.0], 1.0),
        ValueError,
        "log_prior contains NaN",
    ),
    (
        lambda: g.gibbs_log_posterior(LP, [0.0, np.nan, 1.0, 2.0], 1.0),
        ValueError,
        "energy contains NaN",
    ),
    (
        lambda: g.gibbs_log_posterior(LP, [0.0, -np.inf, 1.0, 2.0], 1.0),
        ValueError,
        "energy contains -inf",
    ),
    (lambda: g.gibbs_log_posterior(LP, E, -1.0), ValueError, "lam must be >= 0"),
    (
        lambda: g.gibbs_log_posterior(np.zeros((0,)), np.zeros((0,)), 1.0),
        ValueError,
        "empty candidate",
    ),
    (lambda: g.gibbs_log_posterior(LP, np.full(4, np.inf), 1.0), ValueError, "Z_R"),
    (lambda: g.gibbs_log_posterior("abc", E, 1.0), TypeError, "log_prior"),
    (lambda: g.hard_log_posterior(LP, np.full(4, 5.0), 1.0), ValueError, "zero prior mass"),
    (lambda: g.energy.aggregate_paths(E, LP, -0.1), ValueError, "tau must be >= 0"),
    (
        lambda: g.energy.aggregate_paths(E, np.log([0.5, 0.5, 0.5, 0.5]), 0.1),
        ValueError,
        "log_path_prior",
    ),
    (lambda: g.energy.slack_energy(E, -1.0), ValueError, "kappa must be > 0"),
    (lambda: g.energy.slack_energy(E, 0.0), ValueError, "kappa must be > 0"),
    (
        lambda: g.geometry.typed_residual(np.zeros(3), np.ones(3), 0, translation(), 1.5),
        ValueError,
        "reliability must lie in",
    ),
    (
        lambda: g.geometry.typed_residual(np.zeros(3), np.ones(3), 0, translation(), 0.0),
        ValueError,
        "reliability must lie in",
    ),
    (
        lambda: g.geometry.typed_residual(np.zeros(3), np.ones(2), 0, translation()),
        ValueError,
        "eta_u and eta_v",
    ),
    (lambda: g.TypedGraph.from_triples([("a", "r", "b")], [1.2]), ValueError, "reliability"),
    (lambda: g.TypedGraph.from_triples([("a", "r")]), ValueError, "triples\\[0\\]"),
    (
        lambda: g.TypedGraph.from_triples([("a", "r", "b")], [0.5, 0.5]),
        ValueError,
        "one value per triple",
    ),
    (lambda: g.tv_distance(LP, np.log([0.5, 0.5])), ValueError, "differ"),
    (
        lambda: g.EvidenceState(g.TypedGraph.from_triples([("a", "r", "b")]), coverage=1.5),
        ValueError,
        "coverage",
    ),
    (lambda: g.bounds.energy_perturbation_delta(1, 1, -0.1, 0, 0, 0, 1, 1), ValueError, "eps_ent"),
    (lambda: g.bounds.hoeffding_sample_size(0.1, 1.0, 1.0, 10, 1.5), ValueError, "delta"),
    # each names its argument (these used to surface as NumPy/JAX internals)
    (
        lambda: g.gibbs_log_posterior(LP[:2] - np.log(0.3), [[1.0], [1.0, 2.0]], 1.0),
        ValueError,
        "^energy must be a rectangular array",
    ),  # fmt: skip
    (lambda: g.energy.slack_energy([[1.0], [1.0, 2.0]], 1.0), ValueError, "^energy must be a rect"),
    (lambda: g.energy.support_region(E, "1.0"), TypeError, "^eps must be an array of numbers"),
    (lambda: g.hard_log_posterior(LP, E, "1.0"), TypeError, "^eps must be an array of numbers"),
    (lambda: g.hard_feasible(E, "1.0"), TypeError, "^eps must be an array of numbers"),
    (
        lambda: g.energy.slack_energy(E, np.ones(3)),
        ValueError,
        "^kappa must be a scalar or broadcast",
    ),
    (
        lambda: g.energy.support_region(E, np.ones((2, 4))),
        ValueError,
        "^eps must be a scalar or broad",
    ),
]


@pytest.mark.parametrize("call,exc,match", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_input_raises_clear_error(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_networkx_round_trip():
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "a"), ("a", "r", "b")], [1.0, 0.5, 0.25]
    )
    back = g.TypedGraph.from_networkx(graph.to_networkx())
    assert sorted(back.triples()) == sorted(graph.triples())
    assert sorted(np.asarray(back.reliability)) == sorted(np.asarray(graph.reliability))
