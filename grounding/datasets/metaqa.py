r"""MetaQA: multi-hop movie questions over a knowledge base, and the base with half its triples.

MetaQA (Zhang, Dai, Kozareva, Smola and Song, *Variational Reasoning for Question Answering
with Knowledge Graph*, AAAI 2018) asks 1-, 2- and 3-hop questions about movies, written by its
authors (1-hop from WikiMovies: Miller, Fisch, Dodge, Karimi, Bordes and Weston, *Key-Value
Memory Networks for Directly Reading Documents*, EMNLP 2016), over a knowledge base of nine
relations whose head is always a movie. With half of the base's triples removed at random
("KG-50") it is the field's test of answering from incomplete evidence: the paper's setting.

Shipped (``data/metaqa/``, Creative Commons Public License as its authors release it; see its
README for how the base was put together and how it differs from the original):

- the knowledge base (:func:`metaqa_kb`): ``"full"`` (129,503 unique triples), ``"half"`` (the
  shipped random half, 64,751), or any fraction of the full base drawn with a seed (``0.5``
  with seed 0 draws exactly the shipped half);
- the dev and test questions per hop count (:func:`load_metaqa`), each with its question type
  (``actor_to_movie_to_director``); the training questions do not ship.

A question's topic entity is the name its text writes in brackets, exactly as in the file
(``"which person directed the movies starred by [John Krasinski]"``). Every file is checked
against the shipped SHA-256 sums before it is read; a malformed line is a ValueError naming
the file and the line. :func:`read_metaqa_questions` reads any file in MetaQA's question format
(``question<TAB>answer|answer``, the answer column optional).
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import random
import re
from functools import cache
from importlib import resources
from os import PathLike
from pathlib import Path

from grounding._checks import check_int
from grounding.datasets._lines import bad_name, decode_utf8, excerpt, split_lines
from grounding.graph import Triple, TypedGraph, inverse_relation
from grounding.query import BlindQuestion

__all__ = [
    "MetaQAQuestion",
    "load_metaqa",
    "metaqa_chain",
    "metaqa_entities",
    "metaqa_graph",
    "metaqa_kb",
    "read_metaqa_questions",
]

#: The base's nine relations (head: a movie).
METAQA_RELATIONS = (
    "directed_by",
    "has_genre",
    "has_imdb_rating",
    "has_imdb_votes",
    "has_tags",
    "in_language",
    "release_year",
    "starred_actors",
    "written_by",
)
#: The relation that links a movie to each kind of value a question type names.
KINDS = {
    "director": "directed_by",
    "writer": "written_by",
    "actor": "starred_actors",
    "year": "release_year",
    "language": "in_language",
    "genre": "has_genre",
    "tag": "has_tags",
    "tags": "has_tags",
    "imdbvotes": "has_imdb_votes",
    "imdbrating": "has_imdb_rating",
}
HOPS = (1, 2, 3)
SPLITS = ("dev", "test")
_TOPIC = re.compile(r"\[([^\[\]]+)\]")


@dataclasses.dataclass(frozen=True)
class MetaQAQuestion:
    """One question.

    Attributes:
        id: ``"<file>:<line>"`` (e.g. ``"2-hop/qa_test.txt:17"``).
        text: the question as written, its topic in brackets.
        topic: the bracketed name (an entity name of the base, as the file spells it).
        answers: the gold answers (empty when the file gives none).
        hops: the question's hop count (``None`` when unknown).
        qtype: its question type (``""`` when unknown).
    """

    id: str
    text: str
    topic: str
    answers: tuple[str, ...]
    hops: int | None = None
    qtype: str = ""

    @property
    def chain(self) -> tuple[str, ...]:
        """The gold relation chain its question type names (:func:`metaqa_chain`)."""
        return metaqa_chain(self.qtype)

    def blind(self) -> BlindQuestion:
        """What a system under evaluation may see: the text and the topic, nothing gold."""
        return BlindQuestion(self.text, self.topic)


def metaqa_chain(qtype: str) -> tuple[str, ...]:
    """The relation chain a question type names, read from the topic: each step leaves a movie
    by the relation of the kind it reaches, or reaches a movie by that relation read backwards.

    Example:
        >>> metaqa_chain("actor_to_movie_to_director")
        ('starred_actors^-1', 'directed_by')
    """
    kinds = qtype.split("_to_") if isinstance(qtype, str) else []
    if len(kinds) < 2 or not all(k == "movie" or k in KINDS for k in kinds):
        raise ValueError(f"not a MetaQA question type: {qtype!r:.100}")
    out = []
    for a, b in zip(kinds, kinds[1:]):
        if (a == "movie") == (b == "movie"):
            raise ValueError(
                f"not a MetaQA question type: {qtype!r:.100} (every hop has a movie on one side)"
            )
        out.append(KINDS[b] if a == "movie" else inverse_relation(KINDS[a]))
    return tuple(out)


def metaqa_kb(kb: str | float = "half", seed: int = 0) -> tuple[Triple, ...]:
    """The knowledge base as ``(movie, relation, value)`` triples, in the file's order.

    Args:
        kb: ``"full"``, ``"half"`` (the shipped random half) or a fraction in ``(0, 1]`` of the
            full base: ``int(kb * 129,503)`` triples (at least one) drawn without replacement
            by ``random.Random(seed).sample`` (the shipped half is the fraction 0.5 drawn with
            seed 0, as a set).
        seed: the draw's seed (a fraction only).
    """
    if isinstance(kb, str):
        if kb not in ("full", "half"):
            raise ValueError(f"kb must be 'full', 'half' or a fraction in (0, 1], got {kb!r}")
        return _kb_file("kb.txt.gz" if kb == "full" else "kb_half.txt.gz")
    if isinstance(kb, bool) or not isinstance(kb, (int, float)) or not 0 < kb <= 1:
        raise ValueError(f"kb must be 'full', 'half' or a fraction in (0, 1], got {kb!r}")
    full = _kb_file("kb.txt.gz")
    seed = check_int(seed, "seed", low=0)
    return tuple(random.Random(seed).sample(full, max(1, int(kb * len(full)))))


def metaqa_graph(kb: str | float = "half", seed: int = 0) -> TypedGraph:
    """The knowledge base of :func:`metaqa_kb` as an evidence graph: every triple forwards and
    backwards (``starred_actors^-1`` from an actor to a movie, the naming of
    :func:`~grounding.graph.inverse_relation`), so every question type's chain
    (:func:`metaqa_chain`) can be walked from its topic; over the entities of the *full*
    base (:func:`metaqa_entities`), so every name a question can give is a node, isolated when
    the base in use lost its triples. Memoized (a graph is immutable; ``"full"`` and
    ``"half"`` ignore ``seed``)."""
    return _graph(kb, seed if not isinstance(kb, str) else 0)


@cache
def _graph(kb: str | float, seed: int) -> TypedGraph:
    triples = metaqa_kb(kb, seed)
    both = list(triples) + [(t, inverse_relation(r), h) for h, r, t in triples]
    relations = METAQA_RELATIONS + tuple(map(inverse_relation, METAQA_RELATIONS))
    return TypedGraph.from_triples(both, entities=metaqa_entities(), relations=relations)


@cache
def metaqa_entities() -> tuple[str, ...]:
    """Every entity name of the full knowledge base, sorted (42,856 names): the vocabulary of
    the base and of its answers (a half base keeps the names, not the triples)."""
    return tuple(sorted({x for h, _, t in _kb_file("kb.txt.gz") for x in (h, t)}))


def load_metaqa(hops: int, split: str = "test") -> tuple[MetaQAQuestion, ...]:
    """The shipped ``dev`` or ``test`` questions of one hop count (1, 2 or 3), with their
    answers and question types."""
    if hops not in HOPS:
        raise ValueError(f"hops must be 1, 2 or 3, got {hops!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be 'dev' or 'test', got {split!r}")
    return _questions(hops, split)


def read_metaqa_questions(
    path: str | PathLike, hops: int | None = None
) -> tuple[MetaQAQuestion, ...]:
    """Questions from any file in MetaQA's format: one question per line,
    ``question<TAB>answer|answer|...`` (the answer column optional), its topic in brackets; a
    ``.gz`` file is read through gzip. Blank lines are skipped; ids are ``"<path>:<line>"``.

    Raises:
        ValueError: naming the file and the line, for bytes that are not UTF-8, a question
            without exactly one bracketed topic, an empty answer, or a file without questions.
    """
    if hops is not None and hops not in HOPS:
        raise ValueError(f"hops must be 1, 2, 3 or None, got {hops!r}")
    path = Path(path)
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return _parse(raw, str(path), hops, qtypes=None)


# ------------------------------------------------------------------------------ shipped files
def _root():
    return resources.files("grounding.datasets") / "data" / "metaqa"


@cache
def _sums() -> dict[str, str]:
    text = (_root() / "SHA256SUMS").read_text(encoding="utf-8")
    out = {}
    for line in split_lines(text):
        if line.strip():
            digest, _, name = line.partition("  ")
            out[name.removeprefix("./")] = digest
    return out


def _shipped(name: str) -> bytes:
    """A shipped file's bytes, decompressed, after its SHA-256 sum is checked."""
    raw = (_root() / name).read_bytes()
    want = _sums().get(name)
    if want is None:
        raise ValueError(f"metaqa/{name}: not listed in metaqa/SHA256SUMS")
    if hashlib.sha256(raw).hexdigest() != want:
        raise ValueError(f"metaqa/{name}: SHA-256 differs from metaqa/SHA256SUMS (a damaged copy)")
    return gzip.decompress(raw)


