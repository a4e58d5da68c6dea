r"""A baseline that reads a templated question's relation chain back off its text.

The templated question benchmark (:func:`grounding.datasets.kgqa_benchmark`) writes a
question of chain :math:`(r_1, \dots, r_T)` from topic :math:`x` as a frame (*What is ...?*)
around :math:`\phi_{r_T}(\dots\phi_{r_1}(x))`, with one noun phrase :math:`\phi_r` per
relation, direction and wording (:func:`grounding.query.relation_phrase`).
:class:`TemplateChainParser` inverts that writer for the wordings it is given: it strips a
frame, then, from the outside in, every phrase whose fixed words surround the rest of the
text, down to the topic's own text. It sees what a blind system sees (the text and the topic)
plus the relation labels and entity texts the benchmark publishes, and nothing gold.

Given the wordings of the training questions (the default), it recovers the chain of every
question worded that way (several chains when the words are ambiguous): on benchmarks with a
single wording it equals the oracle, and a blind system below it there is losing to the
template, not to the question. On test questions worded in ways training never showed it
parses nothing: the share it misses measures how much of the test set asks for reading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grounding._checks import check_int
from grounding.graph import inverse_relation
from grounding.query import (
    FRAMES,
    TRAIN_FRAMES,
    TRAIN_PHRASINGS,
    BlindQuestion,
    relation_phrase,
)

__all__ = ["TemplateChainParser"]

Chain = tuple[str, ...]

_HOLE = "\x00"  # stands for the inner phrase while a relation's phrase is cut in two


class TemplateChainParser:
    """Relation chains read back off templated question texts (module docstring).

    Args:
        relation_labels: relation name -> the label the texts use (the benchmark's
            ``relation_labels``; an inverse ``r^-1`` reads ``r``'s label backwards).
        entity_texts: entity name -> the text the questions name it by (the benchmark's
            node texts).
        max_hops: longest chain read.
        phrasings: the wordings of a relation step it knows (indices of
            :func:`~grounding.query.relation_phrase`; default: the training wordings).
        frames: the question frames it knows (indices of :data:`~grounding.query.FRAMES`).

    Example:
        >>> parser = TemplateChainParser({"capital": "capital", "treats": "treats"},
        ...                              {"flu": "flu", "france": "France"})
        >>> parser.parse("What is the entity that treats flu?", "flu")
        [('treats^-1',)]
        >>> parser.parse("What is the capital of France?", "france")
        [('capital',)]
    """

    def __init__(
        self,
        relation_labels: Mapping[str, str],
        entity_texts: Mapping[str, str],
        max_hops: int = 3,
        phrasings: Sequence[int] = TRAIN_PHRASINGS,
        frames: Sequence[int] = TRAIN_FRAMES,
    ):
        self.entity_texts = dict(entity_texts)
        self.max_hops = check_int(max_hops, "max_hops")
        phrases: set[tuple[str, str, str]] = set()  # (relation, words before, words after)
        for r, label in sorted(relation_labels.items()):
            for name, inverse in ((r, False), (inverse_relation(r), True)):
                for i in phrasings:
                    phrase = relation_phrase(label, _HOLE, inverse=inverse, phrasing=i)
                    phrases.add((name, *phrase.split(_HOLE)))
        self._phrases = sorted(phrases)
        self._frames = sorted({tuple(FRAMES[i].split("{P}")) for i in frames})

    def parse(self, text: str, topic: str) -> list[Chain]:
        """Every chain of 1..``max_hops`` relations whose known wordings write ``text`` from
        ``topic`` (empty when no known wording writes it)."""
        inner = self.entity_texts.get(topic, topic)
        out: list[Chain] = []
        for before, after in self._frames:
            if text.startswith(before) and text.endswith(after):
                body = text[len(before) : len(text) - len(after)]
                out += [c for c in self._read(body, inner, 0) if c and c not in out]
        return out

    def _read(self, phrase: str, topic_text: str, depth: int) -> list[Chain]:
        out: list[Chain] = [()] if phrase == topic_text else []
        if depth == self.max_hops:
            return out
        for name, before, after in self._phrases:
            fits = len(phrase) > len(before) + len(after)
            if fits and phrase.startswith(before) and phrase.endswith(after):
                inside = phrase[len(before) : len(phrase) - len(after)]
                out += [(*c, name) for c in self._read(inside, topic_text, depth + 1)]
        return out

    def predict(
        self, questions: Sequence[BlindQuestion], k: int = 3
    ) -> list[list[tuple[Chain, float]]]:
        """Per question, up to ``k`` chains the text parses to, each with probability
        ``1 / (number of parses)`` (the predictor interface of
        :class:`~grounding.qa.BlindQA`); empty when the text does not parse."""
        k = check_int(k, "k")
        out = []
        for q in questions:
            chains = sorted(set(self.parse(q.text, q.topic)), key=lambda c: (len(c), c))
            out.append([(c, 1.0 / len(chains)) for c in chains[:k]])
        return out
