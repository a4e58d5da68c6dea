r"""The grounded QA loop on blind questions: a system sees a question's text and topic entity
(:class:`~grounding.query.BlindQuestion`) and nothing gold.

For each question, a :class:`~grounding.plans.RelationPathPredictor` gives the top ``k``
relation paths :math:`\pi_j` with probabilities :math:`w_j`; the answerer composes each path
from the topic and proposes its best ``k_candidates`` answers :math:`a` with
:math:`p(a \mid \pi_j)`; every candidate is the claim chain
:math:`\text{topic} \xrightarrow{\pi_j} a` with prior :math:`w_j\, p(a \mid \pi_j)`, so
competing paths meet in one posterior and the verifier checks each candidate's *own* claim
(Eq. (7)). Evidence is retrieved to the depth of the longest predicted path. An answer's
probability is the mass of the claims that reach it
(:meth:`~grounding.GroundingResult.answer_probabilities`).

References:
    Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Def. 1,
    Eqs. (1), (6), (7).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from grounding._checks import check_int
from grounding.evidence import EvidenceState
from grounding.plans import RelationPathPredictor
from grounding.problem import ClaimChain, GroundingProblem
from grounding.qa._checks import (
    QUESTION_ERRORS,
    SUPPORT_TOLERANCE,
    check_ground_kwargs,
    failure,
)
from grounding.qa.answerer import KGEAnswerer
from grounding.qa.loop import ground_live, unknown_entities
from grounding.query import BlindQuestion, Query
from grounding.result import GroundingResult
from grounding.retrieval.base import Retriever

__all__ = ["BlindQA", "BlindOutcome"]

Path = tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class BlindOutcome:
    """One blind question through the loop.

    Attributes:
        question: the blind question (text and topic).
        paths: the predicted ``(path, probability)`` pairs, best first.
        result: the grounding result (``None`` when no answer was produced).
        evidence: the retrieved evidence state (``None`` when retrieval was not reached).
        reason: why no answer was produced, else ``None``.
    """

    question: BlindQuestion
    paths: tuple[tuple[Path, float], ...]
    result: GroundingResult | None
    evidence: EvidenceState | None = None
    reason: str | None = None

    def answer_probabilities(self, which: str = "soft") -> tuple[tuple[str, ...], np.ndarray]:
        """Answer entities and their probabilities (empty when there is no result)."""
        if self.result is None:
            return (), np.zeros(0)
        return self.result.answer_probabilities(which)


class BlindQA:
    """Blind question → predicted relation paths → candidates claiming them → retrieval →
    :func:`grounding.ground` (see the module docstring).

    Args:
        answerer: composes a path from the topic (:meth:`KGEAnswerer.log_scores`).
        predictor: a fitted relation-path predictor.
        retriever: a retriever, or a function ``depth -> retriever`` (the depth is the longest
            predicted path's length).
        k_paths: predicted paths per question.
        k_candidates: answers proposed per path.
        k_nodes: nodes asked of the retriever.
        ground_kwargs: the grounding settings, as for :class:`~grounding.qa.GroundedQA`
            (``lam`` and ``kappa`` required without a ``config``; ``eps`` defaults to the
            status tolerance, as for :class:`~grounding.qa.GroundedQA`).
    """

    def __init__(
        self,
        answerer: KGEAnswerer,
        predictor: RelationPathPredictor,
        retriever: Retriever | Callable[[int], Retriever],
        *,
        k_paths: int = 3,
        k_candidates: int = 20,
        k_nodes: int = 100,
        **ground_kwargs: Any,
    ):
        self.ground_kwargs = check_ground_kwargs(
            "BlindQA", ground_kwargs, {"eps": SUPPORT_TOLERANCE}
        )
        self.answerer, self.predictor, self._retriever = answerer, predictor, retriever
        self.k_paths = check_int(k_paths, "k_paths")
        self.k_candidates = check_int(k_candidates, "k_candidates")
        self.k_nodes = check_int(k_nodes, "k_nodes")

    def retriever(self, depth: int) -> Retriever:
        r = self._retriever
        return r if hasattr(r, "retrieve") else r(depth)  # type: ignore[operator, return-value]

    def problem(
        self, question: BlindQuestion, paths: Sequence[tuple[Path, float]]
    ) -> GroundingProblem:
        """The claims ``topic -pi_j-> a`` of every predicted path and its best answers, with
        prior :math:`w_j\\, p(a \\mid \\pi_j)` (Eq. (1)), normalized."""
        if not paths:
            raise ValueError("no relation path is predicted from this question's topic")
        claims, log_prior = [], []
        for path, w in paths:
            scores = self.answerer.log_scores(question.topic, path)
            top = np.argsort(-scores, kind="stable")[: self.k_candidates]
            top = top[np.isfinite(scores[top])]
            lp = scores[top] - logsumexp(scores[top])
            mid = (None,) * (len(path) - 1)
            for j, x in zip(top, lp):
                entity = self.answerer.entities[j]
                claims.append(ClaimChain((question.topic, *mid, entity), path))
                log_prior.append(np.log(w) + x)
        log_prior = np.asarray(log_prior)
        return GroundingProblem(question.text, tuple(claims), log_prior - logsumexp(log_prior))

    def answer_batch(self, questions: Sequence[BlindQuestion]) -> list[BlindOutcome]:
        """Run many blind questions; retrieval is batched per depth and grounding is batched
        (:func:`~grounding.qa.loop.ground_live`). A question that fails gets its reason."""
        if not all(isinstance(q, BlindQuestion) for q in questions):
            raise TypeError("BlindQA takes BlindQuestion objects (grounding.query.blind(q))")
        predicted = self.predictor.predict(list(questions), self.k_paths)
        problems: dict[int, GroundingProblem] = {}
        reasons: dict[int, str] = {}
        for i, (q, paths) in enumerate(zip(questions, predicted)):
            try:
                problems[i] = self.problem(q, paths)
            except QUESTION_ERRORS as err:
                reasons[i] = failure("candidates", err)
        states = self._evidence(questions, predicted, list(problems))
        for i, s in list(states.items()):
            why = s if isinstance(s, str) else unknown_entities(problems[i], s)
            if why:
                reasons[i] = why
                states.pop(i)
        live = {i: problems[i] for i in problems if i in states}
        results = ground_live(live, states, reasons, **self.ground_kwargs)
        return [
            BlindOutcome(q, tuple(p), results.get(i), states.get(i), reasons.get(i))
            for i, (q, p) in enumerate(zip(questions, predicted))
        ]

    def _evidence(self, questions, predicted, asked: list[int]) -> dict[int, Any]:
        """Evidence state (or the reason retrieval failed) of each asked question, one
        ``retrieve_batch`` call per depth."""
        by_depth: dict[int, list[int]] = {}
        for i in asked:
            by_depth.setdefault(max(len(p) for p, _ in predicted[i]), []).append(i)
        out: dict[int, Any] = {}
        for depth, members in by_depth.items():
            queries = [Query(questions[i].text, anchor=questions[i].topic) for i in members]
            try:
                r = self.retriever(depth)
                batch = getattr(r, "retrieve_batch", None)
                got = (
                    batch(queries, self.k_nodes)
                    if batch
                    else [r.retrieve(x, self.k_nodes) for x in queries]
                )
                out.update({i: g.evidence for i, g in zip(members, got)})
            except QUESTION_ERRORS as err:
                out.update({i: failure("retrieval", err) for i in members})
        return out
