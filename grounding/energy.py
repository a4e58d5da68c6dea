r"""Evidence energies: path energy (10), best path (11), support regions (Def. 3, Eq. (12)),
entropic aggregation (13) with its variational form and optimizer (Prop. 2), slack (19),
and the projection-style objectives of Appendix D (Eqs. (28)-(30), Prop. 1).

Path arrays put paths (or path-assignment pairs) on the last axis; ``+inf`` marks an
inadmissible pair.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
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
from grounding.posterior import expected_energy, kl_divergence

__all__ = [
    "path_energy",
    "best_path_energy",
    "aggregate_paths",
    "path_posterior",
    "variational_path_objective",
    "aggregation_bounds",
    "slack_energy",
    "support_region",
    "projection",
    "revision_objective",
    "revise",
    "unified_objective",
]


def path_energy(
    entity_costs: ArrayLike, relation_residuals: ArrayLike, alpha: ArrayLike
) -> jax.Array:
    r"""Path energy Eq. (10): :math:`c_{\mathrm{ent}}(X_\rho, a) + \alpha\sum_{i=1}^k c_{\mathrm{rel}}(e_i; R)`.

    Args:
        entity_costs: ``[..., m]`` the terms :math:`d_{\mathcal M}(\psi_i, \eta(v))` of Eq. (9).
        relation_residuals: ``[..., k]`` typed residuals (Eq. (8)) of the path's edges.
        alpha: relation-residual scale :math:`\alpha \ge 0`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (10) (terms of Eqs. (8)-(9)).

    Example:
        >>> float(path_energy([0.5, 0.25], [1.0, 2.0], 0.5))
        2.25
    """
    ent = as_float_array(entity_costs, "entity_costs", min_ndim=1)
    rel = as_float_array(relation_residuals, "relation_residuals", min_ndim=1)
    alpha = check_nonnegative_scalar(alpha, "alpha")
    return jnp.sum(ent, axis=-1) + alpha * jnp.sum(rel, axis=-1)  # Eq. (10)


def best_path_energy(path_energies: ArrayLike) -> jax.Array:
    r"""Best-path energy Eq. (11): the minimum over admissible (path, assignment) pairs.

    ``+inf`` when no admissible pair exists (an all-``+inf`` or empty last axis).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (11).

    Example:
        >>> import jax.numpy as jnp
        >>> float(best_path_energy(jnp.array([jnp.inf, 2.0, 3.0]))), float(best_path_energy(jnp.zeros((0,))))
        (2.0, inf)
    """
    e = check_energy(path_energies, "path_energies", min_ndim=0)
    if e.ndim == 0:
        raise ValueError("path_energies must have a path axis (at least 1-D)")
    if e.shape[-1] == 0:
        return jnp.full(e.shape[:-1], jnp.inf, e.dtype)
    return jnp.min(e, axis=-1)  # Eq. (11)


def _check_paths(path_energies: ArrayLike, log_path_prior: ArrayLike, tau: ArrayLike):
    e = check_energy(path_energies, "path_energies")
    lw = check_log_prob(log_path_prior, "log_path_prior")
    check_same_shape(e, lw, "path_energies", "log_path_prior")
    tau = check_batch_parameter(check_nonnegative_scalar(tau, "tau"), e.shape[:-1], "tau")
    return e, lw, tau


def _tempered(e: jax.Array, lw: jax.Array, tau: jax.Array):
    """Shared by Eq. (13) and Prop. 2: ``tau`` with a trailing axis, its ``> 0`` mask, a
    division-safe copy, the tempered logits ``log ω - e/τ``, and ``e`` on the support of ω."""
    tau = jnp.expand_dims(tau, -1)
    positive = tau > 0
    safe_tau = jnp.where(positive, tau, 1.0)
    logits = lw - scaled_energy(1.0 / safe_tau, e)
    return positive, safe_tau, logits, jnp.where(lw > -jnp.inf, e, jnp.inf)


def aggregate_paths(
    path_energies: ArrayLike, log_path_prior: ArrayLike, tau: ArrayLike
) -> jax.Array:
    r"""Entropic path aggregation, Eq. (13):

    .. math::
        E^{\mathrm{path}}_R(\rho) = -\tau\log\sum_\gamma \omega_\gamma\, e^{-e_\gamma/\tau},
        \qquad \tau > 0,

    and its limit :math:`\min\{e_\gamma : \omega_\gamma > 0\}` at ``tau == 0`` (Eq. (11)).
    ``+inf`` when every path with positive prior has infinite energy.

    Args:
        path_energies: ``[..., P]`` energies :math:`e_\gamma(X_\rho)` in :math:`\mathbb R\cup\{+\infty\}`.
        log_path_prior: ``[..., P]`` normalized :math:`\log\omega_\gamma` (``-inf`` allowed).
        tau: path temperature :math:`\tau \ge 0`.

    Returns:
        ``[...]`` aggregated energy; between ``min e`` and ``min_γ(e_γ - τ log ω_γ)``
        (see :func:`aggregation_bounds`), non-decreasing in ``tau`` with derivative
        :math:`\mathrm{KL}(\nu^*\|\omega)`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (13), Prop. 2.

    Example:
        >>> import jax.numpy as jnp
        >>> round(float(aggregate_paths(jnp.array([1.0, 1.0]), jnp.log(jnp.array([0.5, 0.5])), 0.3)), 6)
        1.0
    """
    e, lw, tau = _check_paths(path_energies, log_path_prior, tau)
    positive, safe_tau, _, e_pos = _tempered(e, lw, tau)
    hard = jnp.min(e_pos, axis=-1)  # tau -> 0 limit: Eq. (11)
    finite = jnp.isfinite(hard)
    m = jnp.where(finite, hard, 0.0)[..., None]
    # Eq. (13) measured from the least energy m: E = m - tau log sum_g w_g exp(-(e_g - m)/tau).
    # With s = sum_g w_g expm1(-(e_g - m)/tau) in [-1, 0] the log is log1p(s), exact where s is
    # small (large tau: the log-sum-exp form loses all digits there, and float32 left the
    # documented bounds); the log-sum-exp form where s < -1/2 (the log is below log 1/2).
    reach = jnp.isfinite(e_pos)
    x = jnp.where(reach, (jnp.where(reach, e_pos, m) - m) / safe_tau, jnp.inf)  # NaN-free grads
    s = jnp.sum(jnp.exp(lw) * jnp.expm1(-x), axis=-1)
    near = s > -0.5
    log_sum = jnp.where(
        near, jnp.log1p(jnp.where(near, s, 0.0)), logsumexp(lw - x, axis=-1)
    )  # fmt: skip
    soft = jnp.where(finite, m[..., 0] - safe_tau[..., 0] * log_sum, jnp.inf)
    return jnp.where(positive[..., 0], soft, hard)


def path_posterior(
    path_energies: ArrayLike, log_path_prior: ArrayLike, tau: ArrayLike
) -> jax.Array:
    r"""The unique optimizer :math:`\nu^*` of Prop. 2, in log-space:

    .. math::
        \nu^*(\gamma) = \frac{\omega_\gamma e^{-e_\gamma/\tau}}{\sum_{\gamma'}\omega_{\gamma'} e^{-e_{\gamma'}/\tau}}.

    At ``tau == 0`` it is the limit: :math:`\omega` conditioned on the minimum-energy paths.
    Equal to the gradient of :func:`aggregate_paths` with respect to ``path_energies``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 2.
    """
    e, lw, tau = _check_paths(path_energies, log_path_prior, tau)
    positive, _, logits, e_pos = _tempered(e, lw, tau)
    soft = masked_log_normalize(logits)  # Prop. 2
    at_min = e_pos == jnp.min(e_pos, axis=-1, keepdims=True)
    hard = masked_log_normalize(jnp.where(at_min & jnp.isfinite(e_pos), lw, -jnp.inf))
    return jnp.where(positive, soft, hard)


def variational_path_objective(
    log_nu: ArrayLike, path_energies: ArrayLike, log_path_prior: ArrayLike, tau: ArrayLike
) -> jax.Array:
    r"""The objective of Eq. (14): :math:`\mathbb E_{\gamma\sim\nu}[e_\gamma] + \tau\,\mathrm{KL}(\nu\|\omega)`.

    Prop. 2: its minimum over :math:`\nu \ll \omega` equals :func:`aggregate_paths`,
    attained only at :func:`path_posterior`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (14), Prop. 2.
    """
    return expected_energy(log_nu, path_energies) + tau * kl_divergence(
        log_nu, log_path_prior
    )  # Eq. (14)


def aggregation_bounds(
    path_energies: ArrayLike, log_path_prior: ArrayLike, tau: ArrayLike
) -> tuple[jax.Array, jax.Array]:
    r"""Two-sided bounds on Eq. (13) for a normalized path prior :math:`\omega`:

    .. math::
        \min_{\gamma:\omega_\gamma>0} e_\gamma \;\le\; E^{\mathrm{path}}_R \;\le\;
        \min\Big\{\min_\gamma\,(e_\gamma - \tau\log\omega_\gamma),\; \mathbb E_\omega[e_\gamma]\Big\}.

    Proof. Lower: :math:`\sum_\gamma\omega_\gamma e^{-e_\gamma/\tau} \le e^{-\min e/\tau}` since
    :math:`\sum\omega = 1`. Upper (first term): the sum is at least any single term
    :math:`\omega_\gamma e^{-e_\gamma/\tau}`. Upper (second): Eq. (14) evaluated at
    :math:`\nu = \omega` (Jensen). Both upper bounds are attained (a single path; equal
    energies), and the lower bound is approached as :math:`\tau\to 0` at rate
    :math:`-\tau\log\omega(\arg\min e)`.

    Returns:
        ``(lower, upper)``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eqs. (13)-(14).
    """
    e, lw, tau = _check_paths(path_energies, log_path_prior, tau)
    pos = lw > -jnp.inf
    lower = jnp.min(jnp.where(pos, e, jnp.inf), axis=-1)
    t = jnp.expand_dims(tau, -1)
    upper_single = jnp.min(jnp.where(pos, e - t * jnp.where(pos, lw, 0.0), jnp.inf), axis=-1)
    upper_mean = expected_energy(lw, e)
    return lower, jnp.minimum(upper_single, upper_mean)


def slack_energy(energy: ArrayLike, kappa: ArrayLike) -> jax.Array:
    r"""Slack-extended energy, Eq. (19): :math:`E^{\mathrm{slack}}_R = \min\{E^{\min}_R, \kappa_R\}`.

    Args:
        energy: ``[...]`` raw energies (``+inf`` where no admissible path exists).
        kappa: slack :math:`\kappa_R > 0`, scalar or per-candidate. ``+inf`` means no slack.

    Returns:
        Energies that are finite wherever ``kappa`` is finite, never above ``kappa``, and equal
        to ``energy`` where ``energy <= kappa``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (19).

    Example:
        >>> import jax.numpy as jnp
        >>> [float(v) for v in slack_energy(jnp.array([0.5, jnp.inf]), 2.0)]
        [0.5, 2.0]
    """
    e = check_energy(energy, min_ndim=0)
    kappa = check_nonnegative_scalar(kappa, "kappa", allow_inf=True, strict=True)
    return jnp.minimum(e, _broadcastable(kappa, e, "kappa"))  # Eq. (19)


def _broadcastable(param: jax.Array, e: jax.Array, name: str) -> jax.Array:
    """A per-candidate parameter must broadcast to the energies without enlarging them."""
    try:
        fits = jnp.broadcast_shapes(param.shape, e.shape) == e.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"{name} must be a scalar or broadcast to the energies' shape {e.shape}, got "
            f"shape {param.shape}"
        )
    return param


def support_region(energy: ArrayLike, eps: ArrayLike) -> jax.Array:
    r"""Membership in the support region :math:`C_R(q;\epsilon)` of Def. 3, Eq. (12):
    :math:`E_R(\rho) \le \epsilon`. Nested in ``eps`` (Prop. 1(1)).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Def. 3, Eq. (12); Prop. 1(1).
    """
    e = check_energy(energy, min_ndim=0)
    return e <= _broadcastable(as_float_array(eps, "eps"), e, "eps")  # Eq. (12)


def _region_distances(x0: jax.Array, xs: jax.Array, distance: Callable) -> jax.Array:
    return jax.vmap(lambda x: distance(x, x0))(xs)


def projection(
    x0: ArrayLike,
    candidates: ArrayLike,
    energy: ArrayLike,
    eps: ArrayLike,
    distance: Callable[[jax.Array, jax.Array], jax.Array],
) -> tuple[jax.Array, jax.Array]:
    r"""Metric projection onto a finite support region, Eq. (30) / Prop. 1(3):

    .. math::
        \mathrm{Proj}_{C_R(q;\epsilon)}(X^0) \in \arg\min_{X\in C_R(q;\epsilon)} d_{\mathcal A}(X, X^0)^2.

    A finite region is compact, so the projection exists when it is nonempty; it need not be
    unique (the first minimizer is returned).

    Args:
        x0: the trajectory to project (any array shape accepted by ``distance``).
        candidates: ``[n, ...]`` semantic trajectories :math:`X_\rho`.
        energy: ``[n]`` their energies.
        eps: tolerance.
        distance: :math:`d_{\mathcal A}`, e.g. :func:`grounding.alignment.product_distance`.

    Returns:
        ``(index, squared distance)``.

    Raises:
        ValueError: if the support region is empty (eagerly; under ``jit`` the index of an
            empty region is the argmin of an all-``inf`` vector and the distance is ``inf``).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (30), Prop. 1(3).
    """
    mask = support_region(energy, eps)
    if is_concrete(mask) and not bool(jnp.any(mask)):
        raise ValueError("projection: the support region C_R(q; eps) is empty")
    d2 = _region_distances(jnp.asarray(x0), jnp.asarray(candidates), distance) ** 2
    d2 = jnp.where(mask, d2, jnp.inf)
    i = jnp.argmin(d2)  # Eq. (30)
    return i, d2[i]


def revision_objective(
    d_to_start: ArrayLike, energy: ArrayLike, regularizer: ArrayLike, lam: ArrayLike, mu: ArrayLike
) -> jax.Array:
    r"""The projection-style revision objective of Eq. (29):
    :math:`\tfrac12 d_{\mathcal A}(X, X^0)^2 + \lambda E_R(X) + \mu\,\Omega_R(X)`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (29).
    """
    d = jnp.asarray(d_to_start)
    return 0.5 * d**2 + scaled_energy(lam, energy) + mu * jnp.asarray(regularizer)  # Eq. (29)


def revise(
    x0: ArrayLike,
    candidates: ArrayLike,
    energy: ArrayLike,
    regularizer: ArrayLike,
    lam: ArrayLike,
    mu: ArrayLike,
    distance: Callable[[jax.Array, jax.Array], jax.Array],
) -> tuple[jax.Array, jax.Array]:
    r"""Revision operator :math:`P^R_{\lambda,\mu}(X^0)` of Eq. (29) over a finite candidate set.

    Returns ``(index, objective value)``. When :math:`X^0` is itself a candidate the value is
    never above the objective at :math:`X^0` (it is a minimum over a set containing it).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (29).
    """
    d = _region_distances(jnp.asarray(x0), jnp.asarray(candidates), distance)
    obj = revision_objective(d, energy, regularizer, lam, mu)
    i = jnp.argmin(obj)  # Eq. (29)
    return i, obj[i]


def unified_objective(
    prior_cost: ArrayLike,
    energy: ArrayLike,
    dist_to_support: ArrayLike,
    regularizer: ArrayLike,
    lam: ArrayLike,
    beta: ArrayLike,
    mu: ArrayLike,
) -> jax.Array:
    r"""The unified trajectory objective of Eq. (28):
    :math:`\mathcal L_\theta + \lambda E_R + \beta\,\mathrm{dist}^2(X, C_R) + \mu\,\Omega_R`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (28).
    """
    return (
        jnp.asarray(prior_cost)
        + scaled_energy(lam, energy)
        + beta * jnp.asarray(dist_to_support) ** 2
        + mu * jnp.asarray(regularizer)
    )  # Eq. (28)
