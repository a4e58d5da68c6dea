r"""Real benchmark knowledge graphs with train / validation / test splits (UMLS, Nations, Kinships,
CoDEx-S, CoDEx-M, WN18RR).

In the paper's terms a split benchmark *is* incomplete evidence: the training graph is the
observed evidence state :math:`R`, train + validation + test is the latent world
:math:`G^*`, and every held-out triple is true but unobserved (the situation of Prop. 3).

Triples are stored as integer arrays ``[m, 3]`` of ``(head, relation, tail)`` ids over one
shared vocabulary: entity and relation names sorted alphabetically (the convention of PyKEEN,
so ids agree with it). See ``data/README.md`` for source, authors and licence.

CoDEx (Safavi & Koutra, *CoDEx: A Comprehensive Knowledge Graph Completion Benchmark*, EMNLP
2020; MIT) names entities and relations by Wikidata ids. Relation labels ship with it (``P27 ->
"country of citizenship"``) and so do entity types with labels; entity labels do not (they
could not be obtained offline), so an entity's text is its id followed by its type labels,
e.g. ``"Q7604 (human)"``. CoDEx-S also ships hand-verified false-but-plausible triples
(:attr:`KGSplits.negatives`).

WN18RR (Dettmers, Minervini, Stenetorp and Riedel, *Convolutional 2D Knowledge Graph
Embeddings*, AAAI 2018) is WordNet 3.0 (WordNet 3.0 Copyright 2006 by Princeton University. All
rights reserved.) without WN18's inverse relations. Entities are synset offsets
(``"02106662"``), an entity's text is its lemma name (``"german shepherd dog"``; not unique), a
relation's text its name without the leading ``_`` (``"member meronym"``); the glosses and the
map from a name to its synsets are in :mod:`grounding.datasets.wordnet`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from os import PathLike

import jax.numpy as jnp
import numpy as np

from grounding._names import checked_names
from grounding.datasets.tsv import read_triples
from grounding.datasets.wordnet import read_synset_texts
from grounding.graph import Triple, TypedGraph

__all__ = ["KGSplits", "load_kg", "load_kg_splits", "codex_labels"]

#: Shipped real knowledge graphs (``grounding/datasets/data/<name>/{train,valid,test}.txt``).
KG_DATASETS = ("umls", "nations", "kinships", "codex-s", "codex-m", "wn18rr")
SPLITS = ("train", "valid", "test")
#: Split files that are not ``{train,valid,test}.txt`` (WN18RR ships under its own names).
_SPLIT_FILES = {"wn18rr": ("train.tsv", "dev.tsv", "test.tsv")}


@dataclasses.dataclass(frozen=True)
class KGSplits:
    """A knowledge graph split into train / valid / test triples over one vocabulary.

    Attributes:
        name: dataset name.
        entities, relations: vocabularies (id = position).
        train, valid, test: ``[m, 3]`` int arrays of ``(head, relation, tail)`` ids.
        entity_texts: one text per entity, or ``()``: then :attr:`node_texts` reads the names
            with ``_`` as a space.
        relation_texts: one label per relation, or ``()`` (then the names, ``_`` as a space).
        negatives: ``(split, [m, 3] ids)`` pairs of triples known to be *false* (CoDEx-S:
            ``"valid"`` and ``"test"``), or ``()``.
    """

    name: str
    entities: tuple[str, ...]
    relations: tuple[str, ...]
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    entity_texts: tuple[str, ...] = ()
    relation_texts: tuple[str, ...] = ()
    negatives: tuple[tuple[str, np.ndarray], ...] = ()

    def __post_init__(self) -> None:
        for kind, field in (("entity", "entities"), ("relation", "relations")):  # one name rule
            object.__setattr__(self, field, checked_names(kind, getattr(self, field)))
        for name, texts, vocab in (
            ("entity_texts", self.entity_texts, self.entities),
            ("relation_texts", self.relation_texts, self.relations),
        ):
            if texts and len(texts) != len(vocab):
                raise ValueError(f"{name}: {len(texts)} texts for {len(vocab)} names")

    @property
    def node_texts(self) -> tuple[str, ...]:
        """One text per entity: :attr:`entity_texts`, or the names with ``_`` as a space."""
        return self.entity_texts or tuple(e.replace("_", " ") for e in self.entities)

    @property
    def relation_labels(self) -> tuple[str, ...]:
        """One label per relation: :attr:`relation_texts`, or the names with ``_`` as a space."""
        return self.relation_texts or tuple(r.replace("_", " ") for r in self.relations)

    def negative_triples(self, split: str) -> np.ndarray:
        """The ``[m, 3]`` known-false triples of ``split`` (empty when none ship)."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        return dict(self.negatives).get(split, np.zeros((0, 3), np.int64))

    @property
    def n_entities(self) -> int:
        return len(self.entities)

    @property
    def n_relations(self) -> int:
        return len(self.relations)

    def split(self, name: str) -> np.ndarray:
        """The ``[m, 3]`` id triples of ``"train"``, ``"valid"`` or ``"test"``."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        return getattr(self, name)

    def all_triples(self) -> np.ndarray:
        """Train + valid + test: the latent world :math:`G^*` (the filter of filtered ranking)."""
        return np.concatenate([self.train, self.valid, self.test])

    def graph(self, *splits: str) -> TypedGraph:
        """A :class:`TypedGraph` over the full vocabulary holding the given splits (default
        ``"train"``: the observed evidence state :math:`R`), every edge with reliability 1."""
        ids = np.concatenate([self.split(s) for s in splits or ("train",)])
        return TypedGraph(
            head=jnp.asarray(ids[:, 0], jnp.int32),
            relation=jnp.asarray(ids[:, 1], jnp.int32),
            tail=jnp.asarray(ids[:, 2], jnp.int32),
            reliability=jnp.ones(len(ids)),
            entities=self.entities,
            relations=self.relations,
            texts=self.entity_texts,
        )

    def names(self, ids: np.ndarray) -> list[Triple]:
        """Id triples ``[m, 3]`` back to name triples."""
        return [(self.entities[h], self.relations[r], self.entities[t]) for h, r, t in ids]


def load_kg_splits(
    train: str | PathLike | Traversable,
    valid: str | PathLike | Traversable,
    test: str | PathLike | Traversable,
    name: str = "custom",
) -> KGSplits:
    """Load three TSV triple files (format of :func:`grounding.datasets.load_triples`).

    The vocabulary is the sorted union of names over all three files. A reliability column,
    if present, must be 1 in every row (benchmark splits are unweighted).

    Raises:
        ValueError: naming the file and line for a malformed row, a reliability other than 1,
            or a validation/test triple that duplicates one in an earlier split (leakage).
    """
    rows: dict[str, list[Triple]] = {}
    seen: dict[Triple, str] = {}
    for split, path in zip(SPLITS, (train, valid, test)):
        triples, weights = read_triples(path)
        for i, (t, w) in enumerate(zip(triples, weights)):
            if w != 1.0:
                raise ValueError(f"{path}: triple {i + 1} {t!r} has reliability {w}, expected 1")
            if t in seen and seen[t] != split:
                raise ValueError(f"{path}: triple {t!r} of {split} also occurs in {seen[t]}")
            seen.setdefault(t, split)
        rows[split] = triples
    every = [t for split in SPLITS for t in rows[split]]
    entities = tuple(sorted({x for h, _, t in every for x in (h, t)}))
    relations = tuple(sorted({r for _, r, _ in every}))
    e_ix = {e: i for i, e in enumerate(entities)}
    r_ix = {r: i for i, r in enumerate(relations)}

    def ids(triples: list[Triple]) -> np.ndarray:
        return np.array([(e_ix[h], r_ix[r], e_ix[t]) for h, r, t in triples], np.int64)

    return KGSplits(name, entities, relations, *(ids(rows[s]) for s in SPLITS))


def load_kg(name: str) -> KGSplits:
    """One of the shipped real knowledge graphs (:data:`KG_DATASETS`): ``"umls"``, ``"nations"``,
    ``"kinships"``, ``"codex-s"``, ``"codex-m"``, ``"wn18rr"``.

    Example:
        >>> kg = load_kg("nations")
        >>> kg.n_entities, kg.n_relations, len(kg.train), len(kg.valid), len(kg.test)
        (14, 55, 1592, 199, 201)
        >>> s = load_kg("codex-s")
        >>> s.n_entities, s.n_relations, len(s.train), len(s.negative_triples("test"))
        (2034, 42, 32888, 1828)
        >>> s.node_texts[s.entities.index("Q7604")], s.relation_labels[s.relations.index("P27")]
        ('Q7604 (human)', 'country of citizenship')
    """
    if not isinstance(name, str):
        raise TypeError(f"dataset name must be a str, got {type(name).__name__}")
    key = name.lower()
    if key not in KG_DATASETS:
        raise ValueError(f"unknown dataset {name!r}; shipped: {', '.join(KG_DATASETS)}")
    data = resources.files("grounding.datasets") / "data"
    root = data / key
    files = _SPLIT_FILES.get(key, tuple(f"{s}.txt" for s in SPLITS))
    kg = load_kg_splits(*(root / f for f in files), name=key)
    if key.startswith("codex"):
        kg = _with_codex_labels(kg, data / "codex", root)
    elif key == "wn18rr":
        kg = _with_wordnet_texts(kg, root)
    return kg


def _with_wordnet_texts(kg: KGSplits, root: Traversable) -> KGSplits:
    """WN18RR's lemma names as entity texts and its relation names without the leading ``_``;
    every entity must have a text and every relation must be listed in ``relations.txt``."""
    path = root / "entity2text.txt"
    texts = read_synset_texts(path)
    missing = [e for e in kg.entities if e not in texts]
    if missing:
        raise ValueError(f"{path}: no text for {len(missing)} synsets, e.g. {missing[0]!r}")
    rel_path = root / "relations.txt"
    listed = {r for r in rel_path.read_text(encoding="utf-8").split("\n") if r.strip()}
    unlisted = sorted(set(kg.relations) - listed)
    if unlisted:
        raise ValueError(f"{rel_path}: relations used by the splits but not listed: {unlisted}")
    return dataclasses.replace(
        kg,
        entity_texts=tuple(texts[e].name for e in kg.entities),
        relation_texts=tuple(r.lstrip("_").replace("_", " ") for r in kg.relations),
    )


def _read_json(path: Traversable) -> dict:
    try:
        with path.open("r", encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: line {err.lineno}: malformed JSON ({err.msg})") from None


def codex_labels(
    entities: Sequence[str], relations: Sequence[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Texts for Wikidata entity ids (``"Q42 (human)"``: the id and its CoDEx type labels, or
    the id alone) and labels for Wikidata property ids (CoDEx's English labels, or the id),
    from the CoDEx files that ship with the package."""
    labels = resources.files("grounding.datasets") / "data" / "codex"
    rel_labels = _read_json(labels / "relations_en.json")
    entity_types = _read_json(labels / "entity2types.json")
    types = _read_json(labels / "types_en.json")

    def entity_text(qid: str) -> str:
        names = [types[t]["label"] for t in entity_types.get(qid, ()) if t in types]
        return f"{qid} ({'; '.join(names)})" if names else qid

    rels = tuple(rel_labels[r]["label"] if r in rel_labels else r for r in relations)
    return tuple(entity_text(e) for e in entities), rels


