r"""Stability under evidence perturbation: Thm. 3 (the paper's ``tanh(λω/2)`` and the sharp
``tanh(λω/4)``), its ``delta`` form and Prop. 8, and the certificate of a grounded posterior."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from grounding._checks import check_energy, check_nonnegative_scalar

__all__ = [
    "oscillation",
    "log_ratio_bound",
    "tv_bound",
    "tv_bound_sharp",
    "tv_bound_delta",
    "tv_bound_delta_sharp",
    "energy_perturbation_delta",
    "certified_tv",
    "stability_certificate",
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


# ----------------------------------------------------------------------------- Thm. 3 read
def certified_tv(lam: ArrayLike, omega: ArrayLike, valid: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """``(paper, sharp)`` TV bounds of Thm. 3 at ``omega`` (:func:`tv_bound`,
    :func:`tv_bound_sharp`) where the theorem applies (``valid``), vacuous (``1``) where it
    does not.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Thm. 3, Eq. (21).
    """
    return (
        jnp.where(valid, tv_bound(lam, omega), 1.0),  # Eq. (21)
        jnp.where(valid, tv_bound_sharp(lam, omega), 1.0),
    )


def stability_certificate(
    lam: ArrayLike, omega: ArrayLike, log_posterior: jax.Array, valid: ArrayLike
) -> dict[str, jax.Array]:
    r"""Thm. 3 read for one grounded posterior (``jit``/``vmap``-able): what the fields of
    :class:`grounding.Certificate` hold.

    - ``log_ratio``, ``tv_paper``, ``tv_sharp``: the bounds at the oscillation ``omega``
      (:func:`log_ratio_bound`, :func:`certified_tv`; vacuous, ``inf`` and ``1``, when the
      theorem does not apply: ``valid`` False);
    - ``margin``: the log-posterior margin of the best candidate over the runner-up (``inf``
      when one candidate carries all the mass);
    - ``radius``: ``margin / lam``, the oscillation below which the best candidate stays the
      best (its log-odds over every other move by at most :math:`\lambda\omega`; ``inf`` at
      ``lam = 0``, ``0`` when not valid).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Thm. 3, Eq. (21).

    Example:
        >>> c = stability_certificate(2.0, 1.0, jnp.log(jnp.array([0.7, 0.2, 0.1])), True)
        >>> round(float(c["margin"]), 4), round(float(c["radius"]), 4)
        (1.2528, 0.6264)
    """
    lam, omega = jnp.asarray(lam), jnp.asarray(omega)
    top = jax.lax.top_k(log_posterior, min(2, log_posterior.shape[-1]))[0]
    margin = top[0] - top[1] if log_posterior.shape[-1] > 1 else jnp.asarray(jnp.inf)
    margin = jnp.where(jnp.isnan(margin), jnp.inf, margin)  # (-inf) - (-inf): no rival
    safe_lam = jnp.where(lam > 0, lam, 1.0)
    radius = jnp.where(lam > 0, margin / safe_lam, jnp.inf)  # Thm. 3, log-ratio claim
    tv_paper, tv_sharp = certified_tv(lam, omega, valid)
    return dict(
        lam=lam,
        omega=omega,
        log_ratio=jnp.where(valid, log_ratio_bound(lam, omega), jnp.inf),
        tv_paper=tv_paper,
        tv_sharp=tv_sharp,
        margin=margin,
        radius=jnp.where(valid, radius, 0.0),
        valid=jnp.asarray(valid),
    )
