r"""Entity linking by dictionary: the entities a free-text question names, found by their
names and texts.

Every entity of a :class:`~grounding.retrieval.TextIndex`'s graph has *surface forms*: its
name (``_`` read as a space), its node text, and that text without a trailing parenthetical
or a ``: description`` (``"Q42 (human)"`` is also ``"Q42"``; ``"Lou Seal: mascot"`` also
``"Lou Seal"``). A text is scanned left to right for the longest token sequence that is a
surface form (tokens as :func:`~grounding.retrieval.text.tokenize` cuts them; a one-token
form that is a function word, such as "the" or "of", is never a mention); mentions do not
overlap. An ambiguous form (several entities) links every entity it names, the one whose
embedding is closest to the whole text first (cosine, the index's encoder).

References:
    Shen, Wang & Han, "Entity Linking with a Knowledge Base: Issues, Techniques, and
    Solutions", 2015 (dictionary-based candidate generation from entity names and surface
    forms).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from grounding._checks import check_int
from grounding.retrieval.base import TextIndex
from grounding.retrieval.text import tokenize

__all__ = ["EntityLinker", "Mention"]

_FUNCTION_WORDS = frozenset(
    "a an and are as at be by did do does for from has have he her his how in is it its of on "
    "or she that the their they this to was were what when where which who whom whose why "
    "with".split()
)
_PAREN = re.compile(r"\s*\([^()]*\)\s*$")


@dataclasses.dataclass(frozen=True)
class Mention:
    """One linked mention.

    Attributes:
        text: the mention as it reads in the text (its tokens, lower-case, space-joined).
        start: index of its first token; ``end``: one past its last.
        entities: the entities it names, the closest to the whole text first.
    """

    text: str
    start: int
    end: int
    entities: tuple[str, ...]


class EntityLinker:
    """The entities a text names (see the module docstring).

    Args:
        index: the graph's text index (its graph's names and node texts give the surface
            forms; its encoder orders the entities of an ambiguous form).
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
        self.max_tokens = max_tokens = check_int(max_tokens, "max_tokens")
        forms: dict[tuple[str, ...], set[int]] = {}
        for i, (name, text) in enumerate(zip(self.graph.entities, self.graph.node_texts)):
            for surface in _surfaces(name, text):
                key = tuple(tokenize(surface))
                if not key or len(key) > max_tokens:
                    continue
                if len(key) == 1 and key[0] in _FUNCTION_WORDS:
                    continue
                forms.setdefault(key, set()).add(i)
        self._forms = {k: tuple(sorted(v)) for k, v in forms.items()}
        self._longest = max((len(k) for k in self._forms), default=0)

    def mentions(self, text: str) -> list[Mention]:
        """The text's mentions, left to right (longest first where forms overlap)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        tokens = tokenize(text)
        out: list[Mention] = []
        i = 0
        while i < len(tokens):
            for n in range(min(self._longest, len(tokens) - i), 0, -1):
                ids = self._forms.get(tuple(tokens[i : i + n]))
                if ids is not None:
                    out.append(
                        Mention(" ".join(tokens[i : i + n]), i, i + n, self._order(ids, text))
                    )
                    i += n
                    break
            else:
                i += 1
        return out

    def link(self, text: str) -> tuple[str, ...]:
        """Every entity the text names, in mention order (each once)."""
        return tuple(dict.fromkeys(e for m in self.mentions(text) for e in m.entities))

    def _order(self, ids: tuple[int, ...], text: str) -> tuple[str, ...]:
        if len(ids) > 1 and tokenize(text):
            emb = self.index.embeddings[list(ids)]
            sim = emb @ self.index.embed_queries([text])[0]
            ids = tuple(ids[j] for j in np.argsort(-sim, kind="stable"))
        return tuple(self.graph.entities[j] for j in ids)


def _surfaces(name: str, text: str) -> set[str]:
    """An entity's surface forms: its name, its text, and the text's head."""
    out = {name, name.replace("_", " "), text}
    head = _PAREN.sub("", text)
    out |= {head, head.split(":", 1)[0]}
    return {s.strip() for s in out if s.strip()}