def _with_codex_labels(kg: KGSplits, labels: Traversable, root: Traversable) -> KGSplits:
    """CoDEx's relation labels, entity texts from type labels, and CoDEx-S's hard negatives."""
    entity_texts, relation_texts = codex_labels(kg.entities, kg.relations)

    negatives = []
    for split in ("valid", "test"):
        path = root / f"{split}_negatives.txt"
        if path.is_file():
            negatives.append((split, _ids_in_vocabulary(kg, path)))
    return dataclasses.replace(
        kg, entity_texts=entity_texts, relation_texts=relation_texts, negatives=tuple(negatives)
    )


def _ids_in_vocabulary(kg: KGSplits, path: Traversable) -> np.ndarray:
    e_ix = {e: i for i, e in enumerate(kg.entities)}
    r_ix = {r: i for i, r in enumerate(kg.relations)}
    triples, _ = read_triples(path)
    rows = []
    for i, (h, r, t) in enumerate(triples):
        if h not in e_ix or t not in e_ix or r not in r_ix:
            raise ValueError(
                f"{path}: triple {i + 1} {(h, r, t)!r} names an unknown entity or relation"
            )
        rows.append((e_ix[h], r_ix[r], e_ix[t]))
    return np.array(rows, np.int64).reshape(-1, 3)
