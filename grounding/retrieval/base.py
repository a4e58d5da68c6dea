r"""The retriever boundary: queries, retrieval results, the protocol, the shared text index.

Every retriever maps a :class:`Query` to a :class:`Retrieval`: ranked nodes with their scores,
optionally scored triples (edges of the searched graph), and the
:class:`~grounding.EvidenceState` it hands to :func:`grounding.ground`. The searched graph is
a :class:`~grounding.TypedGraph` (node texts in :attr:`~grounding.TypedGraph.node_texts`).

Where a new retriever goes: a node ranker subclasses :class:`BaseRetriever` (or
:class:`AnchoredRetriever` when it needs topic entities); a triple retriever fills
``Retrieval.triples`` / ``triple_scores`` and, when it has its own reliabilities, passes its
own ``evidence``. Planners (:mod:`grounding.plans`) build plans and never retrieve; the
question-answering systems (:mod:`grounding.qa`) call retrievers per question or sub-question.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

import numpy as np

from grounding._checks import check_int
from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph
from grounding.language import BM25, EmbeddingCache, Encoder, HashingEncoder, checked_embeddings
from grounding.query import Query
from grounding.retrieval._batch import subgraph_evidence_batch
from grounding.retrieval._rank import top_k

__all__ = [
    "Query",
    "Retrieval",
    "Retriever",
    "BaseRetriever",
    "AnchoredRetriever",
    "TextIndex",
    "subgraph_evidence",
    "subgraph_evidence_batch",
    "check_k",
    "check_queries",
    "top_k",
    "minmax",
]

Fallback = Literal["global", "empty", "error"]
FALLBACKS = ("global", "empty", "error")
_EXACT_ROWS = 4096  # score up to this many rows with a fixed summation order (see dots)


@dataclasses.dataclass(frozen=True, eq=False)
class Retrieval:
    """The result of one retrieval.

    Attributes:
        query: the query.
        index: ``[<= k]`` node indices, best first.
        scores: their scores (cosine, BM25, hybrid, or log posterior: see the retriever).
        graph: the searched graph.
        retriever: the retriever's name.
        anchors: ``[A]`` node indices of the query's anchors found in the graph.
        fallback: ``None``, or why the retriever did not run as specified (and what it did).
        triples: optional ``[M]`` edge indices of ``graph`` the retriever scored (triple
            retrievers), best first; ``triple_scores`` their scores.
        given_evidence: an evidence state the retriever built itself (e.g. with its own
            reliabilities); ``None``: :attr:`evidence` builds one (see there).
        max_hops: every retrieved node is within this many hops of an anchor (``None``: no
            bound known); :attr:`evidence` then searches paths no deeper.
    """

    query: Query
    index: np.ndarray
    scores: np.ndarray
    graph: TypedGraph = dataclasses.field(repr=False)  # repr: the nodes, not the graph
    retriever: str
    anchors: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    fallback: str | None = None
    triples: np.ndarray | None = None
    triple_scores: np.ndarray | None = None
    given_evidence: EvidenceState | None = None
    max_hops: int | None = None

    def _cache_evidence(self, state: EvidenceState) -> Retrieval:
        """This retrieval with :attr:`evidence` set to ``state`` ahead of its first access
        (what it would build: batched retrievers compute many at once); returns ``self``."""
        self.__dict__["evidence"] = state
        return self

    @property
    def anchor(self) -> int | None:
        """The first anchor's node index (``None`` when absent or unknown)."""
        return int(self.anchors[0]) if len(self.anchors) else None

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(map(self.graph.entities.__getitem__, np.asarray(self.index).tolist()))

    @functools.cached_property
    def provenance(self) -> dict[str, Any]:
        """Which retriever produced the evidence, for which query, with which scores."""
        prov = dict(
            retriever=self.retriever,
            query=self.query.text,
            anchors=self.query.anchors,
            nodes=self.nodes,
            scores=np.asarray(self.scores).tolist(),
            fallback=self.fallback,
        )
        if self.triples is not None:
            prov["triples"] = [self.graph.triples()[i] for i in self.triples]
            prov["triple_scores"] = np.asarray(self.triple_scores).tolist()
        return prov

    @functools.cached_property
    def evidence(self) -> EvidenceState:
        """The evidence state for :func:`grounding.ground` (built on first access):
        ``given_evidence`` if the retriever supplied one, else :func:`subgraph_evidence` of
        the anchors, the retrieved nodes and (for triple retrievers) the scored triples."""
        if self.given_evidence is not None:
            return self.given_evidence
        return subgraph_evidence(
            self.graph, self.anchors, self.index, self.provenance, self.triples, self.max_hops
        )


