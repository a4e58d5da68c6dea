r"""One hop of the semiring recursion: row reductions and the segment-reduction layout.

A hop maps node values ``a`` (``[n_nodes, S]``, node-major) to
``out[v] = (+)_{e = (u -> v)} a[u] (x) w(e)`` with ``(+, x)`` = ``(logsumexp, +)`` (log
semiring) or ``(max, +)`` (tropical). A graph layout is any object with ``n_edges`` and a
``hop(a, logw, tropical)`` method: :class:`SegmentEdges` here (segment reductions; works with
traced edge arrays) or :class:`grounding.semiring.layout.EdgeIndex` (dense ELL blocks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Protocol

import jax
import jax.numpy as jnp

__all__ = ["SegmentEdges"]


class GraphLayout(Protocol):
    """A graph layout as the recursion reads it (see the module docstring): :class:`SegmentEdges`
    or :class:`grounding.semiring.layout.EdgeIndex`. A type for annotations only."""

    @property
    def n_nodes(self) -> int: ...

    @property
    def n_edges(self) -> int: ...

    def hop(self, a: jax.Array, logw: jax.Array, tropical: bool) -> jax.Array: ...


def reduce_rows(pool: jax.Array, srcs: jax.Array, weight: Callable | None, tropical: bool):
    """``out[r] = (+)_j pool[srcs[r, j]] (x) weight(r, j)`` with ``(+)`` logsumexp or max.

    Columns are gathered one at a time: XLA's CPU gather of ``[rows, S]`` row blocks is
    several times faster than one ``[rows, width, S]`` gather.
    """

    def column(j):
        x = pool[srcs[:, j]]
        return x if weight is None else x + weight(j)

    width = srcs.shape[1]
    m = column(0)
    for j in range(1, width):
        m = jnp.maximum(m, column(j))
    if tropical:
        return m
    m = shift(m)
    s = jnp.exp(column(0) - m)
    for j in range(1, width):
        s = s + jnp.exp(column(j) - m)
    return log_shifted_sum(s, m)


def shift(m: jax.Array) -> jax.Array:
    """The max shift of a log-sum-exp: ``0`` on empty (all ``-inf``) rows, no gradient."""
    return jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0.0))


def log_shifted_sum(s: jax.Array, m: jax.Array) -> jax.Array:
    """``log(s) + m`` with ``-inf`` (and a zero gradient) where ``s == 0``."""
    positive = s > 0
    return jnp.where(positive, jnp.log(jnp.where(positive, s, 1.0)) + m, -jnp.inf)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SegmentEdges:
    """Edge list layout for the hop by segment reductions (a pytree; edges may be traced).

    Attributes:
        head, tail: ``[n_edges]`` int edge endpoints.
        n_nodes: number of nodes (static).
    """

    head: jax.Array
    tail: jax.Array
    n_nodes: int = dataclasses.field(metadata=dict(static=True))

    @property
    def n_edges(self) -> int:
        return int(self.head.shape[0])

    def hop(self, a: jax.Array, logw: jax.Array, tropical: bool) -> jax.Array:
        """One hop ``[n_nodes, S] -> [n_nodes, S]``; ``logw`` is ``[E]`` or ``[E, S]``."""
        x = a[self.head] + (logw if logw.ndim == 2 else logw[:, None])
        m = jax.ops.segment_max(x, self.tail, self.n_nodes)
        if tropical:
            return m
        m = shift(m)
        s = jax.ops.segment_sum(jnp.exp(x - m[self.tail]), self.tail, self.n_nodes)
        return log_shifted_sum(s, m)
