r"""Trajectory distances: the product distance (2) and the grid alignment costs (3).

Eq. (2) compares equal-length semantic trajectories step by step. Eq. (3) compares
variable-length ones through a declared family of admissible alignments ``A``:

.. math::  d_A(\rho, \rho') = \inf_{A} \sum_{(i,j) \in A} c(z_i, z'_j) + \mathrm{gap}(A).

Every alignment cost here is a min-plus (or min-max) dynamic programme over the grid of
a ground-cost matrix ``cost[i, j] = c(z_i, z'_j)``, run as one ``lax.scan`` over
anti-diagonals, so it is ``jit``/``vmap``/``grad``-able with static shapes. Since
``D[i, j]`` depends only on ``cost[:i+1, :j+1]``, inputs are zero-padded to a bucket
(the next power of two, at least 8) and ``D[n-1, m-1]`` is read out: sequences of
different lengths share one compiled kernel.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import is_concrete
from grounding._numerics import logsumexp, safe_norm
from grounding._shapes import bucket
from grounding.alignment._common import check_array, check_param, pad_to

# Kernels are jitted by assignment (``f = jax.jit(f, ...)``) rather than by decorator, so that
# mutation testing (scripts/mutation.sh; mutmut skips decorated functions) reaches their bodies.

__all__ = [
    "pairwise_cost",
    "product_distance",
    "dtw",
    "soft_dtw",
    "edit_distance",
    "discrete_frechet",
]

_METRICS = ("euclidean", "sqeuclidean")


# -------------------------------------------------------------- ground costs, Eq. (2)
def pairwise_cost(x: ArrayLike, y: ArrayLike, metric: str = "euclidean") -> jax.Array:
    r"""Ground-cost matrix ``cost[i, j] = c(x_i, y_j)``: the ``c`` of Eq. (3) of the paper.

    ``"euclidean"``: :math:`\|x_i - y_j\|_2` (zero, not ``nan``, gradient at ``x_i = y_j``);
    ``"sqeuclidean"``: :math:`\|x_i - y_j\|_2^2` (not a metric).

    Args:
        x: ``[n, d]`` points; y: ``[m, d]`` points; metric: ``"euclidean"`` or ``"sqeuclidean"``.

    Returns:
        ``[n, m]`` array.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (3) (the ground cost).

    Example:
        >>> pairwise_cost([[0.0, 0.0]], [[3.0, 4.0], [0.0, 1.0]]).tolist()
        [[5.0, 1.0]]
    """
    x, y = check_array(x, "x", 2, allow_empty=True), check_array(y, "y", 2, allow_empty=True)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y must share the point dimension, got {x.shape} and {y.shape}")
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {_METRICS}, got {metric!r}")
    return _pairwise(x, y, metric)


def _pairwise(x: jax.Array, y: jax.Array, metric: str) -> jax.Array:
    diff = x[:, None, :] - y[None, :, :]
    if metric == "sqeuclidean":
        return jnp.sum(diff * diff, axis=-1)
    return safe_norm(diff, axis=-1)  # Eq. (3): c(z_i, z'_j)


_pairwise = jax.jit(_pairwise, static_argnames="metric")


def product_distance(x: ArrayLike, y: ArrayLike, weights: ArrayLike | None = None) -> jax.Array:
    r"""Product distance of equal-length trajectories, Eq. (2) of the paper.

    .. math::  d_{prod}(X, Y) = \Big(\sum_{t=0}^{T} a_t\, \|x_t - y_t\|_2^2\Big)^{1/2},
               \quad a_t > 0,

    with the Euclidean ground metric ``d_M``. A metric on ``[T, d]`` arrays.

    Args:
        x, y: ``[T, d]`` semantic trajectories of the same length.
        weights: ``[T]`` positive step weights ``a_t`` (default all ones).

    Returns:
        Scalar distance (zero, finite gradient at ``x = y``).

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (2).

    Example:
        >>> float(product_distance([[0.0], [0.0]], [[3.0], [2.0]], weights=[1.0, 4.0]))
        5.0
    """
    x, y = check_array(x, "x", 2), check_array(y, "y", 2)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have equal lengths and dims, got {x.shape} and {y.shape}")
    t, d = x.shape
    w = jnp.asarray(np.ones(t, x.dtype)) if weights is None else check_array(weights, "weights", 1)
    if w.shape != (t,):
        raise ValueError(f"weights must have shape ({t},), got {w.shape}")
    if is_concrete(w) and not (np.asarray(w) > 0).all():
        raise ValueError("weights must be > 0 (a_t > 0 in Eq. (2))")
    rows, cols = (0, bucket(t) - t), (0, bucket(d) - d)  # zero padding adds zero terms
    return _product(pad_to(x, [rows, cols]), pad_to(y, [rows, cols]), pad_to(w, [rows]))


def _product(x: jax.Array, y: jax.Array, w: jax.Array) -> jax.Array:
    scaled = jnp.sqrt(w).astype(x.dtype)[:, None] * (x - y)
    return safe_norm(scaled.reshape(-1), axis=-1)  # Eq. (2)


_product = jax.jit(_product)


# ------------------------------------------------------------ alignment costs, Eq. (3)
def _grid_dp(cost: jax.Array, step: Callable, param: jax.Array, lead: int = 0) -> jax.Array:
    """``D[n-1, m-1]`` of ``D[i,j] = step(D[i-1,j], D[i,j-1], D[i-1,j-1], cost[i,j], param)``.

    ``D[0, 0] = cost[0, 0]``, cells outside the grid are ``+inf``; ``lead`` zero
    rows/columns are prepended (the empty prefix of the edit distance).
    """
    n, m = cost.shape[0] + lead, cost.shape[1] + lead
    widths = [(lead, bucket(n) - n), (lead, bucket(m) - m)]
    return _grid_dp_kernel(pad_to(cost, widths), step, param, n + m - 2, n - 1)


def _grid_dp_kernel(cost, step, param, k_end, i_end) -> jax.Array:
    n, m = cost.shape
    rows = jnp.arange(n)
    fill = jnp.full((n,), jnp.inf, cost.dtype)
    first = fill.at[0].set(cost[0, 0])

    def shift(v):  # shift(v)[i] = v[i - 1]
        return jnp.concatenate([fill[:1], v[:-1]])

    def body(carry, k):  # anti-diagonal k = i + j, carry = diagonals k-2 and k-1 by row i
        prev2, prev1 = carry
        cols = k - rows
        valid = (cols >= 0) & (cols < m)
        c = jnp.where(valid, cost[rows, jnp.clip(cols, 0, m - 1)], 0.0)
        new = jnp.where(valid, step(shift(prev1), prev1, shift(prev2), c, param), jnp.inf)
        return (prev1, new), new

    _, diags = jax.lax.scan(body, (fill, first), jnp.arange(1, n + m - 1))
    return jnp.concatenate([first[None], diags])[k_end, i_end]


_grid_dp_kernel = jax.jit(_grid_dp_kernel, static_argnames="step")


def _min3(a, b, c):
    return jnp.minimum(jnp.minimum(a, b), c)


# One cell of each recursion: (up, left, diagonal) predecessors, cost c, parameter p.
def _dtw_step(u, l, d, c, p):
    return c + _min3(u, l, d)  # Eq. (3)


def _soft_dtw_step(u, l, d, c, gamma):  # double where: finite gradients in gamma at +inf
    prev = jnp.stack([u, l, d])
    ok = jnp.isfinite(prev)
    lse = logsumexp(jnp.where(ok, -jnp.where(ok, prev, 0.0) / gamma, -jnp.inf), axis=0)
    ok = jnp.isfinite(lse)
    return jnp.where(ok, c - gamma * jnp.where(ok, lse, 0.0), jnp.inf)  # Eq. (3)


def _edit_step(u, l, d, c, gap):
    return _min3(d + c, u + gap, l + gap)  # Eq. (3): match, delete, insert


def _frechet_step(u, l, d, c, p):
    return jnp.maximum(c, _min3(u, l, d))  # Eq. (3), bottleneck


def dtw(cost: ArrayLike) -> jax.Array:
    r"""Dynamic time warping: Eq. (3) of the paper over monotone continuous couplings, no gap.

    .. math::  \mathrm{DTW} = \min_{A} \sum_{(i,j) \in A} c_{ij},

    ``A`` a path from ``(0, 0)`` to ``(n-1, m-1)`` with steps ``(1,0), (0,1), (1,1)``;
    recursion ``D_{ij} = c_{ij} + \min(D_{i-1,j}, D_{i,j-1}, D_{i-1,j-1})``.
    Not a metric: ``x=[0], y=[1], z=[1, 2]`` give ``DTW(x,z) = 3 > 1 + 1``.

    Args:
        cost: ``[n, m]`` ground costs, ``n, m >= 1``.

    Returns:
        Scalar alignment cost.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (3).
        - Sakoe & Chiba, "Dynamic Programming Algorithm Optimization for Spoken Word Recognition",
          1978.

    Example:
        >>> float(dtw([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0]]))
        1.0
    """
    cost = check_array(cost, "cost", 2)
    return _grid_dp(cost, _dtw_step, jnp.zeros((), cost.dtype))  # Eq. (3)


def soft_dtw(cost: ArrayLike, gamma: ArrayLike = 0.1) -> jax.Array:
    r"""Soft-DTW (Cuturi & Blondel 2017): DTW with ``min`` replaced by a soft minimum.

    .. math::  \mathrm{SDTW}_\gamma = -\gamma \log \sum_{A} e^{-\sum_{(i,j)\in A} c_{ij}/\gamma}

    over the paths of :func:`dtw`, so :math:`\mathrm{DTW} - \gamma \log N \le
    \mathrm{SDTW}_\gamma \le \mathrm{DTW}` with ``N`` the number of paths and
    ``gamma -> 0`` recovers DTW. Smooth in ``cost``. Eq. (3) of the paper, smoothed.

    Args:
        cost: ``[n, m]`` ground costs; gamma: smoothing ``> 0``.

    Returns:
        Scalar smoothed alignment cost.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (3).
        - Cuturi & Blondel, "Soft-DTW: a Differentiable Loss Function for Time-Series", 2017.

    Example:
        >>> round(float(soft_dtw([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0]], gamma=1e-3)), 6)
        1.0
    """
    cost, gamma = check_array(cost, "cost", 2), check_param(gamma, "gamma", strict=True)
    return _grid_dp(cost, _soft_dtw_step, gamma.astype(cost.dtype))  # Eq. (3)


def edit_distance(cost: ArrayLike, gap: ArrayLike = 1.0) -> jax.Array:
    r"""Weighted edit (Needleman–Wunsch) distance: Eq. (3) of the paper with a linear gap.

    .. math::  \min_{A} \sum_{(i,j) \in A} c_{ij} + \mathrm{gap}\,(n + m - 2|A|),

    ``A`` a strictly increasing partial matching (substitutions); each unmatched element
    is an insertion or deletion. A metric when ``c`` is one and ``gap > 0``. Empty
    sequences are allowed (``cost`` of shape ``[0, m]`` gives ``gap * m``).

    Args:
        cost: ``[n, m]`` substitution costs; gap: insertion/deletion cost ``>= 0``.

    Returns:
        Scalar edit cost.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (3).
        - Needleman & Wunsch, "A General Method Applicable to the Search for Similarities in the
          Amino Acid Sequence of Two Proteins", 1970.

    Example:
        >>> float(edit_distance([[0.0, 5.0], [5.0, 5.0]], gap=1.0))
        2.0
    """
    cost = check_array(cost, "cost", 2, allow_empty=True)
    gap = check_param(gap, "gap", strict=False)
    # D[0, 0] = 0 on the prepended empty-prefix row/column.
    return _grid_dp(cost, _edit_step, gap.astype(cost.dtype), lead=1)  # Eq. (3)


def discrete_frechet(cost: ArrayLike) -> jax.Array:
    r"""Discrete Fréchet distance (Eiter & Mannila 1994): bottleneck form of Eq. (3).

    .. math::  \min_{A} \max_{(i,j) \in A} c_{ij}

    over the couplings of :func:`dtw`; recursion
    ``F_{ij} = \max(c_{ij}, \min(F_{i-1,j}, F_{i,j-1}, F_{i-1,j-1}))``. A pseudometric
    for a metric ``c`` (zero between ``x`` and ``x`` with an element repeated).
    Eq. (3) of the paper.

    Args:
        cost: ``[n, m]`` ground costs.

    Returns:
        Scalar bottleneck cost.

    References:
        - Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (3).
        - Eiter & Mannila, "Computing Discrete Fréchet Distance", 1994.

    Example:
        >>> float(discrete_frechet([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0]]))
        1.0
    """
    cost = check_array(cost, "cost", 2)
    return _grid_dp(cost, _frechet_step, jnp.zeros((), cost.dtype))  # Eq. (3)
