r"""Concentration, the hard limit and selection: Props. 5-7, Cor. 1 and Prop. 12 (Hoeffding)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from grounding._checks import check_energy, check_log_prob
from grounding._numerics import logsumexp

__all__ = [
    "concentration_tv_bound",
    "hard_limit_tv",
    "margin_condition",
    "map_probability_lower_bound",
    "pairwise_ranking_condition",
    "hoeffding_failure_bound",
    "hoeffding_sample_size",
]


# ----------------------------------------------------------------------------- Props. 5-6
def concentration_tv_bound(log_prior: ArrayLike, energy: ArrayLike, lam: ArrayLike) -> jax.Array:
    r"""Rate for Prop. 5: TV between :math:`P^R_\lambda` and its limit :math:`P_0(\cdot\mid M_R)`.

    With :math:`M_R = \arg\min E`, gap :math:`g = \min_{\rho\notin M_R}(E(\rho) - \min E)` and
    :math:`u = \frac{P_0(M_R^c)}{P_0(M_R)}e^{-\lambda g}`,

    .. math::
        \mathrm{TV}\big(P^R_\lambda, P_0(\cdot\mid M_R)\big) = P^R_\lambda(M_R^c) \le \frac{u}{1+u}.

    Proof. On :math:`M_R` the posterior is proportional to the limit and below it, so TV equals
    the posterior mass outside :math:`M_R`, which is :math:`r/(1+r)` with
    :math:`r = \sum_{\rho\notin M_R}P_0(\rho)e^{-\lambda\Delta_\rho}/P_0(M_R) \le u`.
    Equality when every non-minimizer has :math:`\Delta_\rho = g`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 5.
    """
    lp = check_log_prob(log_prior, "log_prior")
    e = check_energy(energy)
    on = lp > -jnp.inf
    emin = jnp.min(jnp.where(on, e, jnp.inf), axis=-1, keepdims=True)
    in_m = on & (e == emin)
    gap = jnp.min(jnp.where(on & ~in_m, e - emin, jnp.inf), axis=-1)
    log_pm = logsumexp(jnp.where(in_m, lp, -jnp.inf), axis=-1)
    log_pc = logsumexp(jnp.where(on & ~in_m, lp, -jnp.inf), axis=-1)
    log_u = log_pc - log_pm - jnp.where(jnp.isfinite(gap), lam * gap, jnp.inf)
    return jax.nn.sigmoid(log_u)  # u / (1 + u)


def hard_limit_tv(log_prior: ArrayLike, feasible: ArrayLike, lam_m: ArrayLike) -> jax.Array:
    r"""Prop. 6 with its exact rate: for the truncated energy :math:`E_M = M\,\mathbf 1\{\rho\notin S_R\}`,

    .. math::
        \mathrm{TV}\big(P^R_{\lambda,M}, P_0(\cdot\mid S_R)\big) = \frac{u}{1+u},\qquad
        u = \frac{P_0(S_R^c)}{P_0(S_R)}\,e^{-\lambda M},

    an equality (so the bound is tight), tending to 0 as :math:`\lambda M\to\infty`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 6.
    """
    lp = check_log_prob(log_prior, "log_prior")
    s = jnp.asarray(feasible, dtype=bool)
    log_ps = logsumexp(jnp.where(s, lp, -jnp.inf), axis=-1)
    log_pc = logsumexp(jnp.where(s, -jnp.inf, lp), axis=-1)
    return jax.nn.sigmoid(log_pc - log_ps - lam_m)


# ----------------------------------------------------------------------------- Prop. 7, Cor. 1
def margin_condition(
    log_prior: ArrayLike, energy: ArrayLike, lam: ArrayLike, target: int
) -> jax.Array:
    r"""Prop. 7's deterministic premise: :math:`\lambda\Delta > \max_{\rho\ne\rho^\dagger}\log\frac{P_0(\rho)}{P_0(\rho^\dagger)}`,

    with :math:`\Delta = \min_{\rho\ne\rho^\dagger, P_0(\rho)>0}(E(\rho) - E(\rho^\dagger))`, checked per
    competitor (:math:`\lambda(E_\rho - E_\dagger) > \log P_0(\rho)/P_0(\rho^\dagger)` for all, which the
    uniform-margin premise implies). True when there is no positive-prior competitor; a
    competitor of infinite energy has no posterior mass at any :math:`\lambda \ge 0` and never
    breaks the premise of a finite-energy target. Leading axes are batch axes.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 7.
    """
    lp = jnp.asarray(log_prior)
    e = jnp.asarray(energy)
    idx = jnp.arange(lp.shape[-1])
    comp = (idx != target) & (lp > -jnp.inf)
    lp_t = jnp.take(lp, target, axis=-1)[..., None]
    e_t = jnp.take(e, target, axis=-1)[..., None]
    odds = jnp.where(comp, lp - lp_t, -jnp.inf)
    gone = jnp.isposinf(e) & jnp.isfinite(e_t)  # 0 * inf would be nan at lam = 0
    margin = jnp.where(comp, jnp.where(gone, jnp.inf, lam * (e - e_t)), jnp.inf)
    return jnp.all(jnp.where(comp, margin > odds, True), axis=-1)


def map_probability_lower_bound(eps: float, k: int) -> float:
    r"""Prop. 7: :math:`\Pr(M) \ge (1-\epsilon)^k` for :math:`k` independently retrieved required edges.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 7.
    """
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"eps must lie in [0, 1], got {eps}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    return (1.0 - eps) ** k


def pairwise_ranking_condition(
    log_prior_t: ArrayLike,
    log_prior_f: ArrayLike,
    energy_t: ArrayLike,
    energy_f: ArrayLike,
    lam: ArrayLike,
) -> jax.Array:
    r"""Cor. 1: :math:`\rho_T` ranks above :math:`\rho_F` iff :math:`\lambda(E_F - E_T) > \log P_0(\rho_F)/P_0(\rho_T)`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Cor. 1.
    """
    return lam * (jnp.asarray(energy_f) - jnp.asarray(energy_t)) > (
        jnp.asarray(log_prior_f) - jnp.asarray(log_prior_t)
    )


# ----------------------------------------------------------------------------- Prop. 12
def hoeffding_failure_bound(
    m: int, gamma: float, lam: float, bound: float, n_candidates: int
) -> float:
    r"""Prop. 12, Eq. (27): :math:`\Pr(\hat\rho_m\notin\Gamma^+) \le 2|\Gamma|\exp(-m\gamma^2/(2\lambda^2B^2))`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Prop. 12, Eq. (27).
    """
    if gamma <= 0 or lam <= 0 or bound <= 0 or m < 1 or n_candidates < 2:
        raise ValueError("need gamma > 0, lam > 0, B > 0, m >= 1, |Gamma| >= 2")
    return 2 * n_candidates * math.exp(-m * gamma**2 / (2 * lam**2 * bound**2))  # Eq. (27)


def hoeffding_sample_size(
    gamma: float, lam: float, bound: float, n_candidates: int, delta: float
) -> int:
    r"""Prop. 12: the smallest integer :math:`m \ge \frac{2\lambda^2B^2}{\gamma^2}\log\frac{2|\Gamma|}{\delta}`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 12.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    if gamma <= 0 or lam <= 0 or bound <= 0 or n_candidates < 2:
        raise ValueError("need gamma > 0, lam > 0, B > 0, |Gamma| >= 2")
    return max(1, math.ceil(2 * lam**2 * bound**2 / gamma**2 * math.log(2 * n_candidates / delta)))
