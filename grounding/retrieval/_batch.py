r"""Evidence for many retrievals at once: :func:`subgraph_evidence_batch` (the edge sets of
:func:`~grounding.retrieval.subgraph_evidence`, query by query identical) and the
depth-bounded batch of :class:`~grounding.retrieval.PCR`.

Everything runs on whole chunks of queries: one breadth-first search for all their anchor
sets (:meth:`grounding.TypedGraph.distances_to_nearest`), shortest-path predecessors chosen
for all retrieved nodes of all queries per level, and the induced edges gathered from the
CSR rows of all kept nodes; no Python loop over nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph
from grounding.retrieval._rank import screen

_CHUNK_CELLS = 1 << 22  # [Q, N] distance cells per chunk of queries (bounds memory)


def chunk_size(n_nodes: int) -> int:
    """Queries per chunk so that a ``[Q, N]`` matrix has at most ``_CHUNK_CELLS`` cells."""
    return max(1, _CHUNK_CELLS // max(n_nodes, 1))


def _pairs(lists: Sequence[Sequence[int] | np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(row, value)`` pairs of a ragged list of integer arrays."""
    arrays = [np.asarray(a, np.int64).reshape(-1) for a in lists]
    rows = np.repeat(np.arange(len(arrays)), [len(a) for a in arrays])
    return rows, (np.concatenate(arrays) if arrays else np.zeros(0, np.int64))


def _first(owner: np.ndarray) -> np.ndarray:
    """Positions of the first entry of each run of equal values in ``owner``."""
    return (
        np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1]))) if len(owner) else owner
    )


