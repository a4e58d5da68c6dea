"""The outcomes of :class:`~grounding.qa.PRoH`: a step resolved from given anchors
(:class:`StepAnswer`), a completed reasoning trajectory (:class:`Solution`) and the question's
(:class:`PRoHOutcome`, an :class:`~grounding.qa.Outcome`), with the mixture of solutions."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

from grounding.plans import Plan
from grounding.problem import GroundingProblem
from grounding.qa.outcome import WHICH, no_answer
from grounding.result import GroundingResult
from grounding.retrieval import HyperPath

__all__ = ["PRoHOutcome", "Solution", "StepAnswer", "mix"]


@dataclasses.dataclass(frozen=True, eq=False)
class StepAnswer:
    """A step resolved from given anchors: answers (best first) and their probabilities, the
    beam's paths, the grounding (``None`` when nothing was found) and why nothing was."""

    answers: tuple[str, ...]
    probs: np.ndarray
    paths: tuple[HyperPath, ...]
    result: GroundingResult | None
    problem: GroundingProblem | None
    reason: str | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class Solution:
    """A completed reasoning trajectory: its plan, the answers chosen for the steps before the
    last level, its score (sum of their log-probabilities) and the final step's answers."""

    plan: Plan
    chosen: dict[str, str]
    score: float
    final: StepAnswer


@dataclasses.dataclass(frozen=True, eq=False)
class PRoHOutcome:
    """A question through :class:`PRoH` (an :class:`~grounding.qa.Outcome`): its plans, the
    solutions found, their mixture's answers (most probable first) and probabilities, the
    states the search visited, and why there is no answer. Its budget: ``ground_calls``, the
    steps grounded (each distinct step once), and ``hyperedges_read``, the distinct hyperedges
    of every evidence state those groundings read."""

    question: object
    plans: tuple[Plan, ...]
    solutions: tuple[Solution, ...]
    answers: tuple[str, ...]
    probs: np.ndarray
    states_visited: int
    reason: str | None = None
    ground_calls: int = 0
    hyperedges_read: int = 0

    @property
    def answer(self) -> str | None:
        """The most probable answer entity of the mixture (``None``: no answer)."""
        return self.answers[0] if self.answers else None

    def answer_probabilities(self, which: str = "soft") -> tuple[tuple[str, ...], np.ndarray]:
        """The answers and probabilities of the solutions' final steps mixed by their scores:
        ``"soft"`` the resolved mixture (:attr:`answers`, :attr:`probs`); ``"prior"`` and
        ``"hard"`` the same mixture of the final groundings' distributions."""
        if which not in WHICH:
            raise ValueError(f"which must be one of {WHICH}, got {which!r:.100}")
        if which == "soft":
            return (self.answers, self.probs) if self.answers else no_answer()
        finals = [s.final.result for s in self.solutions]
        dists = [
            r.answer_probabilities(which)
            if r is not None and not (which == "hard" and bool(r.hard_abstained))
            else no_answer()
            for r in finals
        ]
        return mix([s.score for s in self.solutions], dists)

    def groundings(self) -> tuple[GroundingResult, ...]:
        """The groundings the answer comes from: each solution's final step."""
        return tuple(s.final.result for s in self.solutions if s.final.result is not None)


def mix(
    scores: Sequence[float], dists: Sequence[tuple[Sequence[str], np.ndarray]]
) -> tuple[tuple[str, ...], np.ndarray]:
    """Answer distributions mixed with weights :math:`\\propto e^{\text{score}}`, most
    probable first (ties: first seen first)."""
    if not len(scores):
        return no_answer()
    weights = np.asarray(scores, np.float64)
    weights = np.exp(weights - logsumexp(weights))
    mass: dict[str, float] = {}
    for w, (answers, probs) in zip(weights, dists):
        for a, p in zip(answers, probs):
            mass[a] = mass.get(a, 0.0) + float(w * p)
    order = sorted(mass, key=lambda a: -mass[a])
    return tuple(order), np.array([mass[a] for a in order])
