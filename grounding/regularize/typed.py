r"""The typed residual regularizer (Eq. (24)), reversal residuals (Eq. (25)) and the fits of
Sec. 9.2 (typed vs untyped: the oversmoothing counterexample).

:math:`\Omega_R(H)` rewards ``h_v`` for matching the relation-conditioned prediction
:math:`T_r(h_u)`. A *relation map* is one of :mod:`grounding.geometry`'s maps
(:class:`~grounding.geometry.Translation`, ...) or any callable ``(r, x) -> T_r(x)`` that
broadcasts over leading axes. The geometry maps (pytrees of arrays) run inside one compiled
kernel per input shape; any other callable runs op by op. Out-of-range relation ids raise for
the built-ins on concrete input; under ``jit`` JAX clamps gathers silently.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import (
    as_float_array,
    check_arcs,
    check_features,
    check_index_array,
    check_int,
    is_concrete,
)
from grounding._numerics import safe_norm
from grounding.geometry import RelationMap, identity_map

__all__ = [
    "typed_residual_regularizer",
    "reversal_residual",
    "minimize",
    "fit_typed",
    "fit_untyped",
]


def _as_map(relation_map) -> Callable:
    fn = getattr(relation_map, "apply", relation_map)
    if not callable(fn):
        got = type(relation_map).__name__
        raise TypeError(f"relation_map must be callable (r, x) -> T_r(x), got {got}")
    return fn


_JIT: dict = {}


def _run(kernel, relation_map, *args, static: tuple[int, ...] = ()):
    """Call ``kernel(*args, relation_map)``: compiled when the map is a pytree of arrays."""
    _as_map(relation_map)
    leaves = jax.tree_util.tree_leaves(relation_map)
    arrays = all(isinstance(x, (jax.Array, np.ndarray)) for x in leaves)
    if not (hasattr(relation_map, "apply") and arrays):
        return kernel(*args, relation_map)
    if kernel not in _JIT:  # one jit wrapper per kernel, so its compilation cache is reused
        _JIT[kernel] = jax.jit(kernel, static_argnums=static)
    return _JIT[kernel](*args, relation_map)


def _n_rel(relation_map) -> int | None:
    return getattr(relation_map, "n_relations", None)


# ----------------------------------------------------------------------------- Eq. (24), (25)
def typed_residual_regularizer(
    H: ArrayLike,
    head: ArrayLike,
    relation: ArrayLike,
    tail: ArrayLike,
    weight: ArrayLike,
    relation_map: RelationMap | Callable[[jax.Array, jax.Array], jax.Array],
) -> jax.Array:
    r"""Typed residual regularizer (Eq. (24)):
    :math:`\Omega_R(H) = \tfrac12 \sum_{(u,r,v) \in \mathcal E_R} w_{urv} \|h_v - T_r(h_u)\|_2^2`.

    Every stored arc counts once: an undirected edge stored as both arcs gives
    :math:`\mathrm{Tr}(H^\top L H)` with :func:`identity_map` (Prop. 10); stored once, half.

    Args:
        H: ``[n, d]`` node representations.
        head, relation, tail: ``[m]`` integer arcs ``(u, r, v)``.
        weight: ``[m]`` non-negative weights :math:`w_{urv}`.
        relation_map: a :mod:`grounding.geometry` map or ``(r, x) -> T_r(x)`` (module docstring).

    Returns:
        Scalar :math:`\Omega_R(H) \ge 0`, zero iff every positive-weight arc is consistent.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (24), Prop. 10.

    Example:
        >>> from grounding.geometry import translation_map
        >>> T = translation_map([[1.0]])
        >>> float(typed_residual_regularizer([[0.0], [1.0]], [0], [0], [1], [2.0], T))
        0.0
    """
    H = check_features(H)
    args = check_arcs(H.shape[0], head, tail, weight, relation, _n_rel(relation_map))
    return _run(_typed_energy, relation_map, H, *args)


def _typed_energy(H, head, tail, weight, relation, relation_map):
    res = H[tail] - _as_map(relation_map)(relation, H[head])
    return 0.5 * jnp.sum(weight * jnp.sum(res**2, axis=-1))  # Eq. (24)


def reversal_residual(
    H: ArrayLike,
    u: ArrayLike,
    v: ArrayLike,
    r: ArrayLike,
    relation_map: RelationMap | Callable[[jax.Array, jax.Array], jax.Array],
) -> jax.Array:
    r"""Reversal residual (Eq. (25)): relation ``r`` reused backwards on ``u -r-> v``,
    :math:`\|h_u - T_r(h_v)\|_2`.

    On a consistent edge (:math:`h_v = T_r(h_u)`) this is :math:`\|h_u - T_r(T_r(h_u))\|`:
    ``2 ||t_r||`` for a translation; zero for identity and involutive maps (the exceptions
    stated in Sec. 9.3).

    Args:
        H: ``[n, d]`` node representations.
        u, v, r: integer scalars or equal-shape arrays (one entry per edge).
        relation_map: ``(r, x) -> T_r(x)``.

    Returns:
        Residual(s) with the shape of ``u``; zero (sub)gradient at a zero residual.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Eq. (25).

    Example:
        >>> from grounding.geometry import translation_map
        >>> T = translation_map([[3.0, 4.0]])
        >>> float(reversal_residual([[0.0, 0.0], [3.0, 4.0]], 0, 1, 0, T))
        10.0
    """
    H = check_features(H)
    u, v = check_index_array(u, "u", H.shape[0]), check_index_array(v, "v", H.shape[0])
    return _run(_reversal, relation_map, H, u, v, check_index_array(r, "r", _n_rel(relation_map)))


def _reversal(H, u, v, r, relation_map):
    return safe_norm(H[u] - _as_map(relation_map)(r, H[v]), axis=-1)  # Eq. (25)


# ----------------------------------------------------------------------------- Sec. 9.2 fitting
def minimize(
    fun: Callable[[jax.Array], jax.Array],
    x0: ArrayLike,
    steps: int = 1000,
    lr: float = 0.1,
    mask: ArrayLike | None = None,
) -> jax.Array:
    r"""Plain gradient descent :math:`x \leftarrow x - \eta \, m \odot \nabla f(x)`.

    Converges for a convex quadratic when ``lr < 2 / lambda_max(Hessian)``; no line search.

    Args:
        fun: scalar objective.
        x0: start point.
        steps: number of iterations (static).
        lr: step size :math:`\eta > 0`.
        mask: broadcast to ``x0``; 0 freezes an entry (a hard anchor).

    Returns:
        The iterate after ``steps`` steps.

    Example:
        >>> round(float(minimize(lambda x: (x - 3.0) ** 2, 0.0, steps=200)), 6)
        3.0
    """
    _check_descent(steps, lr)
    x0 = as_float_array(x0, "x0")
    m = jnp.ones_like(x0)
    if mask is not None:
        m = jnp.broadcast_to(jnp.asarray(mask, x0.dtype), x0.shape)
    return _descend(fun, x0, m, int(steps), lr)


def _check_descent(steps, lr) -> None:
    check_int(steps, "steps", 0)
    if not np.isscalar(lr) or not float(lr) > 0:
        raise ValueError(f"lr must be a positive number, got {lr!r}")


def _descend(fun, x0, m, steps, lr):
    g = jax.grad(fun)
    return jax.lax.fori_loop(0, steps, lambda _, x: x - lr * m * g(x), x0)


def _fit(H0, mask, head, tail, weight, relation, steps, lr, relation_map):
    fun = partial(
        _typed_energy,
        head=head,
        tail=tail,
        weight=weight,
        relation=relation,
        relation_map=relation_map,
    )
    return _descend(fun, H0, mask, steps, lr)


def fit_typed(
    H0: ArrayLike,
    head: ArrayLike,
    relation: ArrayLike,
    tail: ArrayLike,
    weight: ArrayLike,
    relation_map: RelationMap | Callable[[jax.Array, jax.Array], jax.Array],
    fixed: ArrayLike | None = None,
    steps: int = 1000,
    lr: float = 0.1,
) -> jax.Array:
    r"""Minimize :math:`\Omega_R(H)` (Eq. (24)) from ``H0`` by gradient descent (:func:`minimize`).

    On AUTHOR -WRITES-> PAPER with a translation map the minimizer keeps the roles apart:
    :math:`h_p = h_a + r_{\mathrm{WRITES}}` (Sec. 9.2).

    Args:
        H0: ``[n, d]`` start point.
        head, relation, tail, weight, relation_map: as in :func:`typed_residual_regularizer`.
        fixed: optional ``[n]`` booleans; those rows stay at ``H0`` (anchors).
        steps, lr: as in :func:`minimize`.

    Returns:
        ``[n, d]`` fitted representations.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (24), Sec. 9.2.

    Example:
        >>> from grounding.geometry import translation_map
        >>> T = translation_map([[2.0]])
        >>> H = fit_typed([[0.0], [5.0]], [0], [0], [1], [1.0], T, fixed=[True, False])
        >>> round(float(H[1, 0]), 4)
        2.0
    """
    H0 = check_features(H0, "H0")
    args = check_arcs(H0.shape[0], head, tail, weight, relation, _n_rel(relation_map))
    _check_descent(steps, lr)
    fixed = np.zeros(H0.shape[0], bool) if fixed is None else fixed
    if np.shape(fixed) != (H0.shape[0],):
        raise ValueError(f"fixed must have shape ({H0.shape[0]},), got {np.shape(fixed)}")
    xp = np if is_concrete(fixed) else jnp
    mask = xp.where(xp.asarray(fixed).astype(bool), 0.0, 1.0).astype(H0.dtype)[:, None]
    return _run(_fit, relation_map, H0, mask, *args, int(steps), lr, static=(6,))


def fit_untyped(
    H0: ArrayLike,
    head: ArrayLike,
    tail: ArrayLike,
    weight: ArrayLike,
    fixed: ArrayLike | None = None,
    steps: int = 1000,
    lr: float = 0.1,
) -> jax.Array:
    r"""Minimize the untyped energy :math:`\tfrac12 \sum w \|h_v - h_u\|^2` (Sec. 9.2).

    This is Eq. (24) with :func:`identity_map`. On AUTHOR -WRITES-> PAPER the minimizer
    collapses :math:`h_p = h_a` (at the midpoint when free, onto :math:`h_a` when the
    author is fixed): the oversmoothing failure.

    Args:
        H0, head, tail, weight, fixed, steps, lr: as in :func:`fit_typed`.

    Returns:
        ``[n, d]`` fitted representations.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eq. (24) with T_r = I, Sec. 9.2.

    Example:
        >>> H = fit_untyped([[0.0], [4.0]], [0], [1], [1.0])
        >>> [round(float(x), 4) for x in H[:, 0]]
        [2.0, 2.0]
    """
    relation = np.zeros(np.shape(head), np.int64)
    return fit_typed(H0, head, relation, tail, weight, identity_map(), fixed, steps, lr)