def subgraph_evidence(
    graph: TypedGraph,
    anchors: Sequence[int] | np.ndarray,
    nodes: Sequence[int] | np.ndarray,
    provenance: Mapping[str, Any] | None = None,
    triples: Sequence[int] | np.ndarray | None = None,
    max_hops: int | None = None,
) -> EvidenceState:
    """The evidence state of a retrieval, over the full vocabulary of ``graph``: the subgraph
    induced on the anchors and the retrieved nodes, plus one shortest path from the nearest
    anchor to each retrieved node it reaches (within ``max_hops``; ``None``: any length; so
    path support of Eq. (10) is present), plus the given ``triples`` (edge indices) with their
    endpoints. Edge reliabilities are the graph's.
    """
    keep = np.zeros(graph.n_nodes, bool)
    nodes = np.asarray(nodes, np.int64)
    anchors = np.asarray(anchors, np.int64)
    keep[nodes] = True
    keep[anchors] = True
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    given = np.zeros(0, np.int64)
    if triples is not None and len(triples):
        given = np.unique(np.asarray(triples, np.int64))
        keep[head[given]] = keep[tail[given]] = True
    if len(anchors):
        dist = graph.distances(anchors, max_hops).astype(float)
        dist = np.where(dist >= 0, dist, np.inf).min(axis=0)  # to the nearest anchor
        for v in nodes:
            while 0 < dist[v] < np.inf:  # walk back along the first in-edge one hop closer
                into = graph.in_edges(v)
                v = int(head[into[dist[head[into]] == dist[v] - 1][0]])
                keep[v] = True
    leaving = graph.edges_from(np.flatnonzero(keep))  # induced: both ends kept
    edges = np.union1d(leaving[keep[tail[leaving]]], given)
    return EvidenceState(graph=graph.subgraph(edges), provenance=dict(provenance or {}))


class Retriever(Protocol):
    """What every retriever offers."""

    name: str

    def retrieve(self, query: Query, k: int = 10) -> Retrieval: ...


def check_k(k: int) -> int:
    """A positive integer ``k`` (``bool`` rejected)."""
    return check_int(k, "k")


def check_queries(queries: Sequence[Query]) -> list[Query]:
    """A batch of queries as a list (empty allowed); TypeError for a single query or string
    (use ``retrieve``) and for any element that is not a :class:`Query`."""
    if isinstance(queries, (Query, str)) or not isinstance(queries, Sequence):
        raise TypeError(
            f"queries must be a sequence of Query (one query: retrieve), got "
            f"{type(queries).__name__}"
        )
    bad = [type(q).__name__ for q in queries if not isinstance(q, Query)]
    if bad:
        raise TypeError(f"queries must be Query objects, got {bad[0]}")
    return list(queries)


