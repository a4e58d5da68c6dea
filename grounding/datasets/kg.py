r"""Real benchmark knowledge graphs with train / validation / test splits (UMLS, Nations, Kinships).

In the paper's terms a split benchmark *is* incomplete evidence: the training graph is the
observed evidence state :math:`R`, train + validation + test is the latent world
:math:`G^*`, and every held-out triple is true but unobserved (the situation of Prop. 3).

Triples are stored as integer arrays ``[m, 3]`` of ``(head, relation, tail)`` ids over one
shared vocabulary: entity and relation names sorted alphabetically (the convention of PyKEEN,
so ids agree with it). See ``data/README.md`` for source, authors and licence.
"""

from __future__ import annotations

import dataclasses
from importlib import resources
from importlib.resources.abc import Traversable
from os import PathLike

import jax.numpy as jnp
import numpy as np

from grounding.datasets.tsv import read_triples
from grounding.graph import Triple, TypedGraph

__all__ = ["KGSplits", "KG_DATASETS", "load_kg", "load_kg_splits"]

#: Shipped real knowledge graphs (``grounding/datasets/data/<name>/{train,valid,test}.txt``).
KG_DATASETS = ("umls", "nations", "kinships")
SPLITS = ("train", "valid", "test")


@dataclasses.dataclass(frozen=True)
class KGSplits:
    """A knowledge graph split into train / valid / test triples over one vocabulary.

    Attributes:
        name: dataset name.
        entities, relations: vocabularies (id = position).
        train, valid, test: ``[m, 3]`` int arrays of ``(head, relation, tail)`` ids.
    """

    name: str
    entities: tuple[str, ...]
    relations: tuple[str, ...]
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray

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
    """One of the shipped real knowledge graphs: ``"umls"``, ``"nations"``, ``"kinships"``.

    Example:
        >>> kg = load_kg("nations")
        >>> kg.n_entities, kg.n_relations, len(kg.train), len(kg.valid), len(kg.test)
        (14, 55, 1592, 199, 201)
    """
    key = name.lower()
    if key not in KG_DATASETS:
        raise ValueError(f"unknown dataset {name!r}; shipped: {', '.join(KG_DATASETS)}")
    root = resources.files("grounding.datasets") / "data" / key
    return load_kg_splits(*(root / f"{s}.txt" for s in SPLITS), name=key)
