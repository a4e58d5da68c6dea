r"""Calibration of the grounding strength :math:`\lambda` on a few labelled questions.

:func:`fit_lambda` maximizes the mean log-probability of the gold answers under the grounded
posterior of validation outcomes: for each grounding :func:`grounding.ground` computed, the
posterior at strength :math:`\lambda` is Eq. (7) on its energies,
:math:`\log p_\lambda(\rho) = \log p_\theta(\rho) - \lambda E_R(\rho) - \log Z_R(\lambda)`.
The energies do not depend on :math:`\lambda` (Eqs. (11), (13), (19)), so this is exactly the
posterior ``ground`` returns at that :math:`\lambda` (``tests`` check it), without grounding
again at every step; :math:`\log\lambda` is fitted by Adam (:func:`minimize`, the one
optimizer loop of the package's calibrations).

Use it with any system: answer a few labelled questions with a first :math:`\lambda` (any;
the fit does not depend on it), fit, and build the system with the fitted value::

    outcomes = qa.answer_batch(valid_questions)
    lam = fit_lambda(outcomes, [q.answers for q in valid_questions])
    qa = GroundedQA(model, retriever, config.replace(lam=lam))

References:
    Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eqs. (7),
    (19).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from grounding.posterior import gibbs_log_posterior
from grounding.result import GroundingResult

__all__ = ["fit_lambda", "gold_arrays", "minimize"]


def gold_arrays(
    groundings: Iterable[tuple[GroundingResult, Collection[str]]],
) -> dict[str, np.ndarray]:
    """``[Q, C]`` log-prior, energy and gold mask (the candidate's answer is a gold answer) of
    ``(result, gold answers)`` pairs, candidates padded with prior mass 0."""
    live = list(groundings)
    if not live:
        raise ValueError("no grounding to calibrate on (every outcome lacks a result)")
    C = max(len(r.names) for r, _ in live)
    lp = np.full((len(live), C), -np.inf)
    energy = np.zeros((len(live), C))
    gold = np.zeros((len(live), C), bool)
    for i, (r, answers) in enumerate(live):
        n = len(r.names)
        lp[i, :n] = np.asarray(r.log_prior)
        energy[i, :n] = np.asarray(r.energy)
        gold[i, :n] = [a in set(answers) for a in r.answers]
    return dict(log_prior=lp, energy=energy, gold=gold)


def fit_lambda(
    outcomes: Sequence[Any],
    gold: Sequence[Collection[str]],
    *,
    steps: int = 300,
    lr: float = 0.05,
) -> float:
    r"""The :math:`\lambda` that maximizes the mean log-probability of the gold answers among
    the candidates of validation outcomes (module docstring).

    Args:
        outcomes: outcomes of any system of :mod:`grounding.qa` (their
            ``groundings()``), or :class:`~grounding.GroundingResult` objects (``None``
            entries are skipped).
        gold: per outcome, its gold answer entities.
        steps, lr: Adam steps and learning rate on :math:`\log\lambda` (from
            :math:`\lambda = 1`).

    Returns:
        The fitted :math:`\lambda > 0`.

    Raises:
        ValueError: ``outcomes`` and ``gold`` of different lengths, or no grounding with a gold
            answer among its candidates.
    """
    if len(outcomes) != len(gold):
        raise ValueError(f"{len(outcomes)} outcomes but {len(gold)} gold answer sets")
    pairs = [(r, g) for o, g in zip(outcomes, gold) for r in _groundings(o)]
    a = gold_arrays(pairs)
    has_gold = a["gold"].any(axis=1)
    if not has_gold.any():
        raise ValueError("no validation outcome has a gold answer among its candidates")
    lp, energy, mask = (jnp.asarray(a[k][has_gold]) for k in ("log_prior", "energy", "gold"))

    def loss(log_lam):
        post = gibbs_log_posterior(lp, energy, jnp.exp(log_lam))  # Eq. (7)
        return -jnp.mean(jax.nn.logsumexp(jnp.where(mask, post, -jnp.inf), axis=1))

    return float(jnp.exp(minimize(loss, jnp.asarray(0.0), steps=steps, lr=lr)))


def _groundings(outcome: Any) -> tuple[GroundingResult, ...]:
    if outcome is None:
        return ()
    if isinstance(outcome, GroundingResult):
        return (outcome,)
    return tuple(outcome.groundings())


def minimize(
    loss: Callable[[Any], jax.Array],
    params: Any,
    *,
    steps: int,
    lr: float,
    trainable: Collection[str] | None = None,
) -> Any:
    """``params`` (an array, a dict of arrays, or a :class:`~grounding.GroundingConfig`) after
    ``steps`` Adam steps of rate ``lr`` on ``loss`` (its gradient compiled once); with
    ``trainable``, only those keys of a dict (fields of a config) move.

    A config is stepped as a pytree: each step's config follows its own values (its path
    rule is read from its ``tau``), and :func:`grounding.ground` checks them where the loss
    meets the solver, so a step that takes a setting out of its range is an error at the
    next concrete ``ground`` and a flagged result inside the compiled gradient (see
    :class:`~grounding.GroundingConfig`): fit positive settings through their logarithm, as
    :func:`fit_lambda` does.

    Raises:
        ValueError: ``trainable`` names an entry ``params`` lacks (or one that is ``None``).
    """
    if trainable is not None:
        names = {_top_name(path) for path, _ in jax.tree_util.tree_leaves_with_path(params)}
        unknown = set(trainable) - names
        if unknown:
            raise ValueError(
                f"trainable names {sorted(unknown)}, which params lack (they hold "
                f"{sorted(map(str, names))})"
            )
    opt = optax.adam(lr)
    state = opt.init(params)
    grad = jax.jit(jax.grad(loss))
    for _ in range(steps):
        g = grad(params)
        if trainable is not None:
            g = jax.tree_util.tree_map_with_path(
                lambda path, v: v if _top_name(path) in trainable else jnp.zeros_like(v), g
            )
        upd, state = opt.update(g, state)
        params = optax.apply_updates(params, upd)
    return params


def _top_name(path: tuple) -> Any:
    """The dict key or attribute name of a leaf's top-level entry (``None`` for a bare
    array)."""
    if not path:
        return None
    top = path[0]
    return getattr(top, "key", getattr(top, "name", None))
