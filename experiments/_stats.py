"""Interval estimates shared by the experiments and the development scripts (NumPy and the
standard library only, so ``scripts/`` can import it without JAX)."""

from __future__ import annotations

import math
from collections.abc import Sequence

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


def seed_bootstrap(
    a: Sequence[np.ndarray], b: Sequence[np.ndarray], n: int = 2000, seed: int = 0
) -> dict:
    """Mean of ``a - b`` over paired questions pooled across training seeds, with a 95 %
    two-level percentile bootstrap interval: each replicate draws seeds with replacement, then
    questions with replacement within each drawn seed, so the interval carries the training
    variance between seeds as well as the sampling of questions. ``a[s]``, ``b[s]``: seed
    ``s``'s per-question values. With one seed it is :func:`paired_bootstrap`."""
    d = [np.asarray(x, float) - np.asarray(y, float) for x, y in zip(a, b, strict=True)]
    if len(d) == 1:
        return paired_bootstrap(a[0], b[0], n, seed) | dict(seeds=1)
    rng = np.random.default_rng(seed)
    means = np.empty(n)
    for i in range(n):
        picked = [d[s] for s in rng.integers(0, len(d), len(d))]
        total = sum(x[rng.integers(0, len(x), len(x))].sum() for x in picked)
        means[i] = total / sum(len(x) for x in picked)
    lo, hi = np.percentile(means, [2.5, 97.5])
    pooled = np.concatenate(d)
    return dict(
        diff=float(pooled.mean()),
        ci=(float(lo), float(hi)),
        n=len(pooled),
        seeds=len(d),
        resolved=bool(lo > 0 or hi < 0),
    )
