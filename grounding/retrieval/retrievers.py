r"""Retrievers: Path-Constrained Retrieval (hard and soft) and the PCR paper's baselines.

Every retriever maps a :class:`~grounding.retrieval.Query` to a :class:`Retrieval`: ranked
nodes, their scores, and (lazily) the :class:`~grounding.EvidenceState` handed to the core.

- :class:`PCR` (seed ``000``, Sec. 3.2): candidates :math:`C(a)` = nodes reachable from the
  anchor ``a`` (within ``max_hops``), ranked by cosine similarity inside :math:`C(a)`:
  :math:`R_{PCR} = \operatorname{top\text{-}k}_{v\in C(a)} \cos(\phi(q), \phi(v))`.
  This is *hard grounding* (Eq. (6)) of a semantic prior over nodes.
- :class:`SoftPCR`: the Gibbs posterior (Eq. (7)) of the same prior,
  :math:`p_\theta(v\mid q)\propto\exp(\cos(\phi(q),\phi(v))/T)`, under the slack-extended
  graph energy (Eq. (19)) :math:`E(v) = \min(c\,d(a, v),\ \kappa)`, with :math:`d` the hop
  distance (``tau = 0``; ``+inf`` when unreachable) or the entropic path energy of
  Eq. (13) (``tau > 0``, path engine). With the paper's constants ``c = 0.1``,
  :math:`\kappa = 1` the energy *is* the PCR paper's graph-distance penalty. With ``c = 0``
  the energy is the truncated :math:`E_M` of Prop. 6 (``0`` on :math:`C(a)`, :math:`\kappa`
  outside), and as :math:`\lambda\kappa\to\infty` the posterior tends to the prior
  conditioned on :math:`C(a)`, i.e. to hard PCR (tested); at finite slack every node keeps
  positive mass (Prop. 3).
- Baselines over all nodes: :class:`VectorRetriever` (cosine), :class:`BM25Retriever`
  (:math:`k_1 = 1.5, b = 0.75`), :class:`HybridRetriever` (``0.7`` vector ``+ 0.3`` BM25,
  each min-max normalised over its own top ``2k``, as in the PCR paper's code).

Anchored retrievers take a ``fallback`` policy for a missing/unknown anchor or an empty
candidate set: ``"global"`` (the PCR paper's behaviour: search all nodes), ``"empty"``
(return nothing) or ``"error"`` (raise). Whatever happens is reported in
:attr:`Retrieval.fallback`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np

from grounding.evidence import EvidenceState
from grounding.retrieval.graph import Query, TextGraph
from grounding.retrieval.text import BM25, EmbeddingCache, Encoder, HashingEncoder, minmax

__all__ = [
    "Retrieval",
    "Retriever",
    "TextIndex",
    "VectorRetriever",
    "BM25Retriever",
    "HybridRetriever",
    "PCR",
    "SoftPCR",
]

Fallback = Literal["global", "empty", "error"]
_BLOCK = 256  # block length of the exact top-k pre-selection on long score rows
_EXACT_ROWS = 4096  # score up to this many rows with a fixed summation order (see _dots)
_FALLBACKS = ("global", "empty", "error")


@dataclasses.dataclass(frozen=True, eq=False)
class Retrieval:
    """The result of one retrieval.

    Attributes:
        query: the query.
        index: ``[<= k]`` node indices, best first.
        scores: their scores (cosine, BM25, hybrid, or log posterior: see the retriever).
        graph: the searched graph.
        retriever: the retriever's name.
        anchor: the anchor's node index (``None`` when absent or unknown).
        fallback: ``None``, or why the retriever did not run as specified (and what it did).
    """

    query: Query
    index: np.ndarray
    scores: np.ndarray
    graph: TextGraph
    retriever: str
    anchor: int | None = None
    fallback: str | None = None

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self.graph.ids[i] for i in self.index)

    @functools.cached_property
    def evidence(self) -> EvidenceState:
        """The evidence state for the core (built on first access)."""
        prov = dict(
            retriever=self.retriever,
            query=self.query.text,
            anchor=self.query.anchor,
            nodes=self.nodes,
            scores=self.scores.tolist(),
            fallback=self.fallback,
        )
        return self.graph.evidence(self.anchor, self.index, prov)


class Retriever(Protocol):
    """What every retriever offers."""

    name: str

    def retrieve(self, query: Query, k: int = 10) -> Retrieval: ...


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def _dots(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``q @ rows.T``. Up to :data:`_EXACT_ROWS` rows each entry is summed in one fixed order
    (``einsum``), so identical rows get bit-identical scores wherever they sit and whichever
    subset is scored (BLAS kernels differ by a rounding error with a row's position: ties
    would then break by that noise instead of by node index). Beyond that, BLAS (speed):
    near-ties within float rounding may reorder there."""
    if len(rows) <= _EXACT_ROWS:
        return np.einsum("nd,...d->...n", rows, q)
    return q @ rows.T


