r"""The query record of retrieval benchmarks and retrievers: text, anchors (topic entities),
relevant node ids; the blind view of a question; and how a relation's label reads in a
question's text. A data type (like :class:`~grounding.TypedGraph`), so dataset loaders can
build benchmarks without importing the retrieval layer.
"""

from __future__ import annotations

import dataclasses

__all__ = [
    "Query",
    "BlindQuestion",
    "blind",
    "relation_phrase",
    "question_text",
    "role_phrase",
    "FRAMES",
    "TRAIN_PHRASINGS",
    "TEST_PHRASINGS",
    "TRAIN_FRAMES",
    "TEST_FRAMES",
]


@dataclasses.dataclass(frozen=True)
class Query:
    """One retrieval query.

    Attributes:
        text: the query text.
        anchor: the first anchor node id (``None``: no anchor; anchored retrievers then apply
            their fallback policy). Always ``anchors[0]`` when there are anchors.
        relevant: ids of the relevant nodes (for evaluation; may be empty at run time).
        id: an identifier for reports.
        anchors: every anchor (topic entity) of the query, in order. Give ``anchor`` for one,
            ``anchors`` for several; given both, ``anchor`` must be ``anchors[0]``.

    Example:
        >>> Query("who founded x", anchors=("x", "y")).anchor
        'x'
    """

    text: str
    anchor: str | None = None
    relevant: tuple[str, ...] = ()
    id: str = ""
    anchors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"query text must be a str, got {type(self.text).__name__}")
        for name in ("relevant", "anchors"):
            if isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a sequence of node ids, not one str")
        anchors = tuple(self.anchors)
        if not all(isinstance(a, str) for a in anchors):
            raise TypeError(f"anchors must be node ids (str), got {anchors!r}")
        if self.anchor is not None and not isinstance(self.anchor, str):
            raise TypeError(f"anchor must be a node id (str) or None, got {self.anchor!r}")
        if not anchors and self.anchor is not None:
            anchors = (self.anchor,)
        elif anchors and self.anchor is None:
            object.__setattr__(self, "anchor", anchors[0])
        elif anchors and self.anchor != anchors[0]:
            raise ValueError(
                f"anchor {self.anchor!r} is not anchors[0] {anchors[0]!r}: pass anchors= alone "
                "(or use Query.with_anchors)"
            )
        object.__setattr__(self, "anchors", anchors)
        object.__setattr__(self, "relevant", tuple(self.relevant))

    def with_anchors(self, *anchors: str) -> Query:
        """The same query anchored at ``anchors`` (none: unanchored)."""
        return Query(self.text, None, self.relevant, self.id, tuple(anchors))


