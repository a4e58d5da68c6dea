r"""WordNet synsets by name: the lemma name and gloss of every WN18RR entity, and the map from
a name to every synset it names.

WN18RR (Dettmers, Minervini, Stenetorp and Riedel, *Convolutional 2D Knowledge Graph
Embeddings*, AAAI 2018) is WordNet 3.0 (Princeton University) with the inverse relations of WN18
removed. Its entities are synset offsets (``"02106662"``); the shipped ``entity2text.txt`` (the
texts distributed with KG-BERT, Yao, Mao and Luo, 2019) gives each one as ``<offset>\t<lemma
name>, <gloss>``, the name being the text before the first comma. :func:`grounding.datasets.load_kg`
``("wn18rr")`` reads the triples; this module reads the texts.

Names are not unique (``"bank"`` names a slope, a financial institution, a supply held in
reserve and more): :func:`synsets_by_name` lists every synset a name can mean, so that an answer
given by name can be linked to synsets. WordNet 3.0 Copyright 2006 by Princeton University. All
rights reserved. (Licence: ``data/wn18rr/LICENSE.wordnet.txt``.)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from os import PathLike
from pathlib import Path
from typing import NamedTuple

from grounding.datasets._lines import bad_name, decode_utf8, excerpt, split_lines

__all__ = ["SynsetText", "read_synset_texts", "wordnet_texts", "synsets_by_name", "normalize_lemma"]

_OFFSET = re.compile(r"[0-9]+", re.ASCII)
_SPACES = re.compile(r"\s+")


class SynsetText(NamedTuple):
    """A synset's lemma name (``"german shepherd dog"``) and gloss (its definition, with
    WordNet's example sentences where the file has them)."""

    name: str
    gloss: str


def read_synset_texts(path: str | PathLike | Traversable, label: str | None = None):
    """``{offset: SynsetText}`` from a file of ``<offset>\\t<name>, <gloss>`` lines (blank lines
    skipped; lines end at a line feed, a trailing carriage return dropped).

    The name is the text before the first comma, the gloss the text after it, both stripped of
    surrounding spaces.

    Args:
        path: a filesystem path or an ``importlib.resources`` traversable.
        label: how errors name the file (default: ``path``).

    Returns:
        ``dict[str, SynsetText]`` in file order.

    Raises:
        ValueError: naming the file and the line, for a line without exactly one tab, an
            offset that is not decimal digits, text without a comma, an empty name or gloss, a
            name with a control character, an offset listed twice, or bytes that are not UTF-8.
    """
    if isinstance(path, (str, PathLike)):
        path = Path(path)
    label = str(path) if label is None else label
    text = decode_utf8(path.read_bytes(), label)
    out: dict[str, SynsetText] = {}
    first_line: dict[str, int] = {}
    for n, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        where = f"{label}, line {n}"
        fields = line.split("\t")
        if len(fields) != 2:
            raise ValueError(
                f"{where}: expected <offset><TAB><name>, <gloss>, got {len(fields)} "
                f"tab-separated fields: {excerpt(line)}"
            )
        offset, body = fields
        if not _OFFSET.fullmatch(offset):
            raise ValueError(f"{where}: synset offset {excerpt(offset)} is not decimal digits")
        name, comma, gloss = body.partition(",")
        name, gloss = name.strip(), gloss.strip()
        if not comma:
            raise ValueError(f"{where}: no comma between name and gloss in {excerpt(body)}")
        if not name or not gloss:
            raise ValueError(f"{where}: empty {'name' if not name else 'gloss'} in {excerpt(body)}")
        why = bad_name(name)
        if why:
            raise ValueError(f"{where}: name {excerpt(name)} {why}")
        if offset in out:
            raise ValueError(
                f"{where}: synset {offset} already listed on line {first_line[offset]}"
            )
        out[offset] = SynsetText(name, gloss)
        first_line[offset] = n
    if not out:
        raise ValueError(f"{label}: no synset texts found")
    return out


@functools.lru_cache(maxsize=1)
def _shipped() -> Mapping[str, SynsetText]:
    path = resources.files("grounding.datasets") / "data" / "wn18rr" / "entity2text.txt"
    return read_synset_texts(path)


def wordnet_texts() -> dict[str, SynsetText]:
    """The lemma name and gloss of each of the 40,943 WN18RR synsets, by offset (the entity
    names of :func:`grounding.datasets.load_kg` ``("wn18rr")``), from the shipped file (read
    once, then a fresh copy per call).

    Example:
        >>> wordnet_texts()["02106662"].name
        'german shepherd dog'
    """
    return dict(_shipped())


def normalize_lemma(text: str) -> str:
    """A name as the keys of :func:`synsets_by_name` hold it: lower-case, ``_`` read as a
    space, runs of whitespace as one space, no surrounding space (``"German_Shepherd  Dog"``
    -> ``"german shepherd dog"``)."""
    return _SPACES.sub(" ", text.replace("_", " ")).strip().lower()


def synsets_by_name(texts: Mapping[str, SynsetText] | None = None) -> dict[str, tuple[str, ...]]:
    """Every synset each name can mean: ``{normalize_lemma(name): (offset, ...)}``, offsets
    sorted, from ``texts`` (default :func:`wordnet_texts`). An answer given by name links to
    every synset listed under its normalized form; a name with several is ambiguous.

    Example:
        >>> synsets_by_name()["bank"][:3]
        ('02343056', '02343374', '09213565')
    """
    texts = wordnet_texts() if texts is None else texts
    out: dict[str, list[str]] = {}
    for offset, t in texts.items():
        out.setdefault(normalize_lemma(t.name), []).append(offset)
    return {k: tuple(sorted(v)) for k, v in sorted(out.items())}
