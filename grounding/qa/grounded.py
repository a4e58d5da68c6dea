r"""The paper's loop end to end: question -> candidates and prior -> retrieval -> evidence state
-> :func:`grounding.ground` -> answer or abstention, with supporting paths and a certificate.

:class:`GroundedQA` wires a :class:`~grounding.prior.CandidateModel` (the LLM's
:math:`p_\theta`, Eq. (1)) to a retriever (anything with ``retrieve(query, k)`` returning a
:class:`~grounding.retrieval.Retrieval`, e.g. :class:`~grounding.retrieval.PCR` from the topic
entity, or a function of the depth that builds one). A question with a relation chain is
grounded as claim chains ``topic -r_1-> * ... -r_T-> answer`` (Def. 1: typed walks of exactly
``T`` hops); a free-text question without one as answer candidates (walks of 1..``max_hops``
hops from the topic, of any relation type). The grounding settings are one
:class:`~grounding.GroundingConfig`; its default ``eps`` follows the support tolerance, so the
hard posterior of Eq. (6) keeps exactly the supported candidates.

Failures are per question (:mod:`grounding.qa.pipeline`): an error of one question's stage
becomes that question's outcome, an abstention whose ``reason`` names the stage and the error,
and the rest of the batch is answered as usual.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from grounding._checks import check_int
from grounding.evidence import EvidenceState
from grounding.graph import Triple
from grounding.prior.candidates import (
    CandidateModel,
    Candidates,
    QuestionLike,
    question_chain,
)
from grounding.problem import GroundingProblem, Realization
from grounding.qa._checks import (
    check_bool,
    check_config,
    check_has,
    check_questions,
    check_triples,
)
from grounding.qa.outcome import result_probabilities
from grounding.qa.pipeline import (
    QUESTION_ERRORS,
    Retrievers,
    RetrieverSpec,
    claim_chains,
    done_batch,
    failure,
    ground_questions,
    proposals,
    retrieve_or_fail,
    split_failures,
    unknown_entities,
)
from grounding.query import Query
from grounding.result import GroundingResult
from grounding.solver import GroundingConfig

__all__ = ["GroundedQA", "QAOutcome", "grounding_problem"]


@dataclasses.dataclass(frozen=True)
class QAOutcome:
    """One question through :class:`GroundedQA` (an :class:`~grounding.qa.Outcome`).

    Attributes:
        question: the question.
        candidates: what the candidate model proposed (or its abstention).
        result: the grounding result (``None`` when no grounding was reached).
        evidence: the evidence state the retriever built (``None`` when the model abstained
            or retrieval failed).
        reason: why no answer was produced (the model abstained or failed, retrieval or
            grounding failed, the topic is not in the graph), else ``None``. A candidate
            that is not in the graph is grounded as unsupported, not a reason.
    """

    question: Any
    candidates: Candidates
    result: GroundingResult | None
    evidence: EvidenceState | None = None
    reason: str | None = None

    @property
    def answer(self) -> str | None:
        """The grounded answer entity when :func:`grounding.ground` licenses one (Axiom 8:
        action ANSWER), else ``None`` (abstain, retrieve more, or verify)."""
        return None if self.result is None else self.result.answer

    @property
    def best(self) -> str | None:
        """The posterior's most probable candidate entity, whatever the action."""
        return None if self.result is None else self.candidates.entities[int(self.result.best)]

    def answer_probabilities(self, which: str = "soft") -> tuple[tuple[str, ...], np.ndarray]:
        """Answer entities and their probabilities, most probable first (none without a
        result, or when ``which`` is ``"hard"`` and the hard rule abstained)."""
        return result_probabilities(self.result, which)

    def probabilities(self, which: str = "soft") -> np.ndarray:
        """``[C]`` probabilities over the candidates: ``"prior"``, ``"soft"`` (Eq. (7)) or
        ``"hard"`` (Eq. (6); all zero when it is undefined). Empty without a result."""
        if self.result is None:
            return np.zeros(0)
        lp = {
            "prior": self.result.log_prior,
            "soft": self.result.log_posterior,
            "hard": self.result.hard_log_posterior,
        }[which]
        if lp is None:
            raise ValueError("no hard posterior: ground with eps set")
        return np.exp(np.asarray(lp, np.float64))

    def groundings(self) -> tuple[GroundingResult, ...]:
        """The groundings the answer comes from (for :func:`~grounding.qa.fit_lambda`)."""
        return () if self.result is None else (self.result,)


def grounding_problem(question: QuestionLike, candidates: Candidates, max_hops: int = 3):
    """The :class:`~grounding.GroundingProblem` of a question and its candidates: claim chains
    ``topic -r_1-> * ... -r_T-> a`` when the question has a relation chain, answer entities
    grounded from the topic (walks of 1..``max_hops`` edges of any relation type) when it has
    none (no ``chain`` attribute, or an empty one). The topic is the problem's anchor either
    way: a topic the evidence graph lacks is an error, a candidate it lacks is grounded as out
    of graph (unsupported).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Def. 1, Eq. (1).
    """
    if candidates.abstained:
        raise ValueError(f"the model abstained: {candidates.abstain_reason}")
    chain = question_chain(question)
    if chain:
        cands = claim_chains([(question.topic, a) for a in candidates.entities], chain)
        return GroundingProblem(
            question.text, cands, candidates.log_prior, anchors=(question.topic,)
        )
    return GroundingProblem(
        question.text,
        candidates.entities,
        candidates.log_prior,
        anchors=(question.topic,),
        max_hops=max_hops,
    )


