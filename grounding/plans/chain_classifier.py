r"""Relation chains read from the question text by a linear classifier over its words.

:class:`ChainClassifier` sees a :class:`~grounding.query.BlindQuestion` (text and topic). It
blanks the topic in the text (its longest surface form, as :class:`ChainReader` does: the
word ``<topic>`` in its place) and describes the question by binary features :math:`x` (unit norm):

- the word n-grams (1 to 3 words) of the blanked text, so ``directed by <topic>`` and
  ``<topic> directed`` differ;
- with a graph, the topic's *signature*: the relations that leave it in the evidence graph
  (a movie has ``directed_by`` edges, a director ``directed_by^-1`` ones), so a wording
  never seen in training still meets a topic of a known kind.

Features are those of the training questions (any other carries no weight). The chains are
the training chains; a chain :math:`\pi` scores :math:`s_\pi = w_\pi^\top x`,
and the top ``k`` carry the softmax of :math:`s / T`, renormalized over the ``k`` kept.
:meth:`ChainClassifier.fit` learns :math:`W` by multinomial logistic regression
(:math:`\ell_2`-penalized mean log-loss, L-BFGS), picks the penalty on validation top-1
accuracy (ties: the strongest penalty) and :math:`T` by the validation log-likelihood of the
gold chains; nothing reads a test question. Hold out whole wordings for validation
(:func:`wording_split`) and the penalty is chosen for wordings the classifier never saw.

References:
    Luo, Li, Haffari & Pan, "Reasoning on Graphs: Faithful and Interpretable Large Language
    Model Reasoning", 2024 (relation paths read from the question, then grounded in the
    graph).
    Saxena, Tripathi & Talukdar, "Improving Multi-hop Question Answering over Knowledge
    Graphs using Knowledge Base Embeddings", ACL 2020 (the relations of a MetaQA question
    scored from its text).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.optimize
import scipy.sparse
from scipy.special import logsumexp

from grounding._checks import check_int
from grounding.graph import TypedGraph
from grounding.language.phrases import words
from grounding.plans._common import _chain, _example, _tempered_softmax
from grounding.plans.chain_reader import topic_span
from grounding.query import BlindQuestion

__all__ = ["ChainClassifier", "wording_split"]

Chain = tuple[str, ...]
#: The penalties :meth:`ChainClassifier.fit` chooses among (strongest first: ties go to it).
PENALTIES = (1e-3, 3e-4, 1e-4, 3e-5, 1e-5)
TOPIC = "<topic>"


class ChainClassifier:
    r"""Top-``k`` relation chains of a blind question from its words and its topic's relations
    (see the module docstring).

    Args:
        graph: optional evidence graph: the topic's leaving relations become features, and
            the topic's text is one of its surface forms.
        max_n: the longest word n-gram.
        penalties: the :math:`\ell_2` penalties :meth:`fit` chooses among on validation
            (strongest first: ties go to the earlier).

    Example:
        >>> from types import SimpleNamespace as Q
        >>> train = [Q(text="who directed [x]", topic="x", chain=("directed_by",)),
        ...          Q(text="who wrote [y]", topic="y", chain=("written_by",))]
        >>> c = ChainClassifier().fit(train)
        >>> c.predict([BlindQuestion("who directed [z]", "z")], k=1)[0][0][0]
        ('directed_by',)
    """

    def __init__(
        self,
        graph: TypedGraph | None = None,
        *,
        max_n: int = 3,
        penalties: Sequence[float] = PENALTIES,
    ):
        penalties = tuple(float(p) for p in penalties)
        if not penalties or not all(np.isfinite(p) and p > 0 for p in penalties):
            raise ValueError(f"penalties must be finite and > 0 (at least one), got {penalties}")
        self.graph, self.penalties = graph, penalties
        self.max_n = check_int(max_n, "max_n")
        self.chains: tuple[Chain, ...] = ()
        self.penalty = self.temperature = float("nan")
        self.validation: dict[float, float] = {}  # penalty -> validation top-1

    def features(self, questions: Sequence[Any]) -> scipy.sparse.csr_matrix:
        """``[Q, V]`` unit-norm rows of each question's features over the training
        vocabulary (a feature no training question had carries no weight and is left out)."""
        if not self.chains:
            raise ValueError("the classifier is not fitted: call fit(training questions) first")
        return self._matrix([self._keys(q) for q in questions])

    def _matrix(self, rows: Sequence[Sequence[str]]) -> scipy.sparse.csr_matrix:
        ix = [sorted({self._vocab[k] for k in keys if k in self._vocab}) for keys in rows]
        indptr = np.cumsum([0, *map(len, ix)])
        cols = np.fromiter((c for r in ix for c in r), np.int64, indptr[-1])
        norm = np.sqrt(np.maximum(np.diff(indptr), 1.0))
        data = np.repeat(1.0 / norm, np.diff(indptr))
        return scipy.sparse.csr_matrix((data, cols, indptr), shape=(len(rows), len(self._vocab)))

    def _keys(self, q: Any) -> list[str]:
        g = self.graph
        known = g is not None and g.has_entity(q.topic)
        toks = ["<s>", *_blanked(q, g.node_texts[g.entity_index(q.topic)] if known else None)]
        toks.append("</s>")
        keys = [
            "w:" + " ".join(toks[i : i + n])
            for n in range(1, self.max_n + 1)
            for i in range(len(toks) - n + 1)
        ]
        if known:
            edges = g.edges_from([g.entity_index(q.topic)])
            keys += ["out:" + g.relations[r] for r in np.unique(np.asarray(g.relation)[edges])]
        return keys

    def fit(
        self, train: Sequence[Any], valid: Sequence[Any] = (), *, refit: bool = False
    ) -> ChainClassifier:
        """Learn the chains and their weights from training questions (``text``, ``topic`` and
        gold ``chain``); with validation questions, pick the penalty (top-1) and the
        temperature (log-likelihood), else the first penalty and ``T = 1``; with ``refit``,
        then learn the weights again from training and validation questions together at the
        chosen penalty, keeping the temperature (fitted where the wordings were unseen, when
        validation holds out wordings: :func:`wording_split`). Returns ``self``.

        Raises:
            ValueError: no training question, or an empty chain.
            TypeError: a chain that is not a sequence of relation names.
        """
        train, valid = list(train), list(valid)
        if not train:
            raise ValueError("fit needs at least one training question")
        gold = [_chain(q.chain, _example(i, q)) for i, q in enumerate(train)]
        self.chains, self.validation = tuple(sorted(set(gold))), {}
        index = {c: j for j, c in enumerate(self.chains)}
        keys = [tuple(sorted(set(self._keys(q)))) for q in train]
        self._vocab = {k: j for j, k in enumerate(sorted({k for ks in keys for k in ks}))}
        # questions with the same features and chain are one row weighted by their count
        rows = Counter(zip(keys, (index[c] for c in gold)))
        x = self._matrix([k for k, _ in rows])
        y = np.array([c for _, c in rows])
        counts = np.array(list(rows.values()), float)
        if not valid:
            self.penalty, self.temperature = self.penalties[0], 1.0
            self._w = _softmax_regression(x, y, counts, len(self.chains), self.penalty)
            return self
        vx = self.features(valid)
        vgold = [_chain(q.chain, _example(i, q)) for i, q in enumerate(valid)]
        vy = np.array([index.get(c, -1) for c in vgold])
        best = None
        for penalty in self.penalties:
            w = _softmax_regression(x, y, counts, len(self.chains), penalty)
            acc = float(np.mean(np.asarray(vx @ w).argmax(axis=1) == vy))
            self.validation[penalty] = acc
            if best is None or acc > best[0]:
                best = (acc, penalty, w)
        _, self.penalty, self._w = best
        s = np.asarray(vx @ self._w)[vy >= 0]
        known = vy[vy >= 0]
        grid = np.logspace(-2, 1, 31)
        ll = [np.mean(s[np.arange(len(known)), known] / t - logsumexp(s / t, axis=1)) for t in grid]
        self.temperature = float(grid[int(np.argmax(ll))]) if len(known) else 1.0
        if refit:
            chosen = (self.penalty, self.temperature, dict(self.validation))
            self.penalties = (self.penalty,)
            self.fit([*train, *valid])
            self.penalty, self.temperature, self.validation = chosen
        return self

    def scores(self, questions: Sequence[BlindQuestion]) -> np.ndarray:
        """``[Q, C]`` scores of every training chain."""
        if not self.chains:
            raise ValueError("the classifier is not fitted: call fit(training questions) first")
        if not all(isinstance(q, BlindQuestion) for q in questions):
            raise TypeError("predict takes BlindQuestion objects (grounding.query.blind(q))")
        return np.asarray(self.features(questions) @ self._w)

    def predict(
        self, questions: Sequence[BlindQuestion], k: int = 3
    ) -> list[list[tuple[Chain, float]]]:
        """Per question, the ``k`` best ``(chain, probability)`` pairs, best first (ties: the
        earlier chain in sorted order)."""
        k = check_int(k, "k")
        out = []
        for row in self.scores(questions):
            order = np.argsort(-row, kind="stable")[:k]
            p = _tempered_softmax(row[order], self.temperature)
            out.append([(self.chains[j], float(pj)) for j, pj in zip(order, p)])
        return out


def _softmax_regression(
    x: scipy.sparse.csr_matrix, y: np.ndarray, counts: np.ndarray, n_classes: int, penalty: float
) -> np.ndarray:
    """``[V, C]`` weights minimizing the count-weighted mean log-loss plus
    ``penalty/2 * ||W||^2`` (L-BFGS from zero: the problem is strictly convex, so the
    minimizer is unique)."""
    n, f = x.shape
    share = counts / counts.sum()
    target = np.zeros((n, n_classes))
    target[np.arange(n), y] = share
    xt = x.T.tocsr()

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        w = flat.reshape(f, n_classes)
        s = np.asarray(x @ w)
        lse = logsumexp(s, axis=1, keepdims=True)
        value = float(share @ (lse[:, 0] - s[np.arange(n), y])) + 0.5 * penalty * flat @ flat
        grad = np.asarray(xt @ (np.exp(s - lse) * share[:, None] - target)) + penalty * w
        return value, grad.ravel()

    res = scipy.optimize.minimize(
        loss,
        np.zeros(f * n_classes),
        jac=True,
        method="L-BFGS-B",
        options=dict(maxiter=2000, gtol=1e-9, ftol=1e-12),
    )
    return res.x.reshape(f, n_classes)


def wording_split(
    questions: Sequence[Any], share: float = 0.3, seed: int = 0
) -> tuple[list[Any], list[Any]]:
    """Training and validation questions split by *wording*: each question's text with its
    topic blanked is its wording, and about ``share`` of each chain's wordings (at least one
    when the chain has two or more) go to validation with all their questions, drawn with
    ``seed``. Validation then measures wordings the training never saw."""
    if not 0 < share < 1:
        raise ValueError(f"share must lie in (0, 1), got {share!r}")
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    wording = [" ".join(_blanked(q)) for q in questions]
    by_chain: dict[Chain, list[str]] = {}
    for q, w in zip(questions, wording):
        ws = by_chain.setdefault(_chain(q.chain, _example(None, q)), [])
        if w not in ws:
            ws.append(w)
    held = set()
    for ws in by_chain.values():
        if len(ws) >= 2:
            m = min(len(ws) - 1, max(1, round(share * len(ws))))
            held.update(ws[j] for j in rng.choice(len(ws), m, replace=False))
    train = [q for q, w in zip(questions, wording) if w not in held]
    valid = [q for q, w in zip(questions, wording) if w in held]
    return train, valid


def _blanked(q: Any, text: str | None = None) -> list[str]:
    """A question's words with its topic (the longest surface form of its name and ``text``)
    as the one word ``<topic>``."""
    toks = words(q.text)
    span = topic_span(toks, q.topic, text)
    return toks if span is None else toks[: span[0]] + [TOPIC] + toks[span[1] :]
