"""Interval estimates shared by the experiments and the development scripts (NumPy and the
standard library only, so ``scripts/`` can import it without JAX)."""

from __future__ import annotations

import math

import numpy as np


def wilson(k: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion ``k / n`` (95 % at ``z = 1.96``).

    With ``n = 0`` there is no information, and the interval is the whole of ``[0, 1]``."""
    if n == 0:
        return 0.0, 1.0
    p, d = k / n, 1 + z * z / n
    mid = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, mid - half), min(1.0, mid + half)


def paired_bootstrap(a: np.ndarray, b: np.ndarray, n: int = 2000, seed: int = 0) -> dict:
    """Mean of ``a - b`` over paired questions with a 95 % percentile bootstrap interval
    (``resolved``: the interval excludes 0; otherwise "not resolved at this size")."""
    d = np.asarray(a, float) - np.asarray(b, float)
    idx = np.random.default_rng(seed).integers(0, len(d), (n, len(d)))
    lo, hi = np.percentile(d[idx].mean(axis=1), [2.5, 97.5])
    resolved = bool(lo > 0 or hi < 0)
    return dict(diff=float(d.mean()), ci=(float(lo), float(hi)), n=len(d), resolved=resolved)
