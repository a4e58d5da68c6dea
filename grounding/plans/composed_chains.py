r"""Relation chains composed relation by relation: a blind predictor that can propose chains
never seen in training.

:class:`~grounding.plans.relation_chains.RelationChainPredictor` ranks the chains of its
training questions, so a test question asked along a new chain is out of its reach (its
*ceiling*). :class:`ComposedChainPredictor` scores relations, not chains, and builds chains by
a beam search over the graph:

- each relation :math:`r` (either direction) is scored against the question's text embedding
  :math:`\phi(x)` by its prototype (the normalized mean embedding of the training questions
  whose chain uses :math:`r`) and its label's phrase,
  :math:`a(x, r) = \cos(\phi(x), \bar\phi_r) + \beta \cos(\phi(x), \phi(\mathrm{label}_r))`;
- the hop count :math:`T` gets :math:`\log p(T \mid x)`, a softmax over the cosines with the
  training questions' mean embedding per hop count;
- a chain :math:`(r_1, \dots, r_T)` scores
  :math:`s = \frac1T \sum_t a(x, r_t) + \gamma \log p(T \mid x) + \omega\, o(x, \pi)`, with
  :math:`o` the share of consecutive relations whose labels occur in the text in the chain's
  order, read outwards from the topic's mention (nested wordings put the first hop nearest the
  topic);
- the beam only takes relations that leave the current frontier in the evidence graph (the
  topic first), never stepping straight back along the edge just taken; where no edge of the
  evidence leaves the frontier (the incomplete case), any relation that follows the previous
  one somewhere in the graph (a tail of one, a head of the other) may extend the chain.

Its predictions carry the softmax of :math:`s / T_{\mathrm{soft}}` over the top ``k`` chains,
the interface of :class:`~grounding.qa.BlindQA`'s predictor.

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

__all__ = ["ComposedChainPredictor"]

Chain = tuple[str, ...]


class ComposedChainPredictor:
    """Top-``k`` relation chains of a blind question, composed relation by relation (see the
    module docstring).

    Args:
        encode: ``texts -> [n, d]`` embeddings.
        relation_labels: a label per relation name (an inverse reads its relation's label
            backwards).
        graph: the evidence graph the beam walks (its relations are the candidates).
        label_weight: :math:`\\beta`.
        hop_weight: :math:`\\gamma`, the weight of :math:`\\log p(T \\mid x)`.
        order_weight: :math:`\\omega`, the weight of the text-order agreement.
        beam: partial chains kept per step.
        max_hops: longest chain proposed.
        temperature: of the softmax over the top chains' scores.
        max_frontier: a frontier larger than this is not walked (the relation schema extends
            the chain instead).

    Example:
        >>> import numpy as np
        >>> from types import SimpleNamespace as Q
        >>> vocab = ["capital", "currency", "country"]
        >>> def encode(texts):
        ...     return np.array([[t.count(w) for w in vocab] + [1.0] for t in texts], float)
        >>> g = TypedGraph.from_triples([("a", "country", "fr"), ("fr", "capital", "paris"),
        ...                              ("fr", "currency", "euro")])
        >>> p = ComposedChainPredictor(encode, {r: r for r in vocab}, g).fit(
        ...     [Q(text="the capital of X", chain=("capital",)),
        ...      Q(text="the currency of the country of Y", chain=("country", "currency"))])
        >>> [c for c, _ in p.predict([BlindQuestion("the capital of the country of a", "a")])[0]]
        [('country',), ('country', 'capital'), ('country', 'currency')]

        The second chain was never a training chain: it is composed. (Here the one-hop chain
        ranks first: four words cannot tell the hop count apart.)
    """

    def __init__(
        self,
        encode: Callable[[Sequence[str]], Any],
        relation_labels: Mapping[str, str],
        graph: TypedGraph,
        label_weight: float = 0.5,
        hop_weight: float = 0.1,
        order_weight: float = 0.1,
        beam: int = 16,
        max_hops: int = 3,
        temperature: float = 0.05,
        max_frontier: int = 5000,
    ):
        for name, v in (
            ("label_weight", label_weight),
            ("hop_weight", hop_weight),
            ("order_weight", order_weight),
        ):
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
        if not (np.isfinite(temperature) and temperature > 0):
            raise ValueError(f"temperature must be finite and > 0, got {temperature!r}")
        self.encode, self.labels, self.graph = encode, dict(relation_labels), graph
        self.label_weight, self.hop_weight = float(label_weight), float(hop_weight)
        self.order_weight, self.temperature = float(order_weight), float(temperature)
        self.beam = check_int(beam, "beam")
        self.max_hops = check_int(max_hops, "max_hops")
        self.max_frontier = check_int(max_frontier, "max_frontier")
        self.relations = tuple(graph.relations)
        index = {r: i for i, r in enumerate(self.relations)}
        # relation -> its inverse's index: the step straight back along the edge just taken
        self._back = {i: index.get(inverse_relation(r), -1) for i, r in enumerate(self.relations)}
        self._fitted = False

    def label(self, relation: str) -> str:
        """The label a relation's text uses (an inverse: its relation's)."""
        base = inverse_relation(relation) if relation.endswith(INVERSE_SUFFIX) else relation
        return self.labels.get(base, base)

    def fit(self, questions: Sequence[Any]) -> ComposedChainPredictor:
        """Learn relation and hop-count prototypes from training questions (each with
        ``text`` and its gold ``chain``; relations outside the graph are ignored). Returns
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
        index = {r: i for i, r in enumerate(self.relations)}
        emb = _embed(self.encode, [q.text for q in questions])
        proto = np.zeros((len(self.relations), emb.shape[1]))
        hops = np.zeros((self.max_hops, emb.shape[1]))
        for e, chain in zip(emb, chains):
            for r in set(chain):
                if r in index:
                    proto[index[r]] += e
            if 1 <= len(chain) <= self.max_hops:
                hops[len(chain) - 1] += e
        self._proto, self._hops = unit_rows(proto), unit_rows(hops)
        phrases = [
            relation_phrase(self.label(r), "", inverse=r.endswith(INVERSE_SUFFIX))
            for r in self.relations
        ]
        self._label = _embed(self.encode, phrases)
        self._follows = self._schema()
        self._fitted = True
        return self

    def _schema(self) -> np.ndarray:
        """``[R, R]``: relation ``j`` leaves some entity that relation ``i`` enters (read off the
        graph's edge lists, without a dense entity-by-relation table)."""
        g, n_rel = self.graph, len(self.relations)
        rel, tail = np.asarray(g.relation), np.asarray(g.tail)
        follows = np.zeros((n_rel, n_rel), bool)
        for i in range(n_rel):
            entered = np.unique(tail[rel == i])
            follows[i, np.unique(rel[g.edges_from(entered)])] = True
        return follows

    def predict(
        self, questions: Sequence[BlindQuestion], k: int = 3
    ) -> list[list[tuple[Chain, float]]]:
        """Per question, up to ``k`` ``(chain, probability)`` pairs, best first; empty when
        no relation leaves the topic."""
        k = check_int(k, "k")
        if not self._fitted:
            raise ValueError("the predictor is not fitted: call fit(training questions) first")
        if not all(isinstance(q, BlindQuestion) for q in questions):
            raise TypeError("predict takes BlindQuestion objects (grounding.query.blind(q))")
        x = _embed(self.encode, [q.text for q in questions])
        rel_score = x @ self._proto.T + self.label_weight * (x @ self._label.T)
        hop_cos = x @ self._hops.T / self.temperature
        log_hop = hop_cos - np.logaddexp.reduce(hop_cos, axis=1, keepdims=True)
        out = []
        for q, a, lh in zip(questions, rel_score, log_hop):
            chains = self._beam(q, a)
            if not chains:
                out.append([])
                continue
            scores = np.array(
                [
                    a[list(c)].mean()
                    + self.hop_weight * lh[len(c) - 1]
                    + self.order_weight * self._order(q, c)
                    for c in chains
                ]
            )
            top = np.argsort(-scores, kind="stable")[:k]
            p = _tempered_softmax(scores[top], self.temperature)
            out.append([(tuple(self.relations[r] for r in chains[j]), float(pj))
                        for j, pj in zip(top, p)])  # fmt: skip
        return out

    def _beam(self, q: BlindQuestion, a: np.ndarray) -> list[tuple[int, ...]]:
        """Every chain the beam keeps, of each length 1..``max_hops`` (relation indices)."""
        g = self.graph
        if not g.has_entity(q.topic):
            return []
        rel, tail = np.asarray(g.relation), np.asarray(g.tail)
        states: list[tuple[tuple[int, ...], np.ndarray | None, float]] = [
            ((), np.array([g.entity_index(q.topic)]), 0.0)
        ]
        found: list[tuple[int, ...]] = []
        for _ in range(self.max_hops):
            grown = []  # (chain, the parent frontier's edges or None, score)
            for chain, frontier, total in states:
                edges = g.edges_from(frontier) if frontier is not None else np.zeros(0, int)
                options = np.unique(rel[edges])
                if not len(options) and chain:  # the evidence stops: the schema goes on
                    edges, options = None, np.flatnonzero(self._follows[chain[-1]])
                for r in options:
                    r = int(r)
                    if not (chain and self._back[chain[-1]] == r):
                        grown.append(((*chain, r), edges, total + float(a[r])))
            grown.sort(key=lambda s: -s[2] / len(s[0]))
            # the next frontier only for the chains the beam keeps
            states = [
                (c, self._step(edges, c[-1], rel, tail), t) for c, edges, t in grown[: self.beam]
            ]
            found += [c for c, _, _ in states]
            if not states:
                break
        return found

    def _step(self, edges, r: int, rel: np.ndarray, tail: np.ndarray) -> np.ndarray | None:
        """The entities relation ``r`` reaches over ``edges`` (``None``: none known, or more
        than ``max_frontier``)."""
        if edges is None:
            return None
        nxt = np.unique(tail[edges[rel[edges] == r]])
        return nxt if len(nxt) <= self.max_frontier else None

    def _order(self, q: BlindQuestion, chain: tuple[int, ...]) -> float:
        """Share of consecutive relations whose labels occur in the text outwards from the
        topic's mention in the chain's order (0 when no pair has both labels in the text)."""
        g, text = self.graph, q.text.lower()
        at = text.find((g.texts or g.entities)[g.entity_index(q.topic)].lower())
        if len(chain) < 2 or at < 0:
            return 0.0
        dist = []
        for r in chain:
            i = text.find(self.label(self.relations[r]).lower())
            dist.append(None if i < 0 else abs(i - at))
        pairs = [(u, v) for u, v in zip(dist, dist[1:]) if u is not None and v is not None]
        return float(np.mean([u <= v for u, v in pairs])) if pairs else 0.0