class GroundedQA:
    """Question -> :class:`Candidates` -> retrieval -> evidence -> :func:`grounding.ground`.

    Args:
        model: the candidate model (prior).
        retriever: a retriever, or a function ``depth -> retriever`` (e.g. a path-constrained
            retriever as deep as the question's relation chain; ``max_hops`` for a question
            without one), called once per depth.
        config: the grounding settings (:class:`~grounding.GroundingConfig`).
        k_candidates: candidates asked of the model.
        k_nodes: nodes asked of the retriever.
        negative: counter-evidence triples added to every evidence state (Axiom 4).
        max_hops: walk length bound of a free-text question's answer candidates (and its
            retrieval depth).
        realization: an optional :class:`~grounding.Realization` for ``ground``.
        release_programs: release every compiled program of the process after each
            :meth:`answer_batch` (:func:`grounding.programs.release_programs`: the memory of
            a long-lived process returns to what it was; the next batch compiles again).

    Raises:
        TypeError, ValueError: an argument is of the wrong kind or out of range (the message
            names it).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Def. 1, Eqs. (1), (6), (7); Axiom 4.
    """

    def __init__(
        self,
        model: CandidateModel,
        retriever: RetrieverSpec,
        config: GroundingConfig,
        *,
        k_candidates: int = 20,
        k_nodes: int = 100,
        negative: frozenset[Triple] = frozenset(),
        max_hops: int = 3,
        realization: Realization | None = None,
        release_programs: bool = False,
    ):
        self.config, self.realization = check_config("GroundedQA", config, realization)
        self.release_programs = check_bool("release_programs", release_programs)
        check_has("model", model, "propose")
        self.model = model
        self.retriever = Retrievers(retriever)
        self.k_candidates = check_int(k_candidates, "k_candidates")
        self.k_nodes = check_int(k_nodes, "k_nodes")
        self.negative = check_triples(negative)
        self.max_hops = check_int(max_hops, "max_hops")

    def depth(self, question: QuestionLike) -> int:
        """The retrieval depth of a question: its relation chain's length, else ``max_hops``."""
        return len(question_chain(question)) or self.max_hops

    def evidence(self, question: QuestionLike) -> EvidenceState:
        """The retriever's evidence state for the question (plus the counter-evidence)."""
        state = self.retriever(self.depth(question)).retrieve(_query(question), self.k_nodes)
        return self._with_negative(state.evidence)

    def evidence_batch(self, questions: Sequence[QuestionLike]) -> list[EvidenceState | str]:
        """:meth:`evidence` of many questions (:func:`~grounding.qa.pipeline.retrieve_or_fail`:
        one batched call per retriever). A question whose retrieval fails gets the reason (a
        string) in place of its state."""
        return retrieve_or_fail(
            self.retriever,
            [self.depth(q) for q in questions],
            [_query(q) for q in questions],
            self.k_nodes,
            lambda r: self._with_negative(r.evidence),
        )

    def _with_negative(self, state: EvidenceState) -> EvidenceState:
        if not self.negative:
            return state
        return dataclasses.replace(state, negative=state.negative | self.negative)

    def answer(self, question: QuestionLike) -> QAOutcome:
        """Run one question through the loop."""
        return self.answer_batch([question])[0]

    def answer_batch(self, questions: Sequence[QuestionLike]) -> list[QAOutcome]:
        """Run many questions; grounding is batched (:func:`grounding.ground_batch`) over the
        questions whose model did not abstain. A question that fails (module docstring) gets
        an outcome with the reason; the others are answered as if it were not there."""
        questions = check_questions(questions)
        cands = proposals(self.model, questions, self.k_candidates)
        reasons = {i: c.abstain_reason for i, c in enumerate(cands) if c.abstained}
        asked = [i for i in range(len(questions)) if i not in reasons]
        found = self.evidence_batch([questions[i] for i in asked])
        states, failed = split_failures(asked, found)
        reasons.update(failed)
        problems: dict[int, GroundingProblem] = {}
        for i in states:
            got = _problem(questions[i], cands[i], states[i], self.max_hops)
            if isinstance(got, str):
                reasons[i] = got
            else:
                problems[i] = got
        results, failed = ground_questions(
            list(problems), problems, states, self.config, self.realization
        )
        reasons.update(failed)
        outcomes = [
            QAOutcome(q, c, results.get(i), states.get(i), reasons.get(i))
            for i, (q, c) in enumerate(zip(questions, cands))
        ]
        return done_batch(outcomes, self.release_programs)


def _query(question: QuestionLike) -> Query:
    """The retrieval query of a question: its own ``query()``, else its text and topic."""
    if hasattr(question, "query"):
        return question.query()
    return Query(question.text, anchor=question.topic)


def _problem(question, cands: Candidates, state: EvidenceState, max_hops: int):
    """The question's grounding problem, or why it cannot be grounded in ``state`` (a topic
    the evidence lacks; a candidate it lacks is grounded as out of graph)."""
    try:
        problem = grounding_problem(question, cands, max_hops)
    except QUESTION_ERRORS as err:
        return failure("grounding", err)
    return unknown_entities(problem, state) or problem
