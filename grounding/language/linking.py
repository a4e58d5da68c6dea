r"""Linking names: from text to the graph entities it names, by one rule.

**One matching form**, :func:`normalize_answer`: Unicode case folding in the package's one
spelling of a name (NFC: "café" with a combining accent is "café"), ``_`` read as a space,
runs of white space collapsed, surrounding quotes and white space and final periods removed
(repeated until nothing changes, so the form of a form is itself).

**One set of surface forms** per entity, :func:`surface_forms`: its name, its text (e.g. a node
text), and that text without a trailing parenthetical or a ``: description`` (``"Q42
(human)"`` is also ``"Q42"``; ``"Lou Seal: mascot"`` also ``"Lou Seal"``).

:class:`AnswerLinker` reads text against those forms in two ways:

- **an answer** (:meth:`AnswerLinker.link`) links to *every* entity one of whose surface forms
  has the answer's matching form (in vocabulary order, each once). Only when no entity has
  that form, a leading English article is set aside on both sides (``the``, ``a``, ``an``):
  "The MAPK pathway." links to ``mapk_pathway``, and "Hague" to ``the_hague``, while "The
  Beatles" links to ``the_beatles`` itself when the graph has it;
- **mentions inside free text** (:meth:`AnswerLinker.mentions`): the text's matching form is
  cut into :func:`~grounding.language.tokenize` tokens and scanned left to right for the
  longest token sequence that is a surface form (a one-token form that is a function word,
  such as "the" or "of", is never a mention); mentions do not overlap.

:meth:`Candidates.from_answers <grounding.prior.Candidates.from_answers>` turns a model's
answers and their log-weights into candidates with these rules:

(a) **Out of graph.** An answer that links to no entity is still a candidate: the evidence
    does not show it (the paper's *unobserved* case), which is not evidence that it is false.
    Its name is its normalized form and it is listed in ``Candidates.out_of_graph``. That name
    is never the name of an entity of the linker's vocabulary (an entity so named would
    normalize to the same form and be linked), so it cannot stand for a graph entity.
    :func:`grounding.ground` grounds it as an entity without edges: raw energy ``+inf``,
    status unsupported, slack energy ``kappa`` (Eq. (19)), so it keeps prior mass
    :math:`\propto p_\theta\,e^{-\lambda\kappa}` in the soft posterior and is outside the hard
    feasible set.
(b) **Ambiguous names.** An answer that names ``k > 1`` entities (WordNet: ``bank`` names many
    synsets) is linked to all of them, its prior mass split equally: each reading gets
    :math:`\log w - \log k`. The evidence then re-weights the readings: where it tells them
    apart, the best-supported reading wins; where it does not, they stay tied.
(c) **Merging.** Answers that link to the same entity (different forms, or one form among the
    readings of another) merge by log-sum-exp of their log-weights; so do out-of-graph answers
    with the same normalized form.
(d) **Dropped.** An answer whose normalized form is empty cannot be a candidate at all; it is
    kept in ``Candidates.dropped`` for reports. When nothing is left, the model abstains with
    that reason.

References:
    Shen, Wang & Han, "Entity Linking with a Knowledge Base: Issues, Techniques, and
    Solutions", 2015 (dictionary-based candidate generation from entity names and surface
    forms).

Example:
    >>> linker = AnswerLinker(["bank.n.01", "bank.n.02", "river.n.01"],
    ...                       texts=["bank", "Bank", "river"])
    >>> linker.link(" BANK. "), linker.link("a river bank")
    (('bank.n.01', 'bank.n.02'), ())
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from grounding._checks import check_int
from grounding._names import checked_names, nfc
from grounding.language.lexical import tokenize

__all__ = ["AnswerLinker", "Mention", "normalize_answer", "surface_forms"]

_QUOTES = "\"'`“”‘’ "
_FUNCTION_WORDS = frozenset(
    "a an and are as at be by did do does for from has have he her his how in is it its of on "
    "or she that the their they this to was were what when where which who whom whose why "
    "with".split()
)
_PAREN = re.compile(r"\s*\([^()]*\)\s*$")


def _once(x: str) -> str:
    x = nfc(x.casefold()).replace("_", " ")  # the package's one spelling of a name: NFC
    x = re.sub(r"\s+", " ", x).strip()
    return x.strip(_QUOTES).rstrip(".").strip()


def _without_article(form: str) -> str:
    """A normalized form without its leading English article (``the``, ``a``, ``an``)."""
    return re.sub(r"^(?:the|an|a) (?=\S)", "", form)


def normalize_answer(text: str) -> str:
    """The matching form of an answer, a mention or an entity name (see the module
    docstring); idempotent: ``normalize_answer(normalize_answer(x)) == normalize_answer(x)``.

    Example:
        >>> normalize_answer('  "Amino_Acid,  Peptide or Protein." ')
        'amino acid, peptide or protein'
    """
    if not isinstance(text, str):
        raise TypeError(f"an answer must be a str, got {type(text).__name__}")
    x = _once(text)
    for _ in range(len(x) + 1):  # each further pass only removes characters
        y = _once(x)
        if y == x:
            return x
        x = y
    return x


def surface_forms(name: str, text: str | None = None) -> tuple[str, ...]:
    """The matching forms (:func:`normalize_answer`) an entity is named by: its name, its
    text, and the text's head (without a trailing parenthetical, and before a ``:``); empty
    forms left out, each once, in that order.

    Example:
        >>> surface_forms("Q42", "Douglas Adams (human)")
        ('q42', 'douglas adams (human)', 'douglas adams')
    """
    out = [name]
    if text:
        head = _PAREN.sub("", text)
        out += [text, head, head.split(":", 1)[0]]
    return tuple(f for f in dict.fromkeys(map(normalize_answer, out)) if f)


@dataclasses.dataclass(frozen=True)
class Mention:
    """One mention found inside a text (:meth:`AnswerLinker.mentions`).

    Attributes:
        text: the mention as it reads in the text (its tokens, space-joined).
        start: index of its first token; ``end``: one past its last.
        entities: the entities it names (in vocabulary order; a retriever may reorder them,
            e.g. :class:`~grounding.retrieval.EntityLinker` puts the closest to the text first).
    """

    text: str
    start: int
    end: int
    entities: tuple[str, ...]


class AnswerLinker:
    """Links text to the entities it names, whole (:meth:`link`) or by the mentions inside it
    (:meth:`mentions`), by the forms of :func:`surface_forms` (module docstring).

    Args:
        entities: the graph's entity names.
        texts: optional display text per entity (e.g. node texts): its forms name the entity
            too.
        max_tokens: the longest surface form :meth:`mentions` considers, in tokens.

    Raises:
        ValueError: an empty vocabulary, a name the package's name rule refuses (named with
            its index: empty, padded, a control or format character), or ``texts`` of another
            length.

    References:
        Shen, Wang & Han, "Entity Linking with a Knowledge Base: Issues, Techniques, and
        Solutions", 2015 (candidate entities from a dictionary of names and surface forms).

    Example:
        >>> AnswerLinker(["Q90", "Q64"], ["Paris", "Berlin"]).link("paris")
        ('Q90',)
        >>> linker = AnswerLinker(["lou_seal", "giants"],
        ...                       ["Lou Seal: the Giants' mascot", "San Francisco Giants (team)"])
        >>> [(m.text, m.entities) for m in linker.mentions("Did the san francisco giants win?")]
        [('san francisco giants', ('giants',))]
    """

    def __init__(
        self, entities: Sequence[str], texts: Sequence[str] | None = None, *, max_tokens: int = 12
    ):
        if isinstance(entities, (str, bytes)):
            raise TypeError(
                f"entities must be a sequence of names, not a string: {entities!r:.100}"
            )
        entities = checked_names("entity", entities)  # the one name rule and spelling
        if not entities:
            raise ValueError("entities is empty: answers need a vocabulary to link to")
        if texts is not None and len(texts) != len(entities):
            raise ValueError(f"texts has {len(texts)} entries for {len(entities)} entities")
        self.entities = entities
        self.texts = None if texts is None else tuple(texts)
        self.max_tokens = check_int(max_tokens, "max_tokens")
        found: dict[str, dict[str, None]] = {}
        bare: dict[str, dict[str, None]] = {}  # the forms without a leading article
        for i, e in enumerate(entities):  # in vocabulary order: each form's entities are too
            for f in surface_forms(e, None if self.texts is None else self.texts[i]):
                found.setdefault(f, {})[e] = None
                bare.setdefault(_without_article(f), {})[e] = None
        bare.pop("", None)  # an empty form names nothing
        self._lookup = {f: tuple(es) for f, es in found.items()}
        self._bare = {f: tuple(es) for f, es in bare.items()}
        self._tokens: dict[tuple[str, ...], tuple[str, ...]] | None = None  # built when used

    def link(self, answer: str) -> tuple[str, ...]:
        """Every entity one of whose surface forms equals the normalized ``answer``, in
        vocabulary order; when none does, every entity whose form equals it with a leading
        article set aside on both sides (``()``: the answer names no entity)."""
        form = normalize_answer(answer)
        return self._lookup.get(form) or self._bare.get(_without_article(form), ())

    def mentions(self, text: str) -> list[Mention]:
        """The mentions inside ``text``, left to right (longest first where forms overlap)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        forms = self._token_forms()
        longest = max(map(len, forms), default=0)
        tokens = tokenize(normalize_answer(text))
        out: list[Mention] = []
        i = 0
        while i < len(tokens):
            for n in range(min(longest, len(tokens) - i), 0, -1):
                ents = forms.get(tuple(tokens[i : i + n]))
                if ents is not None:
                    out.append(Mention(" ".join(tokens[i : i + n]), i, i + n, ents))
                    i += n
                    break
            else:
                i += 1
        return out

    def _token_forms(self) -> dict[tuple[str, ...], tuple[str, ...]]:
        """The surface forms as token sequences (what :meth:`mentions` scans for): none longer
        than ``max_tokens``, no one-token function word."""
        if self._tokens is None:
            forms: dict[tuple[str, ...], dict[str, None]] = {}
            for form, ents in self._lookup.items():
                key = tuple(tokenize(form))
                if (
                    key
                    and len(key) <= self.max_tokens
                    and not (len(key) == 1 and key[0] in _FUNCTION_WORDS)
                ):
                    forms.setdefault(key, {}).update(dict.fromkeys(ents))
            order = {e: i for i, e in enumerate(self.entities)}
            self._tokens = {k: tuple(sorted(v, key=order.__getitem__)) for k, v in forms.items()}
        return self._tokens

    def __repr__(self) -> str:
        return f"AnswerLinker({len(self.entities)} entities, texts={self.texts is not None})"
