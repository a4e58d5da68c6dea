"""The outcomes of :class:`~grounding.qa.PankRAG`: each resolved sub-question
(:class:`StepOutcome`) and the question's (:class:`PankRAGOutcome`, an
:class:`~grounding.qa.Outcome`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from grounding.plans import Plan, SubQuestion
from grounding.qa.outcome import no_answer, result_probabilities
from grounding.result import GroundingResult
from grounding.retrieval import Retrieval

__all__ = ["PankRAGOutcome", "StepOutcome"]


@dataclasses.dataclass(frozen=True, eq=False)
class StepOutcome:
    """One resolved sub-question.

    Attributes:
        step: the sub-question (``None`` when the question could not be planned).
        text: its text with the dependencies' top answers filled in.
        anchors: the entities it started from; ``anchor_weights`` their weights (sum 1).
        mode: ``"local"`` or ``"global"`` retrieval.
        retrieval: what was kept after reranking (or cutting) the pool; ``None`` when the step
            could not run.
        result: the grounding of its trajectories ``d -> a`` (``None`` when it could not run).
        answers: answer entities, most probable first; ``probs`` their probabilities.
        reason: why the step has no answer (``None`` when it has one).
        injected: whether ``answers`` were replaced by an injected error.
    """

    step: SubQuestion | None
    text: str
    anchors: tuple[str, ...]
    anchor_weights: np.ndarray
    mode: str
    retrieval: Retrieval | None
    result: GroundingResult | None
    answers: tuple[str, ...]
    probs: np.ndarray
    reason: str | None = None
    injected: bool = False

    @property
    def answer(self) -> str | None:
        return self.answers[0] if self.answers else None


@dataclasses.dataclass(frozen=True, eq=False)
class PankRAGOutcome:
    """A question through :class:`PankRAG` (an :class:`~grounding.qa.Outcome`): its plan and
    every step's outcome (``plan`` is ``None`` and ``steps`` empty when planning failed;
    ``failure`` says why). Its answer distribution is the final step's."""

    question: object
    plan: Plan | None
    steps: dict[str, StepOutcome]
    failure: str | None = None

    @property
    def final(self) -> StepOutcome:
        """The final step's outcome (without a plan: an outcome without answers whose reason
        is the planning failure)."""
        if self.plan is None:
            text = str(getattr(self.question, "text", self.question))
            return failed(None, text, (), np.zeros(0), "", None, self.failure)
        return self.steps[self.plan.final]

    @property
    def answer(self) -> str | None:
        """The most probable answer of the final step (``None``: no answer)."""
        return self.final.answer

    @property
    def reason(self) -> str | None:
        return self.final.reason

    def answer_probabilities(self, which: str = "soft") -> tuple[tuple[str, ...], np.ndarray]:
        """The final step's answer entities and probabilities, most probable first: ``"soft"``
        its resolved distribution (the grounded posterior's marginal, or the injected one),
        ``"prior"`` and ``"hard"`` its grounding's (none without one)."""
        final = self.final
        if which == "soft":
            return (final.answers, final.probs) if final.answers else no_answer()
        return result_probabilities(final.result, which)

    def groundings(self) -> tuple[GroundingResult, ...]:
        """The groundings the answer comes from: the final step's."""
        return () if self.final.result is None else (self.final.result,)


def failed(
    step: SubQuestion | None,
    text: str,
    anchors: tuple[str, ...],
    weights: np.ndarray,
    mode: str,
    got: Retrieval | None,
    why: str | None,
) -> StepOutcome:
    """A step's outcome without an answer, with the reason."""
    return StepOutcome(step, text, anchors, weights, mode, got, None, (), np.zeros(0), why)


def with_injected(out: StepOutcome, wrong: str, mass: float) -> StepOutcome:
    """``out`` with ``wrong`` holding ``mass`` of its answer probability."""
    rest = {a: (1 - mass) * p for a, p in zip(out.answers, out.probs) if a != wrong}
    probs = {wrong: mass + (1 - mass) * dict(zip(out.answers, out.probs)).get(wrong, 0.0), **rest}
    order = sorted(probs, key=lambda a: -probs[a])
    p = np.array([probs[a] for a in order])
    return dataclasses.replace(
        out, answers=tuple(order), probs=p / p.sum(), reason=None, injected=True
    )
