"""Grounded question answering: candidate models (the paper's LLM prior), the loop from a
question to a grounded answer or an abstention, the systems that compose a planner and
retrieval with it (:mod:`~grounding.qa.blind` on blind questions with predicted relation
paths, :mod:`~grounding.qa.decomposed` on a binary graph,
:mod:`~grounding.qa.hypergraph` on a knowledge hypergraph), and the metrics."""

from grounding.qa.answerer import KGEAnswerer
from grounding.qa.blind import BlindOutcome, BlindQA
from grounding.qa.candidates import CandidateModel, CandidateModelError, Candidates, QuestionLike
from grounding.qa.decomposed import PankRAG, PankRAGOutcome, StepOutcome
from grounding.qa.hypergraph import PRoH, PRoHOutcome, Solution, StepAnswer
from grounding.qa.loop import GroundedQA, QAOutcome, grounding_problem
from grounding.qa.metrics import (
    answer_f1,
    answer_set,
    expected_calibration_error,
    risk_coverage,
    score_probabilities,
)
from grounding.qa.openai import OpenAICompatibleModel

__all__ = [
    "Candidates",
    "CandidateModel",
    "CandidateModelError",
    "QuestionLike",
    "KGEAnswerer",
    "OpenAICompatibleModel",
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