@cache
def _kb_file(name: str) -> tuple[Triple, ...]:
    label = f"metaqa/{name}"
    out = []
    for line_no, line in enumerate(split_lines(decode_utf8(_shipped(name), label)), 1):
        if not line:
            continue
        parts = line.split("|")
        if len(parts) != 3:
            raise ValueError(
                f"{label}, line {line_no}: expected subject|relation|object, got {excerpt(line)}"
            )
        for part in parts:
            if (why := bad_name(part)) is not None:
                raise ValueError(f"{label}, line {line_no}: the name {excerpt(part)} {why}")
        if parts[1] not in METAQA_RELATIONS:
            raise ValueError(f"{label}, line {line_no}: unknown relation {excerpt(parts[1])}")
        out.append((parts[0], parts[1], parts[2]))
    if not out:
        raise ValueError(f"{label}: no triple")
    return tuple(out)


@cache
def _questions(hops: int, split: str) -> tuple[MetaQAQuestion, ...]:
    name = f"{hops}-hop/qa_{split}.txt.gz"
    types = f"{hops}-hop/qa_{split}_qtype.txt.gz"
    qtypes = [t for t in split_lines(decode_utf8(_shipped(types), f"metaqa/{types}")) if t]
    return _parse(_shipped(name), f"metaqa/{name}", hops, qtypes)


