"""Constructed instances at which the paper's bounds (or our sharp versions) are attained."""

from __future__ import annotations

import numpy as np

__all__ = ["thm3_sharp_instance"]


def thm3_sharp_instance(lam_omega: float, lam: float = 1.0):
    r"""Two candidates where :math:`\mathrm{TV}(P^R_\lambda, P^{R'}_\lambda) = \tanh(\lambda\omega/4)` exactly.

    :math:`E_{R'} = 0`, :math:`E_R = (0, \omega)`, and the prior equals the reference posterior
    :math:`Q = (1/(1+\sqrt b), \sqrt b/(1+\sqrt b))` (the larger mass on the candidate whose
    energy rises) with :math:`b = e^{\lambda\omega}` (see
    :func:`grounding.bounds.tv_bound_sharp`).

    Returns:
        ``(log_prior, energy_r, energy_r2, lam)``.
    """
    omega = lam_omega / lam
    root_b = np.exp(lam_omega / 2.0)
    q = np.array([1 / (1 + root_b), root_b / (1 + root_b)])
    return np.log(q), np.array([0.0, omega]), np.zeros(2), lam
