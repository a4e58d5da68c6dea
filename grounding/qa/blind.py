r"""The grounded QA loop on blind questions: a system sees a question's text and topic entity
(:class:`~grounding.query.BlindQuestion`) and nothing gold.

For each question, a :class:`~grounding.plans.RelationChainPredictor` gives the top ``k``
relation chains :math:`\pi_j` with probabilities :math:`w_j`; the answerer composes each chain
from the topic and proposes its best ``k_candidates`` answers :math:`a` with
:math:`p(a \mid \pi_j)`; every candidate is the claim chain
:math:`\text{topic} \xrightarrow{\pi_j} a` with prior :math:`w_j\, p(a \mid \pi_j)`, so
competing chains meet in one posterior and the verifier checks each candidate's *own* claim
(Eq. (7)). Evidence is retrieved to the depth of the longest predicted chain. An answer's
probability is the mass of the claims that reach it
(:meth:`~grounding.GroundingResult.answer_probabilities`).

References:
    Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Def. 1,
    Eqs. (1), (6), (7).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

from grounding._checks import check_int
from grounding._numerics import top_k
from grounding.evidence import EvidenceState
from grounding.plans import RelationChainPredictor
from grounding.prior import Candidates, KGEAnswerer
from grounding.problem import GroundingProblem, Realization
from grounding.qa._checks import check_bool, check_config, check_questions
from grounding.qa.outcome import result_probabilities
from grounding.qa.pipeline import (
    QUESTION_ERRORS,
    Retrievers,
    RetrieverSpec,
    batch_or_each,
    claim_chains,
    done_batch,
    failure,
    ground_questions,
    proposals,
    retrieve_or_fail,
    unknown_entities,
)
from grounding.query import BlindQuestion, Query
from grounding.result import GroundingResult
from grounding.retrieval.chain_walks import ChainWalks
from grounding.solver import GroundingConfig

__all__ = ["BlindQA", "BlindOutcome"]

Chain = tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class BlindOutcome:
    """One blind question through :class:`BlindQA` (an :class:`~grounding.qa.Outcome`).

    Attributes:
        question: the blind question (text and topic).
        chains: the predicted ``(relation chain, probability)`` pairs, best first.
        result: the grounding result (``None`` when no answer was produced).
        evidence: the retrieved evidence state (``None`` when retrieval was not reached).
        reason: why no answer was produced, else ``None``.
    """

    question: BlindQuestion
    chains: tuple[tuple[Chain, float], ...]
    result: GroundingResult | None
    evidence: EvidenceState | None = None
    reason: str | None = None

    @property
    def answer(self) -> str | None:
        """The grounded answer entity when :func:`grounding.ground` licenses one (Axiom 8:
        action ANSWER), else ``None``."""
        return None if self.result is None else self.result.answer

    def answer_probabilities(self, which: str = "soft") -> tuple[tuple[str, ...], np.ndarray]:
        """Answer entities and their probabilities, most probable first (none without a
        result, or when ``which`` is ``"hard"`` and the hard rule abstained)."""
        return result_probabilities(self.result, which)

    def groundings(self) -> tuple[GroundingResult, ...]:
        """The groundings the answer comes from (for :func:`~grounding.qa.fit_lambda`)."""
        return () if self.result is None else (self.result,)


class BlindQA:
    r"""Blind question → predicted relation chains → candidates claiming them → retrieval →
    :func:`grounding.ground` (see the module docstring).

    Args:
        answerer: composes a relation chain from the topic and scores every entity
            (:meth:`KGEAnswerer.log_scores`); or any candidate model
            (:class:`~grounding.prior.CandidateModel`, e.g. a language model,
            :class:`~grounding.prior.LocalCandidateModel`), whose candidates every predicted
            chain then claims, with prior :math:`w_j\, p(a)`.
        predictor: a fitted relation-chain predictor.
        retriever: a retriever, or a function ``depth -> retriever`` (the depth is the longest
            predicted chain's length), called once per depth; or a
            :class:`~grounding.retrieval.ChainWalks`, given the predicted chains (the evidence
            is the edges of their walks from the topic).
        config: the grounding settings (:class:`~grounding.GroundingConfig`).
        k_chains: predicted relation chains per question.
        k_candidates: answers proposed per chain.
        walk_candidates: with :class:`~grounding.retrieval.ChainWalks`, each chain also
            proposes up to this many of the entities its walks from the topic end at (those
            the answerer scores best; their prior is still the answerer's): an answer the
            evidence states is a candidate even where the answerer ranks it low.
            Needs an answerer that scores every entity (give a candidate model a ``pool``
            of names instead).
        k_nodes: nodes asked of the retriever.
        realization: an optional :class:`~grounding.Realization` for ``ground``.
        release_programs: release every compiled program of the process after each
            :meth:`answer_batch` (:func:`grounding.programs.release_programs`: the memory of
            a long-lived process returns to what it was; the next batch compiles again).
    """

    def __init__(
        self,
        answerer: KGEAnswerer,
        predictor: RelationChainPredictor,
        retriever: RetrieverSpec,
        config: GroundingConfig,
        *,
        k_chains: int = 3,
        k_candidates: int = 20,
        k_nodes: int = 100,
        walk_candidates: int = 0,
        realization: Realization | None = None,
        release_programs: bool = False,
    ):
        self.config, self.realization = check_config("BlindQA", config, realization)
        self.release_programs = check_bool("release_programs", release_programs)
        self.answerer, self.predictor = answerer, predictor
        self._scores = callable(getattr(answerer, "log_scores", None))
        if not (self._scores or callable(getattr(answerer, "propose", None))):
            raise TypeError(
                "answerer must score entities (log_scores) or propose candidates (propose), "
                f"got {answerer!r:.100}"
            )
        self.walks = retriever if isinstance(retriever, ChainWalks) else None
        self._entities: dict[str, int] | None = None
        self.retriever = None if self.walks else Retrievers(retriever)
        self.k_chains = check_int(k_chains, "k_chains")
        self.k_candidates = check_int(k_candidates, "k_candidates")
        self.k_nodes = check_int(k_nodes, "k_nodes")
        self.walk_candidates = check_int(walk_candidates, "walk_candidates", low=0)
        if self.walk_candidates and self.walks is None:
            raise ValueError("walk_candidates needs a ChainWalks retriever (it walks the chains)")
        if self.walk_candidates and not self._scores:
            raise ValueError(
                "walk_candidates needs an answerer that scores every entity (log_scores); "
                "give a candidate model a pool of names instead"
            )

    def problem(
        self,
        question: BlindQuestion,
        chains: Sequence[tuple[Chain, float]],
        reached: Sequence[Sequence[str]] = (),
        candidates: Candidates | None = None,
    ) -> GroundingProblem:
        r"""The claims ``topic -pi_j-> a`` of every predicted chain and its best answers, with
        prior :math:`w_j\, p(a \mid \pi_j)` (Eq. (1)), normalized; the topic is the
        anchor (a topic the evidence lacks fails the question, a candidate it lacks is
        grounded as unsupported). ``reached[j]``: entities chain ``j``'s walks end at, of
        which the ``walk_candidates`` best-scored join its candidates. With a candidate
        model as the answerer, its ``candidates`` of the question (asked here when not
        given) are every chain's, with prior :math:`w_j\, p(a)`."""
        if not chains:
            graph = getattr(self.predictor, "graph", None)
            if graph is not None and not graph.has_entity(question.topic):
                raise ValueError(
                    f"topic entity {question.topic!r:.100} is not in the predictor's graph: "
                    "no relation chain leaves it"
                )
            raise ValueError(
                f"no relation chain is predicted from the topic {question.topic!r:.100}"
            )
        claims, log_prior = [], []
        for c, (chain, w) in enumerate(chains):
            if self._scores:
                answers, lp = self._scored(
                    question.topic, chain, reached[c] if c < len(reached) else ()
                )
            else:
                if candidates is None:
                    [candidates] = proposals(self.answerer, [question], self.k_candidates)
                if candidates.abstained:
                    raise ValueError(f"the model abstained: {candidates.abstain_reason}")
                answers, lp = candidates.entities, candidates.log_prior
            claims += claim_chains([(question.topic, a) for a in answers], chain)
            log_prior += [np.log(w) + x for x in lp]
        log_prior = np.asarray(log_prior)
        return GroundingProblem(
            question.text,
            tuple(claims),
            log_prior - logsumexp(log_prior),
            anchors=(question.topic,),
        )

    def _scored(self, topic: str, chain: Chain, reached: Sequence[str]) -> tuple[list, np.ndarray]:
        r"""The answerer's best ``k_candidates`` answers to ``chain`` from ``topic``, with the
        ``walk_candidates`` best-scored of the entities its walks ``reached``, and their
        log-probabilities :math:`\log p(a \mid \pi)` renormalized over them."""
        scores = self.answerer.log_scores(topic, chain)
        top = top_k(scores, self.k_candidates)[0]  # ties: the lower index first
        if reached and self.walk_candidates:
            index = self._entity_index()
            ends = np.array([index[e] for e in reached if e in index], np.int64)
            ends = ends[np.argsort(-scores[ends], kind="stable")][: self.walk_candidates]
            top = np.concatenate([top, np.setdiff1d(ends, top)])
        top = top[np.isfinite(scores[top])]
        answers = [self.answerer.entities[j] for j in top]
        return answers, scores[top] - logsumexp(scores[top])

    def _entity_index(self) -> dict[str, int]:
        """The answerer's entity name -> index (built on first use)."""
        if self._entities is None:
            self._entities = {e: i for i, e in enumerate(self.answerer.entities)}
        return self._entities

    def answer(self, question: BlindQuestion) -> BlindOutcome:
        """Run one blind question (see :meth:`answer_batch`)."""
        return self.answer_batch([question])[0]

    def answer_batch(self, questions: Sequence[BlindQuestion]) -> list[BlindOutcome]:
        """Run many blind questions; retrieval is batched per retriever and grounding is
        batched (:mod:`grounding.qa.pipeline`). ``questions`` may be any iterable (read
        once). A question that fails gets its reason, e.g. a text the predictor's encoder
        cannot read (no tokens); the others are answered as if it were not there."""
        questions = check_questions(questions)
        if not all(isinstance(q, BlindQuestion) for q in questions):
            raise TypeError("BlindQA takes BlindQuestion objects (grounding.query.blind(q))")
        predicted, reasons = self._predict(questions)
        walked = self._walk(questions, predicted, reasons)
        proposed = self._propose(questions, reasons)
        problems: dict[int, GroundingProblem] = {}
        for i, (q, chains) in enumerate(zip(questions, predicted)):
            if i in reasons:
                continue
            try:
                problems[i] = self.problem(
                    q, chains, walked[i][1] if walked else (), proposed.get(i)
                )
            except QUESTION_ERRORS as err:
                reasons[i] = failure("candidates", err)
        asked = list(problems)
        found = self._retrieve(asked, questions, predicted, walked)
        states: dict[int, EvidenceState] = {}
        for i, s in zip(asked, found):
            why = s if isinstance(s, str) else unknown_entities(problems[i], s)
            if why:
                reasons[i] = why
            else:
                states[i] = s
        results, failed = ground_questions(
            list(states), problems, states, self.config, self.realization
        )
        reasons.update(failed)
        outcomes = [
            BlindOutcome(q, tuple(c), results.get(i), states.get(i), reasons.get(i))
            for i, (q, c) in enumerate(zip(questions, predicted))
        ]
        return done_batch(outcomes, self.release_programs)

    def _walk(
        self,
        questions: list[BlindQuestion],
        predicted: list[list[tuple[Chain, float]]],
        reasons: dict[int, str],
    ) -> dict[int, tuple]:
        """With :class:`~grounding.retrieval.ChainWalks`: each question's walks of its
        predicted chains (edges, ends per chain, cut); a question whose walk fails (a topic
        the graph lacks) gets its reason."""
        if self.walks is None:
            return {}
        out = {}
        for i, q in enumerate(questions):
            if i not in reasons:
                try:
                    out[i] = self.walks.walk(q.topic, [c for c, _ in predicted[i]])
                except QUESTION_ERRORS as err:
                    reasons[i] = failure("retrieval", err)
        return out

    def _propose(self, questions: list[BlindQuestion], reasons: dict[int, str]) -> dict:
        """With a candidate model as the answerer: the candidates of every question not
        failed yet (one batch); a question the model abstains on gets its reason."""
        if self._scores:
            return {}
        asked = [i for i in range(len(questions)) if i not in reasons]
        got = proposals(self.answerer, [questions[i] for i in asked], self.k_candidates)
        for i, c in zip(asked, got):
            if c.abstained:
                reasons[i] = c.abstain_reason
        return {i: c for i, c in zip(asked, got) if not c.abstained}

    def _retrieve(
        self,
        asked: list[int],
        questions: list[BlindQuestion],
        predicted: list[list[tuple[Chain, float]]],
        walked: dict[int, tuple],
    ) -> list[EvidenceState | str]:
        """The evidence state of each asked question (or why it has none)."""
        if self.walks is None:
            return retrieve_or_fail(
                self.retriever,
                [max(len(c) for c, _ in predicted[i]) for i in asked],
                [Query(questions[i].text, anchor=questions[i].topic) for i in asked],
                self.k_nodes,
            )
        return [
            self.walks.state([c for c, _ in predicted[i]], walked[i][0], walked[i][2])
            for i in asked
        ]

    def _predict(
        self, questions: list[BlindQuestion]
    ) -> tuple[list[list[tuple[Chain, float]]], dict[int, str]]:
        """The predicted chains of every question (``[]`` for one that failed) and the reasons
        of the questions whose prediction failed, by :func:`~grounding.qa.pipeline.batch_or_each`
        with ``again``: when the batch fails, each question is tried alone to find the failing
        ones, and the others are predicted again as one batch (so they get the chains they get
        in a batch without the failing ones)."""
        got = batch_or_each(
            lambda qs: self.predictor.predict(qs, self.k_chains),
            questions,
            "chain prediction",
            again=True,
        )
        reasons = {i: x for i, x in enumerate(got) if isinstance(x, str)}
        return [[] if isinstance(x, str) else x for x in got], reasons
