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

from collections.abc import Sequence

import jax
import numpy as np
from scipy.special import logsumexp

from grounding._checks import check_int
from grounding.graph import INVERSE_SUFFIX
from grounding.learn import KGEModel, ReciprocalModel
from grounding.prior.candidates import CandidateModel, Candidates, QuestionLike, question_chain

__all__ = ["KGEAnswerer"]

_MEMO = 65536  # memoized proposals kept (a few kB each)


class KGEAnswerer(CandidateModel):
    """Candidate answers from trained embeddings: a :class:`~grounding.learn.KGEModel` (TransE
    or RotatE; an inverse relation uses the inverse map) or a
    :class:`~grounding.learn.ReciprocalModel` (TransE or ComplEx; an inverse relation uses the
    learned reciprocal relation; ComplEx composes complex products and scores
    :math:`\\mathrm{Re}\\langle x, \\bar e\\rangle / T`).

    Args:
        model: the trained embeddings.
        entities: the model's entity names (row order of ``model.entity``).
        relations: the model's relation names (a name's
            :func:`~grounding.graph.inverse_relation` reads it backwards).
        temperature: :math:`T > 0` of the scores ``-d/T`` (:meth:`fit_temperature` fits it).

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
          Eq. (1), Sec. 9.4.
        - Bordes, Usunier, García-Durán, Weston & Yakhnenko, "Translating Embeddings for Modeling
          Multi-relational Data", 2013 (transe).
        - Sun, Deng, Nie & Tang, "RotatE: Knowledge Graph Embedding by Relational Rotation in
          Complex Space", 2019 (rotate).
        - Trouillon, Welbl, Riedel, Gaussier & Bouchard, "Complex Embeddings for Simple Link
          Prediction", 2016 (complex).

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
    ):
        reciprocal = isinstance(model, ReciprocalModel)
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
        s = self.model.answer_scores(self.composed(topic, chain)) / self.temperature
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
        (an entity of the vocabulary other than the topic) count.

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


def _check_temperature(t: float) -> float:
    t = float(t)
    if not np.isfinite(t) or t <= 0:
        raise ValueError(f"temperature must be finite and > 0, got {t!r}")
    return t
