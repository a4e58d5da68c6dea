r"""Questions prepared once for training and scoring: candidate subgraphs and features built
once per question, padded into a few fixed shapes (*buckets*) and kept as device arrays.

A learned retriever's per-question work (anchors, candidate facts, DDE, structural tags,
labels: :mod:`grounding.retrieval.learned.features`) does not change while its parameters
train, so :class:`PreparedQuestions` does it once; every epoch, every seed and every variant
sharing the candidate settings reuses it. Each question goes to the smallest bucket of
:func:`bucket_shapes` that holds its entities and facts, so one compiled program per bucket
serves every batch: a batch is a row index into a bucket's arrays, gathered on the device
(:func:`gather`), with the entity text embeddings looked up there too.

Buckets (``max_facts`` = the candidate cap ``C``): facts ``M`` in
:math:`\{C/4, C/2, C\}` rounded up to a multiple of 64 (at least 64), entities
:math:`N = M + 64` (a candidate subgraph of ``m`` facts in ``c`` connected parts has at most
``m + c`` entities; the parts are the topic's and one per anchor fact). A larger question gets
a bucket of its own size (rounded up to 64).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from grounding._checks import check_int
from grounding.retrieval.learned.features import (
    N_TAGS,
    TOPIC_BINS,
    QuestionSubgraph,
    one_fact_per_pair,
)
from grounding.retrieval.learned.gnn import Batch

__all__ = ["PreparedQuestions", "Bucket", "bucket_shapes", "gather", "LABELS"]

LABELS = ("all", "pair")
"""Label modes: ``"all"`` — every fact on a shortest topic–answer path; ``"pair"`` —
SubgraphRAG's exact labels, one fact per entity pair
(:func:`~grounding.retrieval.learned.features.one_fact_per_pair`)."""

_ROUND = 64


def _up(n: int) -> int:
    return max(_ROUND, -(-int(n) // _ROUND) * _ROUND)


def bucket_shapes(max_facts: int) -> tuple[tuple[int, int], ...]:
    """``(N, M)`` (entities, facts) of the buckets for a candidate cap ``max_facts``
    (module docstring), smallest first.

    Example:
        >>> bucket_shapes(1500)
        ((448, 384), (832, 768), (1600, 1536))
    """
    check_int(max_facts, "max_facts")
    ms = sorted({_up(max_facts * f) for f in (1 / 4, 1 / 2, 1)})
    return tuple((m + _ROUND, m) for m in ms)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Bucket:
    """The padded arrays of the questions of one shape (leading axis: the bucket's
    questions; ``N`` entities, ``M`` facts per row).

    Attributes:
        q: ``[Q, D]`` question embeddings.
        entity: ``[Q, N]`` graph entity index of each local entity (0 for padding).
        dde: ``[Q, N, N_DDE]`` float32; tags: ``[Q, N, N_TAGS]`` bool (anchors included).
        entity_mask: ``[Q, N]`` real entities.
        head, relation, tail: ``[Q, M]`` int32 local heads/tails, graph relation ids.
        fact_mask: ``[Q, M]`` real facts.
        labels: ``[Q, M]`` float32 training labels (the label mode's).
        gold: ``[Q, M]`` bool, every fact on a shortest topic–answer path (the validation
            target, whatever the label mode).
    """

    q: jax.Array
    entity: jax.Array
    dde: jax.Array
    tags: jax.Array
    entity_mask: jax.Array
    head: jax.Array
    relation: jax.Array
    tail: jax.Array
    fact_mask: jax.Array
    labels: jax.Array
    gold: jax.Array

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, M)``."""
        return self.entity.shape[1], self.head.shape[1]


@dataclasses.dataclass(frozen=True, eq=False)
class PreparedQuestions:
    """Questions with their candidate subgraphs and features, built once and bucketed.

    Attributes:
        ids: each question's id (or text).
        subgraphs: each question's :class:`~grounding.retrieval.learned.QuestionSubgraph`.
        q: ``[Q, D]`` question embeddings.
        buckets: the buckets holding questions, smallest first.
        rows: per bucket, the question indices of its rows.
        settings: what the candidate subgraphs were built with (the retriever's candidate
            settings, the encoder's name and the label mode); a retriever refuses prepared
            questions whose settings differ from its own.
    """

    ids: tuple[str, ...]
    subgraphs: tuple[QuestionSubgraph, ...]
    q: np.ndarray
    buckets: tuple[Bucket, ...]
    rows: tuple[np.ndarray, ...]
    settings: dict

    def __len__(self) -> int:
        return len(self.subgraphs)

    @property
    def has_path(self) -> np.ndarray:
        """``[Q]`` bool: some topic–answer shortest path lies in the candidate subgraph."""
        return np.array([s.has_path for s in self.subgraphs], bool)

    @property
    def n_facts(self) -> np.ndarray:
        """``[Q]`` candidate facts per question."""
        return np.array([s.n_facts for s in self.subgraphs], np.int64)

    @classmethod
    def build(
        cls,
        subgraphs: Sequence[QuestionSubgraph],
        q: np.ndarray,
        max_facts: int,
        settings: dict,
        ids: Sequence[str] | None = None,
        labels: str = "all",
    ) -> PreparedQuestions:
        """Bucket ``subgraphs`` (question embeddings ``q``, ``[Q, D]``) by the shapes of
        :func:`bucket_shapes` for ``max_facts``; ``labels``: one of :data:`LABELS`."""
        if labels not in LABELS:
            raise ValueError(f"labels must be one of {LABELS}, got {labels!r}")
        q = np.asarray(q, np.float32)
        if q.ndim != 2 or len(q) != len(subgraphs):
            raise ValueError(f"q must be [{len(subgraphs)}, D], got {list(q.shape)}")
        shapes = list(bucket_shapes(max_facts))
        members: dict[tuple[int, int], list[int]] = {}
        for i, s in enumerate(subgraphs):
            fit = [(n, m) for n, m in shapes if s.n_entities <= n and s.n_facts <= m]
            shape = fit[0] if fit else (_up(s.n_entities), _up(s.n_facts))
            members.setdefault(shape, []).append(i)
        buckets, rows = [], []
        for shape in sorted(members, key=lambda nm: (nm[1], nm[0])):
            idx = np.asarray(members[shape], np.int64)
            buckets.append(_pad([subgraphs[i] for i in idx], q[idx], *shape, labels))
            rows.append(idx)
        ids = tuple(ids) if ids is not None else tuple(str(i) for i in range(len(subgraphs)))
        return cls(ids, tuple(subgraphs), q, tuple(buckets), tuple(rows), dict(settings))


def _pad(subs: Sequence[QuestionSubgraph], q: np.ndarray, N: int, M: int, labels: str) -> Bucket:
    Q = len(subs)
    ent = np.zeros((Q, N), np.int32)
    dd = np.zeros((Q, N, subs[0].dde.shape[1]), np.float32)
    tg = np.zeros((Q, N, N_TAGS), bool)
    em = np.zeros((Q, N), bool)
    h, r, t = (np.zeros((Q, M), np.int32) for _ in range(3))
    fm = np.zeros((Q, M), bool)
    lab = np.zeros((Q, M), np.float32)
    gold = np.zeros((Q, M), bool)
    for i, s in enumerate(subs):
        n, m = s.n_entities, s.n_facts
        ent[i, :n], dd[i, :n], tg[i, :n], em[i, :n] = s.entities, s.dde, s.tags > 0, True
        h[i, :m], r[i, :m], t[i, :m], fm[i, :m] = s.head, s.relation, s.tail, True
        gold[i, :m] = s.labels > 0
        lab[i, :m] = s.labels if labels == "all" else one_fact_per_pair(s.labels, s.head, s.tail)
    return Bucket(*(jnp.asarray(a) for a in (q, ent, dd, tg, em, h, r, t, fm, lab, gold)))


def _hide_anchors(tags: jax.Array) -> jax.Array:
    """The structural tags as if there were no anchors (distance bin "none", off-path)."""
    none = jnp.zeros(tags.shape[:-1] + (N_TAGS - TOPIC_BINS,), tags.dtype)
    none = none.at[..., N_TAGS - TOPIC_BINS - 2].set(1)
    return jnp.concatenate([tags[..., :TOPIC_BINS], none], -1)


def gather(
    bucket: Bucket,
    idx: jax.Array,
    live: jax.Array,
    entity_text: jax.Array,
    anchor_tags: bool = True,
) -> Batch:
    """The model input of rows ``idx`` (``[B]``) of ``bucket``: rows with ``live`` false are
    empty (no entities, no facts; every output of theirs is masked and the loss leaves them
    out), so a last, smaller batch keeps the bucket's shape. ``entity_text``:
    ``[n_entities, D]``; ``anchor_tags=False`` hides the anchors from the structural tags.
    Traceable (a batch is gathered inside the compiled step)."""
    check_int(int(idx.shape[0]), "batch rows")
    em = bucket.entity_mask[idx] & live[:, None]
    tags = bucket.tags[idx].astype(jnp.float32)
    if not anchor_tags:
        tags = _hide_anchors(tags)
    return Batch(
        q=bucket.q[idx],
        x=entity_text[bucket.entity[idx]],
        has_text=em,
        dde=bucket.dde[idx],
        tags=tags,
        entity_mask=em,
        head=bucket.head[idx],
        relation=bucket.relation[idx],
        tail=bucket.tail[idx],
        fact_mask=bucket.fact_mask[idx] & live[:, None],
        labels=bucket.labels[idx],
    )
