r"""Phrases that name things, found inside a text: each key (e.g. a relation) has surface
phrases, and a text's mentions are found left to right, longest first, without overlap, in the
package's one reading of words (:func:`~grounding.language.tokenize` of
:func:`~grounding.language.normalize_answer`'s form), some stretches blanked (e.g. the
question's topic).

Surface phrases come from labels (:func:`label_phrases`: the label and its plain
inflections) and from examples (:func:`learned_phrases`: the word sequences of training texts
that predict a key, e.g. "kind" for a relation labelled ``isa``, or "directed" for
``directed_by``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from grounding._checks import check_int
from grounding.language.lexical import tokenize
from grounding.language.linking import normalize_answer

__all__ = ["PhraseIndex", "PhraseMention", "label_phrases", "learned_phrases", "words"]

#: Words that never make a phrase alone (a one-word phrase of these names nothing): English
#: function words and the question words of the training wordings (none is read off the
#: held-out test wordings; ``tests/language/test_phrases.py`` checks it).
FUNCTION_WORDS = frozenset(
    "a an and are as at be by did do does for from has have he her his how in is it its of on "
    "or she that the their they this to was were what when where which who whom whose why "
    "with something entity one thing whatever whichever name s".split()
)


def words(text: str) -> list[str]:
    """A text's words, as every phrase is read: :func:`~grounding.language.tokenize` of its
    matching form (case folded, Unicode NFC)."""
    return tokenize(normalize_answer(text))


@dataclasses.dataclass(frozen=True)
class PhraseMention:
    """A phrase found in a text: word positions ``start:end`` and the keys it names."""

    start: int
    end: int
    keys: tuple[str, ...]


class PhraseIndex:
    """Find the phrases of ``phrases`` (``key -> surface phrases``) in texts.

    Args:
        phrases: per key, the phrases that name it (a phrase may name several keys).
        secondary: phrases looked for only in the words ``phrases`` leave (e.g. learned ones,
            which must not cut through a label).
        max_words: the longest phrase kept, in words.

    Example:
        >>> index = PhraseIndex({"capital": ["capital"], "country": ["country", "nation"]})
        >>> [(m.start, m.keys) for m in index.find("What is the capital of France's nation?")]
        [(3, ('capital',)), (7, ('country',))]
    """

    def __init__(
        self,
        phrases: Mapping[str, Iterable[str]],
        secondary: Mapping[str, Iterable[str]] | None = None,
        max_words: int = 8,
    ):
        self.max_words = check_int(max_words, "max_words")
        for name, table in (("phrases", phrases), ("secondary", secondary or {})):
            if not isinstance(table, Mapping):
                raise TypeError(f"{name} must map each key to its phrases, got {table!r:.100}")
            bare = next((k for k, v in table.items() if isinstance(v, str)), None)
            if bare is not None:
                raise TypeError(
                    f"{name}[{bare!r:.100}] must be a list of phrases, not one string "
                    f"({table[bare]!r:.100}: its letters would be read as phrases)"
                )
        self._tables = [self._table(phrases)]
        if secondary:
            self._tables.append(self._table(secondary))

    def _table(
        self, phrases: Mapping[str, Iterable[str]]
    ) -> dict[tuple[str, ...], tuple[str, ...]]:
        table: dict[tuple[str, ...], dict[str, None]] = {}
        for key, surfaces in phrases.items():
            for surface in surfaces:
                w = tuple(words(surface))
                if w and len(w) <= self.max_words and not (len(w) == 1 and w[0] in FUNCTION_WORDS):
                    table.setdefault(w, {})[key] = None
        return {w: tuple(keys) for w, keys in table.items()}

    def find(
        self, text: str | Sequence[str], blank: Sequence[tuple[int, int]] = ()
    ) -> list[PhraseMention]:
        """The mentions in ``text`` (a string, or its :func:`words`), left to right, longest
        first; no mention overlaps a ``blank`` span ``(start, end)`` of word positions."""
        toks = words(text) if isinstance(text, str) else list(text)
        free = [True] * len(toks)
        for lo, hi in blank:
            for i in range(max(lo, 0), min(hi, len(toks))):
                free[i] = False
        out: list[PhraseMention] = []
        for table in self._tables:  # the primary phrases first, the secondary on what is left
            longest, i = max(map(len, table), default=0), 0
            while i < len(toks):
                for n in range(min(longest, len(toks) - i), 0, -1):
                    keys = table.get(tuple(toks[i : i + n]))
                    if keys is not None and all(free[i : i + n]):
                        out.append(PhraseMention(i, i + n, keys))
                        free[i : i + n] = [False] * n
                        i += n
                        break
                else:
                    i += 1
        return sorted(out, key=lambda m: m.start)


def label_phrases(label: str) -> list[str]:
    """A label and its plain inflections: an ``_`` read as a space, a leading "is" dropped
    ("is member of" is also "member of"), a verb's third person and base form ("produces",
    "produce").

    Example:
        >>> label_phrases("produces"), label_phrases("is part of")
        (['produces', 'produce'], ['is part of', 'part of'])
    """
    base = " ".join(words(label))
    out = [base]
    if base.startswith("is ") and len(base) > 3:
        out.append(base[3:])
    first, _, rest = base.partition(" ")
    if first.endswith("s") and not first.endswith("ss") and len(first) > 3:
        out.append(" ".join([first[:-1], rest]).strip())
    return list(dict.fromkeys(x for x in out if x))


def learned_phrases(
    texts: Sequence[str],
    keys: Sequence[Iterable[str]],
    *,
    blank: Sequence[Sequence[tuple[int, int]]] | None = None,
    max_words: int = 4,
    min_count: int = 3,
    min_precision: float = 0.9,
) -> dict[str, list[str]]:
    """The word sequences (1 to ``max_words`` words, neither first nor last a function word)
    of example texts that predict a key: a sequence is a phrase of key ``k`` when at least
    ``min_count`` texts hold it and at least ``min_precision`` of them have ``k`` among their
    keys, and no other key passes both tests (a sequence that predicts two keys, *the dad of
    the mum*, spans two mentions); stretches of ``blank`` word positions (e.g. each text's
    topic) are never read.

    Example:
        >>> texts = ["what is a kind of cat", "a kind of dog is what", "the colour of a cat",
        ...          "a kind of bird", "colour of the sky", "what colour of fish"]
        >>> keys = [["isa"], ["isa"], ["colour"], ["isa"], ["colour"], ["colour"]]
        >>> learned_phrases(texts, keys)["isa"]
        ['kind']
    """
    if len(texts) != len(keys):
        raise ValueError(f"{len(texts)} texts but {len(keys)} key lists")
    if blank is not None and len(blank) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(blank)} blank span lists")
    bare = next((j for j, ks in enumerate(keys) if isinstance(ks, str)), None)
    if bare is not None:
        raise TypeError(
            f"keys[{bare}] must be a list of keys, not one string ({keys[bare]!r:.100})"
        )
    max_words, min_count = check_int(max_words, "max_words"), check_int(min_count, "min_count")
    if not 0 < min_precision <= 1:  # NaN fails too
        raise ValueError(f"min_precision must be in (0, 1], got {min_precision!r}")
    for j, spans in enumerate(blank or ()):
        for lo, hi in spans:
            if not 0 <= lo <= hi:
                raise ValueError(
                    f"blank[{j}]: a span (start, end) needs 0 <= start <= end, got {(lo, hi)}"
                )
    seen: Counter = Counter()
    by_key: Counter = Counter()
    for j, (text, ks) in enumerate(zip(texts, keys)):
        toks = words(text)
        for lo, hi in blank[j] if blank is not None else ():
            toks[lo:hi] = [""] * (min(hi, len(toks)) - lo)
        grams = {  # content at both ends: "kind of cat", never "the kind" or "kind of"
            tuple(toks[i : i + n])
            for n in range(1, max_words + 1)
            for i in range(len(toks) - n + 1)
            if all(toks[i : i + n])
            and toks[i] not in FUNCTION_WORDS
            and toks[i + n - 1] not in FUNCTION_WORDS
        }
        seen.update(grams)
        by_key.update((g, k) for g in grams for k in set(ks))
    named: dict[tuple[str, ...], list[str]] = {}
    for (gram, k), n in sorted(by_key.items(), key=lambda kv: (len(kv[0][0]), kv[0])):
        if seen[gram] >= min_count and n >= min_precision * seen[gram]:
            named.setdefault(gram, []).append(k)
    out: dict[str, list[str]] = {}
    for gram, ks in named.items():
        if len(ks) == 1:  # a sequence that predicts two keys spans two mentions: none
            out.setdefault(ks[0], []).append(" ".join(gram))
    return out
