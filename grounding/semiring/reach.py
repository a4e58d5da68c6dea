r"""Reachable sets :math:`C(a) = \{v : a \leadsto v,\ |\text{path}| \le d_{\max}\}` (anchors
included) and hop distances: the path engine's one reachability implementation.

:meth:`Reachability.reachable` chooses the method in one place:

- unlimited depth: the condensation of the graph into strongly connected components, built
  once; every anchor in one component shares one reachable set, computed once per component
  and memoised (what makes unlimited-depth path-constrained retrieval cheap on large graphs);
- a depth limit: frontier expansion over a CSR adjacency, touching only the edges leaving
  the frontier (cheap for small ``d_max``).

:meth:`Reachability.distances` gives the hop distances themselves, by breadth-first search
on the same CSR adjacency (scipy); unreached nodes are
:data:`~grounding.semiring.UNREACHABLE`. They agree with the batched JAX search of
:func:`grounding.semiring.hop_distances` (Boolean semiring) and with NetworkX (tested).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from jax.typing import ArrayLike
from scipy.sparse import csgraph

from grounding.semiring.recursion import UNREACHABLE

__all__ = ["Reachability"]


class Reachability:
    """Reachable sets and hop distances of one directed graph (built lazily, memoised).

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
        if max_hops is not None and (
            isinstance(max_hops, bool)
            or not isinstance(max_hops, (int, np.integer))
            or max_hops < 0
        ):
            raise ValueError(f"max_hops must be a non-negative integer or None, got {max_hops!r}")

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
        returned array is the memoised, read-only set shared by its component."""
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
        or when not reached): breadth-first search on the memoised CSR (scipy), equal to
        :func:`grounding.semiring.hop_distances` without rebuilding a layout per call."""
        a = self._anchors(anchors)
        self._check_depth(max_hops)
        if len(self.head) == 0 or max_hops == 0 or not len(a):  # only the anchors
            out = np.full((len(a), self.n_nodes), UNREACHABLE, np.int64)
            out[np.arange(len(a)), a] = 0
            return out
        d = csgraph.shortest_path(self._csr_float, directed=True, unweighted=True, indices=a)
        d = d.reshape(len(a), self.n_nodes)
        limit = np.inf if max_hops is None else max_hops
        return np.where(np.isfinite(d) & (d <= limit), d, UNREACHABLE).astype(np.int64)
