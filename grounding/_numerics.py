"""The one home for numerics: masked log-sum-exp, ``0 log 0 = 0``, ``+inf`` energies.

Every function here keeps values *and gradients* finite on the edge cases the paper
needs: slices that are entirely ``-inf`` (no admissible path, zero prior mass),
``+inf`` energies multiplied by a grounding strength, ``lambda`` from ``1e-6`` to
``1e6``. The trick used throughout is the "double ``where``": the unsafe operand is
replaced by a harmless value *before* the unsafe operation, so that the discarded
branch cannot inject ``nan`` into reverse-mode gradients.

Also the package's one top-``k`` of host scores (:func:`top_k`, ties: the lower index first),
shared by the retrievers and the answerers.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

__all__ = [
    "logsumexp",
    "logaddexp",
    "scaled_energy",
    "neg_scaled",
    "temperature_floor",
    "safe_norm",
    "xlogy",
    "masked_log_normalize",
    "top_k",
]


def logsumexp(x: ArrayLike, axis: int | tuple[int, ...] | None = -1) -> jax.Array:
    r"""Stable :math:`\log\sum_i e^{x_i}` that is ``-inf`` (not ``nan``) on all ``-inf`` slices.

    The gradient is the softmax on slices with finite mass and exactly zero on slices
    whose entries are all ``-inf``.

    Example:
        >>> import jax.numpy as jnp
        >>> float(logsumexp(jnp.array([-jnp.inf, -jnp.inf])))
        -inf
    """
    x = jnp.asarray(x)
    m = jnp.max(x, axis=axis, keepdims=True)
    m = jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0.0))
    s = jnp.sum(jnp.exp(x - m), axis=axis, keepdims=True)
    positive = s > 0
    out = jnp.where(positive, jnp.log(jnp.where(positive, s, 1.0)) + m, -jnp.inf)
    return jnp.squeeze(out, axis=axis) if axis is not None else jnp.squeeze(out)


def logaddexp(x: ArrayLike, y: ArrayLike) -> jax.Array:
    r"""Elementwise :math:`\log(e^x + e^y)`, ``-inf`` (not ``nan``) where both are ``-inf``.

    Pairwise form of :func:`logsumexp` for running accumulations (XLA compiles it far
    better than a ``logsumexp`` over a stacked axis of length 2).

    Example:
        >>> import jax.numpy as jnp
        >>> [round(v, 6) for v in logaddexp(jnp.array([0.0, -jnp.inf]), jnp.array([0.0, -jnp.inf])).tolist()]
        [0.693147, -inf]
    """
    hi, lo = jnp.maximum(x, y), jnp.minimum(x, y)
    finite = hi > -jnp.inf
    hi_safe = jnp.where(finite, hi, 0.0)
    return jnp.where(finite, hi_safe + jnp.log1p(jnp.exp(lo - hi_safe)), -jnp.inf)


def scaled_energy(lam: ArrayLike, energy: ArrayLike) -> jax.Array:
    r""":math:`\lambda E` with the convention :math:`\lambda \cdot (+\infty) = +\infty` for all
    :math:`\lambda \ge 0` (an infinite energy is an infeasibility marker, Eq. (11)).

    Gradients with respect to both arguments are finite: zero at ``+inf`` entries.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (11) (an infinite energy marks infeasibility).
    """
    energy = jnp.asarray(energy)
    finite = jnp.isfinite(energy)
    safe = jnp.where(finite, energy, 0.0)
    return jnp.where(finite, lam * safe, jnp.inf)


def neg_scaled(cost: ArrayLike, scale: ArrayLike) -> jax.Array:
    r"""The log-weight :math:`-c/s` of a cost :math:`c \ge 0` at temperature :math:`s > 0`, with
    :math:`-(+\infty)/s = -\infty` (a missing edge or node has no weight).

    Gradients with respect to both arguments are finite: zero at ``+inf`` entries (a plain
    ``-c / s`` gives ``inf * 0 = nan`` for the gradient in ``s`` there).
    """
    cost = jnp.asarray(cost)
    finite = jnp.isfinite(cost)
    return jnp.where(finite, -jnp.where(finite, cost, 0.0) / scale, -jnp.inf)


def temperature_floor(dtype: jax.typing.DTypeLike) -> float:
    r"""The smallest path temperature at which the entropic energy (Eq. (13)) is evaluated in
    floating ``dtype``: :math:`\sqrt{\text{tiny}}`, the square root of the smallest normal
    number (``1.1e-19`` in float32, ``1.5e-154`` in float64).

    At or above it, ``tau`` and ``1 / tau`` are both normal numbers, so the log-weights
    :math:`-c/\tau` (:func:`neg_scaled`) neither lose ``tau`` to underflow (a subnormal
    ``tau`` reads as 0 on devices that flush subnormals, and ``c / 0`` is no weight at all)
    nor overflow below a cost of ``max * floor`` (``3.7e19`` in float32). Below it Eq. (13)
    equals its limit :math:`\tau \to 0^+`, the best walk's energy of Eq. (11), to within
    :math:`\tau \log W` (``W`` the number of walks): far below the rounding of the energies,
    so the solver evaluates Eq. (11) there.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (11) and (13).

    Example:
        >>> import jax.numpy as jnp
        >>> f"{temperature_floor(jnp.float32):.3g}", f"{temperature_floor(jnp.float64):.3g}"
        ('1.08e-19', '1.49e-154')
    """
    return math.sqrt(float(jnp.finfo(dtype).tiny))


def safe_norm(x: ArrayLike, axis: int = -1, ord: int | float = 2) -> jax.Array:
    """``p``-norm with a zero (sub)gradient at the origin instead of ``nan``; a NaN entry
    gives a NaN norm (never a silent 0).

    Only ``ord`` in ``{1, 2}`` is supported.
    """
    x = jnp.asarray(x)
    if ord == 1:
        return jnp.sum(jnp.abs(x), axis=axis)
    if ord != 2:
        raise ValueError(f"safe_norm supports ord in {{1, 2}}, got ord={ord!r}")
    sq = jnp.sum(x * x, axis=axis)
    zero = sq == 0  # NaN is not zero: it propagates
    return jnp.where(zero, 0.0, jnp.sqrt(jnp.where(zero, 1.0, sq)))


def xlogy(x: ArrayLike, log_y: ArrayLike) -> jax.Array:
    r""":math:`x \log y` given :math:`\log y`, with the convention ``0 * log 0 = 0``."""
    x = jnp.asarray(x)
    log_y = jnp.asarray(log_y)
    zero = x == 0
    return jnp.where(zero, 0.0, x * jnp.where(zero, 0.0, log_y))


def masked_log_normalize(log_w: ArrayLike, axis: int = -1) -> jax.Array:
    """Normalize log-weights along ``axis``; an all ``-inf`` slice stays all ``-inf``."""
    log_w = jnp.asarray(log_w)
    lse = jnp.expand_dims(logsumexp(log_w, axis=axis), axis)
    finite = jnp.isfinite(lse)
    return jnp.where(finite, log_w - jnp.where(finite, lse, 0.0), -jnp.inf)


#: Entries per block of :func:`top_k`'s first pass over a long score vector.
_BLOCK = 64


def top_k(scores: np.ndarray, k: int, among: np.ndarray | None = None):
    """Indices and scores of the ``k`` best entries (ties: lower index first).

    Example:
        >>> idx, s = top_k(np.array([0.1, 0.9, 0.9, 0.5]), 2)
        >>> idx.tolist(), s.tolist()
        ([1, 2], [0.9, 0.9])
    """
    if among is None and len(scores) >= _BLOCK * max(k, 1) and k > 0:
        # the k-th best of the blocks' maxima is a lower bound of the k-th best score (k
        # entries reach it): the entries at or above it hold the k best and their ties
        blocks = len(scores) // _BLOCK
        peaks = scores[: blocks * _BLOCK].reshape(blocks, _BLOCK).max(axis=1)
        if not np.isnan(peaks).any():  # (NaN sorts last: it would be counted as the best)
            among = np.flatnonzero(scores >= np.partition(peaks, blocks - k)[blocks - k])
    cand = np.arange(len(scores)) if among is None else among
    s = scores if among is None else scores[among]
    k = min(k, len(cand))
    if k < len(cand):  # keep every entry tied with the k-th best, then break ties by index
        part = np.flatnonzero(-s <= np.partition(-s, k - 1)[k - 1])
    else:
        part = np.arange(len(cand))
    order = part[np.lexsort((cand[part], -s[part]))][:k]
    return cand[order], s[order]
