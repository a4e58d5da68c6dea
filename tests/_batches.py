"""Batches of candidate sets for the batch-axis tests (NumPy, deterministic from an rng)."""

from __future__ import annotations

import numpy as np


def prior_energy_rows(rng: np.random.Generator, n_rows: int = 3, n: int = 5):
    """``(log_prior, energy)``, each ``[n_rows, n]``: Dirichlet priors with about 30 % zero
    entries (candidate 0 always keeps mass) and energies on a 0.5 grid (ties)."""
    p = rng.dirichlet(np.ones(n), n_rows)
    p[rng.random((n_rows, n)) < 0.3] = 0.0
    p[:, 0] = np.maximum(p[:, 0], 0.1)
    p /= p.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        lp = np.log(p)
    return lp, np.round(rng.uniform(0, 2, (n_rows, n)) * 2) / 2
