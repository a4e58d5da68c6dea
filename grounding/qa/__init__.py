"""Grounded question answering: the loop and the systems built on it.

Shared parts first: the one outcome protocol (:class:`Outcome`), the pipeline every system is
built from (:mod:`~grounding.qa.pipeline`: one failure policy with one batch-then-one-by-one
rule, one evidence-per-retriever routine, one retriever signature), the calibration of
:math:`\\lambda` (:func:`fit_lambda`) and the metrics. Then four sibling systems on them, each
taking its own settings plus one :class:`~grounding.GroundingConfig`, none importing another:
:class:`GroundedQA` (:mod:`~grounding.qa.grounded`, the paper's loop), :class:`BlindQA`
(:mod:`~grounding.qa.blind`, blind questions with predicted relation chains),
:class:`PankRAG` (:mod:`~grounding.qa.decomposed`, decomposed questions on a binary graph) and
:class:`PRoH` (:mod:`~grounding.qa.hypergraph_reasoning`, planning and reasoning over a
knowledge hypergraph).

Where candidates come from (the model prior of Eq. (1)) is :mod:`grounding.prior`; how answer
texts are linked to entities, :mod:`grounding.language`. Their names a loop is built with
(:class:`~grounding.prior.Candidates`, the candidate models,
:class:`~grounding.language.AnswerLinker`) are re-exported here."""

from grounding.language import AnswerLinker, normalize_answer
from grounding.prior import (
    CandidateModel,
    CandidateModelError,
    Candidates,
    KGEAnswerer,
    LocalCandidateModel,
    OpenAICompatibleModel,
    QuestionLike,
)
from grounding.qa.blind import BlindOutcome, BlindQA
from grounding.qa.calibration import fit_lambda
from grounding.qa.decomposed import PankRAG, PankRAGOutcome, StepOutcome
from grounding.qa.grounded import GroundedQA, QAOutcome, grounding_problem
from grounding.qa.hypergraph_reasoning import PRoH, PRoHOutcome, Solution, StepAnswer
from grounding.qa.metrics import (
    answer_f1,
    answer_set,
    expected_calibration_error,
    risk_coverage,
    score_probabilities,
)
from grounding.qa.outcome import Outcome

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
