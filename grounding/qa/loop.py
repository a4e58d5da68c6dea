r"""The paper's loop end to end: question -> candidates and prior -> retrieval -> evidence state
-> :func:`grounding.ground` -> answer or abstention, with supporting paths and a certificate.

:class:`GroundedQA` wires a :class:`~grounding.qa.CandidateModel` (the LLM's
:math:`p_\theta`, Eq. (1)) to a retriever (anything with ``retrieve(query, k)`` returning a
:class:`~grounding.retrieval.Retrieval`, e.g. :class:`~grounding.retrieval.PCR` from the topic
entity). A question with a relation chain is grounded as claim chains
``topic -r_1-> * ... -r_T-> answer`` (Def. 1: typed walks of exactly ``T`` hops); a free-text
question without one as answer candidates (walks of 1..``max_hops`` hops from the topic, of
any relation type). The grounding parameters go to :func:`grounding.ground` unchanged.

The hard posterior of Eq. (6) is computed too. Its tolerance ``eps`` defaults to the status
tolerance (``eps_s``, itself ``kappa`` by default), so that hard grounding keeps exactly the
candidates whose status is supported: a walk over edges of reliability below 1 has a positive
energy, and a tolerance of 0 would keep no candidate at all (the hard posterior undefined,
``result.hard_abstained``) whenever the evidence is uncertain. Pass ``eps=0.0`` for the
strict rule (only walks over edges of reliability 1 support), ``eps=None`` for none.

Failures are per question: an error of one question's stage (:data:`QUESTION_ERRORS`: the
candidate model failing, an entity missing from the graph, a retriever or ``ground`` refusing
that question's data) becomes that question's outcome, an abstention whose ``reason`` names the
stage and the error, and the rest of the batch is answered as usual. Nothing is retried except
grounding: when the batched :func:`grounding.ground_batch` fails, each question is grounded
alone, so that only the failing ones lose their answer. Other exceptions (programming errors
such as ``TypeError``) propagate. The configuration is checked when a loop is built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from grounding._checks import check_int
from grounding.evidence import EvidenceState
from grounding.graph import Triple
from grounding.problem import ClaimChain, GroundingProblem
from grounding.qa._checks import (
    QUESTION_ERRORS,
    SUPPORT_TOLERANCE,
    check_ground_kwargs,
    check_has,
    check_questions,
    check_triples,
    checked_candidates,
    failure,
)
from grounding.qa.candidates import CandidateModel, Candidates, QuestionLike, question_chain
from grounding.query import Query
from grounding.result import GroundingResult
from grounding.retrieval.base import Retriever, compact_evidence_batch
from grounding.solver import ground, ground_batch

__all__ = [
    "GroundedQA",
    "QAOutcome",
    "QUESTION_ERRORS",
    "grounding_problem",
    "compact_evidence",
    "ground_many",
]


@dataclasses.dataclass(frozen=True)
class QAOutcome:
    """One question through the loop.

    Attributes:
        question: the question.
        candidates: what the candidate model proposed (or its abstention).
        result: the grounding result (``None`` when the model abstained).
        evidence: the evidence state the retriever built (``None`` when the model abstained
            or retrieval failed).
        reason: why no answer was produced (the model abstained or failed, retrieval or
            grounding failed, a candidate is not in the graph), else ``None``.
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
        if self.result is None or self.result.answer is None:
            return None
        return self.candidates.entities[int(self.result.best)]

    @property
    def best(self) -> str | None:
        """The posterior's most probable candidate entity, whatever the action."""
        return None if self.result is None else self.candidates.entities[int(self.result.best)]

    def probabilities(self, which: str = "soft") -> np.ndarray:
        """``[C]`` probabilities over the candidates: ``"prior"``, ``"soft"`` (Eq. (7)) or
        ``"hard"`` (Eq. (6); all zero when it is undefined). Empty on abstention."""
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


def grounding_problem(question: QuestionLike, candidates: Candidates, max_hops: int = 3):
    """The :class:`~grounding.GroundingProblem` of a question and its candidates: claim chains
    ``topic -r_1-> * ... -r_T-> a`` when the question has a relation chain, answer entities
    grounded from the topic (walks of 1..``max_hops`` edges of any relation type) when it has
    none (no ``chain`` attribute, or an empty one).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Def. 1, Eq. (1).
    """
    if candidates.abstained:
        raise ValueError(f"the model abstained: {candidates.abstain_reason}")
    chain = question_chain(question)
    if chain:
        mid = (None,) * (len(chain) - 1)
        cands = tuple(ClaimChain((question.topic, *mid, a), chain) for a in candidates.entities)
        return GroundingProblem(question.text, cands, candidates.log_prior)
    return GroundingProblem(
        question.text,
        candidates.entities,
        candidates.log_prior,
        anchors=(question.topic,),
        max_hops=max_hops,
    )