def _top(scores: np.ndarray, k: int, among: np.ndarray | None = None):
    """Indices and scores of the ``k`` best entries (ties: lower index first)."""
    cand = np.arange(len(scores)) if among is None else among
    s = scores if among is None else scores[among]
    k = min(k, len(cand))
    if k < len(cand):  # keep every entry tied with the k-th best, then break ties by index
        part = np.flatnonzero(-s <= np.partition(-s, k - 1)[k - 1])
    else:
        part = np.arange(len(cand))
    order = part[np.lexsort((cand[part], -s[part]))][:k]
    return cand[order], s[order]


class TextIndex:
    """Node embeddings (computed once, optionally cached on disk) and a BM25 index of one
    graph, shared by all retrievers of that graph.

    Args:
        graph: the graph.
        encoder: any :class:`~grounding.retrieval.text.Encoder`; default: the offline
            :class:`~grounding.retrieval.text.HashingEncoder` with idf fitted on the node texts.
        cache: an :class:`~grounding.retrieval.text.EmbeddingCache` (optional).
    """

    def __init__(
        self,
        graph: TextGraph,
        encoder: Encoder | None = None,
        cache: EmbeddingCache | None = None,
        *,
        _embeddings: np.ndarray | None = None,
    ):
        self.graph = graph
        self.encoder = encoder if encoder is not None else HashingEncoder().fit(graph.texts)
        self.cache = cache
        self.embeddings = self._encode(graph.texts) if _embeddings is None else _embeddings

    @classmethod
    def from_embeddings(
        cls, graph: TextGraph, embeddings: np.ndarray, encoder: Encoder
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
        if self.cache is not None:
            return self.cache.encode(self.encoder, list(texts))
        return self.encoder.encode(list(texts))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """``[Q, dim]`` unit query embeddings (ValueError for a query without tokens)."""
        qv = self._encode(texts)
        if not np.all(np.isfinite(qv)):
            raise ValueError(f"the encoder {self.encoder.name!r} returned non-finite query vectors")
        return qv

    def cosine(self, query: Query) -> np.ndarray:
        """``[N]`` cosine similarity of the query to every node."""
        return _dots(self.embeddings, self.embed_queries([query.text])[0])

    @functools.cached_property
    def bm25(self) -> BM25:
        return BM25(self.graph.texts)


class _Base:
    name = "base"

    def __init__(self, index: TextIndex):
        self.index = index
        self.graph = index.graph

    def _result(self, query, idx, scores, anchor=None, fallback=None) -> Retrieval:
        return Retrieval(query, idx, scores, self.graph, self.name, anchor, fallback)

    def retrieve_batch(self, queries: Sequence[Query], k: int = 10) -> list[Retrieval]:
        """One :class:`Retrieval` per query (same as calling :meth:`retrieve` in a loop)."""
        return [self.retrieve(q, k) for q in queries]


class VectorRetriever(_Base):
    """Global cosine top-k over all nodes (the PCR paper's "vector" baseline)."""

    name = "vector"

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        idx, s = _top(self.index.cosine(query), _check_k(k))
        return self._result(query, idx, s, _anchor_or_none(self.graph, query))


class BM25Retriever(_Base):
    """Okapi BM25 top-k over all nodes (``k1 = 1.5``, ``b = 0.75``)."""

    name = "bm25"

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        idx, s = _top(self.index.bm25.scores(query.text), _check_k(k))
        return self._result(query, idx, s, _anchor_or_none(self.graph, query))


class HybridRetriever(_Base):
    """``alpha * vector + (1 - alpha) * BM25``, as the PCR paper's code computes it: each
    method's top ``2k`` list is min-max normalised on its own; a node absent from one list
    scores 0 there."""

    name = "hybrid"

    def __init__(self, index: TextIndex, alpha: float = 0.7):
        super().__init__(index)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        self.alpha = float(alpha)

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        k = _check_k(k)
        combined, pool = np.zeros(self.graph.n_nodes), []
        for weight, s in (
            (self.alpha, self.index.cosine(query)),
            (1.0 - self.alpha, self.index.bm25.scores(query.text)),
        ):
            idx, top = _top(s, 2 * k)
            combined[idx] += weight * minmax(top)
            pool.append(idx)
        idx, s = _top(combined, k, among=np.unique(np.concatenate(pool)))
        return self._result(query, idx, s, _anchor_or_none(self.graph, query))


def _anchor_or_none(graph: TextGraph, query: Query) -> int | None:
    return graph.index(query.anchor) if graph.has(query.anchor) else None


class _Anchored(_Base):
    def __init__(self, index: TextIndex, max_hops: int | None, fallback: Fallback):
        super().__init__(index)
        if fallback not in _FALLBACKS:
            raise ValueError(f"fallback must be one of {_FALLBACKS}, got {fallback!r}")
        if max_hops is not None and (
            isinstance(max_hops, bool)
            or not isinstance(max_hops, (int, np.integer))
            or max_hops < 0
        ):
            raise ValueError(f"max_hops must be a non-negative integer or None, got {max_hops!r}")
        self.max_hops = None if max_hops is None else int(max_hops)
        self.fallback = fallback

    def _resolve(self, query: Query) -> tuple[int | None, str | None]:
        """The anchor index, or ``None`` and the reason (after applying the policy)."""
        if self.graph.has(query.anchor):
            return self.graph.index(query.anchor), None
        why = "no anchor given" if query.anchor is None else f"unknown anchor {query.anchor!r}"
        if self.fallback == "error":
            raise ValueError(f"{self.name}: {why} (query {query.id or query.text!r})")
        return None, why

    def _fallen(self, query: Query, k: int, why: str, anchor: int | None = None) -> Retrieval:
        if self.fallback == "empty":
            empty = np.zeros(0, np.int64)
            return self._result(query, empty, np.zeros(0), anchor, f"{why}: returned nothing")
        idx, s = _top(self.index.cosine(query), k)
        return self._result(query, idx, s, anchor, f"{why}: searched all nodes")


class PCR(_Anchored):
    """Path-Constrained Retrieval: cosine top-k among the nodes reachable from the anchor.

    Args:
        index: the graph's :class:`TextIndex`.
        max_hops: depth limit ``d_max`` (``None``: unlimited, the paper's default).
        fallback: policy for a missing/unknown anchor (see the module docstring). The anchor
            is always reachable from itself, so the candidate set is never empty otherwise.

    Scores are cosine similarities. Seed ``000``, Sec. 3.2; hard grounding, Eq. (6).
    """

    name = "pcr"

    def __init__(
        self, index: TextIndex, max_hops: int | None = None, fallback: Fallback = "global"
    ):
        super().__init__(index, max_hops, fallback)

    def candidates(self, anchor: int) -> np.ndarray:
        """:math:`C(a)`: sorted indices reachable from ``anchor`` within ``max_hops``."""
        return self.graph.reachable(anchor, self.max_hops)

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        k = _check_k(k)
        anchor, why = self._resolve(query)
        if anchor is None:
            return self._fallen(query, k, why)
        qv = self.index.embed_queries([query.text])
        [(idx, s)] = self._rank(qv, self.candidates(anchor), k)
        return self._result(query, idx, s, anchor)

    def _rank(self, qv: np.ndarray, cand: np.ndarray, k: int) -> list[tuple]:
        """Top-k node indices and cosines within ``cand`` for each query vector ``[G, dim]``.

        A small candidate set is gathered (``emb[cand] @ q``); a large one is scored against
        all nodes (no gather; the rest masked), and long rows are pre-selected by block
        maxima: only blocks whose maximum reaches the k-th largest block maximum can hold a
        top-k entry (any entry elsewhere has k strictly larger ones), so this stays exact.
        Scores come from :func:`_dots` (a fixed summation order on graphs up to
        :data:`_EXACT_ROWS` nodes).
        """
        emb, n = self.index.embeddings, self.graph.n_nodes
        if 2 * len(cand) < n:
            sims = _dots(emb[cand], qv)  # [G, |C|]
            return [(cand[i], s) for i, s in (_top(row, k) for row in sims)]
        nb = n // _BLOCK
        if nb < 4 * k:  # short rows: plain selection within cand (never a masked node)
            among = cand if len(cand) < n else None
            return [_top(row, k, among=among) for row in _dots(emb, qv)]
        sims = _dots(emb, qv)  # [G, N]
        if len(cand) < n:
            sims[:, np.setdiff1d(np.arange(n), cand, assume_unique=True)] = -np.inf
        bmax = sims[:, : nb * _BLOCK].reshape(len(sims), nb, _BLOCK).max(axis=2)
        tail = np.arange(nb * _BLOCK, n)
        out = []
        for row, bm in zip(sims, bmax):
            keep = np.flatnonzero(bm >= np.partition(bm, nb - k)[nb - k])
            cols = (keep[:, None] * _BLOCK + np.arange(_BLOCK)).ravel()
            out.append(_top(row, k, among=np.concatenate([cols, tail])))
        return out

    def retrieve_batch(self, queries: Sequence[Query], k: int = 10) -> list[Retrieval]:
        """Batched PCR: one query-embedding call and one similarity product per group of
        queries that share a candidate set (all anchors in one strongly connected component
        share it when ``max_hops`` is None). Same answers as :meth:`retrieve`."""
        k = _check_k(k)
        out: list[Retrieval | None] = [None] * len(queries)
        groups: dict[object, tuple[np.ndarray, list[tuple[int, int]]]] = {}
        for i, q in enumerate(queries):
            anchor, why = self._resolve(q)
            if anchor is None:
                out[i] = self._fallen(q, k, why)
                continue
            cand = self.candidates(anchor)
            key = id(cand) if self.max_hops is None else i  # memoised arrays are shared
            groups.setdefault(key, (cand, []))[1].append((i, anchor))
        todo = [i for _, members in groups.values() for i, _ in members]
        if todo:
            qv = dict(zip(todo, self.index.embed_queries([queries[i].text for i in todo])))
        for cand, members in groups.values():
            ranked = self._rank(np.stack([qv[i] for i, _ in members]), cand, k)
            for (i, anchor), (idx, s) in zip(members, ranked):
                out[i] = self._result(queries[i], idx, s, anchor)
        return out  # type: ignore[return-value]


class SoftPCR(_Anchored):
    r"""Soft Path-Constrained Retrieval: rank by the Gibbs posterior over nodes.

    .. math::
        \log p_\lambda(v\mid q) = \cos(\phi(q),\phi(v))/T - \log Z_0
            - \lambda \min\big(c\, d(a, v),\ \kappa\big) - \log Z_\lambda

    (Eqs. (7), (19); :math:`d = +\infty` beyond ``max_hops`` or when unreachable, so those
    nodes pay the slack :math:`\kappa`). ``tau > 0`` replaces :math:`c\,d` by the entropic
    path energy of Eq. (13) over walks of at most ``max_hops`` edges (required then) under a
    uniform random-walk step prior, clamped at 0, which rewards many alternative paths.
    Scores are log posterior masses.

    Args:
        index: the graph's :class:`TextIndex`.
        lam: grounding strength :math:`\lambda \ge 0`.
        temperature: :math:`T > 0` of the semantic prior.
        hop_cost: :math:`c \ge 0` per hop (``0``: the truncated energy of Prop. 6).
        slack: :math:`\kappa > 0`, the finite energy of a node without support.
        max_hops: depth limit (``None``: unlimited; must be set when ``tau > 0``).
        tau: path-aggregation temperature of Eq. (13) (``0``: shortest path).
        fallback: policy for a missing/unknown anchor (``"global"``: rank by the prior).
    """

    name = "soft_pcr"

    def __init__(
        self,
        index: TextIndex,
        lam: float = 10.0,
        temperature: float = 0.05,
        hop_cost: float = 0.1,
        slack: float = 1.0,
        max_hops: int | None = None,
        tau: float = 0.0,
        fallback: Fallback = "global",
    ):
        super().__init__(index, max_hops, fallback)
        for name, v, ok in (
            ("lam", lam, lam >= 0),
            ("temperature", temperature, temperature > 0),
            ("hop_cost", hop_cost, hop_cost >= 0),
            ("slack", slack, 0 < slack < np.inf),
            ("tau", tau, tau >= 0),
        ):
            if not (np.isfinite(v) and ok):
                raise ValueError(f"SoftPCR: invalid {name}={v!r}")
        if tau > 0 and max_hops is None:
            raise ValueError("SoftPCR: tau > 0 aggregates walks and needs a finite max_hops")
        self.lam, self.temperature = float(lam), float(temperature)
        self.hop_cost, self.slack, self.tau = float(hop_cost), float(slack), float(tau)

    def energy(self, anchor: int) -> np.ndarray:
        """``[N]`` slack-extended graph energy :math:`\\min(c\\,d(a, v), \\kappa)`, Eq. (19)."""
        if self.tau == 0.0:
            d = self.graph.distances([anchor], self.max_hops)[0].astype(float)
            path = np.where(d >= 0, self.hop_cost * d, np.inf)
        else:
            from grounding.semiring import energy_field

            g = self.graph
            out_degree = np.bincount(g.head, minlength=g.n_nodes)
            field = energy_field(
                g.head,
                g.tail,
                np.full(g.n_edges, self.hop_cost),
                np.array([anchor]),
                n_nodes=g.n_nodes,
                max_hops=self.max_hops,
                tau=self.tau,
                log_step_prior=-np.log(out_degree[g.head]),  # omega: a uniform random walk
            )[0]  # Eq. (13) over walks of 1..max_hops edges
            # walks of each length carry prior mass <= 1, so the soft-min can dip below the
            # cheapest walk's cost (by at most tau * log max_hops): clamp at 0 so E >= 0
            path = np.maximum(np.array(field), 0.0)
            path[anchor] = 0.0  # the anchor supports itself (the empty path)
        return np.minimum(path, self.slack)  # Eq. (19): E = min(E_path, kappa)

    def posterior(self, query: Query) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
        """``(log_prior, energy, log_posterior, anchor)`` over all nodes for ``query``."""
        from grounding.posterior import gibbs_log_posterior

        logits = self.index.cosine(query) / self.temperature
        log_prior = logits - np.logaddexp.reduce(logits)  # Eq. (1): semantic stand-in prior
        anchor, why = self._resolve(query)
        energy = self.energy(anchor) if anchor is not None else np.zeros_like(log_prior)
        log_post = np.asarray(gibbs_log_posterior(log_prior, energy, self.lam))  # Eq. (7)
        return log_prior, energy, log_post, anchor

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        k = _check_k(k)
        anchor, why = self._resolve(query)
        if anchor is None:
            return self._fallen(query, k, why)
        _, _, log_post, _ = self.posterior(query)
        idx, s = _top(log_post, k)
        return self._result(query, idx, s, anchor)
