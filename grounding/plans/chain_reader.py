r"""Reading a question's relation chain: relation mentions found in the text, ordered outwards
from the topic, each read forwards or backwards, and checked against the evidence graph.

For a :class:`~grounding.query.BlindQuestion` (text and topic), :class:`ChainReader`:

1. finds the topic in the text (its name or node text, the longest surface form of
   :func:`~grounding.language.surface_forms`) and blanks it;
2. finds the relation mentions in the rest (:class:`~grounding.language.PhraseIndex`): each
   relation's label and its plain inflections (:func:`~grounding.language.label_phrases`) and
   the phrasings learned from training questions (:func:`~grounding.language.learned_phrases`:
   word sequences that predict a relation of the question's chain), longest first; their
   number is the hop count (at most ``max_hops``, the ones nearest the topic);
3. takes every order of the mentions and every reading of each (the relation a phrase names,
   forwards or backwards: ``r`` or ``r^-1``), and scores each chain :math:`\pi` by

   .. math::
       s(\pi) = w_{\rm walk}\,\mathrm{walked}(\pi) + w_{\rm reach}\log(1 + |\mathrm{reach}(\pi)|)
           + w_{\rm nested}\,[\text{nearest first}] + w_{\rm sides}\,[\text{each side outwards}]
           + w_{\rm chain}\log(1 + n_{\rm train}(\pi))
           + w_{\rm dir}\textstyle\sum_t \log p(\text{direction of } r_t \mid r_t, \text{side}_t)

   where ``walked`` is the share of the chain's hops that can be walked from the topic in the
   evidence graph (an incomplete graph may miss the last hops of a true chain), ``reach`` the
   entities a fully walked chain ends at; a nested question wraps each hop around the ones
   before it, so the mentions before the topic are read right to left and those after it left
   to right (*each side outwards*), and *nearest first* is the one such order in which each
   next mention is the nearest to the stretch read so far; :math:`n_{\rm train}` is the
   chain's count among the training questions, and :math:`p` the share of the training hops
   of :math:`r_t` on the same side of the stretch they wrap (the mention before it, as in
   *the capital of X*, or after it, as in *X's capital*) that read it that way (add-one
   smoothed: a direction read from position);
4. keeps the ``k`` best with the softmax of :math:`s/T` over every candidate, renormalized
   over the ``k`` kept (the same as the softmax of the ``k`` scores).

:meth:`ChainReader.fit` learns the phrasings, counts and direction shares from training
questions and, given validation questions, picks the weights (a grid, by top-1 accuracy) and
the temperature (by the log-likelihood of the gold chains); nothing reads a test question.

:class:`LabelLookup` is the baseline a reader must beat: the relation labels alone as
phrases, and fixed weights that rank a walkable chain first, then the nearest-first order,
then the training count, then the reach.

References:
    Luo, Li, Haffari & Pan, "Reasoning on Graphs: Faithful and Interpretable Large Language
    Model Reasoning", 2024 (relation paths read from the question, then checked in the graph).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from grounding._checks import check_int
from grounding.graph import INVERSE_SUFFIX, TypedGraph
from grounding.language.linking import surface_forms
from grounding.language.phrases import PhraseIndex, label_phrases, learned_phrases, words
from grounding.plans._common import _chain, _example, _tempered_softmax
from grounding.query import BlindQuestion

__all__ = ["ChainReader", "LabelLookup"]

Chain = tuple[str, ...]
#: The longest chain a reader reads (4: 24 orders and 16 directions of each reading).
MAX_HOPS = 4
FEATURES = ("walk", "reach", "nested", "sides", "chain", "dir")
#: The weights :meth:`ChainReader.fit` chooses among (by validation top-1), per feature, in
#: the order ties are broken: where validation cannot tell them apart, what the text and the
#: graph say (a walkable chain, the nesting) is preferred over counts of training chains
#: (validation questions share the training questions' wordings; test questions may not).
GRID = {
    "walk": (5.0, 2.0),
    "reach": (0.0, -0.2, 0.2),
    "nested": (3.0, 1.0, 0.0),
    "sides": (3.0, 0.0),
    "chain": (0.0, 0.5, 1.0),
    "dir": (1.0, 0.5, 0.0),
}
DEFAULT_WEIGHTS = {"walk": 5.0, "reach": 0.0, "nested": 1.0, "sides": 3.0, "chain": 0.5, "dir": 1.0}


class ChainReader:
    """Top-``k`` relation chains of a blind question, read from its text (module docstring).

    Args:
        relation_labels: a label per relation name (names ending in ``^-1`` are read as the
            inverse of the relation before it and need no label of their own).
        graph: the evidence graph the chains are checked in (its relations include the
            inverse ones, ``r^-1``, as the benchmark graphs' do).
        max_hops: the longest chain read, 1 to :data:`MAX_HOPS` (every order and direction of
            the mentions is scored: ``h! * 2**h`` readings per choice of relations).
        learn: whether :meth:`fit` learns phrasings from the training questions (else the
            labels and their inflections alone).
        weights: the score's weights (``None``: :data:`DEFAULT_WEIGHTS` until :meth:`fit`
            chooses them on validation questions).
        temperature: :math:`T > 0` of the softmax over the top chains.

    Example:
        >>> from grounding import TypedGraph
        >>> g = TypedGraph.from_triples([("fr", "capital", "paris"), ("paris", "capital^-1", "fr"),
        ...                              ("paris", "mayor", "anne"), ("anne", "mayor^-1", "paris")])
        >>> reader = ChainReader({"capital": "capital", "mayor": "mayor"}, g, learn=False)
        >>> reader.predict([BlindQuestion("Who is the mayor of the capital of fr?", "fr")], 1)
        [[(('capital', 'mayor'), 1.0)]]
    """

    def __init__(
        self,
        relation_labels: Mapping[str, str],
        graph: TypedGraph,
        *,
        max_hops: int = 3,
        learn: bool = True,
        weights: Mapping[str, float] | None = None,
        temperature: float = 1.0,
    ):
        if not isinstance(graph, TypedGraph):
            raise TypeError(f"graph must be a TypedGraph, got {type(graph).__name__}")
        bad = [(r, x) for r, x in relation_labels.items() if not isinstance(x, str)]
        if bad:
            raise TypeError(
                f"relation {bad[0][0]!r:.100}: its label must be a str, got {bad[0][1]!r:.100}"
            )
        self.labels = {r: x for r, x in relation_labels.items() if not r.endswith(INVERSE_SUFFIX)}
        if not self.labels:
            raise ValueError("relation_labels names no relation")
        self.graph, self.max_hops, self.learn = graph, check_int(max_hops, "max_hops"), bool(learn)
        if self.max_hops > MAX_HOPS:
            raise ValueError(f"max_hops must be at most {MAX_HOPS}, got {max_hops}")
        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        if set(self.weights) != set(FEATURES):
            raise ValueError(f"weights must name {FEATURES}, got {sorted(self.weights)}")
        if not all(np.isfinite(float(x)) for x in self.weights.values()):
            raise ValueError(f"weights must be finite numbers, got {self.weights}")
        if not (np.isfinite(temperature) and temperature > 0):
            raise ValueError(f"temperature must be finite and > 0, got {temperature!r}")
        self.temperature = float(temperature)
        self.phrases: dict[str, list[str]] = {
            r: self._label_phrases(x) for r, x in self.labels.items()
        }
        self._index = PhraseIndex(self.phrases)
        self.learned: dict[str, list[str]] = {}
        self.chains: tuple[Chain, ...] = ()
        self._count: Counter = Counter()
        self._sided: Counter = Counter()
        self._rel, self._tail = np.asarray(graph.relation), np.asarray(graph.tail)
        self._relation_ix = {r: i for i, r in enumerate(graph.relations)}

    def _label_phrases(self, label: str) -> list[str]:
        return label_phrases(label)

    # ----------------------------------------------------------------------- fitting
    def fit(self, train: Sequence[Any], valid: Sequence[Any] = ()) -> ChainReader:
        """Learn from training questions (``text``, ``topic`` and gold ``chain``): the
        phrasings (with ``learn``), the chains' counts and the relations' direction shares;
        with validation questions, choose the weights and the temperature on them. Returns
        ``self``.

        Raises:
            ValueError: no training question; TypeError: a chain that is not a sequence of
                relation names (naming the question).
        """
        train = list(train)
        if not train:
            raise ValueError("fit needs at least one training question")
        chains = [_chain(q.chain, _example(i, q)) for i, q in enumerate(train)]
        self._count = Counter(chains)
        self.chains = tuple(sorted(self._count))
        if self.learn:
            learned = learned_phrases(
                [q.text for q in train],
                [[_base(r) for r in c] for c in chains],
                blank=[
                    [s] if (s := self._topic_span(words(q.text), q.topic)) else [] for q in train
                ],
            )
            self.learned = {r: learned.get(r, []) for r in self.labels}
            self._index = PhraseIndex(self.phrases, self.learned)  # labels first
        self._sided = Counter()  # read through the phrases just learned
        for q, chain in zip(train, chains):
            self._sided.update(self._gold_sides(q, chain))
        valid = list(valid)
        if valid:
            self._choose(valid)
        return self

    def _choose(self, valid: Sequence[Any]) -> None:
        """The weights of :data:`GRID` with the best validation top-1 (ties: the first in grid
        order), then the temperature with the best log-likelihood of the gold chains."""
        gold = [_chain(q.chain, _example(i, q)) for i, q in enumerate(valid)]
        cands = [self._candidates(BlindQuestion(q.text, q.topic)) for q in valid]
        best, best_hits = None, -1.0
        for values in itertools.product(*(GRID[f] for f in FEATURES)):
            w = np.array(values)
            hits = sum(
                bool(len(feats)) and chains[int(np.argmax(feats @ w))] == g
                for (chains, feats), g in zip(cands, gold)
            )
            if hits > best_hits:
                best, best_hits = dict(zip(FEATURES, values)), hits
        self.weights = best  # type: ignore[assignment]
        w = np.array([self.weights[f] for f in FEATURES])

        def loglik(t: float) -> float:
            total = 0.0
            for (chains, feats), g in zip(cands, gold):
                if g in chains:
                    s = feats @ w / t
                    total += s[chains.index(g)] - np.logaddexp.reduce(s)
                else:
                    total += np.log(1e-6)
            return total

        self.temperature = float(max(np.logspace(-2, 1, 31), key=loglik))

    # ----------------------------------------------------------------------- reading
    def predict(
        self, questions: Sequence[BlindQuestion], k: int = 3
    ) -> list[list[tuple[Chain, float]]]:
        """Per question, up to ``k`` ``(chain, probability)`` pairs, best first; empty when no
        relation is mentioned (or the topic is not in the graph)."""
        k = check_int(k, "k")
        questions = list(questions)  # a generator is read once, here
        if not all(isinstance(q, BlindQuestion) for q in questions):
            raise TypeError("predict takes BlindQuestion objects (grounding.query.blind(q))")
        w = np.array([self.weights[f] for f in FEATURES])
        out = []
        for q in questions:
            chains, feats = self._candidates(q)
            if not chains:
                out.append([])
                continue
            s = feats @ w
            top = np.argsort(-s, kind="stable")[:k]
            p = _tempered_softmax(s[top], self.temperature)
            out.append([(chains[j], float(pj)) for j, pj in zip(top, p)])
        return out

    def mentions(self, question: BlindQuestion) -> list[tuple[str, tuple[str, ...]]]:
        """The relation mentions of a question, in reading order: ``(words, relations)``."""
        toks, found, _ = self._found(question)
        return [(" ".join(toks[m.start : m.end]), m.keys) for m in found]

    def _found(self, q: Any) -> tuple[list[str], list[Any], tuple[int, int] | None]:
        """A question's words, every relation mention in them (the topic blanked) and the
        topic's word span (``None`` when it is not found)."""
        toks = words(q.text)
        span = self._topic_span(toks, q.topic)
        return toks, self._index.find(toks, [span] if span else []), span

    def _topic_span(self, toks: list[str], topic: str) -> tuple[int, int] | None:
        """Word positions of the topic in the text (its longest surface form found)."""
        g = self.graph
        return topic_span(
            toks, topic, g.node_texts[g.entity_index(topic)] if g.has_entity(topic) else None
        )

    def _read(self, q: Any) -> tuple[list[Any], tuple[int, int]]:
        """The question's relation mentions (at most ``max_hops``, the nearest to the topic,
        in text order) and the topic's word span (``(0, 0)`` when it is not found)."""
        _, found, span = self._found(q)
        lo, hi = span if span else (0, 0)
        nearest = sorted(found, key=lambda m: _gap(m, lo, hi))[: self.max_hops]
        return sorted(nearest, key=lambda m: m.start), (lo, hi)

    def _gold_sides(self, q: Any, chain: Chain) -> Counter:
        """A training question's hops as ``(relation, side, inverse)``: its mentions matched
        to the gold chain's relations in an order that reads each side of the topic outwards
        (the nearest such order); none when no order matches."""
        found, (lo, hi) = self._read(q)
        if len(found) != len(chain):
            return Counter()
        base = [_base(r) for r in chain]
        nested = _nesting(found, lo, hi)
        for order in sorted(itertools.permutations(range(len(found))), key=lambda o: o != nested):
            if _outwards(found, order, lo) and all(b in found[i].keys for i, b in zip(order, base)):
                return Counter(
                    (b, _side(found[i], stretch), r.endswith(INVERSE_SUFFIX))
                    for (i, stretch), r, b in zip(_stretches(found, order, lo, hi), chain, base)
                )
        return Counter()

    def _candidates(self, q: BlindQuestion) -> tuple[list[Chain], np.ndarray]:
        """Every chain the question's mentions can be read as, with its features."""
        g = self.graph
        if not g.has_entity(q.topic):
            return [], np.zeros((0, len(FEATURES)))
        found, (lo, hi) = self._read(q)
        if not found:
            return [], np.zeros((0, len(FEATURES)))
        nested = _nesting(found, lo, hi)
        start = g.entity_index(q.topic)
        chains: dict[Chain, list[float]] = {}
        for order in itertools.permutations(range(len(found))):
            structure = [float(order == nested), float(_outwards(found, order, lo))]
            sides = [_side(found[i], stretch) for i, stretch in _stretches(found, order, lo, hi)]
            for keys in itertools.product(*(found[i].keys for i in order)):
                for inv in itertools.product((False, True), repeat=len(keys)):
                    chain = tuple(r + INVERSE_SUFFIX if b else r for r, b in zip(keys, inv))
                    direction = sum(map(self._direction, keys, sides, inv))
                    if chain in chains:  # read in another order too: its best reading of each
                        old = chains[chain]
                        old[2], old[3] = max(old[2], structure[0]), max(old[3], structure[1])
                        old[5] = max(old[5], direction)
                        continue
                    walked, reach = self._walk(start, chain)
                    chains[chain] = [walked, np.log1p(reach), *structure,
                                     np.log1p(self._count.get(chain, 0)), direction]  # fmt: skip
        names = list(chains)
        return names, np.array([chains[c] for c in names], float)

    def _direction(self, relation: str, side: str, inverse: bool) -> float:
        r""":math:`\log p(\text{direction} \\mid \text{relation, side})`: the share of the
        training hops of ``relation`` on that side read that way (add-one smoothed)."""
        n = self._sided[(relation, side, inverse)]
        return float(np.log((n + 1.0) / (n + self._sided[(relation, side, not inverse)] + 2.0)))

    def _walk(self, start: int, chain: Chain) -> tuple[float, int]:
        """The share of ``chain``'s hops walkable from ``start`` and the entities a fully
        walked chain ends at (0 otherwise)."""
        g, frontier = self.graph, np.array([start])
        for t, r in enumerate(chain):
            ix = self._relation_ix.get(r)
            edges = g.edges_from(frontier) if ix is not None else frontier[:0]
            frontier = np.unique(self._tail[edges[self._rel[edges] == ix]])
            if not len(frontier):
                return t / len(chain), 0
        return 1.0, len(frontier)