def dots(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``q @ rows.T``. Up to :data:`_EXACT_ROWS` rows each entry is summed in one fixed order
    (``einsum``), so identical rows get bit-identical scores wherever they sit and whichever
    subset is scored (BLAS kernels differ by a rounding error with a row's position: ties
    would then break by that noise instead of by node index). Beyond that, BLAS (speed):
    near-ties within float rounding may reorder there."""
    if len(rows) <= _EXACT_ROWS:
        return np.einsum("nd,...d->...n", rows, q)
    return q @ rows.T


def minmax(x: np.ndarray) -> np.ndarray:
    """Rescale to ``[0, 1]`` along the last axis (float64); a constant row maps to zeros.

    Example:
        >>> minmax(np.array([[1.0, 3.0, 2.0], [5.0, 5.0, 5.0]])).tolist()
        [[0.0, 1.0, 0.5], [0.0, 0.0, 0.0]]
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        raise ValueError("minmax needs at least one axis")
    if not np.all(np.isfinite(x)):
        raise ValueError("minmax needs finite values")
    if x.shape[-1] == 0:
        return x.copy()
    lo, hi = x.min(axis=-1, keepdims=True), x.max(axis=-1, keepdims=True)
    with np.errstate(over="ignore"):
        scale = np.where(np.isfinite(hi - lo), 1.0, 0.5)  # halve rows whose range overflows
    span = hi * scale - lo * scale
    out = np.zeros_like(x)
    np.divide(x * scale - lo * scale, span, out=out, where=span > 0)
    return np.clip(out, 0.0, 1.0)


class TextIndex:
    """Node embeddings (computed once, optionally cached on disk) and a BM25 index of one
    graph, shared by all retrievers of that graph.

    Args:
        graph: the graph (its :attr:`~grounding.TypedGraph.node_texts` are indexed).
        encoder: any :class:`~grounding.language.Encoder`; default: the offline
            :class:`~grounding.language.HashingEncoder` with idf fitted on the node texts.
        cache: an :class:`~grounding.language.EmbeddingCache` (optional).
    """

    def __init__(
        self,
        graph: TypedGraph,
        encoder: Encoder | None = None,
        cache: EmbeddingCache | None = None,
        *,
        _embeddings: np.ndarray | None = None,
    ):
        if graph.n_nodes == 0:
            raise ValueError("the graph has no nodes")
        self.graph = graph
        texts = graph.node_texts
        self.encoder = encoder if encoder is not None else HashingEncoder().fit(texts)
        self.cache = cache
        self.embeddings = self._encode(texts) if _embeddings is None else _embeddings

    @classmethod
    def from_embeddings(
        cls, graph: TypedGraph, embeddings: np.ndarray, encoder: Encoder
    ) -> TextIndex:
        """An index over precomputed node embeddings (no encoding; ``encoder`` embeds the
        queries): ``[n_nodes, encoder.dim]`` float32 rows of unit norm (within 1e-4), else
        ValueError."""
        emb = np.asarray(embeddings)
        if emb.dtype != np.float32 or emb.shape != (graph.n_nodes, encoder.dim):
            raise ValueError(
                f"embeddings must be float32 [{graph.n_nodes}, {encoder.dim}], "
                f"got {emb.dtype} {list(emb.shape)}"
            )
        if not np.all(np.abs(np.linalg.norm(emb, axis=1) - 1.0) <= 1e-4):
            raise ValueError("embedding rows must have unit L2 norm (within 1e-4)")
        return cls(graph, encoder, _embeddings=emb)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        """The encoder's rows for ``texts`` (node texts or queries), checked: one finite row
        per text (a ``ValueError`` names the encoder and the first bad text)."""
        texts = list(texts)
        if self.cache is not None:
            return self.cache.encode(self.encoder, texts)  # checked by the cache
        x = self.encoder.encode(texts)
        checked_embeddings(self.encoder, texts, x)  # in the encoder's own float width
        return np.asarray(x)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """``[Q, dim]`` unit query embeddings (ValueError for a query without tokens, or an
        encoder row that is not finite, naming the text)."""
        return self._encode(texts)

    def cosine(self, query: Query) -> np.ndarray:
        """``[N]`` cosine similarity of the query to every node."""
        return dots(self.embeddings, self.embed_queries([query.text])[0])

    @functools.cached_property
    def bm25(self) -> BM25:
        return BM25(self.graph.node_texts)


class BaseRetriever:
    """Shared plumbing of the retrievers over one :class:`TextIndex`."""

    name = "base"

    def __init__(self, index: TextIndex):
        self.index = index
        self.graph = index.graph

    def anchor_indices(self, query: Query) -> np.ndarray:
        """Node indices of the query's anchors that are in the graph (unknown ones dropped)."""
        ix = [self.graph.entity_index(a) for a in query.anchors if self.graph.has_entity(a)]
        return np.asarray(ix, np.int64)

    def _result(self, query, idx, scores, anchors=None, fallback=None, **extra) -> Retrieval:
        anchors = self.anchor_indices(query) if anchors is None else anchors
        return Retrieval(query, idx, scores, self.graph, self.name, anchors, fallback, **extra)

    def retrieve_batch(self, queries: Sequence[Query], k: int = 10) -> list[Retrieval]:
        """One :class:`Retrieval` per query (same as calling :meth:`retrieve` in a loop)."""
        return [self.retrieve(q, k) for q in queries]


class AnchoredRetriever(BaseRetriever):
    """A retriever that needs the query's anchors, with a fallback policy for a query whose
    anchors are missing or unknown: ``"global"`` (search all nodes by cosine, the PCR paper's
    behavior), ``"empty"`` (return nothing) or ``"error"`` (raise). What happened is
    reported in :attr:`Retrieval.fallback`. Unknown anchors among known ones are dropped."""

    def __init__(self, index: TextIndex, max_hops: int | None, fallback: Fallback):
        super().__init__(index)
        if fallback not in FALLBACKS:
            raise ValueError(f"fallback must be one of {FALLBACKS}, got {fallback!r}")
        self.max_hops = None if max_hops is None else check_int(max_hops, "max_hops (or None)", 0)
        self.fallback = fallback

    def resolve(self, query: Query) -> tuple[np.ndarray, str | None]:
        """The known anchors' indices, or an empty array and the reason (policy applied)."""
        anchors = self.anchor_indices(query)
        if len(anchors):
            return anchors, None
        if not query.anchors:
            why = "no anchor given"
        elif len(query.anchors) == 1:
            why = f"unknown anchor {query.anchors[0]!r}"
        else:
            why = f"unknown anchors {query.anchors!r}"
        if self.fallback == "error":
            raise ValueError(f"{self.name}: {why} (query {query.id or query.text!r})")
        return anchors, why

    def fallen(self, query: Query, k: int, why: str) -> Retrieval:
        """The fallback result for a query without usable anchors."""
        if self.fallback == "empty":
            empty = np.zeros(0, np.int64)
            return self._result(query, empty, np.zeros(0), fallback=f"{why}: returned nothing")
        idx, s = top_k(self.index.cosine(query), k)
        return self._result(query, idx, s, fallback=f"{why}: searched all nodes")

    def anchored(self, queries: Sequence[Query], k: int) -> tuple[list, list]:
        """A batch split by its anchors: ``(out, todo)``, ``out`` one slot per query holding
        the fallback result of each query without usable anchors (``None`` elsewhere), and
        ``todo`` the ``(position, anchor indices)`` of the others, in order."""
        out: list[Retrieval | None] = [None] * len(queries)
        todo: list[tuple[int, np.ndarray]] = []
        for i, q in enumerate(queries):
            anchors, why = self.resolve(q)
            if len(anchors):
                todo.append((i, anchors))
            else:
                out[i] = self.fallen(q, k, why)
        return out, todo
