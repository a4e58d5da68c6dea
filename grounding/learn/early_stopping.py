"""The training loop's shared parts: early stopping on a validation score and the divergence
check, used by every trainer of the package (the KG embeddings of :mod:`grounding.learn.kge`
and :mod:`grounding.learn.onevsall`, the learned triple retrievers of
:mod:`grounding.retrieval.learned`)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["EarlyStopping", "check_finite"]


@dataclasses.dataclass
class EarlyStopping:
    """Keeps the best state by a validation score (higher is better) and says when to stop:
    after ``patience`` evaluations in a row without a strictly better score.

    Example:
        >>> stop = EarlyStopping(patience=2)
        >>> [stop.update(epoch, score, f"state {epoch}") for epoch, score in
        ...  enumerate([0.1, 0.3, 0.2, 0.3])]
        [False, False, False, True]
        >>> stop.best_epoch, stop.best_score, stop.best_state
        (1, 0.3, 'state 1')
    """

    patience: int
    best_score: float = -math.inf
    best_state: Any = None
    best_epoch: int = -1
    since_best: int = 0

    def update(self, epoch: int, score: float, state: Any) -> bool:
        """Record one evaluation; ``True`` when training should stop."""
        if score > self.best_score:
            self.best_score, self.best_state, self.best_epoch = score, state, epoch
            self.since_best = 0
            return False
        self.since_best += 1
        return self.since_best >= self.patience


def check_finite(loss: float, params: Any, epoch: int, what: str) -> None:
    """Raise :class:`FloatingPointError` naming ``what`` and the epoch when the epoch's mean
    loss or any parameter is not finite."""
    finite = all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree_util.tree_leaves(params))
    if not (math.isfinite(loss) and finite):
        raise FloatingPointError(
            f"{what}: training diverged at epoch {epoch} (loss {loss}, parameters "
            f"{'finite' if finite else 'non-finite'}); lower the learning rate"
        )
