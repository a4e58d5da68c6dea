r"""Entity linking for retrieval: the entities a free-text question names, found by the
package's one linking rule (:mod:`grounding.language.linking`: the names and surface forms of
the graph's entities, the longest mention first), with an ambiguous mention's entities ordered
by the index's encoder: the one whose embedding is closest to the whole text first (cosine).

References:
    Shen, Wang & Han, "Entity Linking with a Knowledge Base: Issues, Techniques, and
    Solutions", 2015 (dictionary-based candidate generation from entity names and surface
    forms).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from grounding.language import AnswerLinker, Mention, tokenize
from grounding.retrieval.base import TextIndex

__all__ = ["EntityLinker"]


class EntityLinker:
    """The entities a text names (see the module docstring).

    Args:
        index: the graph's text index (its graph's names and node texts give the surface
            forms; its encoder orders the entities of an ambiguous mention).
        max_tokens: the longest surface form considered, in tokens.

    Raises:
        TypeError: ``index`` is not a :class:`~grounding.retrieval.TextIndex`.

    References:
        Shen, Wang & Han, "Entity Linking with a Knowledge Base: Issues, Techniques, and
        Solutions", 2015 (candidate entities from a dictionary of names and surface forms).

    Example:
        >>> from grounding import TypedGraph
        >>> g = TypedGraph.from_triples(
        ...     [("lou_seal", "mascot_of", "giants")], entities=["lou_seal", "giants"],
        ...     texts=["Lou Seal: the Giants' mascot", "San Francisco Giants (team)"])
        >>> linker = EntityLinker(TextIndex(g))
        >>> linker.link("Which team is Lou Seal the mascot of?")
        ('lou_seal',)
        >>> [m.text for m in linker.mentions("Did the san francisco giants win?")]
        ['san francisco giants']
    """

    def __init__(self, index: TextIndex, max_tokens: int = 12):
        if not isinstance(index, TextIndex):
            raise TypeError(f"index must be a TextIndex, got {index!r:.100}")
        self.index, self.graph = index, index.graph
        self.names = AnswerLinker(self.graph.entities, self.graph.node_texts, max_tokens=max_tokens)
        self.max_tokens = self.names.max_tokens

    def mentions(self, text: str) -> list[Mention]:
        """The text's mentions, left to right (longest first where forms overlap), each
        ambiguous one's entities closest to the text first."""
        return [
            dataclasses.replace(m, entities=self._order(m.entities, text)) if len(m.entities) > 1
            else m
            for m in self.names.mentions(text)
        ]  # fmt: skip

    def link(self, text: str) -> tuple[str, ...]:
        """Every entity the text names, in mention order (each once)."""
        return tuple(dict.fromkeys(e for m in self.mentions(text) for e in m.entities))

    def _order(self, entities: tuple[str, ...], text: str) -> tuple[str, ...]:
        if not tokenize(text):
            return entities
        ids = [self.graph.entity_index(e) for e in entities]
        sim = self.index.embeddings[ids] @ self.index.embed_queries([text])[0]
        return tuple(entities[j] for j in np.argsort(-sim, kind="stable"))
