r"""Path-Constrained Retrieval (Sec. 3.2 of *Path-Constrained Retrieval*, the PCR paper):
candidates :math:`C(A)` = nodes reachable from the anchors ``A`` (within ``max_hops``), ranked by
cosine similarity inside :math:`C(A)`: :math:`R_{PCR} = \operatorname{top\text{-}k}_{v\in C(A)}
\cos(\phi(q), \phi(v))`. This is *hard grounding* (Eq. (6)) of a semantic prior over nodes
(its soft counterpart: :class:`~grounding.retrieval.SoftPCR`); ``search="ann"`` takes the
top-k by approximate search (:class:`~grounding.retrieval.ann.ANNIndex`) within :math:`C(A)`.

Reachability and hop distances come from the path engine (:class:`grounding.TypedGraph`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Literal

import numpy as np

from grounding.evidence import EvidenceState
from grounding.retrieval._batch import chunk_size, evidence_edges
from grounding.retrieval._rank import row_norm_max, screen, top_k_exact
from grounding.retrieval.ann import ANNIndex
from grounding.retrieval.base import (
    AnchoredRetriever,
    Fallback,
    Query,
    Retrieval,
    TextIndex,
    check_k,
    check_queries,
    dots,
    top_k,
)

__all__ = ["PCR"]

_SCREEN_ROWS = 256  # queries per screening product of PCR (bounds its [Q, N] buffer)


class PCR(AnchoredRetriever):
    """Path-Constrained Retrieval: cosine top-k among the nodes reachable from the anchors.

    Args:
        index: the graph's :class:`~grounding.retrieval.TextIndex`.
        max_hops: depth limit ``d_max`` (``None``: unlimited, the paper's default).
        fallback: policy for missing/unknown anchors (see
            :class:`~grounding.retrieval.base.AnchoredRetriever`). An anchor is always reachable
            from itself, so the candidate set is never empty otherwise.
        search: ``"exact"`` (default), ``"ann"`` (an :class:`~grounding.retrieval.ann.ANNIndex`
            with its defaults, built here; the ``ann`` extra) or a prebuilt ``ANNIndex`` over
            ``index.embeddings``. It replaces only the full pass over all nodes (candidate sets
            of at least half the graph; filtered to :math:`C(A)`, its nodes rescored exactly);
            smaller sets, and queries it finds fewer than ``k`` candidates for, stay exact.

    Scores are cosine similarities. With several anchors (topic entities) the candidate set is
    the union of their reachable sets. PCR paper, Sec. 3.2; hard grounding, Eq. (6). Exact
    search keeps its screening matrix between calls (up to 256 rows of ``N`` scores: 1 KiB per
    node in float32).

    References:
        - Oladokun, "Path-Constrained Retrieval: A Structural Approach to Reliable LLM Agent
          Reasoning Through Graph-Scoped Semantic Search", 2025 (arXiv:2511.18313): Sec. 3.2.
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (6).
    """

    name = "pcr"

    def __init__(
        self,
        index: TextIndex,
        max_hops: int | None = None,
        fallback: Fallback = "global",
        *,
        search: Literal["exact", "ann"] | ANNIndex = "exact",
    ):
        super().__init__(index, max_hops, fallback)
        if isinstance(search, ANNIndex):
            n, dim = index.embeddings.shape
            if (search.n_nodes, search.dim) != (n, dim):
                raise ValueError(
                    f"PCR: the ANNIndex covers [{search.n_nodes}, {search.dim}] vectors, the "
                    f"index has [{n}, {dim}]"
                )
            self.ann: ANNIndex | None = search
        elif isinstance(search, str) and search in ("exact", "ann"):
            self.ann = ANNIndex(index.embeddings) if search == "ann" else None
        else:
            raise ValueError(f"PCR: search must be 'exact', 'ann' or an ANNIndex, got {search!r}")

    def candidates(self, anchors: int | Sequence[int] | np.ndarray) -> np.ndarray:
        """:math:`C(A)`: sorted indices reachable from any anchor within ``max_hops``."""
        return self.graph.reachable(anchors, self.max_hops)

    def retrieve(self, query: Query, k: int = 10) -> Retrieval:
        k = check_k(k)
        anchors, why = self.resolve(query)
        if not len(anchors):
            return self.fallen(query, k, why)
        [(idx, s)] = self._rank(self.index.embed_queries([query.text]), self.candidates(anchors), k)
        return self._result(query, idx, s, anchors, max_hops=self.max_hops)

    def _rank(self, qv: np.ndarray, cand: np.ndarray, k: int, approx=None, ann=True) -> list:
        """Top-k node indices and cosines within ``cand`` for each query vector ``[G, dim]``:
        exactly the top ``k`` of fixed-order dot products (ties: lower index first), screened
        by one matrix product: ``approx`` (``[G, N]``, overwritten) when given, else over the
        candidates alone when they are fewer than half the nodes, else over all nodes,
        :data:`_SCREEN_ROWS` queries at a time, into one buffer kept between calls (a fresh
        matrix per call pays its page faults again); see :mod:`grounding.retrieval._rank`.
        With an approximate index, a large candidate set is searched there instead (its nodes
        rescored in the fixed order; the exact path for the rows it leaves short)."""
        emb, n = self.index.embeddings, self.graph.n_nodes
        if ann and self.ann is not None and 2 * len(cand) >= n:
            return self._rank_ann(qv, cand, k)
        if approx is not None or 2 * len(cand) < n or k >= len(cand):
            return top_k_exact(emb, self._row_norm_max, qv, cand, k, approx)
        buf = self.__dict__.pop("_screen_buffer", None)  # taken: no other call writes it
        out = []
        for s in range(0, len(qv), _SCREEN_ROWS):
            rows = qv[s : s + _SCREEN_ROWS]
            if buf is None or len(buf) < len(rows):
                buf = np.empty((len(rows), n), emb.dtype)
            approx = screen(emb, rows, out=buf[: len(rows)])  # overwritten below
            out += top_k_exact(emb, self._row_norm_max, rows, cand, k, approx)
        self._screen_buffer = buf
        return out

    def _rank_ann(self, qv: np.ndarray, cand: np.ndarray, k: int) -> list[tuple]:
        emb, n = self.index.embeddings, self.graph.n_nodes
        found = [idx for idx, _ in self.ann.search(qv, k, None if len(cand) == n else cand)]
        out = []
        for idx, q in zip(found, qv):  # rescored as the exact path scores them
            top, s = top_k(dots(emb[idx], q), k)
            out.append((idx[top], s))
        short = [i for i, idx in enumerate(found) if len(idx) < min(k, len(cand))]
        for i, exact in zip(short, self._rank(qv[short], cand, k, ann=False) if short else ()):
            out[i] = exact
        return out

    @functools.cached_property
    def _row_norm_max(self) -> float:
        return row_norm_max(self.index.embeddings)

    def __getstate__(self) -> dict:
        """Pickles and copies leave out the screening buffer (scratch; a copy sharing it would
        write into it from another call)."""
        state = dict(self.__dict__)
        state.pop("_screen_buffer", None)
        return state

    def retrieve_batch(self, queries: Sequence[Query], k: int = 10) -> list[Retrieval]:
        """Batched PCR, same answers as :meth:`retrieve`. With ``max_hops``: candidates and
        evidence (precomputed) by one breadth-first search per chunk of queries; without: one
        similarity product per group sharing a candidate set (anchors of one component)."""
        k, queries = check_k(k), check_queries(queries)
        if self.max_hops is not None:
            return self._retrieve_bounded(queries, k)
        out, todo = self.anchored(queries, k)
        groups: dict[object, tuple[np.ndarray, list[tuple[int, np.ndarray]]]] = {}
        for i, anchors in todo:
            cand = self.candidates(anchors)  # one anchor: a memoized array, shared
            key = id(cand) if len(anchors) == 1 else ("q", i)
            groups.setdefault(key, (cand, []))[1].append((i, anchors))
        order = [i for _, members in groups.values() for i, _ in members]
        if order:
            qv = dict(zip(order, self.index.embed_queries([queries[i].text for i in order])))
        for cand, members in groups.values():
            ranked = self._rank(np.stack([qv[i] for i, _ in members]), cand, k)
            for (i, anchors), (idx, s) in zip(members, ranked):
                out[i] = self._result(queries[i], idx, s, anchors)
        return out  # type: ignore[return-value]

    def _retrieve_bounded(self, queries: Sequence[Query], k: int) -> list[Retrieval]:
        """:meth:`retrieve_batch` at a depth limit: per chunk of queries one breadth-first
        search gives every candidate set (the nodes within ``max_hops`` of an anchor, as
        :meth:`candidates`), each ranked by :meth:`_rank` as :meth:`retrieve` ranks it (so the
        same indices and scores), and the same distances give each retrieval's evidence, set
        ahead of its first access. Queries without a known anchor take the fallback (evidence
        built when read)."""
        out, todo = self.anchored(queries, k)
        if not todo:
            return out  # type: ignore[return-value]
        qv = self.index.embed_queries([queries[i].text for i, _ in todo])
        g, step = self.graph, chunk_size(self.graph.n_nodes)
        for s in range(0, len(todo), step):
            chunk = todo[s : s + step]
            dist, reach = g.distances_to_nearest(
                [a for _, a in chunk], self.max_hops, compact=True, pairs=True
            )
            q, v = reach[0], reach[1]  # the candidate sets, split by query
            rows = qv[s : s + len(chunk)]
            cands = np.split(v, np.searchsorted(q, range(1, len(chunk))))
            approx = None  # one product over all nodes screens the chunk, if one set is large
            if any(2 * len(c) >= g.n_nodes for c in cands):
                approx = screen(self.index.embeddings, rows)
            ranked = [
                self._rank(rows[j : j + 1], c, k, None if approx is None else approx[j : j + 1])[0]
                for j, c in enumerate(cands)
            ]
            edges = evidence_edges(
                g, dist, [a for _, a in chunk], [idx for idx, _ in ranked], None, reach
            )
            for (i, anchors), (idx, scores), e in zip(chunk, ranked, edges):
                r = self._result(queries[i], idx, scores, anchors, max_hops=self.max_hops)
                state = EvidenceState(graph=g.subgraph(e), provenance=dict(r.provenance))
                out[i] = r._cache_evidence(state)
        return out  # type: ignore[return-value]
