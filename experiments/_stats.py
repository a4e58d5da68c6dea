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


VERDICTS = ("holds", "fails", "not resolved", "not tested")


def verdict(
    ci: Sequence[float],
    paper: float | None,
    *,
    direction_only: bool = False,
    level: bool = False,
    tested: bool = True,
) -> str:
    """The one reading of a paper's claim against our 95 % interval (docs/results/index.md, "How
    verdicts are read"):

    - *not tested* when what ran is not the paper's mechanism (``tested=False``);
    - a difference with a size: *fails* when the interval excludes the paper's value, *holds*
      when it contains it and excludes 0 on its side, *not resolved* otherwise;
    - ``direction_only`` (the paper states a sign, no size): *holds* / *fails* when the
      interval excludes 0 on the paper's / the other side, *not resolved* when it holds 0;
    - ``level`` (a score, not a difference): *holds* when the interval contains the paper's
      value, *fails* otherwise.

    ``paper=None`` (a comparison no paper makes) has no verdict: ``""``.
    """
    lo, hi = float(ci[0]), float(ci[1])
    if not lo <= hi:
        raise ValueError(f"an interval needs low <= high, got {ci!r}")
    if not tested:
        return "not tested"
    if paper is None:
        return ""
    if level:
        return "holds" if lo <= paper <= hi else "fails"
    off_zero = lo > 0 or hi < 0
    if direction_only:
        if not off_zero:
            return "not resolved"
        return "holds" if (lo > 0) == (paper > 0) else "fails"
    if not lo <= paper <= hi:
        return "fails"
    return "holds" if off_zero else "not resolved"
