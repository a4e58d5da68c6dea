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


#: Student's t quantile 0.975 by degrees of freedom (1-30, then 40, 60, 120; 1.96 beyond).
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
         16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074,
         23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045,
         30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}  # fmt: skip


def t975(df: float) -> float:
    """Student's t 0.975 quantile at ``df`` degrees of freedom, read at the largest tabled
    ``df`` not above it (so a fractional Welch ``df`` gives a slightly wider interval)."""
    if not df >= 1:
        raise ValueError(f"a t interval needs at least 1 degree of freedom, got {df!r}")
    return _T975[max(k for k in _T975 if k <= df)] if df < 1e9 else 1.96


def seed_t_interval(per_seed: Sequence[float]) -> dict:
    """The seed-level 95 % interval of a mean over training seeds: each seed's value (e.g. its
    mean paired difference over the test questions), mean +- t(S-1) s / sqrt(S). It reads the
    seeds as the sample, so it carries the training variance a question-level interval
    averages away; with few seeds it is wide. Needs at least two seeds."""
    x = np.asarray(per_seed, float)
    if len(x) < 2:
        raise ValueError(f"a seed-level interval needs at least 2 seeds, got {len(x)}")
    half = t975(len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    lo, hi = x.mean() - half, x.mean() + half
    return dict(diff=float(x.mean()), ci=(float(lo), float(hi)), seeds=len(x),
                per_seed=x.tolist(), resolved=bool(lo > 0 or hi < 0))  # fmt: skip


def paired_seed_interval(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> dict:
    """:func:`seed_t_interval` of the paired differences ``a[s] - b[s]``: each seed's mean
    difference over its questions (``a[s]``, ``b[s]``: seed ``s``'s per-question values) as
    one observation."""
    return seed_t_interval(
        [
            float(np.mean(np.asarray(x, float) - np.asarray(y, float)))
            for x, y in zip(a, b, strict=True)
        ]
    )


def welch_t_interval(a: tuple[float, float, int], b: tuple[float, float, int]) -> dict:
    """The seed-level 95 % interval of ``mean_a - mean_b`` from each side's mean, sample s.d.
    and number of seeds ``(mean, sd, n)`` (Welch: unequal variances, Welch-Satterthwaite
    degrees of freedom), for two systems trained on their own seeds."""
    (ma, sa, na), (mb, sb, nb) = a, b
    if na < 2 or nb < 2:
        raise ValueError(f"Welch's interval needs at least 2 seeds a side, got {na} and {nb}")
    va, vb = sa * sa / na, sb * sb / nb
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va * va / (na - 1) + vb * vb / (nb - 1)) if se > 0 else 1e9
    lo, hi = ma - mb - t975(df) * se, ma - mb + t975(df) * se
    return dict(diff=ma - mb, ci=(lo, hi), df=df, resolved=bool(lo > 0 or hi < 0))


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
