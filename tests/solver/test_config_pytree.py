"""A `GroundingConfig` rebuilt through its pytree (`tree_map`, an optimizer step on
`jax.grad(loss)(config)`, `jit`, `vmap`) follows its own values: concrete values are checked
where the config meets `ground` (an error naming the field), the path rule is read from its
own `tau` (never the parent's), traced values out of range give a flagged, NaN-free result,
and a `tau` near 0 grounds as its limit `tau = 0` (Eq. (13) -> Eq. (11)), not as underflow."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from _tol import F32, F64
from hypothesis import given, note, settings
from hypothesis import strategies as st

import grounding as g
from grounding.qa.calibration import minimize

ABSTAIN = int(g.Action.ABSTAIN)


def _problem(kind="chain", max_hops=2):
    """Three candidates on a small graph; 'f' has no walk (some costs are +inf)."""
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "c"), ("a", "r", "d"), ("d", "s", "e"), ("a", "r", "x")],
        reliability=[0.9, 0.6, 0.5, 0.95, 0.7],
        entities=["a", "b", "c", "d", "e", "f", "x"],
    )
    prior = jnp.log(jnp.array([0.2, 0.3, 0.5]))
    if kind == "answer":
        return g.GroundingProblem(
            "q", ["c", "e", "f"], prior, anchors=("a",), max_hops=max_hops
        ), graph
    chains = [g.ClaimChain(("a", None, t), ("r", "s")) for t in ("c", "e", "f")]
    return g.GroundingProblem("q", chains, prior), graph


BASE = dict(lam=2.0, kappa=1.5, n_paths=0)


def _step(cfg, lr=0.5, **target):
    """One plain gradient step ``p - lr * g`` (as an optimizer takes it) whose gradient, a
    config from ``jax.grad``, moves the named fields of ``cfg`` to ``target``: the gradient
    holds ``(p - t) / lr``, negative where a setting grows (a gradient is a direction, not
    settings, so it must be constructible)."""
    start = {k: float(getattr(cfg, k)) for k in target}

    def linear(c):
        return sum((start[k] - t) / lr * getattr(c, k) for k, t in target.items())

    grads = jax.grad(linear)(cfg)
    assert isinstance(grads, g.GroundingConfig)
    return jax.tree_util.tree_map(lambda p, d: p - lr * d, cfg, grads)


def _same(a, b, tol=F64):
    np.testing.assert_allclose(a.raw_energy, b.raw_energy, **tol)
    np.testing.assert_allclose(a.log_posterior, b.log_posterior, **tol)
    np.testing.assert_array_equal(a.status, b.status)


@pytest.mark.parametrize(
    "start, target, words",
    [
        ({}, dict(lam=-2.8), "lam must be >= 0"),
        ({}, dict(kappa=-6.0), "kappa must be > 0"),
        ({}, dict(lam=-2.8, kappa=-6.0), "lam must be >= 0"),
        (dict(tau=0.5), dict(tau=-0.5), "tau must be >= 0"),
        ({}, dict(lam=float("nan")), "lam contains NaN"),
        (dict(theta=0.5), dict(theta=1.5), "theta must lie in"),
        ({}, dict(alpha=-1.0), "alpha must be >= 0"),
    ],
)
def test_a_step_out_of_range_is_an_error_at_ground(start, target, words):
    """A concrete config rebuilt by ``tree_map`` with values out of range is refused where it
    meets the solver (``ground`` and ``ground_batch``), naming the field: it does not ground
    at the prior."""
    problem, graph = _problem()
    bad = _step(g.GroundingConfig(**BASE, **start), **target)
    for f in (g.ground, lambda p, s, c: g.ground_batch([p], s, c)):
        with pytest.raises(ValueError, match=words):
            f(problem, graph, bad)
    with pytest.raises(ValueError, match=words):  # keyword settings beside it: checked too
        g.ground(problem, graph, bad, n_paths=1)


@pytest.mark.parametrize("kind", ["chain", "answer"])
@pytest.mark.parametrize("tau0, tau1", [(0.0, 0.5), (0.5, 0.0), (0.0, 1e-3), (1e-3, 1e-320)])
def test_a_step_across_tau_zero_follows_the_new_tau(kind, tau0, tau1):
    """An optimizer-like step from ``tau0`` to ``tau1`` grounds exactly as a config built at
    ``tau1``: the path rule is the new ``tau``'s (Eq. (11) at 0, Eq. (13) above), never the
    parent's."""
    problem, graph = _problem(kind)
    moved = _step(g.GroundingConfig(**BASE, tau=tau0), tau=tau1)
    fresh = g.GroundingConfig(**BASE, tau=float(moved.tau))
    assert moved.tropical is fresh.tropical is (tau1 < 1e-300)  # 1e-320: subnormal, as 0
    _same(g.ground(problem, graph, moved), g.ground(problem, graph, fresh))
    [batched] = g.ground_batch([problem], graph, moved)
    _same(batched, g.ground(problem, graph, fresh))


