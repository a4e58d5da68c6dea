r"""The prebuilt layout of a graph (:class:`EdgeIndex`): built once per graph, reused by every
energy field, edge usage and hop distance on it, with one of two backends for the hop:

- ``"fused"`` (the default on CPU when numba is installed): compressed in- and out-edge rows
  and the fused kernel of :mod:`grounding.semiring.fused`;
- ``"ell"`` (the default on GPU/TPU, and the reference): incoming edges grouped by in-degree
  into a few dense blocks (widths ``1, 2, 3, 4, 6, ..., 32``; hubs are split into rows of 32
  whose partial sums are combined at a second level), so that a hop is a sequence of XLA row
  gathers and dense reductions with no scatter.

Both give the same values (tested against each other and the segment layout).
:func:`as_graph` picks this layout for large concrete edge arrays and
:class:`~grounding.semiring.kernels.SegmentEdges` otherwise.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import check_edges, is_concrete
from grounding.semiring import fused
from grounding.semiring.kernels import SegmentEdges, reduce_rows
from grounding.semiring.recursion import bfs, edge_usage, fields

__all__ = ["EdgeIndex", "as_graph", "default_backend"]

BACKENDS = ("fused", "ell")

_WIDTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)  # ELL row widths: padding below 1/3
_MAX_WIDTH = _WIDTHS[-1]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class EdgeIndex:
    """Edge layout of a directed multigraph for the semiring recursion (a pytree).

    Built once from concrete edge arrays with :meth:`from_edges`; reusable for any edge
    costs, priors and sources on the same graph, and passable through ``jit`` as an
    argument. Node ids and edge order are the caller's under either backend.

    ELL backend: rows of a value pool ``[1 + n_nodes + n_partial, S]`` are gathered: row
    ``0`` is the semiring zero (``-inf``), rows ``1..n_nodes`` are the previous hop's values,
    the rest are partial reductions of hub nodes.

    Attributes:
        head, tail: ``[n_edges]`` int32 edge endpoints.
        srcs: ELL: per level, per block: ``[rows, width]`` pool rows to reduce (``0`` pads).
        slots: ELL: per level-0 block: ``[rows, width]`` edge ids whose weight is added.
        final_row: ELL: ``[n_nodes]`` pool row holding each node's reduction (``0``: no
            in-edge).
        csr: fused: in- and out-edge rows (:class:`~grounding.semiring.fused.CSR`).
        n_nodes: number of nodes (static).
        backend: ``"fused"`` or ``"ell"`` (static).
    """

    head: jax.Array
    tail: jax.Array
    srcs: tuple[tuple[jax.Array, ...], ...]
    slots: tuple[jax.Array, ...]
    final_row: jax.Array | None
    csr: fused.CSR | None
    n_nodes: int = dataclasses.field(metadata=dict(static=True))
    backend: str = dataclasses.field(default="ell", metadata=dict(static=True))

    @property
    def n_edges(self) -> int:
        return int(self.head.shape[0])

    @classmethod
    def from_edges(
        cls, head: ArrayLike, tail: ArrayLike, n_nodes: int, *, backend: str | None = None
    ) -> EdgeIndex:
        """Build the layout (NumPy, ``O(|E| log |E|)``) from concrete edge arrays.

        Args:
            backend: ``"fused"``, ``"ell"`` or ``None`` for :func:`default_backend`.
        """
        backend = default_backend() if backend is None else backend
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if backend == "fused" and not fused.AVAILABLE:
            raise ValueError("backend='fused' needs numba (pip install numba)")
        h, t = check_edges(head, tail, n_nodes)
        h, t = np.asarray(h, np.int64), np.asarray(t, np.int64)
        ends = dict(head=jnp.asarray(h, jnp.int32), tail=jnp.asarray(t, jnp.int32))
        if backend == "fused":
            csr = fused.CSR.from_edges(h, t, int(n_nodes))
            return cls(**ends, srcs=(), slots=(), final_row=None, csr=csr,
                       n_nodes=int(n_nodes), backend=backend)  # fmt: skip
        srcs: list[tuple[jax.Array, ...]] = []
        slots: list[jax.Array] = []
        final_row = np.zeros(n_nodes, np.int64)
        item_src, item_dest, item_slot = h + 1, t, np.arange(len(h))
        pool = 1 + n_nodes
        while len(item_src):
            order = np.argsort(item_dest, kind="stable")
            deg = np.bincount(item_dest, minlength=n_nodes)
            first = np.concatenate([[0], np.cumsum(deg)[:-1]])
            # rows: each node with in-degree <= 32 is one row; hubs are cut into rows of 32
            n_rows = -(-deg // _MAX_WIDTH)
            row_node = np.repeat(np.arange(n_nodes), n_rows)
            within = np.arange(len(row_node)) - np.repeat(np.cumsum(n_rows) - n_rows, n_rows)
            row_lo = first[row_node] + _MAX_WIDTH * within
            row_len = np.minimum(deg[row_node] - _MAX_WIDTH * within, _MAX_WIDTH)
            row_width = np.asarray(_WIDTHS)[np.searchsorted(_WIDTHS, row_len)]
            level_srcs, level_slots, row_pos = [], [], np.empty(len(row_node), np.int64)
            for width in _WIDTHS:
                rows = np.flatnonzero(row_width == width)
                if not len(rows):
                    continue
                j = np.arange(width)[None, :]
                valid = j < row_len[rows, None]
                item = order[np.minimum(row_lo[rows, None] + j, len(order) - 1)]
                level_srcs.append(jnp.asarray(np.where(valid, item_src[item], 0), jnp.int32))
                level_slots.append(jnp.asarray(np.where(valid, item_slot[item], 0), jnp.int32))
                row_pos[rows] = pool + np.arange(len(rows))
                pool += len(rows)
            srcs.append(tuple(level_srcs))
            if not slots:
                slots = level_slots
            single = n_rows[row_node] == 1
            final_row[row_node[single]] = row_pos[single]
            # partial rows of hubs become the items of the next level (weight 0)
            item_src, item_dest = row_pos[~single], row_node[~single]
            item_slot = np.zeros(len(item_src), np.int64)
        return cls(
            **ends,
            srcs=tuple(srcs),
            slots=tuple(slots),
            final_row=jnp.asarray(final_row, jnp.int32),
            csr=None,
            n_nodes=int(n_nodes),
            backend=backend,
        )

    def hop(self, a: jax.Array, logw: jax.Array, tropical: bool) -> jax.Array:
        """One hop ``[n_nodes, S] -> [n_nodes, S]`` (``logw``: ``[E]`` or ``[E, S]``)."""
        if self.backend == "fused":
            if a.dtype in fused.DTYPES:
                return fused.hop(self.csr, self.head, self.tail, a, logw, tropical)
            # the kernel is compiled for float32 and float64; others take the XLA segment hop
            return SegmentEdges(self.head, self.tail, self.n_nodes).hop(a, logw, tropical)
        pool = jnp.concatenate([jnp.full((1, a.shape[1]), -jnp.inf, a.dtype), a])
        w = logw if logw.ndim == 2 else logw[:, None]  # [E, S] or [E, 1]
        for level, blocks in enumerate(self.srcs):
            outs = []
            for b, srcs in enumerate(blocks):
                weight = None if level else (lambda j, slot=self.slots[b]: w[slot[:, j]])
                outs.append(reduce_rows(pool, srcs, weight, tropical))
            pool = jnp.concatenate([pool, *outs])
        # materialize the hop once for its consumers (next hop's gathers, the accumulator)
        return jax.lax.optimization_barrier(pool[self.final_row])

    def recursion(
        self,
        a0: jax.Array,
        logw: jax.Array,
        n_hops: int,
        tropical: bool,
        keep_hops: bool,
        sources: jax.Array | None = None,
    ):
        """The ``n_hops`` recursion in one host call (fused backend, float32/float64 values;
        else ``None``), its sum sources-first: see :func:`grounding.semiring.fused.recursion`
        (``sources``: ``a0`` is their one-hot, built on the host)."""
        if self.backend != "fused" or a0.dtype not in fused.DTYPES:
            return None
        return fused.recursion(self.csr, self.head, self.tail, a0, logw, n_hops, tropical,
                               keep_hops, sources)  # fmt: skip

    # the array-level API on this prebuilt index (no rebuild)
    def energy_field(
        self,
        edge_cost: ArrayLike,
        sources: ArrayLike,
        *,
        max_hops: int | None,
        tau: ArrayLike,
        log_step_prior: ArrayLike | None = None,
        mesh: jax.sharding.Mesh | None = None,
    ):
        """:func:`grounding.semiring.energy_field` on this index."""
        return fields(self, edge_cost, sources, max_hops, tau, log_step_prior, mesh, False)

    def hop_energy_fields(
        self,
        edge_cost: ArrayLike,
        sources: ArrayLike,
        *,
        max_hops: int,
        tau: ArrayLike,
        log_step_prior: ArrayLike | None = None,
        mesh: jax.sharding.Mesh | None = None,
    ):
        """:func:`grounding.semiring.hop_energy_fields` on this index."""
        return fields(self, edge_cost, sources, max_hops, tau, log_step_prior, mesh, True)

    def edge_usage(
        self,
        edge_cost: ArrayLike,
        sources: ArrayLike,
        targets: ArrayLike,
        *,
        max_hops: int,
        tau: ArrayLike,
        log_step_prior: ArrayLike | None = None,
    ):
        """:func:`grounding.semiring.edge_usage` on this index."""
        return edge_usage(self, edge_cost, sources, targets, max_hops, tau, log_step_prior)

    def hop_distances(self, anchors: ArrayLike, *, max_hops: int | None = None):
        """:func:`grounding.semiring.hop_distances` on this index."""
        return bfs(self, anchors, max_hops)


ELL_MIN_EDGES = 65_536
"""Edge count from which :func:`as_graph` builds an :class:`EdgeIndex` by itself. Below it the
segment recursion is as fast and compiles in a fraction of the time (the ELL hop unrolls one
gather per column: ~3 s to compile at 1,000 edges, ~6 s at 1M; the segment hop ~0.3 s). An
explicit index is always used as given."""


def default_backend() -> str:
    """``"fused"`` when JAX computes on the CPU and numba is installed, else ``"ell"``."""
    return "fused" if fused.AVAILABLE and jax.default_backend() == "cpu" else "ell"


def as_graph(head: ArrayLike, tail: ArrayLike, n_nodes: int) -> EdgeIndex | SegmentEdges:
    """The graph layout for the recursion: an :class:`EdgeIndex` for large concrete edge
    arrays, :class:`~grounding.semiring.kernels.SegmentEdges` for small or traced ones."""
    h, t = check_edges(head, tail, n_nodes)
    if is_concrete(h, t) and h.shape[0] >= ELL_MIN_EDGES:
        return EdgeIndex.from_edges(h, t, n_nodes)
    return SegmentEdges(h, t, int(n_nodes))
