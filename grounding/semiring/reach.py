r"""Reachable sets :math:`C(a) = \{v : a \leadsto v,\ |\text{path}| \le d_{\max}\}` (anchors
included) and hop distances: the path engine's one reachability implementation.

:meth:`Reachability.reachable` chooses the method in one place:

- unlimited depth: the condensation of the graph into strongly connected components, built
  once; every anchor in one component shares one reachable set, computed once per component
  and memoized (what makes unlimited-depth path-constrained retrieval cheap on large graphs);
- a depth limit: frontier expansion over a CSR adjacency, touching only the edges leaving
  the frontier (cheap for small ``d_max``).

:meth:`Reachability.distances` gives the hop distances themselves, by breadth-first search
on the same CSR adjacency (scipy); unreached nodes are
:data:`~grounding.semiring.recursion.UNREACHABLE`. They agree with the batched JAX search of
:func:`grounding.semiring.hop_distances` (Boolean semiring) and with NetworkX (tested).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from jax.typing import ArrayLike
from scipy.sparse import csgraph

from grounding._checks import check_int
from grounding.semiring.recursion import UNREACHABLE

__all__ = ["Reachability"]


class Reachability:
    """Reachable sets and hop distances of one directed graph (built lazily, memoized).

    Args:
        head, tail: ``[n_edges]`` edge endpoints (concrete).
        n_nodes: number of nodes.

    Example:
        >>> r = Reachability([0, 1], [1, 2], 3)
        >>> r.reachable(0).tolist(), r.reachable(0, max_hops=1).tolist(), r.reachable([2, 1]).tolist()
        ([0, 1, 2], [0, 1], [1, 2])
    """

    def __init__(self, head: ArrayLike, tail: ArrayLike, n_nodes: int):
        self.head = np.asarray(head, np.int64)
        self.tail = np.asarray(tail, np.int64)
        self.n_nodes = int(n_nodes)

    def _anchors(self, anchors: int | Sequence[int] | np.ndarray) -> np.ndarray:
        a = np.asarray(anchors, np.int64).reshape(-1)
        if a.size and (a.min() < 0 or a.max() >= self.n_nodes):
            raise ValueError(f"anchor indices must lie in [0, {self.n_nodes}), got {a.tolist()}")
        return a

    @staticmethod
    def _check_depth(max_hops: int | None) -> None:
        if max_hops is not None:
            check_int(max_hops, "max_hops (or None)", 0)

    @functools.cached_property
    def _csr(self) -> sp.csr_matrix:
        data = np.ones(len(self.head), bool)
        return sp.csr_matrix((data, (self.head, self.tail)), shape=(self.n_nodes,) * 2)

    @functools.cached_property
    def _csr_float(self) -> sp.csr_matrix:
        """The CSR as float64 (what scipy's graph searches convert to on every call)."""
        return self._csr.astype(np.float64)

    @functools.cached_property
    def _condensation(self) -> tuple[np.ndarray, sp.csr_matrix, np.ndarray, np.ndarray, dict]:
        n_comp, label = csgraph.connected_components(self._csr, directed=True, connection="strong")
        cross = label[self.head] != label[self.tail]
        dag = sp.csr_matrix(
            (np.ones(int(cross.sum()), bool), (label[self.head][cross], label[self.tail][cross])),
            shape=(n_comp, n_comp),
        )
        order = np.argsort(label, kind="stable")  # members of component c: order[start[c]:...]
        start = np.searchsorted(label[order], np.arange(n_comp + 1))
        return label, dag, order, start, {}

    def _component_reach(self, anchor: int) -> np.ndarray:
        label, dag, order, start, memo = self._condensation
        c = int(label[anchor])
        if c not in memo:  # one BFS on the condensation DAG per component, then reused
            comps = csgraph.breadth_first_order(dag, c, directed=True, return_predecessors=False)
            reach = np.sort(np.concatenate([order[start[j] : start[j + 1]] for j in comps]))
            reach.setflags(write=False)  # shared by every anchor of the component
            memo[c] = reach
        return memo[c]

    def _frontier(self, anchors: np.ndarray, max_hops: int) -> np.ndarray:
        seen = np.zeros(self.n_nodes, bool)
        seen[anchors] = True
        frontier = np.unique(anchors)
        indptr, indices = self._csr.indptr, self._csr.indices
        for _ in range(max_hops):
            if not len(frontier):
                break
            nxt = np.concatenate([indices[indptr[u] : indptr[u + 1]] for u in frontier])
            nxt = np.unique(nxt[~seen[nxt]])
            seen[nxt] = True
            frontier = nxt
        return np.flatnonzero(seen)

    def reachable(
        self, anchors: int | Sequence[int] | np.ndarray, max_hops: int | None = None
    ) -> np.ndarray:
        """Sorted indices of the nodes reachable from any of ``anchors`` (themselves included)
        within ``max_hops`` edges (``None``: any number). With one anchor and no depth limit the
        returned array is the memoized, read-only set shared by its component."""
        a = self._anchors(anchors)
        self._check_depth(max_hops)
        if max_hops is not None:
            return self._frontier(a, int(max_hops))
        if len(a) == 1:
            return self._component_reach(int(a[0]))
        if not len(a):
            return np.zeros(0, np.int64)
        return np.unique(np.concatenate([self._component_reach(int(x)) for x in a]))

    def distances(
        self, anchors: int | Sequence[int] | np.ndarray, max_hops: int | None = None
    ) -> np.ndarray:
        """``[A, N]`` hop distances from each anchor (:data:`UNREACHABLE` beyond ``max_hops``
        or when not reached), equal to :func:`grounding.semiring.hop_distances` without
        rebuilding a layout per call: with a depth limit, breadth-first frontier expansion on
        the memoized CSR that stops after ``max_hops`` levels
        (:meth:`distances_to_nearest`, one anchor per row); without one, scipy's search."""
        a = self._anchors(anchors)
        self._check_depth(max_hops)
        if len(self.head) == 0 or max_hops == 0 or not len(a):  # only the anchors
            out = np.full((len(a), self.n_nodes), UNREACHABLE, np.int64)
            out[np.arange(len(a)), a] = 0
            return out
        if max_hops is not None:
            return self.distances_to_nearest(a[:, None], max_hops)
        d = csgraph.shortest_path(self._csr_float, directed=True, unweighted=True, indices=a)
        d = d.reshape(len(a), self.n_nodes)
        return np.where(np.isfinite(d), d, UNREACHABLE).astype(np.int64)

    def distances_to_nearest(
        self,
        anchor_sets: Sequence[int | Sequence[int] | np.ndarray] | np.ndarray,
        max_hops: int | None = None,
        *,
        compact: bool = False,
        pairs: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``[Q, N]`` hop distance from the nearest anchor of each set (one set per query;
        empty sets allowed) to every node, :data:`UNREACHABLE` when no anchor of the set
        reaches it within ``max_hops`` (``None``: any number): row ``q`` equals the
        column-wise minimum of :meth:`distances` of set ``q`` over its reached entries.
        ``int64``, or with ``compact`` the narrowest type that holds every distance (``int8``
        below 127 hops: the matrix is 8 times smaller and no copy is made). With ``pairs``,
        also the reached entries ``(rows, nodes, hops)``, sorted by row, then node (what
        ``np.nonzero(dist >= 0)`` and ``dist[rows, nodes]`` give; when few entries are
        reached, from the search's own levels, with no pass over the matrix).

        One multi-source breadth-first search for all the sets at once: each level is the
        sparse product of the frontier (a ``[Q, N]`` Boolean matrix) with the CSR adjacency,
        kept where not reached before (no Python loop over queries or nodes), for at most
        ``max_hops`` levels. Memory ``O(Q N)``: callers with many queries pass them in chunks.

        Example:
            >>> r = Reachability([0, 1, 2], [1, 2, 3], 4)
            >>> r.distances_to_nearest([[0], [2, 0], []], max_hops=2).tolist()
            [[0, 1, 2, -1], [0, 1, 0, 1], [-1, -1, -1, -1]]
        """
        self._check_depth(max_hops)
        sets = [self._anchors(s) for s in anchor_sets]
        n_q, n = len(sets), self.n_nodes
        small = max_hops is not None and max_hops < 127
        dist = np.full((n_q, n), UNREACHABLE, np.int8 if small else np.int32)
        rows = np.repeat(np.arange(n_q, dtype=np.int64), [len(s) for s in sets])
        cols = np.concatenate(sets) if sets else np.zeros(0, np.int64)
        dist[rows, cols] = 0
        levels = [_distinct(rows * n + cols)] if pairs else []  # (an anchor may repeat)
        hop = 0
        while len(rows) and (max_hops is None or hop < max_hops):
            hop += 1
            frontier = sp.csr_matrix((np.ones(len(rows), bool), (rows, cols)), shape=(n_q, n))
            nxt = frontier @ self._csr  # each row: the distinct successors of its frontier
            rows = np.repeat(np.arange(n_q, dtype=np.int64), np.diff(nxt.indptr))
            cols = nxt.indices
            fresh = dist[rows, cols] == UNREACHABLE
            rows, cols = rows[fresh], cols[fresh]
            dist[rows, cols] = hop
            if pairs:
                levels.append(rows * n + cols)
        dist = dist if compact else dist.astype(np.int64)
        if not pairs:
            return dist
        if sum(map(len, levels)) * DENSE_PAIRS > n_q * n:  # many reached: a pass beats a sort
            q, v = np.nonzero(dist >= 0)
            return dist, (q, v, dist[q, v])
        keys = np.concatenate(levels)
        order = np.argsort(keys, kind="stable")
        hops = np.repeat(np.arange(len(levels), dtype=dist.dtype), [len(k) for k in levels])
        q, v = np.divmod(keys[order], n)
        return dist, (q, v, hops[order])


#: :meth:`Reachability.distances_to_nearest` reads its ``pairs`` off the matrix in one pass
#: when more than one entry in this many is reached (else it sorts the search's levels).
DENSE_PAIRS = 32


def _distinct(keys: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an integer array (a sort: faster here than
    ``np.unique``'s hashing on millions of keys)."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


def csr_slices(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions ``indptr[r] .. indptr[r + 1] - 1`` of each of ``rows`` in a CSR array,
    concatenated in the order of ``rows`` (no Python loop).

    Example:
        >>> csr_slices(np.array([0, 2, 2, 5]), np.array([2, 0])).tolist()
        [2, 3, 4, 0, 1]
    """
    start, stop = indptr[rows], indptr[np.asarray(rows) + 1]
    count = stop - start
    offset = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(count) - count, count
    )
    return np.repeat(start, count) + offset