class LabelLookup(ChainReader):
    """The baseline a reader must beat: the relation labels alone, as written, found in the
    text (the topic blanked, longest first); their number is the hop count; every order and
    direction ranked by fixed weights: a chain walkable from the topic first, then the
    nearest-first order, then the count of the chain among the training questions, then its
    reach. Nothing is fitted but those counts.

    Example:
        >>> from grounding import TypedGraph
        >>> g = TypedGraph.from_triples([("fr", "capital", "paris"), ("paris", "capital^-1", "fr")])
        >>> LabelLookup({"capital": "capital"}, g).predict(
        ...     [BlindQuestion("What is the capital of fr?", "fr")], 1)[0][0][0]
        ('capital',)
    """

    def __init__(self, relation_labels: Mapping[str, str], graph: TypedGraph, *, max_hops: int = 3):
        super().__init__(relation_labels, graph, max_hops=max_hops, learn=False,
                         weights={"walk": 1e6, "nested": 1e4, "sides": 0.0, "chain": 1e2, "reach": 1.0,
                                  "dir": 0.0}, temperature=1e4)  # fmt: skip

    def _label_phrases(self, label: str) -> list[str]:
        return [label]

    def _choose(self, valid: Sequence[Any]) -> None:
        """Nothing is chosen: the weights are fixed."""