def test_configs_of_every_tau_share_one_tree_structure_and_optax_steps_them():
    """The path rule is no static data: configs at ``tau = 0`` and ``tau > 0`` have one tree
    structure, so ``tree_map`` combines them and an optax state built at ``tau = 0`` steps
    the parameters once ``tau`` has left 0 (with the rule in the static data it would not fit
    them); each step grounds as a config built from its values."""
    problem, graph = _problem()
    c0, c5 = g.GroundingConfig(**BASE), g.GroundingConfig(**BASE, tau=0.5)
    assert jax.tree_util.tree_structure(c0) == jax.tree_util.tree_structure(c5)
    mixed = jax.tree_util.tree_map(lambda a, b: b, c0, c5)
    _same(g.ground(problem, graph, mixed), g.ground(problem, graph, c5))
    opt = optax.sgd(0.1)
    params, state = c0, opt.init(c0)
    for want_tau in (0.2, 0.4):
        grads = jax.grad(lambda c: -2.0 * c.tau)(params)  # pushes tau up by 0.2 a step
        updates, state = opt.update(grads, state)
        params = optax.apply_updates(params, updates)
        assert float(params.tau) == pytest.approx(want_tau) and params.tropical is False
        fresh = g.GroundingConfig(**BASE, tau=float(params.tau))
        _same(g.ground(problem, graph, params), g.ground(problem, graph, fresh))


@pytest.mark.parametrize("kind", ["chain", "answer"])
@pytest.mark.parametrize("tau", [np.float32(1e-39), np.float32(1e-45), 1e-310], ids=str)
def test_a_tau_near_zero_grounds_as_tau_zero(kind, tau):
    """A ``tau`` that underflows (subnormal float32 and float64) grounds as its limit
    ``tau = 0`` (Eq. (11)), path report included, in 64-bit mode (a float32 ``tau`` is
    widened to the float width of the program)."""
    problem, graph = _problem(kind)
    zero = g.ground(problem, graph, lam=2.0, kappa=1.5, tau=0.0, n_paths=2)
    tiny = g.ground(problem, graph, lam=2.0, kappa=1.5, tau=tau, n_paths=2)
    _same(tiny, zero)
    np.testing.assert_allclose(tiny.paths.weight, zero.paths.weight, **F64)
    assert tiny.triples == zero.triples


@pytest.mark.parametrize("kind", ["chain", "answer"])
@pytest.mark.parametrize("tau", [np.float32(1e-39), 1e-39, np.float32(1e-20)], ids=str)
def test_a_tau_near_zero_grounds_as_tau_zero_in_float32(kind, tau):
    """The same in a float32 process: ``1e-39`` is subnormal there (flushed to 0 on some
    devices), ``1e-20`` lies below the floor; both ground as ``tau = 0``."""
    problem, graph = _problem(kind)
    with jax.enable_x64(False):
        zero = g.ground(problem, graph, lam=2.0, kappa=1.5, tau=0.0, n_paths=2)
        tiny = g.ground(problem, graph, lam=2.0, kappa=1.5, tau=tau, n_paths=2)
        assert np.asarray(tiny.log_posterior).dtype == np.float32
    _same(tiny, zero, F32)
    np.testing.assert_allclose(tiny.paths.weight, zero.paths.weight, **F32)


