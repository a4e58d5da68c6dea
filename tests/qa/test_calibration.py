"""The calibration of lambda (grounding.qa.calibration): through ``ground``, recovery, errors,
every outcome type."""

from __future__ import annotations

import numpy as np
import pytest
from _systems import four_systems

from grounding import GroundingConfig


def _synthetic_groundings(n_questions=600, lam=2.0, seed=0):
    """Questions of six one-hop claims each on one graph of uncertain edges (some answers
    without an edge: the slack kappa), grounded at ``lam``; each question's gold answer drawn
    from its posterior at ``lam``, so ``lam`` generated the labels."""
    from grounding import ClaimChain, GroundingProblem, TypedGraph, ground_batch, log_normalize

    rng = np.random.default_rng(seed)
    graph = TypedGraph.from_triples(
        [("t", "r", f"a{i}") for i in range(9)],
        reliability=rng.uniform(0.05, 1.0, 9),
        entities=["t"] + [f"a{i}" for i in range(12)],
    )
    problems = [
        GroundingProblem(
            f"q{i}",
            [ClaimChain(("t", f"a{j}"), ("r",)) for j in rng.choice(12, 6, replace=False)],
            log_normalize(rng.normal(size=6)),
        )
        for i in range(n_questions)
    ]
    config = GroundingConfig(lam=lam, kappa=2.0, n_paths=0)
    results = ground_batch(problems, graph, config)
    gold = [{r.answers[rng.choice(6, p=r.posterior() / r.posterior().sum())]} for r in results]
    return problems, graph, config, results, gold


def _gold_nll(results, gold):
    """Minus the mean log-probability of the gold answers under each result's posterior."""
    return -np.mean(
        [
            np.log(sum(p for a, p in zip(r.answers, r.posterior()) if a in s))
            for r, s in zip(results, gold)
        ]  # fmt: skip
    )


def test_fit_lambda_recovers_the_strength_that_generated_the_labels():
    """Labels drawn from the posterior at lambda = 2: the fit finds it roughly; the fitted
    lambda minimizes the gold answers' loss under ``ground``'s posterior (grounding again at
    lambda * 1.2 and lambda / 1.2 loses); and ``ground``'s posterior at the fitted lambda is
    Eq. (7) on the first grounding's energies at that lambda (the energies do not depend on
    lambda, which the calibration relies on)."""
    from _tol import F64

    from grounding import ground_batch
    from grounding.posterior import gibbs_log_posterior
    from grounding.qa import fit_lambda

    problems, graph, config, results, gold = _synthetic_groundings()
    lam = fit_lambda(results, gold)
    assert lam == pytest.approx(2.0, rel=0.25)
    at = {
        x: ground_batch(problems, graph, config.replace(lam=x)) for x in (lam, lam * 1.2, lam / 1.2)
    }
    best = _gold_nll(at[lam], gold)
    assert _gold_nll(at[lam * 1.2], gold) >= best and _gold_nll(at[lam / 1.2], gold) >= best
    for r0, r in zip(results, at[lam]):
        np.testing.assert_allclose(r.energy, r0.energy, **F64)
        want = gibbs_log_posterior(r0.log_prior, r0.energy, lam)  # Eq. (7)
        np.testing.assert_allclose(r.log_posterior, want, **F64)


def test_fit_lambda_refuses_what_it_cannot_calibrate_on():
    from grounding.qa import fit_lambda

    _, _, _, results, gold = _synthetic_groundings(n_questions=4)
    with pytest.raises(ValueError, match="4 outcomes but 3 gold answer sets"):
        fit_lambda(results, gold[:3])
    with pytest.raises(ValueError, match="no validation outcome has a gold answer"):
        fit_lambda(results, [{"nobody"}] * 4)
    with pytest.raises(ValueError, match="no validation outcome has a gold answer"):
        fit_lambda(results, [set()] * 4)
    with pytest.raises(ValueError, match="no grounding to calibrate on"):
        fit_lambda([None, None], [{"a0"}, {"a1"}])
    # outcomes without a grounding (None, or a failed question) are skipped
    assert fit_lambda([None, *results], [{"a0"}, *gold]) == fit_lambda(results, gold)


def test_fit_lambda_reads_every_outcome_type_through_its_groundings():
    """An outcome of each system calibrates as its grounding does; a supported gold answer
    (prize1, energy 0) asks for more grounding strength than the start (lambda = 1), an
    unsupported one (film1) for less."""
    from grounding.qa import Outcome, fit_lambda

    outs, _ = four_systems(GroundingConfig(lam=2.0, kappa=1.0))
    for name, out in outs.items():
        assert isinstance(out, Outcome), name
        [result] = out.groundings()
        lam = fit_lambda([out], [{"prize1"}], steps=50)
        assert lam == fit_lambda([result], [{"prize1"}], steps=50) and lam > 1.0, name
    every = list(outs.values())
    results = [o.groundings()[0] for o in every]
    lam = fit_lambda(every, [{"film1"}] * 4, steps=50)
    assert lam == fit_lambda(results, [{"film1"}] * 4, steps=50) and lam < 1.0
