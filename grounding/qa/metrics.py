r"""Metrics of grounded question answering: Hits@1, answer-set F1, selective prediction
(risk-coverage and its area, the abstention rule of Eq. (22)), and calibration (ECE).

Abstentions are never dropped: an abstained question counts as answered wrongly with
confidence 0 (it is the last to be covered on a risk-coverage curve), so every metric is over
all questions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grounding._checks import check_int

__all__ = [
    "answer_set",
    "answer_f1",
    "risk_coverage",
    "expected_calibration_error",
    "score_probabilities",
]


def _check_probs(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, np.float64)
    if p.ndim != 1 or np.isnan(p).any() or (p < 0).any() or p.sum() > 1 + 1e-6:
        raise ValueError(f"probabilities must be a [C] vector of masses summing to <= 1, got {p}")
    return p


def _check_names(names: Sequence[str], name: str) -> Sequence[str]:
    """A sequence of entity names: a bare string (whose characters would be read as names) is
    a ``TypeError`` naming the argument."""
    if isinstance(names, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of answer names, not a string: {names!r:.100}")
    return names


def answer_set(names: Sequence[str], probs: np.ndarray, ratio: float = 0.5) -> tuple[str, ...]:
    """The predicted answer set: every candidate with probability at least ``ratio`` times the
    best one's (empty when all probabilities are 0)."""
    _check_names(names, "names")
    p = _check_probs(probs)
    if len(names) != len(p):
        raise ValueError(f"{len(names)} names but {len(p)} probabilities")
    if not 0 < ratio <= 1:
        raise ValueError(f"ratio must be in (0, 1], got {ratio!r}")
    if not len(p) or p.max() <= 0:
        return ()
    return tuple(n for n, x in zip(names, p) if x >= ratio * p.max())


def answer_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """F1 of a predicted answer set against the gold set (0 when either is empty).

    Example:
        >>> answer_f1(["a", "b"], ["b", "c", "d"])
        0.4
    """
    pred = set(_check_names(predicted, "predicted"))
    ref = set(_check_names(gold, "gold"))
    hit = len(pred & ref)
    if not hit:
        return 0.0
    precision, recall = hit / len(pred), hit / len(ref)
    return 2 * precision * recall / (precision + recall)


def score_probabilities(
    names: Sequence[str], probs: np.ndarray, gold: Sequence[str], abstained: bool = False
) -> dict[str, float]:
    """``hit`` (top candidate is a gold answer), ``f1`` of :func:`answer_set`, ``confidence``
    (top probability) for one question; an abstention scores 0, 0, 0."""
    _check_names(names, "names")
    _check_names(gold, "gold")
    if abstained:
        return dict(hit=0.0, f1=0.0, confidence=0.0, abstained=1.0)
    p = _check_probs(probs)
    if len(names) != len(p):
        raise ValueError(f"{len(names)} names but {len(p)} probabilities")
    if not len(p) or p.max() <= 0:
        return dict(hit=0.0, f1=0.0, confidence=0.0, abstained=1.0)
    gold_set = set(gold)
    top = int(np.argmax(p))
    return dict(
        hit=float(names[top] in gold_set),
        f1=answer_f1(answer_set(names, p), gold),
        confidence=float(p[top]),
        abstained=0.0,
    )


def risk_coverage(confidence: np.ndarray, correct: np.ndarray) -> dict[str, np.ndarray | float]:
    r"""Selective prediction: answer the most confident questions first, abstain on the rest
    (a confidence threshold, the rule of Eq. (22)). ``coverage[i] = (i+1)/n`` and ``risk[i]``
    the error rate among the ``i+1`` most confident; ``aurc`` the mean risk over all
    coverages (area under the curve, lower is better). Ties in confidence are answered
    together (the risk of a tied block is its mean).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (22), Prop. 9.

    Example:
        >>> r = risk_coverage(np.array([0.9, 0.8, 0.1]), np.array([1, 0, 1]))
        >>> r["risk"].round(3).tolist(), round(r["aurc"], 3)
        ([0.0, 0.5, 0.333], 0.278)
    """
    c = np.asarray(confidence, np.float64)
    y = np.asarray(correct, np.float64)
    if c.ndim != 1 or c.shape != y.shape or not len(c):
        raise ValueError(
            f"confidence and correct must be equal, non-empty [n], got {c.shape}, {y.shape}"
        )
    if np.isnan(c).any() or not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("confidence must not be NaN and correct must be 0/1")
    order = np.argsort(-c, kind="stable")
    c, errors = c[order], 1.0 - y[order]
    n = len(c)
    cum = np.cumsum(errors)
    # ties: every position of a tied block gets the block's mean error-rate increment
    _, start, counts = np.unique(-c, return_index=True, return_counts=True)
    cum_tied = cum.copy()
    for s, k in zip(start, counts):
        before = cum[s - 1] if s else 0.0
        cum_tied[s : s + k] = before + (cum[s + k - 1] - before) * np.arange(1, k + 1) / k
    coverage = np.arange(1, n + 1) / n
    risk = cum_tied / np.arange(1, n + 1)
    return dict(coverage=coverage, risk=risk, aurc=float(risk.mean()))


def expected_calibration_error(
    confidence: np.ndarray, correct: np.ndarray, n_bins: int = 10
) -> float:
    """ECE with ``n_bins`` equal-width confidence bins: the bin-size-weighted mean of
    ``|accuracy - mean confidence|``. ``confidence`` lies in ``[0, 1]``, ``correct`` is 0/1
    and ``n_bins`` a positive int (else a ``ValueError`` naming the argument).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Prop. 9 (the calibration it assumes).

    Example:
        >>> expected_calibration_error(np.array([0.9, 0.9, 0.2]), np.array([1, 0, 0]))
        0.333...
    """
    c = np.asarray(confidence, np.float64)
    y = np.asarray(correct, np.float64)
    if c.shape != y.shape or c.ndim != 1 or not len(c):
        raise ValueError("confidence and correct must be equal, non-empty [n] vectors")
    if (c < 0).any() or (c > 1).any() or np.isnan(c).any():
        raise ValueError("confidence must lie in [0, 1]")
    if not np.isin(y, (0.0, 1.0)).all():
        bad = y[~np.isin(y, (0.0, 1.0))][:5].tolist()
        raise ValueError(f"correct must be 0/1 (or bool), got {bad}")
    n_bins = check_int(n_bins, "n_bins")
    bins = np.minimum((c * n_bins).astype(int), n_bins - 1)
    ece = 0.0
    for b in np.unique(bins):
        m = bins == b
        ece += m.mean() * abs(y[m].mean() - c[m].mean())
    return float(ece)