def _parse(
    raw: bytes, label: str, hops: int | None, qtypes: list[str] | None
) -> tuple[MetaQAQuestion, ...]:
    out = []
    for line_no, line in enumerate(split_lines(decode_utf8(raw, label)), 1):
        if not line.strip():
            continue
        text, tab, answer_col = line.partition("\t")
        where = f"{label}, line {line_no}"
        topics = _TOPIC.findall(text)
        if len(topics) != 1:
            raise ValueError(
                f"{where}: a question names its topic in one pair of brackets, got {excerpt(text)}"
            )
        topic = topics[0]
        if (why := bad_name(topic)) is not None:
            raise ValueError(f"{where}: the topic {excerpt(topic)} {why}")
        answers = tuple(answer_col.split("|")) if tab and answer_col else ()
        for a in answers:
            if (why := bad_name(a)) is not None:
                raise ValueError(f"{where}: the answer {excerpt(a)} {why}")
        qtype = ""
        if qtypes is not None:
            if len(out) >= len(qtypes):
                raise ValueError(f"{where}: more questions than question types")
            qtype = qtypes[len(out)]
        out.append(MetaQAQuestion(f"{label.removeprefix('metaqa/').removesuffix('.gz')}:{line_no}",
                                  text, topic, answers, hops, qtype))  # fmt: skip
    if not out:
        raise ValueError(f"{label}: no question")
    if qtypes is not None and len(qtypes) != len(out):
        raise ValueError(f"{label}: {len(out)} questions but {len(qtypes)} question types")
    return tuple(out)
