r"""The model side of the loop: a question's candidate answers and the model's prior over them.

A :class:`CandidateModel` plays the LLM of the paper: given a question it proposes a finite
candidate set :math:`\Gamma(q)` of graph entities with a normalized log-prior
:math:`\log p_\theta(\rho\mid q)` (Eq. (1)). Grounding (:func:`grounding.ground`) then
re-weights that prior by the evidence. A model that cannot propose anything returns an
explicit abstention (:meth:`Candidates.abstain`) with its reason; it never returns an empty
answer silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from scipy.special import logsumexp

from grounding._checks import check_int

__all__ = ["Candidates", "CandidateModel", "CandidateModelError", "QuestionLike"]


class CandidateModelError(RuntimeError):
    """A candidate model failed (an endpoint timed out, replied malformed data, ...)."""


@runtime_checkable
class QuestionLike(Protocol):
    """What a candidate model reads of a question: its text, its topic entity (a graph entity
    name) and, when known (templated questions), its relation chain (relation names).

    ``chain`` is optional: a question object without the attribute (or with an empty chain)
    is a free-text question, grounded as answer candidates from its topic (walks of any
    relation type). :class:`~grounding.qa.KGEAnswerer`, which composes the chain's relation
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
        entities: distinct candidate entity names, most probable first.
        log_prior: ``[k]`` float64 log-probabilities, ``logsumexp == 0`` (empty on abstention).
        abstain_reason: why the model proposes nothing (``None`` when it proposes).
        dropped: what the model said that names no graph entity (kept for reports).
    """

    entities: tuple[str, ...]
    log_prior: np.ndarray
    abstain_reason: str | None = None
    dropped: tuple[str, ...] = ()

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


class CandidateModel(Protocol):
    """Anything that proposes candidates: ``propose(question, k) -> Candidates`` (``k >= 1``
    the most candidates to return). A model that cannot answer one question raises
    :class:`CandidateModelError` (or abstains); the QA loops record it as that question's
    outcome and answer the others."""

    def propose(self, question: QuestionLike, k: int) -> Candidates: ...