@pytest.mark.parametrize("kind", ["chain", "answer"])
def test_a_vmapped_sweep_over_tau_grounds_each_row_by_its_own_tau(kind):
    """``vmap`` over a traced ``tau`` that holds ``0`` and a subnormal: those rows equal the
    best-walk result (they used to collapse to the prior: Eq. (13) evaluated at tau = 0),
    the others equal a config built at their ``tau``; the gradient in ``tau`` is finite on
    every row and equals the concrete one above the floor."""
    problem, graph = _problem(kind)
    cfg = g.GroundingConfig(**BASE, tau=0.5)
    taus = jnp.array([0.0, 1e-310, 1e-3, 0.5])

    def run(t):
        r = g.ground(problem, graph, cfg.replace(tau=t))
        return r.raw_energy, r.log_posterior, r.status

    raw, lp, status = jax.vmap(run)(taus)
    for i, t in enumerate([0.0, 0.0, 1e-3, 0.5]):
        want = g.ground(problem, graph, cfg.replace(tau=t))
        np.testing.assert_allclose(raw[i], want.raw_energy, **F64)
        np.testing.assert_allclose(lp[i], want.log_posterior, **F64)
        np.testing.assert_array_equal(status[i], want.status)

    def loss(t):
        return g.ground(problem, graph, cfg.replace(tau=t)).log_posterior[0]

    grads = jax.vmap(jax.grad(loss))(taus)
    assert np.all(np.isfinite(grads)), grads
    np.testing.assert_allclose(grads[:2], 0.0)  # Eq. (11) does not depend on tau
    np.testing.assert_allclose(grads[3], jax.grad(loss)(0.5), **F64)


@pytest.mark.parametrize("kind", ["chain", "answer"])
@pytest.mark.parametrize("tau", [0.0, 0.3])
def test_grad_with_respect_to_a_whole_config_is_finite_and_right(kind, tau):
    """``jax.grad`` of a loss through ``ground`` with respect to the config itself (every
    leaf traced, ``tau`` included: the rule chosen at run time) is a config of finite
    gradients equal to those with respect to each setting alone."""
    problem, graph = _problem(kind)
    cfg = g.GroundingConfig(**BASE, tau=tau)

    def loss(c):
        return g.ground(problem, graph, c).log_posterior[0]

    grads = jax.grad(loss)(cfg)
    leaves = jax.tree_util.tree_leaves(grads)
    assert leaves and all(np.all(np.isfinite(x)) for x in leaves)
    for name in ("lam", "kappa", "tau"):
        alone = jax.grad(lambda x, name=name: loss(cfg.replace(**{name: x})))(
            float(getattr(cfg, name))
        )
        np.testing.assert_allclose(getattr(grads, name), alone, **F64)
    assert abs(float(grads.lam)) > 1e-6
    np.testing.assert_allclose(jax.jit(loss)(cfg), loss(cfg), **F64)


@pytest.mark.parametrize(
    "start, target",
    [
        ({}, dict(lam=-2.8, kappa=-6.0)),
        (dict(tau=0.5), dict(tau=-0.5)),
        ({}, dict(lam=float("nan"))),
        ({}, dict(xi=float("inf"))),
        (dict(theta=0.2), dict(theta=1.5)),
    ],
)
def test_traced_settings_out_of_range_give_a_flagged_finite_result(start, target):
    """Inside ``jit`` nothing can raise: a traced setting out of range is read as 0 and the
    result is flagged (``certificate.valid`` False, action ABSTAIN), with no NaN in the
    result or in the gradient; the same config in range is not flagged."""
    problem, graph = _problem()
    good = g.GroundingConfig(**BASE, **start)
    bad = _step(good, **target)

    @jax.jit
    def run(c):
        r = g.ground(problem, graph, c)
        return r.log_posterior, r.energy, r.action, r.certificate.valid, r.certificate.tv_paper

    lp, energy, action, valid, tv = run(bad)
    assert not bool(valid) and int(action) == ABSTAIN and float(tv) == 1.0
    assert np.all(~np.isnan(lp)) and np.all(~np.isnan(energy))
    grads = jax.grad(lambda c: g.ground(problem, graph, c).log_posterior[1])(bad)
    assert all(np.all(np.isfinite(x)) for x in jax.tree_util.tree_leaves(grads))
    lp, _, action, valid, _ = run(good)
    want = g.ground(problem, graph, good)
    assert bool(valid) and int(action) == int(want.action)
    np.testing.assert_allclose(lp, want.log_posterior, **F64)


