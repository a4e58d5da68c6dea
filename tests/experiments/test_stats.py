"""The interval estimates behind every "resolved / not resolved" sentence in the docs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments._stats import (
    paired_bootstrap,
    paired_seed_interval,
    seed_bootstrap,
    seed_t_interval,
    t975,
    verdict,
    welch_t_interval,
    wilson,
)


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


@pytest.mark.parametrize(
    "ci, paper, kw, expected",
    [
        ((1.0, 5.0), 3.0, {}, "holds"),  # off 0 on the paper's side, holds its value
        ((1.0, 5.0), 8.6, {}, "fails"),  # a smaller effect than the paper's, resolved
        ((-2.9, 6.0), -8.6, {}, "fails"),  # PRoH's target hyperedges read as numbers
        ((-5.2, 1.7), -5.3, {}, "fails"),  # by 0.1 point
        ((-6.0, 1.7), -5.3, {}, "not resolved"),  # holds both 0 and the paper's value
        ((-4.0, -1.0), 3.0, {}, "fails"),  # the other side of 0
        ((0.5, 2.0), 1.0, dict(direction_only=True), "holds"),
        ((-2.0, -0.5), 1.0, dict(direction_only=True), "fails"),
        ((-1.0, 2.0), 1.0, dict(direction_only=True), "not resolved"),
        ((0.6, 0.8), 0.7, dict(level=True), "holds"),
        ((0.6, 0.8), 0.9, dict(level=True), "fails"),
        ((1.0, 5.0), 3.0, dict(tested=False), "not tested"),
        ((1.0, 5.0), None, {}, ""),  # no paper claim, no verdict
    ],
)
def test_one_verdict_rule(ci, paper, kw, expected):
    assert verdict(ci, paper, **kw) == expected


def test_verdict_refuses_a_reversed_interval():
    with pytest.raises(ValueError, match="low <= high"):
        verdict((2.0, 1.0), 1.0)


def test_the_seed_bootstrap_carries_the_variance_between_seeds():
    rng = np.random.default_rng(0)
    # three seeds whose differences disagree (+0.3, 0, -0.3) against three that agree
    disagree = [rng.binomial(1, p, 200).astype(float) for p in (0.8, 0.5, 0.2)]
    agree = [rng.binomial(1, 0.5, 200).astype(float) for _ in range(3)]
    base = [np.full(200, 0.5) for _ in range(3)]
    wide, narrow = seed_bootstrap(disagree, base), seed_bootstrap(agree, base)
    pooled = paired_bootstrap(np.concatenate(disagree), np.concatenate(base))
    assert wide["seeds"] == 3 and wide["n"] == 600
    assert wide["diff"] == pytest.approx(pooled["diff"])
    # the question-level interval ignores the spread between seeds; the two-level one does not
    assert wide["ci"][1] - wide["ci"][0] > 2 * (pooled["ci"][1] - pooled["ci"][0])
    assert narrow["ci"][1] - narrow["ci"][0] < wide["ci"][1] - wide["ci"][0]
    one = seed_bootstrap(disagree[:1], base[:1])
    assert one["seeds"] == 1 and one["ci"] == paired_bootstrap(disagree[0], base[0])["ci"]


def test_the_seed_level_t_interval_by_hand():
    got = seed_t_interval([1.0, 2.0, 3.0])  # mean 2, s.d. 1, t(2) = 4.303
    half = 4.303 / math.sqrt(3)
    assert got["diff"] == 2.0 and got["seeds"] == 3
    assert got["ci"] == pytest.approx((2 - half, 2 + half))
    assert not got["resolved"]
    with pytest.raises(ValueError, match="at least 2 seeds"):
        seed_t_interval([1.0])


def test_welch_interval_by_hand_and_the_t_table_reads_down():
    # equal s.d. and seeds: df = 2 (n - 1) = 4, t = 2.776, se = s sqrt(2 / n)
    got = welch_t_interval((0.5, 0.1, 3), (0.2, 0.1, 3))
    assert got["df"] == pytest.approx(4.0)
    half = 2.776 * 0.1 * math.sqrt(2 / 3)
    assert got["ci"] == pytest.approx((0.3 - half, 0.3 + half)) and got["resolved"]
    assert t975(4.9) == t975(4) == 2.776 and t975(1e12) == 1.96
    with pytest.raises(ValueError, match="degree of freedom"):
        t975(0.5)
    with pytest.raises(ValueError, match="at least 2 seeds a side"):
        welch_t_interval((0.5, 0.1, 1), (0.2, 0.1, 3))


def test_the_paired_seed_interval_takes_each_seeds_mean_difference():
    a = [np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0]), np.array([1.0, 1.0, 1.0, 1.0])]
    b = [np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0]), np.array([0.0, 1.0, 0.0, 1.0])]
    got = paired_seed_interval(a, b)  # per-seed mean differences 1/3, 0, 1/2
    assert got["per_seed"] == pytest.approx([1 / 3, 0.0, 0.5])
    assert got == seed_t_interval([1 / 3, 0.0, 0.5])
    with pytest.raises(ValueError):
        paired_seed_interval(a, b[:2])
