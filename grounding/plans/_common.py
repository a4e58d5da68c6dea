"""Helpers shared by the blind predictors: :mod:`grounding.plans.relation_chains` and
:mod:`grounding.plans.role_chains` (unit-norm embeddings and the tempered softmax of their top
candidates' scores)."""

from __future__ import annotations

import numpy as np


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


def _tempered_softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    """:math:`\\mathrm{softmax}(s / T)` of the top candidates' scores (relation chains or role
    chains), shifted by the maximum so that no finite score overflows (empty in, empty out)."""
    s = np.asarray(scores, float)
    if not s.size:
        return s
    z = np.exp((s - s.max()) / temperature)
    return z / z.sum()