def compact_evidence(state: EvidenceState, keep: Sequence[str] = (), min_size: int = 64):
    """The same evidence over a small vocabulary: the entities its edges touch and ``keep``
    (the problem's entities), in their original order, padded with isolated placeholder
    entities to a power of two (``>= min_size``) so that questions of similar size share one
    compiled program. Grounding results are unchanged: walks only use edges, and every entity
    a problem names is kept. (One state of
    :func:`~grounding.retrieval.base.compact_evidence_batch`.)"""
    return compact_evidence_batch([state], [keep], min_size)[0]


def ground_many(
    problems: Sequence[GroundingProblem], states: Sequence[EvidenceState], **ground_kwargs: Any
) -> list[GroundingResult]:
    """:func:`grounding.ground` of each problem on its evidence state, batched: the states are
    compacted once (:func:`~grounding.retrieval.base.compact_evidence_batch`) to one vocabulary size
    so that problems of the same kind share one :func:`grounding.ground_batch` program. Same
    results as grounding them one by one."""
    if len(problems) != len(states):
        raise ValueError(f"{len(problems)} problems but {len(states)} evidence states")
    compact = compact_evidence_batch(states, [p.entities() for p in problems])
    results: dict[int, GroundingResult] = {}
    by_kind: dict[str, list[int]] = {}
    for i, p in enumerate(problems):
        by_kind.setdefault(p.kind, []).append(i)
    for group in by_kind.values():
        if len(group) == 1:
            i = group[0]
            results[i] = ground(problems[i], compact[i], **ground_kwargs)
            continue
        out = ground_batch(
            [problems[i] for i in group], [compact[i] for i in group], **ground_kwargs
        )
        results.update(zip(group, out))
    return [results[i] for i in range(len(problems))]


def ground_live(
    problems: dict[int, GroundingProblem],
    states: Mapping[int, EvidenceState],
    reasons: dict[int, str],
    **ground_kwargs: Any,
) -> dict[int, GroundingResult]:
    """:func:`ground_each` of the problems (keyed by question index) on their states: the
    results by index; a problem that cannot be grounded gets its reason in ``reasons``."""
    live = list(problems)
    grounded = ground_each([problems[i] for i in live], [states[i] for i in live], **ground_kwargs)
    results = {}
    for i, r in zip(live, grounded):
        if isinstance(r, str):
            reasons[i] = r
        else:
            results[i] = r
    return results


def ground_each(
    problems: Sequence[GroundingProblem], states: Sequence[EvidenceState], **ground_kwargs: Any
) -> list[GroundingResult | str]:
    """:func:`ground_many`; when the batch fails, each problem is grounded alone, and a problem
    that cannot be grounded gets the reason (a string) in place of its result."""
    if len(problems) > 1:
        try:
            return ground_many(problems, states, **ground_kwargs)
        except QUESTION_ERRORS:
            pass  # find the failing problems: ground them one by one
    out: list[GroundingResult | str] = []
    for p, s in zip(problems, states):
        try:
            out.append(ground_many([p], [s], **ground_kwargs)[0])
        except QUESTION_ERRORS as err:
            out.append(failure("grounding", err))
    return out


def unknown_entities(problem: GroundingProblem, state: EvidenceState) -> str | None:
    """Why ``problem`` cannot be grounded in ``state`` when it names entities the evidence
    graph lacks (the topic or candidates), else ``None``."""
    g = state.graph
    missing = list(dict.fromkeys(e for e in problem.entities() if not g.has_entity(e)))
    if not missing:
        return None
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    shown = ", ".join(repr(e)[:100] for e in missing[:5])
    if len(missing) == 1:
        return f"entity {shown} is not in the evidence graph"
    return f"entities {shown}{more} are not in the evidence graph"


