"""The retriever boundary's helpers (:mod:`grounding.retrieval.base`): min-max scaling of
scores."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grounding.retrieval.base import minmax

# ---------------------------------------------------------------- minmax


def test_minmax_examples():
    np.testing.assert_array_equal(minmax(np.array([2.0, 2.0, 2.0])), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(minmax(np.array([3.0, 1.0, 2.0])), [1.0, 0.0, 0.5])
    np.testing.assert_array_equal(minmax(np.array([7.0])), [0.0])
    assert minmax(np.zeros((2, 0))).shape == (2, 0)
    np.testing.assert_array_equal(minmax(np.array([-1e308, 0.0, 1e308])), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(minmax([[1, 2], [5, 5]]), [[0.0, 1.0], [0.0, 0.0]])
    for bad in (np.array([1.0, np.nan]), np.array([np.inf, 0.0])):
        with pytest.raises(ValueError, match="finite"):
            minmax(bad)
    with pytest.raises(ValueError, match="axis"):
        minmax(np.float64(3.0))


@given(
    st.lists(
        st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=6),
        min_size=1,
        max_size=4,
    ).filter(lambda rows: len({len(r) for r in rows}) == 1)
)
def test_minmax_property(rows):
    x = np.array(rows)
    y = minmax(x)
    assert y.shape == x.shape and np.all(np.isfinite(y))
    assert np.all((y >= 0) & (y <= 1))
    for xr, yr in zip(x, y):
        if xr.max() > xr.min():
            assert yr[np.argmax(xr)] == 1.0 and yr[np.argmin(xr)] == 0.0
            assert np.all(np.diff(yr[np.argsort(xr, kind="stable")]) >= 0)  # order kept
        else:
            assert np.all(yr == 0)