def _distinct(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an integer array."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


def _predecessors(graph: TypedGraph, dist: np.ndarray, q, v, level: int):
    """For each distinct pair ``(q, v)`` (sorted by ``q``, then ``v``) with ``dist[q, v] ==
    level > 0``: the head of the first edge into ``v`` (lowest edge index, i.e. first in
    :meth:`~grounding.TypedGraph.in_edges` order) whose head is at ``level - 1`` in row ``q``.
    Found by whichever side touches fewer edges: the edges into the nodes ``v``, or the edges
    leaving every node at ``level - 1`` (e.g. the anchors), restricted to the pairs."""
    n, n_e = dist.shape[1], graph.n_edges
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    lq, lu = np.nonzero(dist == level - 1)
    n_in, n_out = np.bincount(tail, minlength=n)[v].sum(), np.bincount(head, minlength=n)[lu].sum()
    if _forward(n_out, n_in):  # from the level below
        want = np.zeros(dist.shape, bool)
        want[q, v] = True
        edges, owner = graph.out_edges_of(lu)
        eq, et = lq[owner], tail[edges]
        hit = want[eq, et]
        key = np.sort((eq[hit] * n + et[hit]) * n_e + edges[hit])
        pick = key[_first(key // n_e)] % n_e  # runs ordered by (q, v), as the pairs are
    else:
        edges, owner = graph.in_edges_of(v)
        closer = np.flatnonzero(dist[q[owner], head[edges]] == level - 1)
        pick = edges[closer[_first(owner[closer])]]  # in edge order per node: the first
    return q, head[pick].astype(np.int64)


def _forward(n_out: int, n_in: int) -> bool:
    """Whether :func:`_predecessors` searches forward (fewer edges to touch that way)."""
    return n_out < n_in


def _walk_back(graph: TypedGraph, dist: np.ndarray, keep: np.ndarray, q, v) -> None:
    """Mark in ``keep`` the nodes of one shortest path from the nearest anchor to each node
    ``v`` of query ``q``: from a node at distance ``d > 0`` along its first in-edge (edge
    order) whose head is at distance ``d - 1``, as :func:`subgraph_evidence` walks back;
    level by level from the deepest, each node once per query."""
    n = dist.shape[1]
    lev = dist[q, v]
    keys, lev = q[lev > 0] * n + v[lev > 0], lev[lev > 0]  # UNREACHABLE (-1), anchors (0) stay
    for level in range(int(lev.max()) if len(lev) else 0, 0, -1):
        wq, wv = np.divmod(_distinct(keys[lev == level]), n)
        pq, pv = _predecessors(graph, dist, wq, wv, level)
        keep[pq, pv] = True
        keys = np.concatenate([keys[lev < level], pq * n + pv])
        lev = np.concatenate([lev[lev < level], np.full(len(pq), level - 1)])


def evidence_edges(
    graph: TypedGraph,
    dist: np.ndarray,
    anchors_list: Sequence[Sequence[int] | np.ndarray],
    nodes_list: Sequence[Sequence[int] | np.ndarray],
    triples_list: Sequence[Sequence[int] | np.ndarray | None] | None = None,
) -> list[np.ndarray]:
    """The sorted edge indices of :func:`subgraph_evidence` for each query, given ``dist``
    (``[Q, N]``, :meth:`~grounding.TypedGraph.distances_to_nearest` of the anchor sets at the
    depth limit): the subgraph induced on the anchors, the nodes, the given triples'
    endpoints and one shortest path to each node, plus the given triples."""
    n_q, n = dist.shape
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    given = [
        np.unique(np.asarray(t, np.int64)) if t is not None and len(t) else np.zeros(0, np.int64)
        for t in (triples_list if triples_list is not None else [None] * n_q)
    ]
    keep = np.zeros((n_q, n), bool)
    qa, a = _pairs(anchors_list)
    qn, v = _pairs(nodes_list)
    qg, g = _pairs(given)
    keep[qa, a] = keep[qn, v] = keep[qg, head[g]] = keep[qg, tail[g]] = True
    if len(qa):
        _walk_back(graph, dist, keep, qn, v)
    kq, kv = np.nonzero(keep)
    edges, owner = graph.out_edges_of(kv)
    eq = kq[owner]
    inside = keep[eq, tail[edges]]
    key = np.sort(eq[inside] * graph.n_edges + edges[inside])  # by query, then edge
    bounds = np.searchsorted(key, np.arange(n_q + 1) * graph.n_edges)
    out = []
    for i in range(n_q):
        e = key[bounds[i] : bounds[i + 1]] - i * graph.n_edges
        out.append(np.union1d(e, given[i]) if len(given[i]) else e)
    return out


def subgraph_evidence_batch(
    graph: TypedGraph,
    anchors_list: Sequence[Sequence[int] | np.ndarray],
    nodes_list: Sequence[Sequence[int] | np.ndarray],
    max_hops: int | None = None,
    provenances: Sequence[Mapping[str, Any] | None] | None = None,
    triples_list: Sequence[Sequence[int] | np.ndarray | None] | None = None,
) -> list[EvidenceState]:
    """:func:`~grounding.retrieval.subgraph_evidence` of many retrievals of one graph (anchor
    node indices, retrieved node indices, optional provenance and triples per query): the same
    evidence states (same edges, in the same order), computed in chunks of queries by one
    breadth-first search each instead of a walk per node."""
    n_q = len(anchors_list)
    for name, other in (("nodes_list", nodes_list), ("provenances", provenances)):
        if other is not None and len(other) != n_q:
            raise ValueError(f"{n_q} anchor sets but {len(other)} entries in {name}")
    if triples_list is not None and len(triples_list) != n_q:
        raise ValueError(f"{n_q} anchor sets but {len(triples_list)} entries in triples_list")
    out: list[EvidenceState] = []
    step = chunk_size(graph.n_nodes)
    for s in range(0, n_q, step):
        sl = slice(s, s + step)
        anchors = [np.asarray(a, np.int64).reshape(-1) for a in anchors_list[sl]]
        dist = graph.distances_to_nearest(anchors, max_hops)
        triples = None if triples_list is None else triples_list[sl]
        edges = evidence_edges(graph, dist, anchors, nodes_list[sl], triples)
        provs = [None] * len(edges) if provenances is None else provenances[sl]
        out += [
            EvidenceState(graph=graph.subgraph(e), provenance=dict(p or {}))
            for e, p in zip(edges, provs)
        ]
    return out


def retrieve_bounded(pcr: Any, queries: Sequence[Any], k: int) -> list:
    """:meth:`PCR.retrieve_batch <grounding.retrieval.PCR.retrieve_batch>` at a depth limit:
    per chunk of queries one breadth-first search gives every candidate set (the nodes within
    ``max_hops`` of an anchor, as :meth:`~grounding.retrieval.PCR.candidates`), each ranked by
    ``PCR._rank`` as :meth:`~grounding.retrieval.PCR.retrieve` ranks it (so the same indices
    and scores), and the same distances give each retrieval's evidence, set ahead of its first
    access. Queries without a known anchor take the fallback (evidence built when read)."""
    out, todo = pcr.anchored(queries, k)
    if not todo:
        return out
    qv = pcr.index.embed_queries([queries[i].text for i, _ in todo])
    g, step = pcr.graph, chunk_size(pcr.graph.n_nodes)
    for s in range(0, len(todo), step):
        chunk = todo[s : s + step]
        dist = g.distances_to_nearest([a for _, a in chunk], pcr.max_hops)
        rows, cands = qv[s : s + len(chunk)], [np.flatnonzero(row >= 0) for row in dist]
        approx = None  # one product over all nodes screens the chunk, if one set is large
        if any(2 * len(c) >= g.n_nodes for c in cands):
            approx = screen(pcr.index.embeddings, rows)
        ranked = [
            pcr._rank(rows[j : j + 1], c, k, None if approx is None else approx[j : j + 1])[0]
            for j, c in enumerate(cands)
        ]
        edges = evidence_edges(g, dist, [a for _, a in chunk], [idx for idx, _ in ranked])
        for (i, anchors), (idx, scores), e in zip(chunk, ranked, edges):
            r = pcr._result(queries[i], idx, scores, anchors, max_hops=pcr.max_hops)
            state = EvidenceState(graph=g.subgraph(e), provenance=dict(r.provenance))
            out[i] = r._cache_evidence(state)
    return out
