"""What training a :class:`~grounding.retrieval.TripleRetriever` follows and what it reports:
the schedule (:class:`RetrieverTrainConfig`, SubgraphRAG's optimizer, loss and stopping rule)
and the log of a run (:class:`TrainLog`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from grounding._checks import check_int
from grounding.retrieval.learned.prepared import LABELS

__all__ = ["RetrieverTrainConfig", "TrainLog"]


@dataclasses.dataclass(frozen=True)
class RetrieverTrainConfig:
    """Training schedule (SubgraphRAG's optimizer, loss and stopping rule).

    Attributes:
        epochs: maximum epochs.
        lr: Adam learning rate.
        patience: epochs without a better validation recall@``eval_k`` before stopping.
        batch_size: questions per step (a batch holds questions of one bucket shape).
        eval_k: the ``K`` of the stopping criterion.
        seed: shuffling.
        labels: ``"all"`` (every fact on a shortest topic–answer path is positive) or
            ``"pair"`` (SubgraphRAG's exact labels: one fact per entity pair).

    References:
        Li, Miao & Li, "Simple is Effective: The Roles of Graphs and Large Language Models in
            Knowledge-Graph-Based Retrieval-Augmented Generation", 2025.
    """

    epochs: int = 50
    lr: float = 1e-3
    patience: int = 10
    batch_size: int = 4
    eval_k: int = 100
    seed: int = 0
    labels: str = "all"

    def __post_init__(self) -> None:
        for name in ("epochs", "patience", "batch_size", "eval_k"):
            check_int(getattr(self, name), name)
        if self.labels not in LABELS:
            raise ValueError(f"labels must be one of {LABELS}, got {self.labels!r}")
        if not (isinstance(self.lr, (int, float)) and np.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite positive number, got {self.lr!r}")


@dataclasses.dataclass
class TrainLog:
    """What :meth:`TripleRetriever.fit` did: per-epoch loss and validation recall, the best
    epoch, whether the stopping rule fired, questions skipped (no path), wall time (all of
    it; the epochs' alone: training steps, compiling and per-epoch validation, without
    preparing the questions; and each epoch's), and the epochs resumed from a checkpoint."""

    loss: list[float] = dataclasses.field(default_factory=list)
    valid_recall: list[float] = dataclasses.field(default_factory=list)
    best_epoch: int = -1
    stopped: bool = False
    n_train: int = 0
    n_skipped: int = 0
    seconds: float = 0.0
    train_seconds: float = 0.0
    epoch_seconds: list[float] = dataclasses.field(default_factory=list)
    resumed_epochs: int = 0

    @property
    def epochs_per_second(self) -> float:
        return len(self.loss) / self.seconds if self.seconds else float("nan")

    @property
    def question_epochs_per_second(self) -> float:
        """Training questions times the epochs run in this call, per second of the epochs."""
        run = len(self.loss) - self.resumed_epochs
        return self.n_train * run / self.train_seconds if self.train_seconds else float("nan")
