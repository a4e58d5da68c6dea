r"""Coverage (Eq. (15), Props. 4 and 11), suppression and amplification (Props. 14-15) and
the KL/energy trade-off (Prop. 13)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import check_energy, check_log_prob
from grounding._numerics import logsumexp
from grounding.posterior import expected_energy, gibbs_log_posterior, kl_divergence

__all__ = [
    "coverage_independent",
    "coverage_any_path",
    "soft_floor",
    "suppression_log_ratio_bound",
    "amplification",
    "constraint_tradeoff",
]


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
