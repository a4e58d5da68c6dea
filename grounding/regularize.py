r"""Relation-aware regularisation (Sec. 9, App. G): Laplacian energy vs the typed residual.

Node representations are a matrix ``H`` of shape ``[n, d]``. The classical energy
:math:`\mathrm{Tr}(H^\top L H)` (Eq. (23)) rewards adjacent rows for being *equal*; the
typed residual regulariser :math:`\Omega_R(H)` (Eq. (24)) rewards ``h_v`` for matching the
relation-conditioned prediction :math:`T_r(h_u)`. Prop. 10: the two coincide for identity
maps when every undirected edge is stored as both ordered arcs (stored once: a factor 1/2).

A *relation map* is a callable ``(r, x) -> T_r(x)`` that broadcasts over leading axes
(``r``: ``[...]`` relation ids, ``x``: ``[..., d]``), or any object with such an ``apply``
method (e.g. the maps of :mod:`grounding.geometry`). Maps that are pytrees of arrays (the
built-ins, :class:`BuiltinMap`) run inside one compiled kernel per input shape; any other
callable runs op by op. Out-of-range relation ids raise for the built-ins on concrete input;
under ``jit`` JAX clamps gathers silently.

Validation: shapes and dtypes always; values (NaN, sign, index range, symmetry) only on
concrete arrays, read on the host with numpy, so the checks also work when a caller closes
over concrete arrays inside ``jit``/``grad``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import as_float_array, is_concrete
from grounding._numerics import safe_norm

__all__ = [
    "adjacency", "laplacian", "laplacian_energy", "pairwise_smoothness",
    "laplacian_spectrum", "spectral_energy",
    "BuiltinMap", "identity_map", "translation_map", "linear_map", "rotation_map",
    "typed_residual_regularizer", "reversal_residual",
    "minimize", "fit_typed", "fit_untyped",
]  # fmt: skip

RelationMap = Callable[[jax.Array, jax.Array], jax.Array]


# ----------------------------------------------------------------------------- validation
def _host(x) -> np.ndarray | None:
    return np.asarray(x) if is_concrete(x) else None


def _float(x: ArrayLike, name: str, ndim: int | None = None) -> jax.Array | np.ndarray:
    """Floating array; numpy stays numpy (``jnp.asarray`` compiles a copy per new shape)."""
    if not (isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating)):
        x = as_float_array(x, name)
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {x.shape}")
    h = _host(x)
    if h is not None and not np.all(np.isfinite(h)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return x


def _features(H: ArrayLike, name: str = "H") -> jax.Array:
    H = _float(H, name)
    if H.ndim != 2:
        raise ValueError(f"{name} must be a [n, d] matrix, got shape {H.shape}")
    return H


def _index(x: ArrayLike, name: str, n: int | None) -> jax.Array:
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must hold integer indices, got {type(x).__name__}")
    if not isinstance(x, (jax.Array, np.ndarray)):
        x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"{name} must hold integer indices, got dtype {x.dtype}")
    h = _host(x)
    if h is not None and h.size and (h.min() < 0 or (n is not None and h.max() >= n)):
        raise ValueError(f"{name} indices must lie in [0, {n}), got [{h.min()}, {h.max()}]")
    return x


def _edges(n: int, head, tail, weight, relation=None, n_rel: int | None = None):
    """Validate ``[m]`` arcs on ``n`` nodes; weights finite and non-negative."""
    out = [_index(head, "head", n), _index(tail, "tail", n), _float(weight, "weight")]
    if (h := _host(out[2])) is not None and np.any(h < 0):
        raise ValueError("weight must be non-negative")
    names = ["head", "tail", "weight"]
    if relation is not None:
        out.append(_index(relation, "relation", n_rel))
        names.append("relation")
    for arr, nm in zip(out, names, strict=True):
        if arr.ndim != 1 or arr.shape != out[0].shape:
            raise ValueError(f"{nm} must be 1-d, one entry per arc {out[0].shape}, got {arr.shape}")
    return out


def _square(L: ArrayLike, name: str, n: int | None = None, symmetric: bool = False):
    L = _float(L, name)
    if L.ndim != 2 or L.shape[0] != L.shape[1]:
        raise ValueError(f"{name} must be a square [n, n] matrix, got shape {L.shape}")
    if n is not None and L.shape[0] != n:
        raise ValueError(f"{name} is {L.shape} but H has {n} rows")
    if symmetric and (h := _host(L)) is not None and not np.allclose(h, h.T):
        raise ValueError(f"{name} must be symmetric (an undirected graph) for its spectrum")
    return L


def _as_map(relation_map) -> RelationMap:
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


# ----------------------------------------------------------------------------- Eq. (23), Prop. 16
def adjacency(
    head: ArrayLike, tail: ArrayLike, weight: ArrayLike, n_nodes: int, symmetrize: bool = False
) -> jax.Array:
    r"""Dense weighted adjacency :math:`A_{uv} = \sum_{e = (u, v)} w_e` (parallel arcs add up).

    Args:
        head, tail: ``[m]`` integer endpoints in ``[0, n_nodes)``.
        weight: ``[m]`` non-negative weights.
        n_nodes: number of nodes ``n`` (a static Python int).
        symmetrize: return :math:`A + A^\top` (for an undirected edge list stored once).

    Returns:
        ``[n, n]`` matrix ``A``.

    Example:
        >>> adjacency([0, 0], [1, 1], [1.0, 2.0], 2).tolist()
        [[0.0, 3.0], [0.0, 0.0]]
    """
    if not isinstance(n_nodes, (int, np.integer)) or isinstance(n_nodes, bool) or n_nodes < 1:
        raise ValueError(f"n_nodes must be a positive int, got {n_nodes!r}")
    head, tail, weight = _edges(int(n_nodes), head, tail, weight)
    return _adjacency(head, tail, weight, int(n_nodes), bool(symmetrize))


@partial(jax.jit, static_argnums=(3, 4))
def _adjacency(head, tail, weight, n, symmetrize):
    E_head = jax.nn.one_hot(head, n, dtype=weight.dtype)  # one-hot matmul instead of a scatter
    A = E_head.T @ (weight[:, None] * jax.nn.one_hot(tail, n, dtype=weight.dtype))
    return A + A.T if symmetrize else A


def laplacian(adjacency: ArrayLike) -> jax.Array:
    r"""Combinatorial Laplacian :math:`L = D - A`, :math:`D = \mathrm{diag}(A\mathbf 1)` (Eq. (23)).

    Args:
        adjacency: ``[n, n]`` non-negative weights (symmetric for Eq. (23) to hold).

    Returns:
        ``[n, n]`` Laplacian (out-degree Laplacian for a non-symmetric ``A``).

    Example:
        >>> laplacian([[0.0, 2.0], [2.0, 0.0]]).tolist()
        [[2.0, -2.0], [-2.0, 2.0]]
    """
    A = _square(adjacency, "adjacency")
    if (h := _host(A)) is not None and np.any(h < 0):
        raise ValueError("adjacency must be non-negative")
    return _laplacian(A)


@jax.jit
def _laplacian(A):
    return jnp.diag(jnp.sum(A, axis=1)) - A  # Eq. (23): L = D - A


def laplacian_energy(H: ArrayLike, L: ArrayLike) -> jax.Array:
    r"""Laplacian energy :math:`\mathrm{Tr}(H^\top L H)` (left side of Eq. (23)).

    Args:
        H: ``[n, d]`` node representations.
        L: ``[n, n]`` Laplacian.

    Returns:
        Scalar; equals :func:`pairwise_smoothness` for ``L = laplacian(A)``, ``A``
        symmetric. Gradient in ``H``: :math:`(L + L^\top) H`.

    Example:
        >>> float(laplacian_energy([[0.0], [1.0]], [[1.0, -1.0], [-1.0, 1.0]]))
        1.0
    """
    H = _features(H)
    return _laplacian_energy(H, _square(L, "L", H.shape[0]))


@jax.jit
def _laplacian_energy(H, L):
    return jnp.sum(H * (L @ H))  # Eq. (23): Tr(H^T L H)


def pairwise_smoothness(H: ArrayLike, A: ArrayLike) -> jax.Array:
    r"""Pairwise form :math:`\tfrac12 \sum_{u,v} A_{uv} \|h_v - h_u\|_2^2` (right side of Eq. (23)).

    Args:
        H: ``[n, d]`` node representations.
        A: ``[n, n]`` adjacency (every ordered pair ``(u, v)`` is summed).

    Returns:
        Scalar energy.

    Example:
        >>> float(pairwise_smoothness([[0.0], [1.0]], [[0.0, 1.0], [1.0, 0.0]]))
        1.0
    """
    H = _features(H)
    return _pairwise(H, _square(A, "A", H.shape[0]))


@jax.jit
def _pairwise(H, A):
    sq = jnp.sum((H[None, :, :] - H[:, None, :]) ** 2, axis=-1)
    return 0.5 * jnp.sum(A * sq)  # Eq. (23), right side


_eigh = jax.jit(jnp.linalg.eigh)


def laplacian_spectrum(L: ArrayLike) -> tuple[jax.Array, jax.Array]:
    r"""Eigen-decomposition :math:`L = U \Lambda U^\top` (App. G, Prop. 16).

    Args:
        L: ``[n, n]`` symmetric Laplacian.

    Returns:
        ``(lam, U)``: ascending eigenvalues ``[n]`` (``lam[0] = 0`` for a graph Laplacian)
        and orthonormal eigenvectors in the columns of ``U`` ``[n, n]``.

    Example:
        >>> lam, U = laplacian_spectrum([[1.0, -1.0], [-1.0, 1.0]])
        >>> [round(float(x), 6) + 0.0 for x in lam]
        [0.0, 2.0]
    """
    return _eigh(_square(L, "L", symmetric=True))


def spectral_energy(H: ArrayLike, L: ArrayLike) -> jax.Array:
    r"""Spectral form of the Laplacian energy (Prop. 16):
    :math:`\sum_\ell \lambda_\ell \|\hat h_\ell\|_2^2` with :math:`\hat H = U^\top H`.

    Args:
        H: ``[n, d]`` node representations.
        L: ``[n, n]`` symmetric Laplacian.

    Returns:
        Scalar; equals :func:`laplacian_energy` (Prop. 16).

    Example:
        >>> round(float(spectral_energy([[0.0], [1.0]], [[1.0, -1.0], [-1.0, 1.0]])), 6)
        1.0
    """
    H = _features(H)
    lam, U = _eigh(_square(L, "L", H.shape[0], symmetric=True))  # shared eigh compilation
    return _spectral(H, lam, U)


@jax.jit
def _spectral(H, lam, U):
    return jnp.sum(lam * jnp.sum((U.T @ H) ** 2, axis=-1))  # Prop. 16


# ----------------------------------------------------------------------------- relation maps
@partial(jax.tree_util.register_dataclass, data_fields=["params"], meta_fields=["kind"])
@dataclasses.dataclass(frozen=True)
class BuiltinMap:
    """A built-in relation map ``(r, x) -> T_r(x)``, a pytree whose leaves are ``params``.

    ``kind``: ``"identity"``; ``"translation"`` (``params [R, d]``); ``"linear"``
    (``params [R, d, d]``); ``"rotation"`` (``params [R, d // 2]`` angles). Build with
    :func:`identity_map`, :func:`translation_map`, :func:`linear_map`, :func:`rotation_map`.
    """

    kind: str
    params: jax.Array | None = None

    @property
    def n_relations(self) -> int | None:
        return None if self.params is None else self.params.shape[0]

    def __call__(self, r: ArrayLike, x: ArrayLike) -> jax.Array:
        return _run(_apply, self, _index(r, "relation", self.n_relations), _float(x, "x"))

    apply = __call__


def _apply(r, x, T: BuiltinMap) -> jax.Array:
    if T.kind == "identity":
        return x
    p = T.params[r]
    if T.kind == "translation":
        return x + p
    if T.kind == "linear":
        return jnp.einsum("...ij,...j->...i", p, x)
    if x.shape[-1] != 2 * T.params.shape[1]:
        need = 2 * T.params.shape[1]
        raise ValueError(f"rotation_map: x has dimension {x.shape[-1]}, theta needs {need}")
    a, b, c, s = x[..., 0::2], x[..., 1::2], jnp.cos(p), jnp.sin(p)
    return jnp.stack([c * a - s * b, s * a + c * b], axis=-1).reshape(x.shape)


def identity_map() -> BuiltinMap:
    """:math:`T_r = I` for every ``r``: the untyped / Laplacian case (Prop. 10).

    Example:
        >>> identity_map()(0, jnp.ones(2)).tolist()
        [1.0, 1.0]
    """
    return BuiltinMap("identity")


def translation_map(r_vectors: ArrayLike) -> BuiltinMap:
    """TransE map :math:`T_r(x) = x + t_r` (Sec. 9.2, 9.4); ``r_vectors``: ``[n_relations, d]``.

    Example:
        >>> translation_map([[1.0, 2.0]])(0, jnp.zeros(2)).tolist()
        [1.0, 2.0]
    """
    return BuiltinMap("translation", _float(r_vectors, "r_vectors", ndim=2))


def linear_map(W: ArrayLike) -> BuiltinMap:
    """Linear map :math:`T_r(x) = W_r x` (Sec. 9.4); ``W``: ``[n_relations, d, d]``.

    Example:
        >>> linear_map([[[0.0, 1.0], [1.0, 0.0]]])(0, jnp.array([1.0, 2.0])).tolist()
        [2.0, 1.0]
    """
    W = _float(W, "W", ndim=3)
    if W.shape[1] != W.shape[2]:
        raise ValueError(f"W must hold square [d, d] matrices, got shape {W.shape}")
    return BuiltinMap("linear", W)


def rotation_map(theta: ArrayLike) -> BuiltinMap:
    """RotatE-style map: rotate ``(x[2i], x[2i+1])`` by ``theta[r, i]``; ``theta``: ``[R, d // 2]``.

    Example:
        >>> y = rotation_map([[jnp.pi / 2]])(0, jnp.array([1.0, 0.0]))
        >>> [round(float(v), 6) + 0.0 for v in y]
        [0.0, 1.0]
    """
    return BuiltinMap("rotation", _float(theta, "theta", ndim=2))


# ----------------------------------------------------------------------------- Eq. (24), (25)
def typed_residual_regularizer(
    H: ArrayLike,
    head: ArrayLike,
    relation: ArrayLike,
    tail: ArrayLike,
    weight: ArrayLike,
    relation_map,
) -> jax.Array:
    r"""Typed residual regulariser (Eq. (24)):
    :math:`\Omega_R(H) = \tfrac12 \sum_{(u,r,v) \in \mathcal E_R} w_{urv} \|h_v - T_r(h_u)\|_2^2`.

    Every stored arc counts once: an undirected edge stored as both arcs gives
    :math:`\mathrm{Tr}(H^\top L H)` with :func:`identity_map` (Prop. 10); stored once, half.

    Args:
        H: ``[n, d]`` node representations.
        head, relation, tail: ``[m]`` integer arcs ``(u, r, v)``.
        weight: ``[m]`` non-negative weights :math:`w_{urv}`.
        relation_map: ``(r, x) -> T_r(x)`` (see the module docstring).

    Returns:
        Scalar :math:`\Omega_R(H) \ge 0`, zero iff every positive-weight arc is consistent.

    Example:
        >>> T = translation_map([[1.0]])
        >>> float(typed_residual_regularizer([[0.0], [1.0]], [0], [0], [1], [2.0], T))
        0.0
    """
    H = _features(H)
    args = _edges(H.shape[0], head, tail, weight, relation, _n_rel(relation_map))
    return _run(_omega, relation_map, H, *args)


def _omega(H, head, tail, weight, relation, relation_map):
    res = H[tail] - _as_map(relation_map)(relation, H[head])
    return 0.5 * jnp.sum(weight * jnp.sum(res**2, axis=-1))  # Eq. (24)


def reversal_residual(
    H: ArrayLike, u: ArrayLike, v: ArrayLike, r: ArrayLike, relation_map
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

    Example:
        >>> T = translation_map([[3.0, 4.0]])
        >>> float(reversal_residual([[0.0, 0.0], [3.0, 4.0]], 0, 1, 0, T))
        10.0
    """
    H = _features(H)
    u, v = _index(u, "u", H.shape[0]), _index(v, "v", H.shape[0])
    return _run(_reversal, relation_map, H, u, v, _index(r, "r", _n_rel(relation_map)))


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
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    if not np.isscalar(lr) or not float(lr) > 0:
        raise ValueError(f"lr must be a positive number, got {lr!r}")


def _descend(fun, x0, m, steps, lr):
    g = jax.grad(fun)
    return jax.lax.fori_loop(0, steps, lambda _, x: x - lr * m * g(x), x0)


def _fit(H0, mask, head, tail, weight, relation, steps, lr, relation_map):
    fun = partial(
        _omega, head=head, tail=tail, weight=weight, relation=relation, relation_map=relation_map
    )
    return _descend(fun, H0, mask, steps, lr)


def fit_typed(
    H0: ArrayLike,
    head,
    relation,
    tail,
    weight,
    relation_map,
    fixed: ArrayLike | None = None,
    steps: int = 1000,
    lr: float = 0.1,
) -> jax.Array:
    r"""Minimise :math:`\Omega_R(H)` (Eq. (24)) from ``H0`` by gradient descent (:func:`minimize`).

    On AUTHOR -WRITES-> PAPER with a translation map the minimiser keeps the roles apart:
    :math:`h_p = h_a + r_{\mathrm{WRITES}}` (Sec. 9.2).

    Args:
        H0: ``[n, d]`` start point.
        head, relation, tail, weight, relation_map: as in :func:`typed_residual_regularizer`.
        fixed: optional ``[n]`` booleans; those rows stay at ``H0`` (anchors).
        steps, lr: as in :func:`minimize`.

    Returns:
        ``[n, d]`` fitted representations.

    Example:
        >>> T = translation_map([[2.0]])
        >>> H = fit_typed([[0.0], [5.0]], [0], [0], [1], [1.0], T, fixed=[True, False])
        >>> round(float(H[1, 0]), 4)
        2.0
    """
    H0 = _features(H0, "H0")
    args = _edges(H0.shape[0], head, tail, weight, relation, _n_rel(relation_map))
    _check_descent(steps, lr)
    fixed = np.zeros(H0.shape[0], bool) if fixed is None else fixed
    if np.shape(fixed) != (H0.shape[0],):
        raise ValueError(f"fixed must have shape ({H0.shape[0]},), got {np.shape(fixed)}")
    xp = np if is_concrete(fixed) else jnp
    mask = xp.where(xp.asarray(fixed).astype(bool), 0.0, 1.0).astype(H0.dtype)[:, None]
    return _run(_fit, relation_map, H0, mask, *args, int(steps), lr, static=(6,))


def fit_untyped(
    H0: ArrayLike,
    head,
    tail,
    weight,
    fixed: ArrayLike | None = None,
    steps: int = 1000,
    lr: float = 0.1,
) -> jax.Array:
    r"""Minimise the untyped energy :math:`\tfrac12 \sum w \|h_v - h_u\|^2` (Sec. 9.2).

    This is Eq. (24) with :func:`identity_map`. On AUTHOR -WRITES-> PAPER the minimiser
    collapses :math:`h_p = h_a` (at the midpoint when free, onto :math:`h_a` when the
    author is fixed): the oversmoothing failure.

    Args:
        H0, head, tail, weight, fixed, steps, lr: as in :func:`fit_typed`.

    Returns:
        ``[n, d]`` fitted representations.

    Example:
        >>> H = fit_untyped([[0.0], [4.0]], [0], [1], [1.0])
        >>> [round(float(x), 4) for x in H[:, 0]]
        [2.0, 2.0]
    """
    relation = np.zeros(np.shape(head), np.int64)
    return fit_typed(H0, head, relation, tail, weight, identity_map(), fixed, steps, lr)
