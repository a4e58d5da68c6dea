"""Input validation shared by the public API.

Shape and dtype checks always run (shapes are static under ``jit``). Value checks
(NaN, ranges, normalization, empty feasible sets) run only when the argument is a
concrete array; inside ``jit``/``vmap``/``grad`` the values are tracers and cannot be
inspected without a host round trip, so there the functions document what they return
on the degenerate case instead of raising.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

__all__ = [
    "is_concrete",
    "as_float_array",
    "check_log_prob",
    "check_energy",
    "check_nonnegative_scalar",
    "check_reliability",
    "check_same_shape",
    "check_batch_parameter",
    "normalization_tolerance",
    "host_value",
    "check_float_array",
    "check_index_array",
    "check_square_matrix",
    "check_int",
    "check_features",
    "check_arcs",
    "check_edges",
    "check_nodes",
    "check_edge_values",
    "check_tau",
    "Tau",
]


def is_concrete(*xs: object) -> bool:
    """True when no argument is a JAX tracer (so its values can be inspected)."""
    return not any(isinstance(x, jax.core.Tracer) for x in xs)


def float_dtype() -> np.dtype:
    """The float dtype JAX computes in now: float64 in 64-bit mode, else float32
    (``jnp.result_type(float)``, read from the flag: a hundred times cheaper)."""
    return np.dtype(np.float64 if jax.config.jax_enable_x64 else np.float32)


def is_stand_in(x: object) -> bool:
    """True for what JAX puts in a pytree's leaves when it rebuilds one itself (a tracer, a
    lowered program's ``ArgInfo``, a ``ShapeDtypeStruct``): no value to check."""
    if isinstance(x, jax.core.Tracer):
        return True
    return type(x).__module__.startswith("jax") and not isinstance(x, jax.Array)


def _is_host(x: object) -> bool:
    """Whether ``x`` is host array data (a NumPy array, a list or tuple) with no traced value
    inside (a list of traced values, built inside ``jit``, is staged, not host data)."""
    if not isinstance(x, (np.ndarray, list, tuple)):
        return False  # JAX arrays, tracers, scalars
    return isinstance(x, np.ndarray) or not any(
        isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(x)
    )


def _to_jax(x: ArrayLike) -> jax.Array:
    """``x`` as a JAX array. Host arrays go by ``jax.device_put``, which compiles nothing:
    ``jnp.asarray`` of a NumPy array compiles (and keeps for the life of the process) one
    small program per shape and dtype, so a long-lived process checking inputs of ever new
    shapes would grow without bound (see :mod:`grounding.programs`). JAX arrays are not
    copied; scalars compile one program per dtype."""
    return jax.device_put(_to_host(x)) if _is_host(x) else jnp.asarray(x)


def _to_host(x: ArrayLike) -> np.ndarray:
    """Host data (a NumPy array, a list or tuple of numbers) as a NumPy array in the dtype JAX
    would give it (float64 is float32 unless 64-bit mode is on), no device copy."""
    host = np.asarray(x)
    if host.dtype == object:
        raise TypeError(f"not numbers (dtype object: {type(host.flat[0]).__name__} inside)")
    if host.dtype.kind in "biuf":
        host = host.astype(jax.dtypes.canonicalize_dtype(host.dtype), copy=False)
    return host


