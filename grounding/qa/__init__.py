"""Grounded question answering, in two layers.

Shared parts first: candidate models (the paper's LLM prior; :class:`KGEAnswerer` offline,
:class:`OpenAICompatibleModel` over any OpenAI-compatible endpoint,
:class:`LocalCandidateModel` with a small language model in-process), answer linking for any
model that answers in text (:class:`AnswerLinker`, :meth:`Candidates.from_answers`: an answer
naming no entity stays a candidate, out of graph), the one outcome protocol
(:class:`Outcome`), the pipeline every system is built from (:mod:`~grounding.qa.pipeline`:
one failure policy, one evidence-per-retriever routine, one retriever signature), the
calibration of :math:`\\lambda` (:func:`fit_lambda`) and the metrics. Then four sibling systems
on them, each taking its own settings plus one :class:`~grounding.GroundingConfig`, none
importing another: :class:`GroundedQA` (:mod:`~grounding.qa.grounded`, the paper's loop),
:class:`BlindQA` (:mod:`~grounding.qa.blind`, blind questions with predicted relation chains),
:class:`PankRAG` (:mod:`~grounding.qa.decomposed`, decomposed questions on a binary graph) and
:class:`PRoH` (:mod:`~grounding.qa.hypergraph_reasoning`, planning and reasoning over a
knowledge hypergraph)."""

from grounding.qa.answerer import KGEAnswerer
from grounding.qa.blind import BlindOutcome, BlindQA
from grounding.qa.calibration import fit_lambda
from grounding.qa.candidates import CandidateModel, CandidateModelError, Candidates, QuestionLike
from grounding.qa.decomposed import PankRAG, PankRAGOutcome, StepOutcome
from grounding.qa.grounded import GroundedQA, QAOutcome, grounding_problem
from grounding.qa.hypergraph_reasoning import PRoH, PRoHOutcome, Solution, StepAnswer
from grounding.qa.linking import AnswerLinker, normalize_answer
from grounding.qa.local_model import LocalCandidateModel
from grounding.qa.metrics import (
    answer_f1,
    answer_set,
    expected_calibration_error,
    risk_coverage,
    score_probabilities,
)
from grounding.qa.outcome import Outcome
from grounding.qa.remote_model import OpenAICompatibleModel

__all__ = [
    "Candidates",
    "CandidateModel",
    "CandidateModelError",
    "QuestionLike",
    "AnswerLinker",
    "normalize_answer",
    "KGEAnswerer",
    "OpenAICompatibleModel",
    "LocalCandidateModel",
    "Outcome",
    "fit_lambda",
    "GroundedQA",
    "QAOutcome",
    "BlindQA",
    "BlindOutcome",
    "grounding_problem",
    "PankRAG",
    "PankRAGOutcome",
    "StepOutcome",
    "PRoH",
    "PRoHOutcome",
    "StepAnswer",
    "Solution",
    "answer_set",
    "answer_f1",
    "score_probabilities",
    "risk_coverage",
    "expected_calibration_error",
]
