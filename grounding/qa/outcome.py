"""The one outcome protocol: what every question-answering system of :mod:`grounding.qa`
returns for a question, read the same way whatever the system.

An outcome has the ``question`` it answers, its ``answer`` (an entity of the graph, or
``None`` when the system gives none: :class:`~grounding.qa.GroundedQA` and
:class:`~grounding.qa.BlindQA` answer when the decision rule licenses it, Axiom 8;
:class:`~grounding.qa.PankRAG` and :class:`~grounding.qa.PRoH`, which apply no decision rule to
their final distribution, give its most probable entity), ``answer_probabilities(which)`` (the answer entities,
most probable first, and their probabilities under the prior, the soft grounded posterior
(Eq. (7)) or the hard one (Eq. (6))) and its ``reason`` (why there is no answer, else
``None``), and ``groundings()``, the :class:`~grounding.GroundingResult` objects its answer
comes from. Scoring, calibration (:func:`grounding.qa.fit_lambda`) and the metrics read
outcomes only through it.

References:
    Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eqs. (1), (6),
    (7).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from grounding.result import GroundingResult

__all__ = ["Outcome", "WHICH", "no_answer", "result_probabilities"]

#: The distributions an outcome reports: the prior (Eq. (1)), soft (Eq. (7)) and hard (Eq. (6)).
WHICH = ("prior", "soft", "hard")


@runtime_checkable
class Outcome(Protocol):
    """A question through a system (module docstring)."""

    question: Any
    reason: str | None

    @property
    def answer(self) -> str | None: ...

    def answer_probabilities(self, which: str = "soft") -> tuple[tuple[str, ...], np.ndarray]: ...

    def groundings(self) -> tuple[GroundingResult, ...]: ...


def no_answer() -> tuple[tuple[str, ...], np.ndarray]:
    """The answer distribution of an outcome without one: no entity, no mass."""
    return (), np.zeros(0)


def result_probabilities(
    result: GroundingResult | None, which: str
) -> tuple[tuple[str, ...], np.ndarray]:
    """:meth:`~grounding.GroundingResult.answer_probabilities` of ``result`` (none without
    one; none either when ``which`` is ``"hard"`` and the hard rule abstained, Eq. (6)
    undefined)."""
    if which not in WHICH:
        raise ValueError(f"which must be one of {WHICH}, got {which!r:.100}")
    if result is None or (which == "hard" and bool(result.hard_abstained)):
        return no_answer()
    return result.answer_probabilities(which)