def as_float_array(
    x: ArrayLike, name: str, *, min_ndim: int = 0, keep_host: bool = False
) -> jax.Array:
    """Convert to a floating JAX array, raising ``TypeError`` for non-numeric input
    (``keep_host``: host data stays a NumPy array, as for a field that is read on the host,
    so that it crosses to the device once, batched, not once per object)."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    try:
        with np.errstate(over="ignore"):  # a value too large for the width: reported below
            arr = _to_host(x) if keep_host and _is_host(x) else _to_jax(x)
    except TypeError as exc:  # e.g. objects, strings inside a list
        raise TypeError(f"{name} must be an array of numbers: {exc}") from None
    except ValueError:  # ragged nested lists
        raise ValueError(f"{name} must be a rectangular array (a ragged nested list?)") from None
    if arr.dtype.kind == "f":  # float16/32/64: nothing to convert (the common case, first)
        pass
    elif arr.dtype == jnp.bool_ or not (
        jnp.issubdtype(arr.dtype, jnp.floating) or jnp.issubdtype(arr.dtype, jnp.integer)
    ):
        raise TypeError(f"{name} must have a real numeric dtype, got {arr.dtype}")
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        arr = arr.astype(float_dtype())
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}"
        )
    return arr


@functools.cache
def normalization_tolerance(dtype: np.dtype) -> float:
    """Tolerance on ``|log sum p|`` for a prior to count as normalized: ``sqrt(eps(dtype))``.

    ``3.5e-4`` in float32 and ``1.5e-8`` in float64.
    """
    return float(np.sqrt(np.finfo(dtype).eps))


def _no_nan(arr: np.ndarray, name: str) -> None:
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")


#: What a "does not normalize" error suggests: the function that normalizes raw log-scores.
NORMALIZE_HINT = "grounding.log_normalize(scores) normalizes raw log-scores"


def check_log_prob(
    x: ArrayLike,
    name: str,
    *,
    normalized: bool = True,
    allow_empty: bool = False,
    hint: str = NORMALIZE_HINT,
    keep_host: bool = False,
) -> jax.Array:
    """Validate log-probabilities along the last axis (the candidate axis); ``hint`` ends the
    message of a prior that does not normalize (what to call instead); ``keep_host`` as for
    :func:`as_float_array`."""
    arr = as_float_array(x, name, min_ndim=1, keep_host=keep_host)
    if arr.shape[-1] == 0 and not allow_empty:
        raise ValueError(f"{name} has an empty candidate axis (shape {arr.shape})")
    if not is_concrete(arr):
        return arr
    a = np.asarray(arr)  # value checks in NumPy: no device dispatch per check
    top = a.max() if a.size else 0.0  # NaN when there is one, +inf when there is one
    if not top < np.inf:
        _no_nan(a, name)
        raise ValueError(f"{name} contains +inf: log-probabilities must be <= 0")
    if normalized:
        tol = normalization_tolerance(a.dtype)
        if a.ndim == 1 and a.size and top > -np.inf:  # one prior with mass: the same sums
            total = np.log(np.sum(np.exp(a - top))) + top
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                m = np.max(a, axis=-1, keepdims=True)
                m = np.where(np.isfinite(m), m, 0.0)
                total = np.log(np.sum(np.exp(a - m), axis=-1)) + m[..., 0]
        bad = ~(np.abs(total) <= tol)
        if bad.any():
            worst = float(np.max(np.where(np.isfinite(total), np.abs(total), np.inf)))
            raise ValueError(
                f"{name} does not normalize: |logsumexp| = {worst:.3g} > {tol:.2g} "
                f"(pass log-probabilities that sum to one along the last axis; {hint})"
            )
    return arr


def check_energy(
    x: ArrayLike, name: str = "energy", *, min_ndim: int = 1, keep_host: bool = False
) -> jax.Array:
    """Energies take values in ``R ∪ {+inf}`` (Def. 2): no NaN, no ``-inf`` (``keep_host`` as
    for :func:`as_float_array`)."""
    arr = as_float_array(x, name, min_ndim=min_ndim, keep_host=keep_host)
    if min_ndim >= 1 and arr.shape[-1] == 0:
        raise ValueError(f"{name} has an empty candidate axis (shape {arr.shape})")
    if is_concrete(arr):
        a = np.asarray(arr)
        _no_nan(a, name)
        if (a == -np.inf).any():
            raise ValueError(f"{name} contains -inf: energies take values in R ∪ {{+inf}}")
    return arr


def check_nonnegative_scalar(
    x: ArrayLike, name: str, *, allow_inf: bool = False, strict: bool = False
) -> jax.Array:
    """A non-negative (or positive) parameter such as ``lambda``, ``tau`` or ``kappa``."""
    arr = as_float_array(x, name)
    if is_concrete(arr):
        a = np.asarray(arr)
        _no_nan(a, name)
        if strict and (a <= 0).any():
            raise ValueError(f"{name} must be > 0, got {a}")
        if (a < 0).any():
            raise ValueError(f"{name} must be >= 0, got {a}")
        if not allow_inf and np.isinf(a).any():
            given = np.asarray(x, np.float64) if isinstance(x, (int, float)) else a
            if np.isfinite(given).all():  # finite as given: too large for the float width
                raise ValueError(
                    f"{name}={x!r} is too large for {a.dtype} (the float width the package "
                    "computes in; jax.config.update('jax_enable_x64', True) for float64)"
                )
            raise ValueError(f"{name} must be finite, got {a}")
    return arr


def check_reliability(x: ArrayLike, name: str = "reliability") -> jax.Array:
    """Edge reliabilities ``w_e`` live in ``(0, 1]`` (Eq. (8))."""
    arr = as_float_array(x, name)
    if is_concrete(arr):
        a = np.asarray(arr)
        _no_nan(a, name)
        if ((a <= 0) | (a > 1)).any():
            raise ValueError(f"{name} must lie in (0, 1], got values in [{a.min()}, {a.max()}]")
    return arr


def check_same_shape(a: jax.Array, b: jax.Array, name_a: str, name_b: str) -> None:
    """Arrays indexed by candidates (and batch axes) must have one shape: nothing broadcasts
    silently (batch several problems with ``jax.vmap`` or stack them explicitly)."""
    if a.shape != b.shape:
        raise ValueError(
            f"{name_a} with shape {a.shape} and {name_b} with shape {b.shape} differ: they must "
            "have one shape (one entry per candidate, the same batch axes)"
        )


def check_batch_parameter(x: jax.Array, batch_shape: tuple[int, ...], name: str) -> jax.Array:
    """A parameter such as ``lam``, ``eps`` or ``tau`` is a scalar, or has exactly the batch
    shape (the leading axes) of the candidate arrays: one value per problem."""
    if x.shape not in ((), tuple(batch_shape)):
        raise ValueError(
            f"{name} must be a scalar or have the batch shape {tuple(batch_shape)} (one value per "
            f"problem), got shape {x.shape}; for several values per problem use jax.vmap"
        )
    return x


# ----------------------------------------------------------------------------- host-side checks
# Value checks read concrete arrays on the host with NumPy, so they also work when a caller
# closes over concrete arrays inside ``jit``/``grad``; traced values are passed through.


def host_value(x: object) -> np.ndarray | None:
    """``x`` as a NumPy array when it is concrete, ``None`` when it is a tracer."""
    return np.asarray(x) if is_concrete(x) else None


def check_float_array(x: ArrayLike, name: str, ndim: int | None = None) -> jax.Array | np.ndarray:
    """A finite floating array (no NaN or inf); NumPy input stays NumPy (no device copy)."""
    if not (isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating)):
        x = as_float_array(x, name)
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {x.shape}")
    h = host_value(x)
    if h is not None and not np.all(np.isfinite(h)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return x


def check_index_array(x: ArrayLike, name: str, n: int | None) -> jax.Array | np.ndarray:
    """Integer indices in ``[0, n)`` (``n = None``: only non-negative)."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must hold integer indices, got {type(x).__name__}")
    if not isinstance(x, (jax.Array, np.ndarray)):
        x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"{name} must hold integer indices, got dtype {x.dtype}")
    h = host_value(x)
    if h is not None and h.size and (h.min() < 0 or (n is not None and h.max() >= n)):
        raise ValueError(f"{name} indices must lie in [0, {n}), got [{h.min()}, {h.max()}]")
    return x