@dataclasses.dataclass(frozen=True)
class BlindQuestion:
    """What a system under evaluation receives: the question's text and its topic entity
    (given, as KGQA benchmarks such as MetaQA and WebQSP give it), and nothing gold: no
    relation chain, no answers, no roles. Gold fields stay with the scorer.

    Example:
        >>> from types import SimpleNamespace
        >>> q = SimpleNamespace(text="Who founded X?", topic="x", id="q1", chain=("r",))
        >>> blind(q)
        BlindQuestion(text='Who founded X?', topic='x', id='q1')
    """

    text: str
    topic: str
    id: str = ""

    def __post_init__(self) -> None:
        for name in ("text", "topic", "id"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {type(getattr(self, name)).__name__}")


def blind(question: object) -> BlindQuestion:
    """The blind view of any question with ``text`` and ``topic`` (and optionally ``id``)."""
    return BlindQuestion(question.text, question.topic, getattr(question, "id", ""))  # type: ignore[attr-defined]


_PREPOSITIONS = frozenset(
    {"of", "at", "by", "after", "with", "to", "in", "on", "from", "for", "out"}
)
#: Labels that end in "s" but are nouns, not verbs ("symptoms", not "affects").
_PLURAL_NOUNS = frozenset({"symptoms", "headquarters", "series", "species", "lyrics"})


#: Phrasings of one relation step, by the label's form and direction: ``{L}`` the label,
#: ``{X}`` the inner phrase. Phrasing 0 of each list is the original template; they vary the
#: frame's words and order (possessive, relative clause, "has ... as its ...").
_NOUN = (
    ("the {L} of {X}", "the entity whose {L} is {X}"),
    ("{X}'s {L}", "something with {X} as its {L}"),
    ("the entity that is the {L} of {X}", "the one that has {X} as its {L}"),
    ("whatever {X} has as its {L}", "whatever has {L} {X}"),
    ("the one serving as {L} for {X}", "the thing for which {X} serves as {L}"),
    ("what counts as the {L} of {X}", "that which has the {L} {X}"),
)
_VERB = (
    ("the entity that {X} {L}", "the entity that {L} {X}"),
    ("what {X} {L}", "whatever {L} {X}"),
    ("the thing {X} {L}", "the one which {L} {X}"),
    ("whichever entity {X} {L}", "something that {L} {X}"),
    ("the one such that {X} {L} it", "the one such that it {L} {X}"),
    ("the object when {X} {L} something", "the subject when something {L} {X}"),
)
#: Phrasings a model may see in training (and validation) questions; the test questions of
#: a held-out-phrasing benchmark use :data:`TEST_PHRASINGS` only (disjoint).
TRAIN_PHRASINGS = (0, 1, 2, 3)
TEST_PHRASINGS = (4, 5)
#: Question frames around the outermost phrase ``{P}``, split the same way.
FRAMES = ("What is {P}?", "Which entity is {P}?", "Name {P}.", "Tell me {P}.", "Identify {P}.")
TRAIN_FRAMES = (0, 1, 2)
TEST_FRAMES = (3, 4)


def relation_phrase(label: str, subject: str, *, inverse: bool = False, phrasing: int = 0) -> str:
    """A noun phrase for the entity that relation ``label`` reaches from ``subject`` (with
    ``inverse``: the entity from which it reaches ``subject``), read from the label's form:

    - a noun (``"capital"``): *the capital of X* / *the entity whose capital is X*;
    - a verb (``"treats"``, ``"shares border with"``): *the entity that X treats* /
      *the entity that treats X*;
    - a participle or a relational noun (``"founded by"``, ``"part of"``): *the entity that X
      is founded by* / *the entity that is founded by X*.

    ``phrasing`` picks one of six wordings of each form and direction (0 is the one above;
    1-5 vary the frame's words and order, e.g. *X's capital*, *whatever treats X*): questions
    written with :data:`TRAIN_PHRASINGS` and tested on :data:`TEST_PHRASINGS` ask a system to
    read wordings it never saw.

    Example:
        >>> relation_phrase("member of", "Q719623 (human)")
        'the entity that Q719623 (human) is member of'
        >>> relation_phrase("capital", "France"), relation_phrase("treats", "flu", inverse=True)
        ('the capital of France', 'the entity that treats flu')
        >>> relation_phrase("capital", "France", phrasing=1)
        "France's capital"
    """
    if phrasing not in range(len(_NOUN)):
        raise ValueError(f"phrasing must be in 0..{len(_NOUN) - 1}, got {phrasing!r}")
    words = label.split()
    if label == "isa":
        words, label = ["is", "a", "kind", "of"], "is a kind of"
    first = words[0] if words else ""
    verb = (
        first == "is"
        or first.endswith("s")
        and not first.endswith(("ss", "us"))
        and first not in _PLURAL_NOUNS
        and (len(words) == 1 or words[-1] in _PREPOSITIONS)
    )
    relational = not verb and (
        first.endswith("ed") or len(words) > 1 and words[-1] in _PREPOSITIONS
    )
    if verb or relational:
        label = label if verb else f"is {label}"
        template = _VERB[phrasing][inverse]
    else:
        template = _NOUN[phrasing][inverse]
    return template.replace("{L}", label).replace("{X}", subject)


def question_text(phrase: str, frame: int = 0) -> str:
    """A question around the noun phrase of its answer: frame 0 is *What is <phrase>?*; the
    others (:data:`FRAMES`) change the opening and the mark.

    Example:
        >>> question_text("the capital of France"), question_text("France's capital", 3)
        ('What is the capital of France?', "Tell me France's capital.")
    """
    if frame not in range(len(FRAMES)):
        raise ValueError(f"frame must be in 0..{len(FRAMES) - 1}, got {frame!r}")
    return FRAMES[frame].replace("{P}", phrase)


def role_phrase(label: str, kind: str) -> str:
    """A statement role in words (a hyperedge hop names two): ``"subject of <label>"`` for a
    subject role (``kind == "subject"``), the relation's label for an object or a qualifier.
    A label that ends in a preposition or reads as a participle is quoted (``'member of'``),
    so no wording doubles a preposition (*the member of of ...*).

    Example:
        >>> role_phrase("member of", "subject"), role_phrase("member of", "object")
        ("subject of 'member of'", "'member of'")
        >>> role_phrase("country", "qualifier")
        'country'
    """
    words = label.split()
    if words and (words[-1] in _PREPOSITIONS or words[0].endswith("ed")):
        label = f"'{label}'"
    return f"subject of {label}" if kind == "subject" else label
