r"""Every bound of the paper as a function, with sharp versions where the paper's is loose.

Stability: Thm. 3 (paper's ``tanh(λω/2)`` and the sharp ``tanh(λω/4)``), Prop. 8 (``delta``).
Concentration and limits: Prop. 5 and Prop. 6 (explicit rates). Selection: Prop. 7, Cor. 1,
Prop. 12 (Hoeffding). Coverage: Eq. (15), Props. 4 and 11. Suppression and amplification:
Props. 14 and 15. Trade-off: Prop. 13.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import check_energy, check_log_prob, check_nonnegative_scalar
from grounding._numerics import logsumexp
from grounding.posterior import expected_energy, gibbs_log_posterior, kl_divergence

__all__ = [
    "oscillation",
    "log_ratio_bound",
    "tv_bound",
    "tv_bound_sharp",
    "tv_bound_delta",
    "tv_bound_delta_sharp",
    "energy_perturbation_delta",
    "concentration_tv_bound",
    "hard_limit_tv",
    "margin_condition",
    "map_probability_lower_bound",
    "pairwise_ranking_condition",
    "hoeffding_failure_bound",
    "hoeffding_sample_size",
    "coverage_independent",
    "coverage_any_path",
    "soft_floor",
    "suppression_log_ratio_bound",
    "amplification",
    "constraint_tradeoff",
]


# ----------------------------------------------------------------------------- Thm. 3
def oscillation(energy_r: ArrayLike, energy_r2: ArrayLike, log_prior: ArrayLike) -> jax.Array:
    r""":math:`\omega = \mathrm{osc}_S(E_R - E_{R'})` on :math:`S = \mathrm{supp}(P_0)` (Thm. 3).

    ``+inf`` if an energy is infinite on the support (the theorem needs finite energies).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Thm. 3.
    """
    e1 = check_energy(energy_r, "energy_r")
    e2 = check_energy(energy_r2, "energy_r2")
    lp = jnp.asarray(log_prior)
    on = lp > -jnp.inf
    finite = jnp.isfinite(e1) & jnp.isfinite(e2)
    diff = jnp.where(finite, e1, 0.0) - jnp.where(finite, e2, 0.0)
    hi = jnp.max(jnp.where(on, diff, -jnp.inf), axis=-1)
    lo = jnp.min(jnp.where(on, diff, jnp.inf), axis=-1)
    bad = jnp.any(on & ~finite, axis=-1)
    return jnp.where(bad, jnp.inf, hi - lo)


def log_ratio_bound(lam: ArrayLike, omega: ArrayLike) -> jax.Array:
    r"""Thm. 3, first claim: :math:`|\log p^R_\lambda(\rho)/p^{R'}_\lambda(\rho)| \le \lambda\omega`.

    Sharp as a supremum (approached when :math:`P^{R'}_\lambda` concentrates on the
    candidates where :math:`\Delta E` is largest and :math:`\rho` is where it is smallest).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Thm. 3.
    """
    return jnp.asarray(lam) * jnp.asarray(omega)


def tv_bound(lam: ArrayLike, omega: ArrayLike) -> jax.Array:
    r"""The paper's Thm. 3 / Eq. (21): :math:`\mathrm{TV}(P^R_\lambda, P^{R'}_\lambda) \le \tanh(\lambda\omega/2)`.

    Valid but not sharp: see :func:`tv_bound_sharp`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Thm. 3, Eq. (21).

    Example:
        >>> round(float(tv_bound(1.0, 2.0)), 6)
        0.761594
    """
    lam = check_nonnegative_scalar(lam, "lam", allow_inf=True)
    omega = check_nonnegative_scalar(omega, "omega", allow_inf=True)
    return jnp.tanh(_prod(lam, omega) / 2.0)  # Eq. (21)


def _prod(lam: jax.Array, omega: jax.Array) -> jax.Array:
    # lam * omega with 0 * inf = 0 (no movement when lambda = 0).
    return jnp.where((lam == 0) | (omega == 0), 0.0, lam * omega)


def tv_bound_sharp(lam: ArrayLike, omega: ArrayLike) -> jax.Array:
    r"""The sharp form of Thm. 3: :math:`\mathrm{TV}(P^R_\lambda, P^{R'}_\lambda) \le \tanh(\lambda\omega/4)`.

    Proof. Write :math:`f = e^{-\lambda\Delta E}` and :math:`Q = P^{R'}_\lambda`; then
    :math:`P^R_\lambda = Q\,f / \mathbb E_Q f`, and :math:`f` takes values in
    :math:`[c, c\,b]` with :math:`b = e^{\lambda\omega}`. TV is a convex function of the law of
    :math:`f` under :math:`Q` on the segment, so it is maximized by two-point laws: :math:`f = c`
    with :math:`Q`-mass :math:`p` and :math:`f = cb` with mass :math:`1-p`. Then

    .. math::
        \mathrm{TV} = \frac{p(1-p)(b-1)}{p + (1-p)b},

    maximized at :math:`p = \sqrt b/(1+\sqrt b)` with value
    :math:`(\sqrt b - 1)/(\sqrt b + 1) = \tanh(\lambda\omega/4)`. The paper's step
    :math:`L\in[e^{-\lambda\omega}, e^{\lambda\omega}]` ignores that :math:`\max L/\min L \le e^{\lambda\omega}`
    (the ratio of the extremes, not each extreme, is bounded), which doubles the argument.

    Attained exactly by two candidates with :math:`\Delta E = (0, \omega)` and prior chosen so
    that :math:`Q = (1/(1+\sqrt b),\, \sqrt b/(1+\sqrt b))`, i.e. the mass :math:`p` sits where
    :math:`f` is smallest (see
    :func:`grounding.testing.tight_instances.thm3_sharp_instance`).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Thm. 3 (with a sharpened constant).
    """
    lam = check_nonnegative_scalar(lam, "lam", allow_inf=True)
    omega = check_nonnegative_scalar(omega, "omega", allow_inf=True)
    return jnp.tanh(_prod(lam, omega) / 4.0)


def tv_bound_delta(lam: ArrayLike, delta: ArrayLike) -> jax.Array:
    r"""Thm. 3 with :math:`\sup|E_R - E_{R'}| \le \delta`: the paper's :math:`\tanh(\lambda\delta)`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Thm. 3.
    """
    lam = check_nonnegative_scalar(lam, "lam", allow_inf=True)
    delta = check_nonnegative_scalar(delta, "delta", allow_inf=True)
    return jnp.tanh(_prod(lam, delta))


def tv_bound_delta_sharp(lam: ArrayLike, delta: ArrayLike) -> jax.Array:
    r"""Sharp uniform-perturbation form: :math:`\tanh(\lambda\delta/2)` (:math:`\omega\le 2\delta`
    in :func:`tv_bound_sharp`; attained with :math:`\Delta E = (-\delta, +\delta)`).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Thm. 3 (with a sharpened constant).
    """
    lam = check_nonnegative_scalar(lam, "lam", allow_inf=True)
    delta = check_nonnegative_scalar(delta, "delta", allow_inf=True)
    return jnp.tanh(_prod(lam, delta) / 2.0)


# ----------------------------------------------------------------------------- Prop. 8
def energy_perturbation_delta(
    m_max: int,
    k_max: int,
    eps_ent: float,
    eps_rel: float,
    eps_w: float,
    eps_slack: float,
    alpha: float,
    xi: float,
) -> float:
    r"""Prop. 8: :math:`\delta = m_{\max}\epsilon_{\mathrm{ent}} + \alpha k_{\max}(\epsilon_{\mathrm{rel}} + \xi\epsilon_w) + \epsilon_{\mathrm{slack}}`.

    The bound on :math:`\sup_\rho|E_R(\rho) - E_{R'}(\rho)|` for min-over-alternatives energies.
    Attained by a single alternative whose every component moves by its full budget in the same
    direction (and whose slack term is the binding one only when the path term is not).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 8.
    """
    for name, v in dict(
        m_max=m_max,
        k_max=k_max,
        eps_ent=eps_ent,
        eps_rel=eps_rel,
        eps_w=eps_w,
        eps_slack=eps_slack,
        alpha=alpha,
        xi=xi,
    ).items():
        if not (v >= 0) or math.isinf(v):
            raise ValueError(f"{name} must be finite and >= 0, got {v}")
    return m_max * eps_ent + alpha * k_max * (eps_rel + xi * eps_w) + eps_slack  # Prop. 8


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


# ----------------------------------------------------------------------------- coverage
def coverage_independent(edge_probs: ArrayLike) -> jax.Array:
    r"""Eq. (15) for one required path with independently retrieved edges: :math:`\prod_i c_i` (Prop. 4).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (15), Prop. 4.
    """
    c = jnp.asarray(edge_probs)
    return jnp.prod(c, axis=-1)


def coverage_any_path(paths: Sequence[Sequence[int]], edge_probs: Sequence[float]) -> float:
    r"""Eq. (15) for a family of sufficient paths, independent edges:
    :math:`\Pr[\exists\gamma\in\mathcal P^\dagger: \gamma\subseteq R]` by inclusion–exclusion.

    Exact; exponential in the number of paths (meant for the small families of tests and
    examples; use :func:`grounding.worlds.coverage_monte_carlo` beyond ~20 paths).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (15).
    """
    probs = np.asarray(edge_probs, dtype=float)
    if np.any((probs < 0) | (probs > 1)):
        raise ValueError("edge_probs must lie in [0, 1]")
    sets = [frozenset(p) for p in paths]
    if not sets:
        return 0.0
    total = 0.0
    for r in range(1, len(sets) + 1):
        for combo in itertools.combinations(sets, r):
            union = frozenset().union(*combo)
            total += (-1) ** (r + 1) * float(np.prod(probs[list(union)]))
    return total


def soft_floor(log_p0: ArrayLike, lam: ArrayLike, bound: ArrayLike) -> jax.Array:
    r"""Prop. 11 (soft part), in log-space: :math:`\log p^R_\lambda(\rho^\dagger) \ge \log p_0 - \lambda B`
    when all energies are non-negative and :math:`E_R(\rho^\dagger) \le B`.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 11.
    """
    return jnp.asarray(log_p0) - jnp.asarray(lam) * jnp.asarray(bound)


# ----------------------------------------------------------------------------- Props. 14-15
def suppression_log_ratio_bound(
    log_prior: ArrayLike, in_b: ArrayLike, in_s: ArrayLike, lam: ArrayLike, gap: ArrayLike
) -> jax.Array:
    r"""Prop. 14 in log-space: :math:`\log\frac{p_\lambda(B)}{p_\lambda(S)} \le \log\frac{p_\theta(B)}{p_\theta(S)} - \lambda\Delta`.

    Equality when all of :math:`B` sits at one energy and all of :math:`S` at that energy minus Δ.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 14.
    """
    lp = jnp.asarray(log_prior)
    lb = logsumexp(jnp.where(jnp.asarray(in_b, bool), lp, -jnp.inf), axis=-1)
    ls = logsumexp(jnp.where(jnp.asarray(in_s, bool), lp, -jnp.inf), axis=-1)
    return lb - ls - jnp.asarray(lam) * jnp.asarray(gap)


def amplification(
    log_prior: ArrayLike, feasible: ArrayLike, correct: ArrayLike
) -> tuple[jax.Array, jax.Array]:
    r"""Prop. 15: returns :math:`(p_\theta(\Gamma^+),\ p_H^R(\Gamma^+) = p_\theta(\Gamma^+)/Z^H_R)` when
    :math:`\Gamma^+\subseteq F_R`; the second is :math:`\ge` the first, strictly if mass is removed.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 15.
    """
    lp = jnp.asarray(log_prior)
    f = jnp.asarray(feasible, bool)
    c = jnp.asarray(correct, bool)
    if not bool(jnp.all(~c | f)):
        raise ValueError("Prop. 15 needs Gamma+ ⊆ F_R (every correct candidate feasible)")
    p_plus = jnp.exp(logsumexp(jnp.where(c, lp, -jnp.inf), axis=-1))
    z_h = jnp.exp(logsumexp(jnp.where(f, lp, -jnp.inf), axis=-1))
    return p_plus, p_plus / z_h


# ----------------------------------------------------------------------------- Prop. 13
def constraint_tradeoff(
    log_prior: ArrayLike, energy: ArrayLike, lams: ArrayLike
) -> tuple[jax.Array, jax.Array]:
    r"""Prop. 13 on the Gibbs family: :math:`F(\lambda) = \mathrm{KL}(P_\lambda\|P_0)` (non-decreasing) and
    :math:`G(\lambda) = \mathbb E_{P_\lambda}[E]` (non-increasing) for each ``lam`` in ``lams``.

    Returns:
        ``(F, G)``, each ``[len(lams), ...]``: a grid axis first, then the batch axes of
        ``log_prior`` / ``energy``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 13.
    """
    lams = jnp.ravel(jnp.asarray(lams))
    lp = check_log_prob(log_prior, "log_prior")
    energy = check_energy(energy)

    def one(lam):
        post = gibbs_log_posterior(lp, energy, lam)  # Eq. (7) at one lambda
        return kl_divergence(post, lp), expected_energy(post, energy)

    return jax.vmap(one)(lams)