def check_square_matrix(
    L: ArrayLike, name: str, n: int | None = None, symmetric: bool = False
) -> jax.Array | np.ndarray:
    """A finite square ``[n, n]`` matrix (optionally symmetric, checked on concrete input)."""
    L = check_float_array(L, name)
    if L.ndim != 2 or L.shape[0] != L.shape[1]:
        raise ValueError(f"{name} must be a square [n, n] matrix, got shape {L.shape}")
    if n is not None and L.shape[0] != n:
        raise ValueError(f"{name} is {L.shape} but H has {n} rows")
    if symmetric and (h := host_value(L)) is not None and not np.allclose(h, h.T):
        raise ValueError(f"{name} must be symmetric (an undirected graph) for its spectrum")
    return L


def check_int(value: object, name: str, low: int = 1) -> int:
    """A Python or NumPy integer ``>= low`` (``bool`` rejected), as a Python ``int``: the
    package's one integer check (``tests/contracts/test_conventions.py`` keeps it the only one)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r:.100}")
    return int(value)


def check_features(H: ArrayLike, name: str = "H") -> jax.Array | np.ndarray:
    """Node representations: a finite ``[n, d]`` matrix."""
    H = check_float_array(H, name)
    if H.ndim != 2:
        raise ValueError(f"{name} must be a [n, d] matrix, got shape {H.shape}")
    return H


def check_arcs(
    n: int,
    head: ArrayLike,
    tail: ArrayLike,
    weight: ArrayLike,
    relation: ArrayLike | None = None,
    n_relations: int | None = None,
):
    """Validate ``[m]`` arcs on ``n`` nodes with finite non-negative weights (and relation ids
    in ``[0, n_relations)`` when given); returns ``[head, tail, weight(, relation)]``."""
    out = [
        check_index_array(head, "head", n),
        check_index_array(tail, "tail", n),
        check_float_array(weight, "weight"),
    ]
    if (h := host_value(out[2])) is not None and np.any(h < 0):
        raise ValueError("weight must be non-negative")
    names = ["head", "tail", "weight"]
    if relation is not None:
        out.append(check_index_array(relation, "relation", n_relations))
        names.append("relation")
    for arr, nm in zip(out, names, strict=True):
        if arr.ndim != 1 or arr.shape != out[0].shape:
            raise ValueError(f"{nm} must be 1-d, one entry per arc {out[0].shape}, got {arr.shape}")
    return out


# ----------------------------------------------------------------------------- graph arrays
def check_edges(head: ArrayLike, tail: ArrayLike, n_nodes: int) -> tuple[jax.Array, jax.Array]:
    """1-D integer edge endpoints of one length, in ``[0, n_nodes)`` (checked when concrete)."""
    check_int(n_nodes, "n_nodes")
    h, t = jnp.asarray(head), jnp.asarray(tail)
    for name, a in (("head", h), ("tail", t)):
        if a.ndim != 1 or not jnp.issubdtype(a.dtype, jnp.integer):
            raise ValueError(f"{name} must be a 1-D integer array, got {a.dtype}{list(a.shape)}")
    if h.shape != t.shape:
        raise ValueError(f"head and tail must have the same length, got {h.shape} and {t.shape}")
    if is_concrete(h, t) and h.size:
        hn, tn = np.asarray(h), np.asarray(t)  # NumPy: jnp reductions would be staged under jit
        lo, hi = min(int(hn.min()), int(tn.min())), max(int(hn.max()), int(tn.max()))
        if lo < 0 or hi >= n_nodes:
            raise ValueError(f"edge endpoints must lie in [0, {n_nodes}), got [{lo}, {hi}]")
    return h, t


def check_nodes(nodes: ArrayLike, n_nodes: int, name: str = "sources") -> jax.Array:
    """A 1-D integer array of node indices in ``[0, n_nodes)``, as int32."""
    s = jnp.asarray(nodes)
    if s.ndim != 1 or not jnp.issubdtype(s.dtype, jnp.integer):
        raise ValueError(f"{name} must be a 1-D integer array, got {s.dtype}{list(s.shape)}")
    if is_concrete(s) and s.size:
        sn = np.asarray(s)
        if sn.min() < 0 or sn.max() >= n_nodes:
            raise ValueError(f"{name} must lie in [0, {n_nodes}), got {sn.tolist()}")
    return s.astype(jnp.int32)


def check_edge_values(
    x: ArrayLike, name: str, n_edges: int, n_sources: int, *, bad: float
) -> jax.Array:
    """An edge array of shape ``[E]`` or ``[S, E]`` without NaN or ``bad``, returned edge-major
    (``[E]`` / ``[E, S]``)."""
    arr = as_float_array(x, name)
    if arr.shape not in ((n_edges,), (n_sources, n_edges)):
        raise ValueError(
            f"{name} must have shape [{n_edges}] or [{n_sources}, {n_edges}], got {arr.shape}"
        )
    if is_concrete(arr):
        a = np.asarray(arr)
        if np.isnan(a).any():
            raise ValueError(f"{name} contains NaN")
        if (a == bad).any():
            raise ValueError(f"{name} contains {bad}")
    return arr.T if arr.ndim == 2 else arr


class Tau(NamedTuple):
    """A checked path temperature: its value, whether the min-plus semiring applies (a
    concrete ``tau == 0``), and whether it is traced (the semiring is then chosen at run time,
    :func:`grounding.semiring.recursion.by_temperature`)."""

    value: jax.Array
    tropical: bool
    traced: bool


def check_tau(tau: ArrayLike) -> Tau:
    """A scalar path temperature ``tau >= 0`` (see :class:`Tau`)."""
    concrete = is_concrete(tau)  # decided on the argument: jnp.asarray stages it under jit
    t = check_nonnegative_scalar(tau, "tau")
    if t.ndim:
        raise ValueError(f"tau must be a scalar, got shape {t.shape}")
    return Tau(t, bool(concrete and float(np.asarray(tau)) == 0.0), not concrete)


def frozen_array(x: Any) -> Any:
    """A NumPy edge array as a read-only array that owns its data (a copy unless it already
    is one), so the graph cannot change in place behind the caches keyed on it; anything else
    (JAX arrays are immutable, tracers) is returned as is."""
    if not isinstance(x, np.ndarray) or (not x.flags.writeable and x.flags.owndata):
        return x
    a = np.array(x, copy=True)
    a.setflags(write=False)
    return a