def topic_span(toks: list[str], topic: str, text: str | None) -> tuple[int, int] | None:
    """Word positions of the topic in a text's words ``toks``: its longest surface form
    (:func:`~grounding.language.surface_forms` of its name and ``text``) found, first
    occurrence; ``None`` when no form is found."""
    for form in sorted(surface_forms(topic, text), key=lambda f: -len(words(f))):
        w = words(form)
        for i in range(len(toks) - len(w) + 1):
            if w and toks[i : i + len(w)] == w:
                return i, i + len(w)
    return None


def _base(r: str) -> str:
    return r[: -len(INVERSE_SUFFIX)] if r.endswith(INVERSE_SUFFIX) else r


def _gap(m: Any, lo: int, hi: int) -> int:
    """Words between a mention and the stretch ``[lo, hi)``."""
    return lo - m.end if m.end <= lo else max(m.start - hi, 0)


def _side(m: Any, stretch: tuple[int, int]) -> str:
    """Which side of a mention the stretch it wraps lies on (the topic and the hops read
    before it): ``"x after"`` when the mention comes first (*the capital of X*)."""
    return "x after" if m.end <= stretch[0] else "x before"


def _stretches(
    found: Sequence[Any], order: Sequence[int], lo: int, hi: int
) -> list[tuple[int, tuple[int, int]]]:
    """Per hop of ``order``, its mention and the stretch read so far (the topic and the
    mentions of the hops before it)."""
    out = []
    for i in order:
        m = found[i]
        out.append((i, (lo, hi)))
        lo, hi = min(lo, m.start), max(hi, m.end)
    return out


def _outwards(found: Sequence[Any], order: Sequence[int], lo: int) -> bool:
    """Whether ``order`` reads the mentions on each side of the topic (at word ``lo``)
    outwards: those before it right to left, those after it left to right."""
    left = [found[i].start for i in order if found[i].start < lo]
    right = [found[i].start for i in order if found[i].start >= lo]
    return left == sorted(left, reverse=True) and right == sorted(right)


def _nesting(found: Sequence[Any], lo: int, hi: int) -> tuple[int, ...]:
    """The order in which the mentions wrap the topic: each next one the nearest to the
    stretch read so far (the topic, then the mentions before it)."""
    left, order = list(range(len(found))), []
    while left:
        j = min(left, key=lambda i: (_gap(found[i], lo, hi), found[i].start))
        order.append(j)
        left.remove(j)
        lo, hi = min(lo, found[j].start), max(hi, found[j].end)
    return tuple(order)
