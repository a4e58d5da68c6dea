"""The grounding problem built from a real split KG (experiments._kg_problem), on Nations."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from experiments import _kg_problem as kp
from grounding.datasets import load_kg
from grounding.learn import TrainConfig, train


def test_build_candidates_prior_and_support_energies_on_nations():
    kg = load_kg("nations")
    cfg = TrainConfig(dim=8, epochs=2, eval_every=2, batch_size=512)
    main = train(kg, "transe", cfg, progress=False).model
    weak = train(kg, "transe", dataclasses.replace(cfg, seed=3), progress=False).model
    p = kp.build(kg, "test", main, weak, n_queries=15, k=5, hops=2, seed=0)
    G = {tuple(t) for t in kg.all_triples()}
    rows = np.arange(15)
    assert p.cand.shape == (15, 6)
    np.testing.assert_array_equal(p.cand[rows, p.correct], p.queries[:, 2])
    for (h, r, _), cands, c in zip(p.queries, p.cand, p.correct):
        assert len(set(cands.tolist())) == 6
        assert not any((h, r, x) in G for j, x in enumerate(cands) if j != c)  # truly wrong
    np.testing.assert_allclose(np.exp(p.log_prior).sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(p.claim >= 0) and np.all(p.support >= 0)
    # best-path support (Eq. (11), <= 2 hops) against a brute-force min over 1- and 2-hop paths
    R = kg.train
    cost = np.asarray(main.energy(jnp.asarray(R)), np.float64)  # Eq. (8), w = 1
    n = kg.n_entities
    d1 = np.full((n, n), np.inf)
    np.minimum.at(d1, (R[:, 0], R[:, 2]), cost)
    d2 = np.min(d1[:, :, None] + d1[None, :, :], axis=1)
    best = np.minimum(d1, d2)
    np.testing.assert_allclose(p.support, best[p.queries[:, [0]], p.cand], rtol=1e-5)
    np.testing.assert_array_equal(p.adjacent, np.isfinite(d1)[p.queries[:, [0]], p.cand])
    np.testing.assert_array_equal(p.reach2, np.isfinite(best)[p.queries[:, [0]], p.cand])
    E = np.asarray(p.energy(0.5))
    np.testing.assert_allclose(E, p.claim + np.minimum(p.support, 0.5))


def test_posterior_by_the_solver_equals_eqs_19_and_7_and_fits_through_it():
    """``Problem.log_posterior`` is ``ground_batch``; it equals Eq. (7) on
    ``E_claim + min(S_R, kappa)`` (Eq. (19)) — the per-query composition the coverage-aware fit
    uses — and ``jax.grad`` through it matches finite differences."""
    import jax

    from grounding import gibbs_log_posterior
    from grounding.energy import slack_energy

    kg = load_kg("nations")
    cfg = TrainConfig(dim=8, epochs=2, eval_every=2, batch_size=512)
    main = train(kg, "transe", cfg, progress=False).model
    weak = train(kg, "transe", dataclasses.replace(cfg, seed=3), progress=False).model
    p = kp.build(kg, "valid", main, weak, n_queries=12, k=5, hops=2, seed=1)
    for lam, kappa in ((0.0, 1.0), (3.0, 0.3), (0.7, 5.0)):
        E = jnp.asarray(p.claim) + slack_energy(jnp.asarray(p.support), kappa)
        np.testing.assert_allclose(p.energy(kappa), E, rtol=1e-5, atol=1e-6)
        want = gibbs_log_posterior(jnp.asarray(p.log_prior), E, lam)
        np.testing.assert_allclose(p.log_posterior(lam, kappa), want, rtol=1e-5, atol=1e-5)

    def nll(lam):
        return -jnp.mean(p.log_posterior(lam, 0.8)[jnp.arange(12), p.correct])

    h = 1e-3
    fd = (nll(2.0 + h) - nll(2.0 - h)) / (2 * h)
    np.testing.assert_allclose(jax.grad(nll)(2.0), fd, rtol=1e-2, atol=1e-4)