def test_answers_over_walks_of_any_length_flag_a_traced_positive_tau():
    """Walks of any length have the best-walk rule only: a concrete ``tau > 0`` is refused,
    a traced ``tau = 0`` grounds as the concrete one, a traced ``tau > 0`` is flagged."""
    problem, graph = _problem("answer", max_hops=None)
    cfg = g.GroundingConfig(**BASE)
    with pytest.raises(ValueError, match="need tau == 0"):
        g.ground(problem, graph, cfg.replace(tau=0.5))

    @jax.jit
    def run(c):
        r = g.ground(problem, graph, c)
        return r.log_posterior, r.certificate.valid, r.action

    lp, valid, _ = run(cfg)
    assert bool(valid)
    np.testing.assert_allclose(lp, g.ground(problem, graph, cfg).log_posterior, **F64)
    lp, valid, action = run(_step(cfg, tau=0.5))
    assert not bool(valid) and int(action) == ABSTAIN and np.all(~np.isnan(lp))


def test_jax_placeholders_and_axis_specs_rebuild_a_config_without_checks():
    """JAX rebuilds configs around placeholders (``object()``, ``None``, axis numbers): that
    never raises, and such a config has no path rule (``tropical`` None); a config of axis
    numbers serves as ``vmap``'s ``in_axes`` for a batch of strengths."""
    problem, graph = _problem()
    cfg = g.GroundingConfig(**BASE)
    leaves, treedef = jax.tree_util.tree_flatten(cfg)
    odd = jax.tree_util.tree_unflatten(treedef, [object()] * len(leaves))
    assert odd.tropical is None and odd.eps == "support"
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(cfg)]
    assert paths[:3] == [".lam", ".kappa", ".tau"]  # leaves are named by their field
    spec = jax.tree_util.tree_map_with_path(
        lambda p, _: 0 if jax.tree_util.keystr(p) == ".lam" else None, cfg
    )
    assert spec.tropical is None
    lams = jnp.array([0.5, 2.0, 4.0])
    batch = jax.tree_util.tree_map_with_path(
        lambda p, x: lams if jax.tree_util.keystr(p) == ".lam" else x, cfg
    )
    got = jax.vmap(lambda c: g.ground(problem, graph, c).log_posterior, in_axes=(spec,))(batch)
    for i, lam in enumerate(lams.tolist()):
        want = g.ground(problem, graph, cfg.replace(lam=lam)).log_posterior
        np.testing.assert_allclose(got[i], want, **F64)


def test_minimize_steps_a_config_and_only_its_trainable_fields():
    """The calibration's Adam loop takes a config: only the ``trainable`` fields move, the
    result is a config that grounds as one built from its values; an unknown trainable name
    is an error, not a silently frozen fit."""
    problem, graph = _problem()
    cfg = g.GroundingConfig(**BASE, tau=0.2)

    def nll(c):
        return -g.ground(problem, graph, c).log_posterior[1]

    fitted = minimize(nll, cfg, steps=15, lr=0.05, trainable={"lam"})
    assert isinstance(fitted, g.GroundingConfig)
    assert float(fitted.lam) != 2.0 and float(fitted.kappa) == 1.5 and float(fitted.tau) == 0.2
    assert nll(fitted) < nll(cfg)
    fresh = g.GroundingConfig(**(BASE | dict(lam=float(fitted.lam))), tau=0.2)
    _same(g.ground(problem, graph, fitted), g.ground(problem, graph, fresh))
    with pytest.raises(ValueError, match="trainable names \\['lamda'\\]"):
        minimize(nll, cfg, steps=1, lr=0.05, trainable={"lamda"})


_TAUS = st.one_of(
    st.sampled_from([0.0, 1e-320, 1e-200, 1e-30]), st.floats(0.05, 2.0, allow_nan=False)
)


@settings(max_examples=25)
@given(
    parent_tau=_TAUS,
    tau=_TAUS,
    lam=st.floats(0.0, 8.0),
    kappa=st.floats(0.1, 4.0),
    kind=st.sampled_from(["chain", "answer"]),
)
def test_a_rebuilt_config_grounds_as_a_fresh_one(parent_tau, tau, lam, kappa, kind):
    """Property: from any valid parent, a ``tree_map`` step to any valid values grounds as the
    config built from those values, and reads the same path rule."""
    problem, graph = _problem(kind)
    parent = g.GroundingConfig(lam=1.0, kappa=1.0, tau=parent_tau, n_paths=0)
    moved = _step(parent, lam=lam, kappa=kappa, tau=tau)
    fresh = g.GroundingConfig(
        lam=float(moved.lam), kappa=float(moved.kappa), tau=float(moved.tau), n_paths=0
    )
    note(f"moved tau {float(moved.tau)!r}, rule {moved.tropical}")
    assert moved.tropical is fresh.tropical
    _same(g.ground(problem, graph, moved), g.ground(problem, graph, fresh))
