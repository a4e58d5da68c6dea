"""Candidate sets (grounding.prior.candidates): normalization, merging, validation."""

from __future__ import annotations

import numpy as np
import pytest

from grounding.prior import (
    Candidates,
)


def test_candidates_from_scores_and_validation():
    c = Candidates.from_scores(["a", "b", "a", "c"], [0.0, np.log(2), 0.0, -np.inf], k=2)
    assert c.entities == ("a", "b")
    np.testing.assert_allclose(np.exp(c.log_prior), [0.5, 0.5])
    assert Candidates.from_scores(["a"], [-np.inf]).abstained
    for bad in (
        dict(entities=(), log_prior=[]),
        dict(entities=("a", "a"), log_prior=[0.0, 0.0]),
        dict(entities=("a",), log_prior=[0.5]),
        dict(entities=("a",), log_prior=[np.nan]),
    ):
        with pytest.raises(ValueError):
            Candidates(**bad)
    with pytest.raises(ValueError, match="reason"):
        Candidates.abstain("")
