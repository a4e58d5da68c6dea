"""The QA metrics (grounding.qa.metrics) against direct formulas and brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grounding.qa import (
    answer_f1,
    answer_set,
    expected_calibration_error,
    risk_coverage,
    score_probabilities,
)


@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=30))
def test_risk_coverage_matches_brute_force(rows):
    conf = np.array([c for c, _ in rows])
    ok = np.array([float(y) for _, y in rows])
    out = risk_coverage(conf, ok)
    n = len(rows)
    # brute force: expected risk over random tie-breaking, by averaging over orderings
    rng = np.random.default_rng(0)
    want = np.zeros(n)
    for _ in range(200):
        order = np.lexsort((rng.permutation(n), -conf))
        want += np.cumsum(1 - ok[order]) / np.arange(1, n + 1)
    want /= 200
    # exact on blocks' ends; within blocks the tie rule is the mean increment
    ends = np.r_[np.flatnonzero(np.diff(np.sort(-conf)) != 0), n - 1]
    np.testing.assert_allclose(out["risk"][ends], want[ends], atol=1e-9)
    assert out["aurc"] == pytest.approx(out["risk"].mean())


def test_ece_and_f1_by_hand():
    conf = np.array([0.95, 0.9, 0.55, 0.2])
    ok = np.array([1, 0, 1, 0])
    want = 0.5 * abs(0.5 - 0.925) + 0.25 * abs(1 - 0.55) + 0.25 * abs(0 - 0.2)
    assert expected_calibration_error(conf, ok) == pytest.approx(want)
    assert answer_f1(["a"], ["a"]) == 1.0 and answer_f1([], ["a"]) == 0.0
    assert answer_set(["a", "b", "c"], np.array([0.5, 0.3, 0.2])) == ("a", "b")
    s = score_probabilities(["a", "b"], np.array([0.2, 0.8]), ["b"])
    assert (s["hit"], s["confidence"]) == (1.0, 0.8)
    with pytest.raises(ValueError):
        risk_coverage(np.array([0.5]), np.array([2.0]))
    with pytest.raises(ValueError):
        expected_calibration_error(np.array([1.5]), np.array([1]))
