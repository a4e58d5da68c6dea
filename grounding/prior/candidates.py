r"""The model side of the loop: a question's candidate answers and the model's prior over them.

A :class:`CandidateModel` plays the LLM of the paper: given a question it proposes a finite
candidate set :math:`\Gamma(q)` of answers (graph entities, or answers the graph does not
name: out of graph) with a normalized log-prior
:math:`\log p_\theta(\rho\mid q)` (Eq. (1)). Grounding (:func:`grounding.ground`) then
re-weights that prior by the evidence. A model that cannot propose anything returns an
explicit abstention (:meth:`Candidates.abstain`) with its reason; it never returns an empty
answer silently.

A model that answers in free text builds its candidates with :meth:`Candidates.from_answers`
and an :class:`~grounding.language.AnswerLinker`: answers naming no entity stay candidates,
out of graph (grounded as unsupported); an answer naming several entities is split equally
over them (the rules: :mod:`grounding.language.linking`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from scipy.special import logsumexp

from grounding._checks import check_int
from grounding.language import AnswerLinker, normalize_answer
from grounding.query import blind

__all__ = [
    "Candidates",
    "CandidateModel",
    "CandidateModelError",
    "QuestionLike",
    "Blinded",
    "propose_batch",
    "runs_batches",
]


class CandidateModelError(RuntimeError):
    """A candidate model failed (an endpoint timed out, replied malformed data, ...)."""


@runtime_checkable
class QuestionLike(Protocol):
    """What a candidate model reads of a question: its text, its topic entity (a graph entity
    name) and, when known (templated questions), its relation chain (relation names).

    ``chain`` is optional: a question object without the attribute (or with an empty chain)
    is a free-text question, grounded as answer candidates from its topic (walks of any
    relation type). :class:`~grounding.prior.KGEAnswerer`, which composes the chain's relation
    maps, abstains on it with that reason.
    """

    text: str
    topic: str
    chain: tuple[str, ...]


def question_chain(question: object) -> tuple[str, ...]:
    """A question's relation chain: ``question.chain`` as a tuple, ``()`` when the question
    has none (the attribute missing or ``None``).

    Raises:
        TypeError: a chain that is a string (whose characters would be read as relations) or
            holds anything but relation names.
    """
    chain = getattr(question, "chain", None)
    if chain is None:
        return ()
    if isinstance(chain, (str, bytes)):
        raise TypeError(
            f"question.chain must be a sequence of relation names, not a string: {chain!r:.100}"
        )
    out = tuple(chain)
    if not all(isinstance(r, str) and r for r in out):
        raise TypeError(f"question.chain must hold relation names (str), got {out!r:.100}")
    return out


@dataclasses.dataclass(frozen=True)
class Candidates:
    """Candidate answers with a normalized log-prior, or an abstention.

    Attributes:
        entities: distinct candidate names, most probable first: graph entities, and answers
            that name no entity (those listed in ``out_of_graph``).
        log_prior: ``[k]`` float64 log-probabilities, ``logsumexp == 0`` (empty on abstention).
        abstain_reason: why the model proposes nothing (``None`` when it proposes).
        dropped: what the model said that cannot be a candidate at all (an empty answer),
            kept for reports.
        out_of_graph: the entries of ``entities`` that are no graph entity (an answer's
            normalized text, :meth:`from_answers`); :func:`grounding.ground` grounds them as
            unsupported (raw energy ``+inf``, slack energy ``kappa``).
    """

    entities: tuple[str, ...]
    log_prior: np.ndarray
    abstain_reason: str | None = None
    dropped: tuple[str, ...] = ()
    out_of_graph: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.entities, (str, bytes)):
            raise TypeError(
                f"entities must be a sequence of names, not a string: {self.entities!r:.100}"
            )
        ents = tuple(self.entities)
        lp = np.asarray(self.log_prior, np.float64)
        object.__setattr__(self, "entities", ents)
        object.__setattr__(self, "log_prior", lp)
        object.__setattr__(self, "dropped", tuple(self.dropped))
        object.__setattr__(self, "out_of_graph", tuple(self.out_of_graph))
        if not set(self.out_of_graph) <= set(ents):
            raise ValueError("out_of_graph must list entries of entities")
        if self.abstain_reason is not None:
            if ents or lp.size:
                raise ValueError("an abstention carries no candidates")
            return
        if not ents:
            raise ValueError("no candidates: use Candidates.abstain(reason)")
        if len(set(ents)) != len(ents):
            raise ValueError("candidate entities must be distinct")
        if lp.shape != (len(ents),):
            raise ValueError(f"log_prior must have shape ({len(ents)},), got {lp.shape}")
        if np.isnan(lp).any() or np.isposinf(lp).any():
            raise ValueError("log_prior must not be NaN or +inf")
        if abs(logsumexp(lp)) > 1e-6:
            raise ValueError(
                f"log_prior must be normalized, logsumexp = {logsumexp(lp):.3g} "
                "(Candidates.from_scores normalizes raw log-weights)"
            )

    @property
    def abstained(self) -> bool:
        return self.abstain_reason is not None

    @classmethod
    def abstain(cls, reason: str, dropped: Sequence[str] = ()) -> Candidates:
        """No candidate, with the reason (reported by the loop as an abstention)."""
        if not reason:
            raise ValueError("an abstention needs a reason")
        return cls((), np.zeros(0), reason, tuple(dropped))

    @classmethod
    def from_scores(
        cls,
        entities: Sequence[str],
        log_weights: Sequence[float] | np.ndarray,
        *,
        k: int | None = None,
        dropped: Sequence[str] = (),
    ) -> Candidates:
        """Normalize unnormalized log-weights into a prior (repeated entities merge by
        log-sum-exp), keep the ``k`` most probable, renormalize; ties keep first-seen order.

        Example:
            >>> c = Candidates.from_scores(["a", "b", "a"], [0.0, 0.0, 0.0])
            >>> c.entities, np.exp(c.log_prior).round(3).tolist()
            (('a', 'b'), [0.667, 0.333])
        """
        if isinstance(entities, (str, bytes)):
            raise TypeError(
                f"entities must be a sequence of names, not a string: {entities!r:.100}"
            )
        w = np.asarray(log_weights, np.float64)
        if w.ndim != 1 or len(w) != len(entities):
            raise ValueError(f"{len(entities)} entities but log_weights of shape {w.shape}")
        if np.isnan(w).any() or np.isposinf(w).any():
            raise ValueError("log_weights must not be NaN or +inf")
        if k is not None:
            check_int(k, "k")
        if len(set(entities)) == len(entities):
            names, lw = list(entities), w
        else:
            merged: dict[str, list[float]] = {}
            for e, x in zip(entities, w):
                merged.setdefault(e, []).append(float(x))
            names = list(merged)
            lw = np.array([logsumexp(merged[e]) for e in names])
        if not names or np.isneginf(lw).all():
            return cls.abstain("the model gave no candidate positive weight", dropped)
        order = np.argsort(-lw, kind="stable")[:k]
        keep = lw[order]
        return cls(tuple(names[i] for i in order), keep - logsumexp(keep), None, tuple(dropped))

    @classmethod
    def from_answers(
        cls,
        answers: Sequence[str],
        log_weights: Sequence[float] | np.ndarray,
        linker: AnswerLinker,
        k: int | None = None,
    ) -> Candidates:
        r"""Candidates from a model's answer texts and their unnormalized log-weights (one
        per answer, e.g. a completion's sequence log-probability; equal weights for sample
        frequencies), linked to the graph by ``linker``
        (:meth:`~grounding.language.AnswerLinker.link`), with the rules of
        :mod:`grounding.language.linking`: an answer naming no entity is an out-of-graph candidate
        named by its normalized text (listed in ``out_of_graph``); one naming ``m``
        entities gives each :math:`\log w - \log m`; names that recur merge by log-sum-exp;
        empty answers go to ``dropped``. Then the ``k`` most probable are kept and
        renormalized (:meth:`from_scores`). Nothing left: an abstention with the reason.

        Args:
            answers: the answer texts (repeats allowed: each carries its own weight).
            log_weights: ``[len(answers)]`` log-weights (``-inf``: no mass).
            linker: an :class:`~grounding.language.AnswerLinker` of the graph's entities.
            k: the most candidates to keep (``None``: all).

        Example:
            >>> from grounding.language import AnswerLinker
            >>> linker = AnswerLinker(["bank.n.01", "bank.n.02", "river.n.01"],
            ...                       ["bank", "bank", "river"])
            >>> c = Candidates.from_answers(["Bank", "River.", "a shore"],
            ...                             np.log([0.5, 0.25, 0.25]), linker)
            >>> c.entities, c.out_of_graph
            (('bank.n.01', 'bank.n.02', 'river.n.01', 'a shore'), ('a shore',))
            >>> np.exp(c.log_prior).round(3).tolist()  # "bank": 0.5 split over two readings
            [0.25, 0.25, 0.25, 0.25]
        """
        if isinstance(answers, (str, bytes)):
            raise TypeError(f"answers must be a sequence of texts, not a string: {answers!r:.100}")
        answers = list(answers)
        w = np.asarray(log_weights, np.float64)
        if w.ndim != 1 or len(w) != len(answers):
            raise ValueError(f"{len(answers)} answers but log_weights of shape {w.shape}")
        if k is not None:
            check_int(k, "k")
        names: list[str] = []
        lw: list[float] = []
        outside: set[str] = set()
        linked_names: set[str] = set()
        dropped: list[str] = []
        for text, x in zip(answers, w):
            form = normalize_answer(text)
            if not form:
                dropped.append(text)
                continue
            linked = tuple(linker.link(text))
            if not linked:  # (a) out of graph: the evidence does not show it
                names.append(form)
                lw.append(float(x))
                outside.add(form)
                continue
            linked_names.update(linked)
            names += linked  # (b) every reading, the mass split equally
            lw += [float(x) - np.log(len(linked))] * len(linked)
        if not names:
            return cls.abstain(
                f"none of the model's {len(answers)} answers is a usable answer (all empty)",
                dropped,
            )
        clash = sorted(outside & linked_names)
        if clash:  # not with an AnswerLinker: an entity named so links its own name
            raise ValueError(
                f"{clash[0]!r:.100} is both an entity the linker links to and the normalized "
                "form of an answer it links to nothing: the linker must link each entity's name"
            )
        got = cls.from_scores(names, lw, k=k, dropped=dropped)  # (c) merges repeats
        if got.abstained:
            return got
        return dataclasses.replace(got, out_of_graph=tuple(e for e in got.entities if e in outside))


class CandidateModel(Protocol):
    """Anything that proposes candidates: ``propose(question, k) -> Candidates`` (``k >= 1``
    the most candidates to return), and for many questions at once
    ``propose_batch(questions, k) -> list[Candidates]`` (one per question, in order). A class
    that subclasses :class:`CandidateModel` inherits :meth:`propose_batch` as a loop over
    :meth:`propose`; a model that runs questions together
    (:class:`~grounding.prior.LocalCandidateModel`) overrides it. A model that cannot answer one question raises :class:`CandidateModelError`
    (or abstains); the QA loops record it as that question's outcome and answer the others
    (a batch that raises is asked again question by question)."""

    def propose(self, question: QuestionLike, k: int) -> Candidates: ...

    def propose_batch(self, questions: Sequence[QuestionLike], k: int) -> list[Candidates]:
        """:meth:`propose` of each question (the default: a loop)."""
        return [self.propose(q, k) for q in questions]


def propose_batch(model: object, questions: Sequence[QuestionLike], k: int) -> list[Candidates]:
    """``model.propose_batch(questions, k)`` when the model has one, else its ``propose`` of
    each question: the candidates of every question, checked (a ``TypeError`` when the model
    returns anything but one :class:`Candidates` per question)."""
    batch = getattr(model, "propose_batch", None)
    got = list(batch(questions, k)) if callable(batch) else [model.propose(q, k) for q in questions]  # type: ignore[attr-defined]
    if len(got) != len(questions):
        raise TypeError(
            f"the candidate model returned {len(got)} answers for {len(questions)} questions"
        )
    for c in got:
        if not isinstance(c, Candidates):
            raise TypeError(f"the candidate model returned {type(c).__name__}, not Candidates")
    return got


def runs_batches(model: object) -> bool:
    """Whether ``model`` runs questions together: it has a ``propose_batch`` of its own (not
    the default loop of :class:`CandidateModel`, nor none). A loop asks such a model for a
    batch in one call, and any other model question by question (so a failing question
    costs no second request of the others)."""
    own = getattr(type(model), "propose_batch", None)
    return callable(own) and own is not CandidateModel.propose_batch


class Blinded(CandidateModel):
    """A candidate model shown only each question's text and topic entity
    (:func:`grounding.query.blind`), never a relation chain or an answer: the contract of a
    system under evaluation, kept however the loop around it is built (e.g. a loop that
    retrieves to the gold chain's depth, an oracle for retrieval only).

    Example:
        >>> from types import SimpleNamespace
        >>> class Echo(CandidateModel):
        ...     def propose(self, question, k):
        ...         return Candidates.from_scores([type(question).__name__], [0.0])
        >>> q = SimpleNamespace(text="Who?", topic="a", chain=("r",))
        >>> Blinded(Echo()).propose(q, 1).entities
        ('BlindQuestion',)
    """

    def __init__(self, model: CandidateModel):
        if not callable(getattr(model, "propose", None)):
            raise TypeError(f"model must have a propose() method, got {model!r:.100}")
        self.model = model

    def propose(self, question: QuestionLike, k: int) -> Candidates:
        return self.model.propose(blind(question), k)

    def propose_batch(self, questions: Sequence[QuestionLike], k: int) -> list[Candidates]:
        return propose_batch(self.model, [blind(q) for q in questions], k)
