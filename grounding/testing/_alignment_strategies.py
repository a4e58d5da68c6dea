"""Hypothesis strategies for the trajectory distances of Eqs. (2)-(3) (``grounding.alignment``).

Each strategy draws a seed integer and builds numpy arrays with ``numpy.random``
(shrinking acts on the seed, the lengths and the dimension). Values come either from a
continuous box ``[-1, 1]`` or from the half-integer grid ``{-1, -0.5, ..., 1}``; the grid
makes ties and repeated points (zero costs, non-unique optimal alignments) common.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

__all__ = [
    "seeds",
    "point_sequences",
    "sequence_tuples",
    "cost_matrices",
    "gaps",
    "step_weights",
    "euclidean_cost",
]

_GRID = np.arange(-2, 3) * 0.5


def seeds() -> st.SearchStrategy[int]:
    """Seeds for ``numpy.random.default_rng``."""
    return st.integers(min_value=0, max_value=2**32 - 1)


def _values(rng: np.random.Generator, shape: tuple[int, ...], grid: bool) -> np.ndarray:
    if grid:
        return rng.choice(_GRID, size=shape)
    return rng.uniform(-1.0, 1.0, size=shape)


@st.composite
def point_sequences(
    draw: st.DrawFn, min_len: int = 1, max_len: int = 5, min_dim: int = 1, max_dim: int = 3
) -> np.ndarray:
    """A ``[length, dim]`` float64 array: a semantic trajectory ``(x_0, ..., x_T)``."""
    return draw(sequence_tuples(1, min_len, max_len, min_dim, max_dim))[0]


@st.composite
def sequence_tuples(
    draw: st.DrawFn,
    k: int,
    min_len: int = 1,
    max_len: int = 5,
    min_dim: int = 1,
    max_dim: int = 3,
    equal_length: bool = False,
) -> tuple[np.ndarray, ...]:
    """``k`` trajectories sharing a point dimension (and a length if ``equal_length``)."""
    rng = np.random.default_rng(draw(seeds()))
    dim = draw(st.integers(min_dim, max_dim))
    grid = draw(st.booleans())
    if equal_length:
        lengths = [draw(st.integers(min_len, max_len))] * k
    else:
        lengths = [draw(st.integers(min_len, max_len)) for _ in range(k)]
    return tuple(_values(rng, (n, dim), grid) for n in lengths)


@st.composite
def cost_matrices(
    draw: st.DrawFn,
    min_n: int = 1,
    max_n: int = 5,
    min_m: int = 1,
    max_m: int = 5,
    square: bool = False,
    shape: tuple[int, int] | None = None,
) -> np.ndarray:
    """Non-negative ``[n, m]`` ground costs in ``[0, 2]`` (grid values give ties)."""
    rng = np.random.default_rng(draw(seeds()))
    if shape is None:
        n = draw(st.integers(min_n, max_n))
        m = n if square else draw(st.integers(min_m, max_m))
        shape = (n, m)
    return np.abs(_values(rng, shape, draw(st.booleans()))) * 2.0


def gaps(min_value: float = 0.0, max_value: float = 2.0) -> st.SearchStrategy[float]:
    """Insertion/deletion costs for the edit distance."""
    return st.floats(min_value, max_value, allow_nan=False, allow_infinity=False)


@st.composite
def step_weights(draw: st.DrawFn, length: int) -> np.ndarray:
    """Positive step weights ``a_t`` of Eq. (2), in ``[0.1, 3]``."""
    rng = np.random.default_rng(draw(seeds()))
    return rng.uniform(0.1, 3.0, size=length)


def euclidean_cost(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Plain numpy ``||x_i - y_j||_2``: the reference ground metric for the oracles."""
    return np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))
