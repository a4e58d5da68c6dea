r"""Posteriors over a finite candidate set: soft Gibbs (7)/(17), hard conditioning (6),
the KL objective (16) and its decomposition (18), log-odds (20), MAP, TV and KL.

All functions work in log-space on the last axis (the candidate axis ``Gamma(q)``). Arrays
indexed by candidates must have one shape (leading axes are a batch of problems); a
parameter such as ``lam`` or ``eps`` is a scalar or has exactly the batch shape. Nothing
broadcasts silently: batch a grid of parameters with ``jax.vmap``. ``+inf`` energies mark
infeasible candidates.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import (
    as_float_array,
    check_batch_parameter,
    check_energy,
    check_log_prob,
    check_nonnegative_scalar,
    check_same_shape,
    is_concrete,
)
from grounding._numerics import logsumexp, masked_log_normalize, scaled_energy

__all__ = [
    "gibbs_log_posterior",
    "hard_log_posterior",
    "hard_feasible",
    "log_partition",
    "kl_divergence",
    "kl_objective",
    "kl_objective_decomposition",
    "log_odds",
    "map_index",
    "tv_distance",
    "expected_energy",
    "log_normalize",
]


def _prior_and_energy(log_prior: ArrayLike, energy: ArrayLike) -> tuple[jax.Array, jax.Array]:
    log_prior = check_log_prob(log_prior, "log_prior")
    energy = check_energy(energy)
    check_same_shape(log_prior, energy, "log_prior", "energy")
    return log_prior, energy


def _strength(lam: ArrayLike, batch_shape: tuple[int, ...]) -> jax.Array:
    lam = check_nonnegative_scalar(lam, "lam")
    return check_batch_parameter(lam, batch_shape, "lam")


def log_partition(log_prior: ArrayLike, energy: ArrayLike, lam: ArrayLike) -> jax.Array:
    r"""Log normalizer :math:`\log Z_R(\lambda) = \log \sum_\rho p_\theta(\rho) e^{-\lambda E_R(\rho)}`.

    Eq. (7) / (17) of the paper. ``-inf`` when no candidate has both positive prior mass
    and finite energy.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (7) and (17) (the normalizer).

    Example:
        >>> import jax.numpy as jnp
        >>> round(float(log_partition(jnp.log(jnp.array([0.5, 0.5])), jnp.array([0.0, 1.0]), 0.0)), 6)
        0.0
    """
    log_prior, energy = _prior_and_energy(log_prior, energy)
    lam = jnp.expand_dims(_strength(lam, log_prior.shape[:-1]), -1)
    return logsumexp(log_prior - scaled_energy(lam, energy), axis=-1)  # Eq. (7)


def gibbs_log_posterior(log_prior: ArrayLike, energy: ArrayLike, lam: ArrayLike) -> jax.Array:
    r"""Soft grounded posterior, Eq. (7) / Thm. 2 (Eq. (17)), in log-space.

    .. math::
        \log p_\lambda^R(\rho) = \log p_\theta(\rho) - \lambda E_R(\rho) - \log Z_R(\lambda).

    Conventions: ``+inf`` energy gives ``-inf`` log-mass for every ``lambda >= 0``
    (an infinite energy is the raw "no admissible path" marker of Eq. (11), not a
    finite penalty; use :func:`grounding.energy.slack_energy` to keep such candidates).
    At ``lambda = 0`` the posterior equals the prior on finite-energy candidates.

    Args:
        log_prior: ``[..., n]`` normalized log prior :math:`\log p_\theta(\cdot\mid q)` (Eq. (1)).
        energy: ``[..., n]`` energies in :math:`\mathbb{R}\cup\{+\infty\}` (Def. 2).
        lam: grounding strength :math:`\lambda \ge 0`: a scalar, or one value per problem
            (shape ``[...]``); for a grid of values use ``jax.vmap``.

    Returns:
        ``[..., n]`` normalized log posterior.

    Raises:
        ValueError: NaN inputs, a prior that does not normalize, negative ``lam``, an empty
            candidate axis, or (eagerly) no candidate with positive prior mass and finite
            energy. Under ``jit`` that last case returns an all ``-inf`` row instead.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (7); Thm. 2 (Eq. (17)).

    Example:
        >>> import jax.numpy as jnp
        >>> lp = gibbs_log_posterior(jnp.log(jnp.array([0.5, 0.5])), jnp.array([0.0, jnp.inf]), 1.0)
        >>> [round(float(v), 6) for v in jnp.exp(lp)]
        [1.0, 0.0]
    """
    log_prior, energy = _prior_and_energy(log_prior, energy)
    lam = _strength(lam, log_prior.shape[:-1])
    # Eq. (7) is invariant to a shift of the energies: measured from the least energy of the
    # prior's support, lam * E cannot overflow where the posterior has mass (float32: lam * E
    # > 3.4e38 made every numerator 0 although the posterior is all on the minimum).
    support = (log_prior > -jnp.inf) & jnp.isfinite(energy)
    least = jnp.min(jnp.where(support, energy, jnp.inf), axis=-1, keepdims=True)
    shift = jax.lax.stop_gradient(jnp.where(jnp.isfinite(least), least, 0.0))
    # a zero-prior candidate far below that least energy has lam * (E - shift) = -inf: its
    # logit is -inf (p0 = 0), never -inf - (-inf) = NaN, which emptied the whole row
    scaled = scaled_energy(jnp.expand_dims(lam, -1), energy - shift)
    logits = jnp.where(log_prior > -jnp.inf, log_prior - scaled, -jnp.inf)  # Eq. (7)
    if is_concrete(logits) and (np.asarray(logits) == -np.inf).all(axis=-1).any():
        raise ValueError(
            "gibbs_log_posterior: Z_R(lambda) = 0 (no candidate has positive prior mass and "
            "finite energy); use slack_energy to keep unsupported candidates"
        )
    return masked_log_normalize(logits)  # Eq. (7): divide by Z_R(lambda)


def hard_feasible(energy: ArrayLike, eps: ArrayLike) -> jax.Array:
    r"""Hard feasible set indicator :math:`F_R(q;\epsilon) = \{\rho : E_R(\rho) \le \epsilon\}`, Eq. (5).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (5).
    """
    energy = check_energy(energy)
    eps = check_batch_parameter(as_float_array(eps, "eps"), energy.shape[:-1], "eps")
    return energy <= jnp.expand_dims(eps, -1)  # Eq. (5)


def hard_log_posterior(log_prior: ArrayLike, energy: ArrayLike, eps: ArrayLike) -> jax.Array:
    r"""Hard grounded posterior, Eq. (6): the prior conditioned on :math:`F_R(q;\epsilon)`.

    .. math::
        p_H^R(\rho) = \frac{p_\theta(\rho)\,\mathbf 1\{E_R(\rho)\le\epsilon\}}{p_\theta(F_R)}.

    Args:
        log_prior: ``[..., n]`` normalized log prior.
        energy: ``[..., n]`` energies in :math:`\mathbb{R}\cup\{+\infty\}`.
        eps: tolerance :math:`\epsilon` (scalar or ``[...]``).

    Returns:
        ``[..., n]`` log posterior, ``-inf`` outside the feasible set.

    Raises:
        ValueError: when :math:`p_\theta(F_R) = 0` (Eq. (6) is undefined) — the decision layer
            maps this case to ABSTAIN. Under ``jit`` an all ``-inf`` row is returned instead.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (6).

    Example:
        >>> import jax.numpy as jnp
        >>> lp = hard_log_posterior(jnp.log(jnp.array([0.2, 0.3, 0.5])), jnp.array([0., 1., 3.]), 1.0)
        >>> [round(float(v), 6) for v in jnp.exp(lp)]
        [0.4, 0.6, 0.0]
    """
    log_prior, energy = _prior_and_energy(log_prior, energy)
    eps = as_float_array(eps, "eps")
    if is_concrete(eps) and bool(jnp.any(jnp.isnan(eps))):
        raise ValueError("eps contains NaN")
    logits = jnp.where(hard_feasible(energy, eps), log_prior, -jnp.inf)  # Eq. (6) numerator
    if is_concrete(logits) and (np.asarray(logits) == -np.inf).all(axis=-1).any():
        raise ValueError(
            "hard_log_posterior: the feasible set F_R has zero prior mass, so Eq. (6) is "
            "undefined (abstain, retrieve more evidence, or use the soft posterior)"
        )
    return masked_log_normalize(logits)  # Eq. (6): divide by p_theta(F_R)


def kl_divergence(log_p: ArrayLike, log_q: ArrayLike) -> jax.Array:
    r""":math:`\mathrm{KL}(P\|Q) = \sum_\rho P(\rho)\log\frac{P(\rho)}{Q(\rho)}` with ``0 log 0 = 0``.

    ``+inf`` when :math:`P \not\ll Q`.

    Example:
        >>> import jax.numpy as jnp
        >>> float(kl_divergence(jnp.log(jnp.array([1.0, 0.0])), jnp.log(jnp.array([0.5, 0.5])))) > 0
        True
    """
    log_p = jnp.asarray(log_p)
    log_q = jnp.asarray(log_q)
    p = jnp.exp(log_p)
    q_zero = log_q == -jnp.inf
    use = (p > 0) & ~q_zero
    diff = jnp.where(use, log_p, 0.0) - jnp.where(use, log_q, 0.0)
    terms = jnp.where(use, p * diff, 0.0)  # 0 log 0 = 0
    violates = jnp.any((p > 0) & q_zero, axis=-1)
    return jnp.where(violates, jnp.inf, jnp.sum(terms, axis=-1))


def expected_energy(log_p: ArrayLike, energy: ArrayLike) -> jax.Array:
    r""":math:`\mathbb E_{\rho\sim P}[E(\rho)]` with the convention ``0 * inf = 0``."""
    p = jnp.exp(jnp.asarray(log_p))
    energy = jnp.asarray(energy)
    finite = jnp.isfinite(energy)
    term = jnp.where(p > 0, p * jnp.where(finite, energy, 0.0), 0.0)
    bad = jnp.any((p > 0) & ~finite, axis=-1)
    return jnp.where(bad, jnp.inf, jnp.sum(term, axis=-1))


def kl_objective(
    log_p: ArrayLike, log_prior: ArrayLike, energy: ArrayLike, lam: ArrayLike
) -> jax.Array:
    r"""The objective of Eq. (16): :math:`\mathrm{KL}(P\|P_0) + \lambda\,\mathbb E_P[E_R]`.

    Thm. 2 says :func:`gibbs_log_posterior` is its unique minimizer over :math:`P \ll P_0`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (16), Thm. 2.
    """
    return kl_divergence(log_p, log_prior) + lam * expected_energy(log_p, energy)  # Eq. (16)


def kl_objective_decomposition(
    log_p: ArrayLike, log_prior: ArrayLike, energy: ArrayLike, lam: ArrayLike
) -> jax.Array:
    r"""Right-hand side of Eq. (18): :math:`\mathrm{KL}(P\|P^R_\lambda) - \log Z_R(\lambda)`.

    Equal to :func:`kl_objective` for every :math:`P \ll P_0` (Thm. 2).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (18), Thm. 2.
    """
    post = gibbs_log_posterior(log_prior, energy, lam)
    return kl_divergence(log_p, post) - log_partition(log_prior, energy, lam)  # Eq. (18)


def log_odds(log_prior: ArrayLike, energy: ArrayLike, lam: ArrayLike, i: int, j: int) -> jax.Array:
    r"""Posterior log-odds of candidates ``i`` and ``j``, by the decomposition Eq. (20):

    .. math::
        \log\frac{p_\lambda(\rho_i)}{p_\lambda(\rho_j)} =
        \log\frac{p_\theta(\rho_i)}{p_\theta(\rho_j)} - \lambda\{E(\rho_i) - E(\rho_j)\}.

    Both candidates must have positive prior mass and finite energy.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (20).
    """
    log_prior = jnp.asarray(log_prior)
    energy = jnp.asarray(energy)
    prior_odds = log_prior[..., i] - log_prior[..., j]
    return prior_odds - lam * (energy[..., i] - energy[..., j])  # Eq. (20)


def map_index(log_p: ArrayLike) -> jax.Array:
    """Index of the MAP candidate (first one on ties)."""
    return jnp.argmax(jnp.asarray(log_p), axis=-1)


def tv_distance(log_p: ArrayLike, log_q: ArrayLike) -> jax.Array:
    r"""Total variation :math:`\mathrm{TV}(P, Q) = \tfrac12\sum_\rho |P(\rho) - Q(\rho)|` (Thm. 3).

    Computed as :math:`\sum_\rho (P(\rho) - Q(\rho))_+`, which has no cancellation between
    the two halves.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Thm. 3 (the distance it bounds).

    Example:
        >>> import jax.numpy as jnp
        >>> float(tv_distance(jnp.log(jnp.array([0.75, 0.25])), jnp.log(jnp.array([0.25, 0.75]))))
        0.5
    """
    log_p = check_log_prob(log_p, "log_p")
    log_q = check_log_prob(log_q, "log_q")
    check_same_shape(log_p, log_q, "log_p", "log_q")
    p = jnp.exp(log_p)
    q = jnp.exp(log_q)
    return jnp.sum(jnp.maximum(p - q, 0.0), axis=-1)


def log_normalize(log_weights: ArrayLike) -> jax.Array:
    r"""Normalize log-weights over the last axis: :math:`\log w_i - \log\sum_j w_j` (a log-prior
    from logits, Eq. (1)). An all ``-inf`` row is an error eagerly (it has no normalization).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (1) (the normalized prior).

    Example:
        >>> import jax.numpy as jnp
        >>> [round(float(v), 6) for v in jnp.exp(log_normalize(jnp.array([0.0, jnp.log(3.0)])))]
        [0.25, 0.75]
    """
    lw = as_float_array(log_weights, "log_weights", min_ndim=1)
    if is_concrete(lw):
        a = np.asarray(lw)
        if np.isnan(a).any() or (a == np.inf).any():
            raise ValueError("log_weights contains NaN or +inf")
        if (a == -np.inf).all(axis=-1).any():
            raise ValueError(
                "log_weights has a row with no mass (all -inf): it cannot be normalized"
            )
    return masked_log_normalize(lw)
