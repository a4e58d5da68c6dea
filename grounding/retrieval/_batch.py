r"""Evidence for many retrievals at once: :func:`subgraph_evidence_batch` (the edge sets of
:func:`~grounding.retrieval.subgraph_evidence`, query by query identical) and the evidence
edges of the depth-bounded batch of :class:`~grounding.retrieval.PCR`.

Everything runs on whole chunks of queries: one breadth-first search for all their anchor
sets (:meth:`grounding.TypedGraph.distances_to_nearest`), shortest-path predecessors chosen
for all retrieved nodes of all queries per level, and the induced edges gathered from the
CSR rows of all kept nodes; no Python loop over nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from grounding.evidence import EvidenceState
from grounding.graph import TypedGraph, _edges_of
from grounding.graph._memo import GraphMemo
from grounding.semiring.reach import _distinct

_CHUNK_CELLS = 1 << 22  # [Q, N] distance cells per chunk of queries (bounds memory)

#: A node with more edges than this in or out is a *hub*: the edges induced on a kept node set
#: are read from the edge lists of its other nodes and a table of hub-to-hub edges, never from
#: a hub's own (long) edge lists.
HUB_DEGREE = 64


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


def _predecessors(graph: TypedGraph, dist: np.ndarray, q, v, level: int, below):
    """For each distinct pair ``(q, v)`` (sorted by ``q``, then ``v``) with ``dist[q, v] ==
    level > 0``: the head of the first edge into ``v`` (lowest edge index, i.e. first in
    :meth:`~grounding.TypedGraph.in_edges` order) whose head is at ``level - 1`` in row ``q``.
    Found by whichever side touches fewer edges: the edges leaving every node at ``level - 1``
    (e.g. the anchors), restricted to the pairs; or, pair by pair, the edges into ``v`` or a
    binary search for an edge from each node at ``level - 1`` of row ``q`` into ``v`` (a hub
    ``v`` reached from a few nodes). ``below``: the pairs ``(row, node)`` at ``level - 1``,
    sorted by row, then node (``np.nonzero(dist == level - 1)``)."""
    n, n_e = dist.shape[1], graph.n_edges
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    lq, lu = below
    index = _hub_index(graph)
    n_in = index.in_degree[v]
    per_row = np.bincount(lq, minlength=dist.shape[0])
    search = per_row[q] * _SEARCH_COST < n_in
    n_out = index.out_degree[lu].sum()
    if _forward(n_out, np.minimum(n_in, per_row[q] * _SEARCH_COST).sum()):  # from the level below
        want = np.zeros(dist.shape, bool)
        want[q, v] = True
        edges, owner = graph.out_edges_of(lu)
        eq, et = lq[owner], tail[edges]
        hit = want[eq, et]
        key = np.sort((eq[hit] * n + et[hit]) * n_e + edges[hit])
        pick = key[_first(key // n_e)] % n_e  # runs ordered by (q, v), as the pairs are
        return q, head[pick].astype(np.int64)
    pick = np.empty(len(q), np.int64)
    scan = np.flatnonzero(~search)
    edges, owner = graph.in_edges_of(v[scan])
    closer = np.flatnonzero(dist[q[scan][owner], head[edges]] == level - 1)
    pick[scan] = edges[closer[_first(owner[closer])]]  # in edge order per node: the first
    pick[search] = _first_edge_from(graph, q[search], v[search], lu, per_row)
    return q, head[pick].astype(np.int64)


#: A binary search for one edge costs about this many steps of a scan of an edge list.
_SEARCH_COST = 8


def _first_edge_from(graph: TypedGraph, q, v, lu, per_row) -> np.ndarray:
    """For each pair ``(q, v)``: the lowest-indexed edge into ``v`` from a node of
    ``lu[start[q] : start[q] + per_row[q]]`` (the nodes at the level below in row ``q``), by a
    binary search of each such node in ``v``'s in-edges sorted by head."""
    if not len(q):
        return np.zeros(0, np.int64)
    keys, order = _hub_index(graph).by_tail_head
    n, n_e = graph.n_nodes, graph.n_edges
    start = np.cumsum(per_row) - per_row
    reps = per_row[q]
    pair = np.repeat(np.arange(len(q)), reps)
    offset = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    want = v[pair] * n + lu[np.repeat(start[q], reps) + offset]
    pos = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
    hit = keys[pos] == want  # the first of parallel edges: the lowest index (stable order)
    best = np.sort(pair[hit] * n_e + order[pos[hit]])
    return best[_first(best // n_e)] % n_e  # one per pair: each pair has a predecessor


def _forward(n_out: int, n_in: int) -> bool:
    """Whether :func:`_predecessors` searches forward (fewer edges to touch that way)."""
    return n_out < n_in


def _walk_back(graph: TypedGraph, dist: np.ndarray, reach, q, v) -> list[np.ndarray]:
    """The keys ``q * N + u`` of the nodes ``u`` of one shortest path from the nearest anchor
    to each node ``v`` of query ``q``: from a node at distance ``d > 0`` along its first
    in-edge (edge order) whose head is at distance ``d - 1``, as :func:`subgraph_evidence`
    walks back; level by level from the deepest, each node once per query. ``reach``: the
    pairs ``(row, node)`` of ``dist >= 0`` with their distances, sorted by row, then node, when
    the caller has them (else each level is read off ``dist``)."""
    n = dist.shape[1]
    lev = dist[q, v]
    keys, lev = q[lev > 0] * n + v[lev > 0], lev[lev > 0]  # UNREACHABLE (-1), anchors (0) stay
    marked = []
    for level in range(int(lev.max()) if len(lev) else 0, 0, -1):
        wq, wv = np.divmod(_distinct(keys[lev == level]), n)
        if reach is None:
            below = np.nonzero(dist == level - 1)  # sorted by row, then node
        else:
            at = reach[2] == level - 1
            below = (reach[0][at], reach[1][at])
        pq, pv = _predecessors(graph, dist, wq, wv, level, below)
        marked.append(pq * n + pv)
        keys = np.concatenate([keys[lev < level], pq * n + pv])
        lev = np.concatenate([lev[lev < level], np.full(len(pq), level - 1)])
    return marked


def evidence_edges(
    graph: TypedGraph,
    dist: np.ndarray,
    anchors_list: Sequence[Sequence[int] | np.ndarray],
    nodes_list: Sequence[Sequence[int] | np.ndarray],
    triples_list: Sequence[Sequence[int] | np.ndarray | None] | None,
    reach: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
) -> list[np.ndarray]:
    """The sorted edge indices of :func:`subgraph_evidence` for each query, given ``dist``
    (``[Q, N]``, :meth:`~grounding.TypedGraph.distances_to_nearest` of the anchor sets at the
    depth limit): the subgraph induced on the anchors, the nodes, the given triples'
    endpoints and one shortest path to each node, plus the given triples. ``reach``: the
    entries of ``dist`` within the limit (``distances_to_nearest(..., pairs=True)``), when the
    caller has them (``None``: the levels the walk back needs are read off ``dist``)."""
    n_q, n = dist.shape
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    given = [
        np.unique(np.asarray(t, np.int64)) if t is not None and len(t) else np.zeros(0, np.int64)
        for t in (triples_list if triples_list is not None else [None] * n_q)
    ]
    qa, a = _pairs(anchors_list)
    qn, v = _pairs(nodes_list)
    qg, g = _pairs(given)
    kept = [qa * n + a, qn * n + v, qg * n + head[g], qg * n + tail[g]]
    if len(qa):
        kept += _walk_back(graph, dist, reach, qn, v)
    key = _induced(graph, n_q, np.divmod(_distinct(np.concatenate(kept)), n))  # by query, edge
    bounds = np.searchsorted(key, np.arange(n_q + 1) * graph.n_edges)
    out = []
    for i in range(n_q):
        e = key[bounds[i] : bounds[i + 1]] - i * graph.n_edges
        out.append(np.union1d(e, given[i]) if len(given[i]) else e)
    return out


class _HubIndex(NamedTuple):
    """Each node's out- and in-degree, which nodes are hubs, two CSR tables ``(order, indptr)`` of edges in edge order (the
    edges from a hub into each non-hub node, the edges from each hub to a hub), and the edges
    sorted by ``(tail, head)``, then edge index."""

    out_degree: np.ndarray
    in_degree: np.ndarray
    hub: np.ndarray
    from_hubs: tuple[np.ndarray, np.ndarray]
    hub_to_hub: tuple[np.ndarray, np.ndarray]
    by_tail_head: tuple[np.ndarray, np.ndarray]  # sorted keys tail * N + head, their edges


_HUBS = GraphMemo()


def _hub_index(graph: TypedGraph) -> _HubIndex:
    """The graph's :class:`_HubIndex` (memoized for the last few graphs)."""
    index = _HUBS.find(graph)
    return _HUBS.keep(graph, None, _build_hub_index(graph)) if index is None else index


def _build_hub_index(graph: TypedGraph) -> _HubIndex:
    n, head, tail = graph.n_nodes, np.asarray(graph.head), np.asarray(graph.tail)
    out_degree, in_degree = np.bincount(head, minlength=n), np.bincount(tail, minlength=n)
    hub = np.maximum(out_degree, in_degree) > HUB_DEGREE

    def csr(edges: np.ndarray, by: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = edges[np.argsort(by[edges], kind="stable")]
        return order, np.searchsorted(by[order], np.arange(n + 1))

    key = tail.astype(np.int64) * n + head
    order = np.argsort(key, kind="stable")
    return _HubIndex(
        out_degree,
        in_degree,
        hub,
        csr(np.flatnonzero(hub[head] & ~hub[tail]), tail),
        csr(np.flatnonzero(hub[head] & hub[tail]), head),
        (key[order], order),
    )


def _induced(graph: TypedGraph, n_q: int, kept: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Sorted keys ``q * n_edges + e`` of the edges ``e`` with both ends kept in row ``q`` (of
    ``n_q``; ``kept``: the distinct pairs ``(q, node)``). Each such edge is read exactly once,
    from a short list: an edge leaving a non-hub from its head's out-edges, an edge from a hub
    to a non-hub from its tail's edges from hubs, an edge between hubs from the hub-to-hub
    table."""
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    index = _hub_index(graph)
    kq, kv = kept
    keep = np.zeros((n_q, graph.n_nodes), bool)
    keep[kq, kv] = True
    small = ~index.hub[kv]
    parts = []
    for csr, rows, other in (
        (graph._out_csr, small, tail),
        (index.from_hubs, small, head),
        (index.hub_to_hub, ~small, tail),
    ):
        edges, owner = _edges_of(csr, kv[rows])
        eq = kq[rows][owner]
        inside = keep[eq, other[edges]]
        parts.append(eq[inside] * graph.n_edges + edges[inside])
    return np.sort(np.concatenate(parts))


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
        dist = graph.distances_to_nearest(anchors, max_hops, compact=True)
        triples = None if triples_list is None else triples_list[sl]
        edges = evidence_edges(graph, dist, anchors, nodes_list[sl], triples, None)
        provs = [None] * len(edges) if provenances is None else provenances[sl]
        out += [
            EvidenceState(graph=graph.subgraph(e), provenance=dict(p or {}))
            for e, p in zip(edges, provs)
        ]
    return out
