"""The interval estimates behind every "resolved / not resolved" sentence in the docs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments._stats import paired_bootstrap, wilson


def test_wilson_matches_the_textbook_value():
    # Newcombe (1998), Table I: 81 of 263 gives 0.2553 to 0.3662 at 95 %
    lo, hi = wilson(81, 263)
    assert (lo, hi) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    assert wilson(0, 0) == (0.0, 1.0)  # no data: the vacuous interval, never NaN


@given(st.integers(1, 500), st.floats(0, 1))
def test_wilson_contains_the_estimate_inside_the_unit_interval(n, frac):
    k = round(frac * n)
    lo, hi = wilson(k, n)
    assert 0.0 <= lo <= k / n + 1e-12 and k / n - 1e-12 <= hi <= 1.0
    lo4, hi4 = wilson(4 * k, 4 * n)  # four times the data at the same proportion: narrower
    assert hi4 - lo4 < hi - lo


def test_wilson_covers_about_95_percent():
    rng = np.random.default_rng(0)
    n, p, trials = 60, 0.3, 4000
    k = rng.binomial(n, p, trials)
    cover = np.mean([lo <= p <= hi for lo, hi in (wilson(x, n) for x in k)])
    assert 0.93 < cover < 0.97


@given(
    st.lists(st.integers(0, 1), min_size=2, max_size=60),
    st.one_of(st.just(0.0), st.floats(1e-6, 1), st.floats(-1, -1e-6)),
)
@settings(max_examples=50)
def test_paired_bootstrap_of_a_constant_shift(b, shift):
    b = np.asarray(b, float)
    r = paired_bootstrap(b + shift, b)
    assert r["diff"] == pytest.approx(shift)
    assert r["ci"] == pytest.approx((shift, shift))
    assert r["resolved"] == (shift != 0)


def test_paired_bootstrap_is_antisymmetric_and_resolves_only_a_clear_gap():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 2, 200), rng.integers(0, 2, 200)
    ab, ba = paired_bootstrap(a, b), paired_bootstrap(b, a)
    assert ab["diff"] == pytest.approx(-ba["diff"])
    assert ab["ci"] == pytest.approx((-ba["ci"][1], -ba["ci"][0]))
    assert ab["ci"][0] <= ab["diff"] <= ab["ci"][1]
    assert not paired_bootstrap(a, a)["resolved"]
    better = np.maximum(a, rng.integers(0, 2, 200))  # a never worse, often better
    assert paired_bootstrap(better, a)["resolved"] and paired_bootstrap(better, a)["diff"] > 0


def test_paired_bootstrap_is_a_95_percent_interval():
    # for a large sample the percentile interval is close to mean +- 1.96 standard errors
    d = np.random.default_rng(2).normal(0.1, 1.0, 1000)
    r = paired_bootstrap(d, np.zeros_like(d), n=4000)
    se = d.std() / np.sqrt(len(d))
    assert r["ci"][1] - r["ci"][0] == pytest.approx(2 * 1.96 * se, rel=0.06)
