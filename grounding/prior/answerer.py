r"""An offline stand-in for the LLM prior: a KG-embedding answerer that composes relation maps.

:class:`KGEAnswerer` answers a templated question :math:`(z_0, r_1, \dots, r_T)` the way an
LLM answers from memory: it composes the learned relation maps along the question's relation
chain, :math:`x = T_{r_T} \circ \dots \circ T_{r_1}\,\eta(z_0)` (TransE: a sum of
translations; RotatE: a product of rotations; an inverse relation uses the inverse map), and
scores every entity by :math:`-d_{\mathcal M}(x, \eta(e))/T`. It never looks at paths of the
graph, only at embeddings trained on the evidence :math:`R`: parametric knowledge that can be
right about facts the graph does not state, and wrong about facts it does. The topic itself is
never proposed (questions never answer with their topic). Its top-``k`` entities and their
renormalized log-softmax scores are the candidate set :math:`\Gamma(q)` and the prior
:math:`p_\theta` of Eq. (1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from grounding._checks import check_int
from grounding._numerics import top_k
from grounding.graph import INVERSE_SUFFIX
from grounding.learn import KGEModel, ReciprocalModel
from grounding.prior.candidates import CandidateModel, Candidates, QuestionLike, question_chain

__all__ = ["KGEAnswerer"]

_MEMO = 65536  # memoized proposals kept (a few kB each)


class KGEAnswerer(CandidateModel):
    r"""Candidate answers from trained embeddings: a :class:`~grounding.learn.KGEModel` (TransE
    or RotatE; an inverse relation uses the inverse map) or a
    :class:`~grounding.learn.ReciprocalModel` (TransE or ComplEx; an inverse relation uses the
    learned reciprocal relation; ComplEx composes complex products and scores
    :math:`\mathrm{Re}\langle x, \bar e\rangle / T`).

    Args:
        model: the trained embeddings.
        entities: the model's entity names (row order of ``model.entity``).
        relations: the model's relation names (a name's
            :func:`~grounding.graph.inverse_relation` reads it backwards).
        temperature: :math:`T > 0` of the scores ``-d/T`` (:meth:`fit_temperature` fits it).
        beam: ``0``: compose the chain's maps (the module docstring); ``b > 0`` (a
            :class:`~grounding.learn.ReciprocalModel`): answer hop by hop instead, keeping the
            ``b`` most probable entities of each hop before the last, :math:`\log p(a) =
            \log\sum_{m \in \text{beam}} p(m \mid \text{hops so far})\, p(a \mid m, r_t)`,
            each hop's :math:`p` the softmax of the link predictor's scores over :math:`T` (a
            soft walk over predicted links: the beam search of complex query answering with
            neural link predictors).

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Eq. (1), Sec. 9.4.
        - Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
          Multi-relational Data", 2013 (transe).
        - Sun, Deng, Nie & Tang, "RotatE: Knowledge Graph Embedding by Relational Rotation in
          Complex Space", 2019 (rotate).
        - Trouillon, Welbl, Riedel, Gaussier & Bouchard, "Complex Embeddings for Simple Link
          Prediction", 2016 (complex).
        - Arakelyan, Daza, Minervini & Cochez, "Complex Query Answering with Neural Link
          Predictors", ICLR 2021 (``beam``: chains answered hop by hop, beams of entities).

    Example:
        >>> import jax.numpy as jnp
        >>> from grounding.learn import KGEModel, ReciprocalModel
        >>> m = KGEModel("transe", jnp.array([[0.0, 0], [1, 0], [2, 0]]), jnp.array([[1.0, 0]]))
        >>> a = KGEAnswerer(m, ["a", "b", "c"], ["next"])
        >>> a.log_scores("a", ["next", "next"]).argmax(), a.log_scores("c", ["next^-1"]).argmax()
        (np.int64(2), np.int64(1))
    """

    def __init__(
        self,
        model: KGEModel | ReciprocalModel,
        entities: Sequence[str],
        relations: Sequence[str],
        temperature: float = 1.0,
        *,
        beam: int = 0,
    ):
        reciprocal = isinstance(model, ReciprocalModel)
        self.beam = check_int(beam, "beam", low=0)
        if self.beam and not reciprocal:
            raise ValueError("beam needs a ReciprocalModel (a link predictor for every hop)")
        if model.kind not in (("transe", "complex") if reciprocal else ("transe", "rotate")):
            raise ValueError(
                f"KGEAnswerer composes transe, rotate or (reciprocal) complex, got {model.kind!r}"
            )
        if len(entities) != model.entity.shape[0]:
            raise ValueError(f"{len(entities)} entity names for {model.entity.shape[0]} rows")
        n = model.relation.shape[0] // (2 if reciprocal else 1)
        if len(relations) != n:
            raise ValueError(f"{len(relations)} relation names for {n} relations")
        self.model = model
        self.entities = tuple(entities)
        self.temperature = _check_temperature(temperature)
        self._e_ix = {e: i for i, e in enumerate(self.entities)}
        # a relation's row; its inverse reads the row R + r: the inverse map (KGEModel) or
        # the learned reciprocal relation (ReciprocalModel), composed by the model itself
        self._r_ix = {r: i for i, r in enumerate(relations)}
        self._r_ix.update({r + INVERSE_SUFFIX: i + n for i, r in enumerate(relations)})
        self._proposed: dict[tuple, Candidates] = {}  # propose() is deterministic: memoized
        # a reciprocal model's maps composed on the host (NumPy): the same products and sums
        # without a device dispatch per relation, which cost ~4 ms a question per chain
        self._host = _HostModel.of(model.kind, model.entity, model.relation) if reciprocal else None

    def _ids(self, topic: str, chain: Sequence[str]) -> tuple[int, list[int]]:
        if topic not in self._e_ix:
            raise ValueError(f"topic entity {topic!r} is not in the model's vocabulary")
        if not chain:
            raise ValueError("the question has no relation chain to compose")
        unknown = [r for r in chain if r not in self._r_ix]
        if unknown:
            raise ValueError(f"relations {unknown} are not in the model's vocabulary")
        return self._e_ix[topic], [self._r_ix[r] for r in chain]

    def composed(self, topic: str, chain: Sequence[str]) -> jax.Array:
        """:math:`T_{r_T} \\circ \\dots \\circ T_{r_1}\\,\\eta(z_0)` (``[d]``), composed by the
        model (:meth:`~grounding.learn.KGEModel.compose`)."""
        t, rels = self._ids(topic, chain)
        return self.model.compose(self.model.entity[t], rels)

    def log_scores(self, topic: str, chain: Sequence[str]) -> np.ndarray:
        """``[n]`` scores :math:`-d(x, \\eta(e)) / T` of every entity (the topic: ``-inf``),
        scored by the model (:meth:`~grounding.learn.KGEModel.answer_scores`)."""
        if self._host is None:
            s = self.model.answer_scores(self.composed(topic, chain)) / self.temperature
        elif self.beam and len(chain) > 1:
            s = _beam_scores(self._host, *self._ids(topic, chain), self.beam, self.temperature)
        else:
            s = _host_scores(self._host, *self._ids(topic, chain))
            s = s / self.temperature
        s[self._e_ix[topic]] = -np.inf
        return s

    def propose(self, question: QuestionLike, k: int) -> Candidates:
        """The top-``k`` entities with their renormalized log-softmax scores (memoized by
        topic, chain, ``k``, temperature and JAX's precision: plans re-ask the same steps).

        Raises:
            ValueError: ``k`` is not a positive int.
        """
        check_int(k, "k")
        chain = question_chain(question)  # (): no chain to compose, an abstention below
        key = (
            question.topic,
            chain,
            k,
            self.temperature,
            self.beam,
            jax.config.jax_enable_x64,
        )
        if key not in self._proposed:
            if len(self._proposed) >= _MEMO:
                self._proposed.clear()
            c = self._propose(question, k)
            c.log_prior.flags.writeable = False  # shared by every caller of this key
            self._proposed[key] = c
        return self._proposed[key]

    def cache_clear(self) -> None:
        """Forget the memoized proposals (e.g. before timing a cold run)."""
        self._proposed.clear()

    def _propose(self, question: QuestionLike, k: int) -> Candidates:
        try:
            s = self.log_scores(question.topic, question_chain(question))
        except ValueError as err:
            return Candidates.abstain(f"the KGE answerer cannot read the question: {err}")
        top = np.argsort(-s, kind="stable")[:k]
        return Candidates.from_scores([self.entities[i] for i in top], s[top])

    def fit_temperature(
        self, questions: Sequence[QuestionLike], answers: Sequence[Sequence[str]]
    ) -> float:
        """Set :math:`T` to maximize the mean log-probability of the gold answer sets of the
        given (validation) questions under the full softmax (a grid of 61 values, log-spaced
        in :math:`[10^{-3}, 10^{3}]`); returns it. Only questions with a usable gold answer
        (an entity of the vocabulary other than the topic) count, and with a ``beam`` only
        one-hop questions (T is then each hop's temperature).

        Raises:
            ValueError: no question, unequal lengths, or no question with a usable gold answer
                (``T`` is then left unchanged).
            TypeError: an answer set given as a string.
        """
        if not questions or len(questions) != len(answers):
            raise ValueError("fit_temperature needs as many answer sets as questions (>= 1)")
        dists, gold = [], []
        for q, ans in zip(questions, answers):
            if isinstance(ans, (str, bytes)):
                raise TypeError(f"answers must be answer sets, not strings: got {ans!r:.100}")
            if self.beam and len(question_chain(q)) > 1:
                continue  # with a beam, T is each hop's: fitted on one-hop questions
            d = -self.log_scores(q.topic, question_chain(q)) * self.temperature
            g = [self._e_ix[a] for a in ans if a in self._e_ix]
            g = [e for e in g if np.isfinite(d[e])]  # the topic is never an answer
            if g:
                dists.append(d)
                gold.append(g)
        if not gold:
            raise ValueError(
                "fit_temperature: no question has a gold answer in the model's vocabulary "
                "(other than its topic); the temperature is left unchanged"
            )
        grid = np.logspace(-3, 3, 61)
        ll = [
            np.mean([logsumexp(-d[g] / T) - logsumexp(-d / T) for d, g in zip(dists, gold)])
            for T in grid
        ]
        self.temperature = float(grid[int(np.argmax(ll))])
        return self.temperature


@dataclasses.dataclass(frozen=True)
class _HostModel:
    """A reciprocal model's arrays on the host (float64): entities ``[n, d]``, relations
    ``[2R, d]`` and, for ComplEx, the entities transposed (``[d, n]``, contiguous: the
    scores of a batch of queries are then one matrix product in the layout the reductions
    over entities read fastest)."""

    kind: str
    entity: np.ndarray
    relation: np.ndarray
    entity_t: np.ndarray | None

    @classmethod
    def of(cls, kind: str, entity: ArrayLike, relation: ArrayLike) -> _HostModel:
        e = np.asarray(entity, np.float64)
        t = np.ascontiguousarray(e.T) if kind == "complex" else None
        return cls(kind, e, np.asarray(relation, np.float64), t)


def _host_step(kind: str, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """One relation applied to queries ``x`` (``[..., d]``) in NumPy: the complex product of
    :func:`~grounding.learn.reciprocal.complex_product` (``[real | imaginary]`` halves) or
    the translation (transe)."""
    if kind != "complex":
        return x + w
    k = x.shape[-1] // 2
    xr, xi, wr, wi = x[..., :k], x[..., k:], w[:k], w[k:]
    return np.concatenate([xr * wr - xi * wi, xr * wi + xi * wr], axis=-1)


def _host_answer_scores(m: _HostModel, q: np.ndarray) -> np.ndarray:
    r"""Every entity's score as the answer to queries ``q`` (``[d]`` -> ``[n]``, ``[b, d]`` ->
    ``[b, n]``), as :meth:`~grounding.learn.ReciprocalModel.answer_scores`:
    :math:`\mathrm{Re}\langle x, \bar e\rangle` (complex) or :math:`-\lVert x - e\rVert_2`
    (transe)."""
    if m.kind == "complex":
        return q @ m.entity_t
    if q.ndim == 1:
        return -np.linalg.norm(m.entity - q, axis=-1)
    return np.stack([-np.linalg.norm(m.entity - x, axis=-1) for x in q])


def _host_scores(m: _HostModel, topic: int, rows: list[int]) -> np.ndarray:
    """:meth:`~grounding.learn.ReciprocalModel.compose` then ``answer_scores``, in NumPy."""
    x = m.entity[topic]
    for r in rows:
        x = _host_step(m.kind, x, m.relation[r])
    return _host_answer_scores(m, x)


def _beam_scores(
    m: _HostModel, topic: int, rows: list[int], beam: int, temperature: float
) -> np.ndarray:
    r"""``[n]`` log-probabilities of every entity at the end of the chain ``rows`` from
    ``topic``, hop by hop with a beam of ``beam`` entities (see :class:`KGEAnswerer`):
    :math:`\log p_{t}(e) = \log \sum_b p_{t-1}(b)\, \mathrm{softmax}(s_b / T)(e)`, summed
    in probability (one exponential per score), and in the log domain for the entities
    whose sum underflows."""
    log_p = np.zeros(1)
    at = np.array([topic])
    for t, r in enumerate(rows):
        s = _host_answer_scores(m, _host_step(m.kind, m.entity[at], m.relation[r]))
        s = s / temperature
        s -= s.max(axis=1, keepdims=True)
        e = np.exp(s)
        log_w = log_p - np.log(e.sum(axis=1))  # log p_{t-1}(b) - log Z_b
        with np.errstate(divide="ignore"):
            total = np.log(np.exp(log_w) @ e)  # [n]: log p(entity at hop t)
        low = ~(total > _TINY)
        if low.any():  # too small to sum as probabilities
            total[low] = logsumexp(s[:, low] + log_w[:, None], axis=0)
        if t == len(rows) - 1:
            return total
        at, log_p = top_k(total, beam)
    raise AssertionError("unreachable: rows is not empty")


#: Below this log-probability a sum of probabilities may have lost digits (float64's
#: smallest normal number is ~1e-308): such entries are summed again in the log domain.
_TINY = -700.0


def _check_temperature(t: float) -> float:
    t = float(t)
    if not np.isfinite(t) or t <= 0:
        raise ValueError(f"temperature must be finite and > 0, got {t!r}")
    return t
