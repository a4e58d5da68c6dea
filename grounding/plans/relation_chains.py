r"""Relation chains predicted from the question text: the blind replacement for a question's
gold relation chain.

A :class:`RelationChainPredictor` is fitted on training questions (text and gold chain: the
training split only) and then sees a :class:`~grounding.query.BlindQuestion` (text and
topic) alone. Its candidates are the relation chains seen in training, as relation-path
planners of KGQA retrieve chains that ground in the graph. A chain :math:`\pi` is scored
against the question's text embedding :math:`\phi(x)` by two cosines:

.. math::
    s(x, \pi) = \cos(\phi(x), \bar\phi_\pi) + \beta \cos(\phi(x), \phi(\mathrm{text}(\pi))),

the *prototype* :math:`\bar\phi_\pi` (the normalized mean embedding of the training questions
asked along :math:`\pi`) and the chain's *label text* (its relations' labels, each read
forwards, "the <label> of", or backwards, "the entity whose <label> is"). With a graph, a chain
whose first relation does not leave the topic there is out (it cannot be walked). The top
``k`` chains carry the softmax of :math:`s / T` as their probabilities, so competing chains can
meet in a posterior.

References:
    Luo, Li, Haffari & Pan, "Reasoning on Graphs: Faithful and Interpretable Large Language
    Model Reasoning", 2024 (relation paths planned from the question, then grounded in the
    graph).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from grounding._checks import check_int
from grounding.graph import INVERSE_SUFFIX, TypedGraph, inverse_relation
from grounding.language.encoders import unit_rows
from grounding.plans._common import _chain, _embed, _example, _tempered_softmax
from grounding.query import BlindQuestion, relation_phrase

__all__ = ["RelationChainPredictor", "chain_accuracy"]

Chain = tuple[str, ...]


class RelationChainPredictor:
    """Top-``k`` relation chains of a blind question (see the module docstring).

    Args:
        encode: ``texts -> [n, d]`` embeddings (e.g. ``HashingEncoder().encode`` of
            :mod:`grounding.language.encoders`, or a sentence encoder's).
        relation_labels: a label per relation name (inverse names are read backwards).
        graph: optional evidence graph: chains whose first relation has no edge out of the
            topic are not predicted for it.
        label_weight: :math:`\\beta`, the weight of the label-text cosine.
        temperature: :math:`T > 0` of the softmax over the top chains' scores.

    Example:
        >>> import numpy as np
        >>> vocab = ["capital", "currency", "country", "of"]
        >>> def encode(texts):
        ...     return np.array([[t.count(w) for w in vocab] for t in texts], float)
        >>> train = [("What is the capital of the country of A?", ("country", "capital")),
        ...          ("What is the currency of B?", ("currency",))]
        >>> from types import SimpleNamespace as Q
        >>> p = RelationChainPredictor(encode, {"capital": "capital", "currency": "currency",
        ...                                     "country": "country"})
        >>> p = p.fit([Q(text=t, chain=c) for t, c in train])
        >>> p.predict([BlindQuestion("What is the currency of C?", "c")], k=1)[0][0][0]
        ('currency',)
    """

    def __init__(
        self,
        encode: Callable[[Sequence[str]], Any],
        relation_labels: Mapping[str, str],
        graph: TypedGraph | None = None,
        label_weight: float = 0.5,
        temperature: float = 0.05,
    ):
        if not (np.isfinite(label_weight) and label_weight >= 0):
            raise ValueError(f"label_weight must be finite and >= 0, got {label_weight!r}")
        if not (np.isfinite(temperature) and temperature > 0):
            raise ValueError(f"temperature must be finite and > 0, got {temperature!r}")
        self.encode, self.labels, self.graph = encode, dict(relation_labels), graph
        self.label_weight, self.temperature = float(label_weight), float(temperature)
        self.chains: tuple[Chain, ...] = ()

    def chain_text(self, chain: Chain) -> str:
        """A chain's relations in words, phrased as templated questions read them
        (:func:`~grounding.query.relation_phrase`), the topic left out."""
        x = ""
        for r in chain:
            inverse = r.endswith(INVERSE_SUFFIX)
            label = self.labels.get(inverse_relation(r) if inverse else r, r)
            x = relation_phrase(label, x, inverse=inverse)
        return " ".join(x.split())

    def fit(self, questions: Sequence[Any]) -> RelationChainPredictor:
        """Learn the candidate chains and their prototypes from training questions (each with
        ``text`` and its gold ``chain``, a non-empty sequence of relation names). Returns
        ``self``.

        Raises:
            TypeError: a chain is a bare string or holds anything but relation names (the
                message names the question).
            ValueError: no question, an empty chain, or an encoder output that is not finite.
        """
        questions = list(questions)
        if not questions:
            raise ValueError("fit needs at least one training question")
        chains = [_chain(q.chain, _example(i, q)) for i, q in enumerate(questions)]
        index = {c: i for i, c in enumerate(sorted(set(chains)))}
        emb = _embed(self.encode, [q.text for q in questions])
        proto = np.zeros((len(index), emb.shape[1]))
        np.add.at(proto, [index[c] for c in chains], emb)
        label = _embed(self.encode, [self.chain_text(c) for c in index])
        self.chains, self._proto, self._label = tuple(index), unit_rows(proto), label
        self._first = [c[0] for c in self.chains]
        return self

    def scores(self, questions: Sequence[BlindQuestion]) -> np.ndarray:
        """``[Q, C]`` scores of every candidate chain (``-inf``: not walkable from the topic)."""
        if not self.chains:
            raise ValueError("the predictor is not fitted: call fit(training questions) first")
        if not all(isinstance(q, BlindQuestion) for q in questions):
            raise TypeError("predict takes BlindQuestion objects (grounding.query.blind(q))")
        x = _embed(self.encode, [q.text for q in questions])
        s = x @ self._proto.T + self.label_weight * (x @ self._label.T)
        if self.graph is not None:
            s = np.where(self._walkable([q.topic for q in questions]), s, -np.inf)
        return s

    def _walkable(self, topics: Sequence[str]) -> np.ndarray:
        """``[Q, C]``: the chain's first relation leaves the topic in the graph."""
        g = self.graph
        out = np.zeros((len(topics), len(self.chains)), bool)
        rel_of_chain = np.array(
            [g.relation_index(r) if r in g.relations else -1 for r in self._first]
        )
        for i, t in enumerate(topics):
            if not g.has_entity(t):
                continue
            edges = g.edges_from([g.entity_index(t)])
            leaving = np.unique(np.asarray(g.relation)[edges])
            out[i] = np.isin(rel_of_chain, leaving)
        return out

    def predict(
        self, questions: Sequence[BlindQuestion], k: int = 3
    ) -> list[list[tuple[Chain, float]]]:
        """Per question, up to ``k`` ``(chain, probability)`` pairs, best first (ties: the
        earlier chain in sorted order); empty when no chain is walkable from the topic."""
        k = check_int(k, "k")
        s = self.scores(questions)
        out = []
        for row in s:
            order = np.argsort(-row, kind="stable")[:k]
            order = order[np.isfinite(row[order])]
            if not len(order):
                out.append([])
                continue
            p = _tempered_softmax(row[order], self.temperature)
            out.append([(self.chains[j], float(pj)) for j, pj in zip(order, p)])
        return out


def chain_accuracy(
    predictor: Any, questions: Sequence[Any], k: int = 3, seen: Sequence[Chain] | None = None
) -> dict[int, dict[str, float]]:
    """Per hop count: top-1 and top-``k`` accuracy of the predicted chains against the gold
    chains (the scorer's side: the predictor, any object with ``predict(blind questions, k)``,
    sees :func:`~grounding.query.blind` questions), and the share of questions whose gold
    chain is among ``seen`` (default: the predictor's ``chains``, the training chains of a
    :class:`RelationChainPredictor`): the ceiling of a predictor over training chains."""
    from grounding.query import blind

    questions = list(questions)
    golds = [_chain(q.chain, _example(i, q)) for i, q in enumerate(questions)]
    preds = predictor.predict([blind(q) for q in questions], k)
    if seen is None:
        known = set(predictor.chains)
    else:
        known = {_chain(c, f"seen[{j}]") for j, c in enumerate(seen)}
    out: dict[int, dict[str, float]] = {}
    for h in sorted({len(g) for g in golds}):
        rows = [(g, p) for g, p in zip(golds, preds) if len(g) == h]
        gold = [g for g, _ in rows]
        out[h] = dict(
            n=float(len(rows)),
            top1=float(np.mean([bool(p) and p[0][0] == g for (_, p), g in zip(rows, gold)])),
            topk=float(np.mean([g in [x for x, _ in p] for (_, p), g in zip(rows, gold)])),
            ceiling=float(np.mean([g in known for g in gold])),
        )
    return out