class GroundedQA:
    """Question -> :class:`Candidates` -> retrieval -> evidence -> :func:`grounding.ground`.

    Args:
        model: the candidate model (prior).
        retriever: a retriever, or a function ``question -> retriever`` (e.g. a path-constrained
            retriever whose depth is the question's hop count).
        k_candidates: candidates asked of the model.
        k_nodes: nodes asked of the retriever.
        negative: counter-evidence triples added to every evidence state (Axiom 4).
        ground_kwargs: the grounding settings: ``config=`` a :class:`~grounding.GroundingConfig`
            and/or its fields as keywords (``lam`` and ``kappa`` required without a config;
            ``eps`` then defaults to the status tolerance ``eps_s``, or ``kappa``, so the hard
            posterior is computed too and keeps the supported candidates: see the module
            docstring), and an optional ``realization``; checked here, once.

    Raises:
        TypeError, ValueError: an argument is of the wrong kind or out of range, or a ground
            parameter is unknown or invalid (the message names it).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Def. 1, Eqs. (1), (6), (7); Axiom 4.
    """

    def __init__(
        self,
        model: CandidateModel,
        retriever: Retriever | Callable[[QuestionLike], Retriever],
        *,
        k_candidates: int = 20,
        k_nodes: int = 100,
        negative: frozenset[Triple] = frozenset(),
        **ground_kwargs: Any,
    ):
        ground_kwargs = check_ground_kwargs("GroundedQA", ground_kwargs, {"eps": SUPPORT_TOLERANCE})
        check_has("model", model, "propose")
        if not (callable(getattr(retriever, "retrieve", None)) or callable(retriever)):
            raise TypeError(
                f"retriever must have a retrieve() method or be a function of the question, "
                f"got {retriever!r:.100}"
            )
        self.model = model
        self._retriever = retriever
        self.k_candidates = check_int(k_candidates, "k_candidates")
        self.k_nodes = check_int(k_nodes, "k_nodes")
        self.negative = check_triples(negative)
        self.ground_kwargs = ground_kwargs  # {"config": GroundingConfig, ...}

    def retriever(self, question: QuestionLike) -> Retriever:
        r = self._retriever
        return r if hasattr(r, "retrieve") else r(question)  # type: ignore[operator, return-value]

    def evidence(self, question: QuestionLike) -> EvidenceState:
        """The retriever's evidence state for the question (plus the counter-evidence)."""
        state = self.retriever(question).retrieve(_query(question), self.k_nodes).evidence
        return self._with_negative(state)

    def evidence_batch(self, questions: Sequence[QuestionLike]) -> list[EvidenceState | str]:
        """:meth:`evidence` of many questions: one ``retrieve_batch`` call per retriever (a
        batched retriever, e.g. :class:`~grounding.retrieval.PCR` at a depth limit, computes
        every evidence state of the batch at once). A question whose retrieval fails gets the
        reason (a string) in place of its state."""
        out: list[EvidenceState | str] = [""] * len(questions)
        groups: dict[int, tuple[Any, list[int]]] = {}
        for j, q in enumerate(questions):
            try:
                r = self.retriever(q)
            except QUESTION_ERRORS as err:
                out[j] = failure("retrieval", err)
                continue
            groups.setdefault(id(r), (r, []))[1].append(j)
        for r, members in groups.values():
            queries = [_query(questions[j]) for j in members]
            try:
                batch = getattr(r, "retrieve_batch", None)
                got = batch(queries, self.k_nodes) if batch else None
                states = [self._with_negative(x.evidence) for x in got] if got else None
            except QUESTION_ERRORS:
                states = None  # find the failing questions: retrieve them one by one
            for j, q in enumerate(queries):
                out[members[j]] = states[j] if states else self._retrieve_one(r, q)
        return out

    def _retrieve_one(self, retriever, query: Query) -> EvidenceState | str:
        try:
            return self._with_negative(retriever.retrieve(query, self.k_nodes).evidence)
        except QUESTION_ERRORS as err:
            return failure("retrieval", err)

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
        cands = [self._propose(q) for q in questions]
        reasons = {i: c.abstain_reason for i, c in enumerate(cands) if c.abstained}
        asked = [i for i in range(len(questions)) if i not in reasons]
        found = self.evidence_batch([questions[i] for i in asked])
        states = {i: s for i, s in zip(asked, found) if not isinstance(s, str)}
        reasons.update({i: s for i, s in zip(asked, found) if isinstance(s, str)})
        problems: dict[int, GroundingProblem] = {}
        for i in states:
            got = _problem(questions[i], cands[i], states[i])
            if isinstance(got, str):
                reasons[i] = got
            else:
                problems[i] = got
        results = ground_live(problems, states, reasons, **self.ground_kwargs)
        return [
            QAOutcome(q, c, results.get(i), states.get(i), reasons.get(i))
            for i, (q, c) in enumerate(zip(questions, cands))
        ]

    def _propose(self, question: QuestionLike) -> Candidates:
        """The model's candidates, or an abstention naming the model's failure."""
        try:
            got = self.model.propose(question, self.k_candidates)
        except QUESTION_ERRORS as err:
            return Candidates.abstain(failure("candidate model", err))
        return checked_candidates(got)


def _query(question: QuestionLike) -> Query:
    """The retrieval query of a question: its own ``query()``, else its text and topic."""
    if hasattr(question, "query"):
        return question.query()
    return Query(question.text, anchor=question.topic)


def _problem(question, cands: Candidates, state: EvidenceState) -> GroundingProblem | str:
    """The question's grounding problem, or why it cannot be grounded in ``state`` (a
    candidate or topic the evidence lacks)."""
    try:
        problem = grounding_problem(question, cands)
    except QUESTION_ERRORS as err:
        return failure("grounding", err)
    return unknown_entities(problem, state) or problem
