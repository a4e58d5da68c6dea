"""Input checks and bucket padding shared by :mod:`grounding.alignment.sequences` and
:mod:`grounding.alignment.transport`.

Inputs are zero-padded to a bucket (the next power of two, at least 8) so that sequences
and sets of different sizes share one compiled kernel.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike

from grounding._checks import (
    as_float_array,
    check_nonnegative_scalar,
    is_concrete,
    normalization_tolerance,
)

__all__ = ["check_array", "check_param", "check_marginal", "pad_to"]


# ------------------------------------------------------------------ checks and padding
# Concrete values are inspected with numpy: an eager jnp op compiles once per new shape.
def check_array(x: ArrayLike, name: str, ndim: int, *, allow_empty: bool = False) -> jax.Array:
    arr = as_float_array(x, name)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if not allow_empty and 0 in arr.shape:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if is_concrete(arr):
        v = np.asarray(arr)
        if np.isnan(v).any() or (v == -np.inf).any():
            raise ValueError(f"{name} contains NaN or -inf")
    return arr


def check_param(x: ArrayLike, name: str, *, strict: bool) -> jax.Array:
    arr = check_nonnegative_scalar(x, name, strict=strict)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    return arr


def check_marginal(w: ArrayLike | None, size: int, name: str, dtype: DTypeLike) -> jax.Array:
    if w is None:
        return jnp.asarray(np.full(size, 1.0 / size, dtype))
    arr = check_array(w, name, 1)
    if arr.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {arr.shape}")
    if is_concrete(arr):
        # normalized in the coarser of the given and the working precision: weights
        # normalized in float32 are accepted by a float64 computation
        v = np.asarray(arr, np.float64)
        tol = max(normalization_tolerance(arr.dtype), normalization_tolerance(np.dtype(dtype)))
        if (v < 0).any() or abs(v.sum() - 1.0) > tol:
            raise ValueError(f"{name} must be non-negative weights summing to one")
    return arr.astype(dtype)


def pad_to(arr: jax.Array, widths: list[tuple[int, int]]) -> jax.Array:
    if is_concrete(arr):
        return jnp.asarray(np.pad(np.asarray(arr), widths))
    return jnp.pad(arr, widths)
