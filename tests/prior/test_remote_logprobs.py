"""OpenAICompatibleModel on invalid token log-probabilities: a value above 0 (a probability over
1) or NaN is an error naming the choice, never a silent switch to sample frequencies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _stub import _choice

from grounding.datasets import KGQuestion
from grounding.language import Endpoint
from grounding.prior import CandidateModelError, OpenAICompatibleModel

QUESTION = KGQuestion("q0", "What is made of amino acids?", "Q42", ("r",), (), (), "test")


def _model(stub, n):
    ep = Endpoint(stub.url, "stub", api_key_env="GROUNDING_TEST_NO_SUCH_KEY", retries=0)
    return OpenAICompatibleModel(ep, ("lipid", "Q42"), n_samples=n)


@pytest.mark.parametrize("bad", [0.5, 1e-3, float("nan"), float("inf")])
def test_a_positive_or_nan_logprob_is_an_error_naming_the_choice(server, bad):
    server.reply([_choice("Lipid", [-0.1]), _choice("Q42", [-0.2, bad])])
    with pytest.raises(CandidateModelError, match=r"choice 1, token 1 has log-probability") as e:
        _model(server, 2).propose(QUESTION, k=5)
    assert repr(bad) in str(e.value) and server.url in str(e.value)


def test_rounding_above_zero_counts_as_zero(server):
    server.reply([_choice("Lipid", [5e-7, -0.1]), _choice("Q42", [-1.0])])
    out = _model(server, 2).propose(QUESTION, k=5)
    z = math.log(math.exp(-0.1) + math.exp(-1.0))
    assert out.entities == ("lipid", "Q42")
    np.testing.assert_allclose(out.log_prior, [-0.1 - z, -1.0 - z], atol=1e-12)


def test_a_minus_infinite_logprob_still_counts_as_absent(server):
    server.reply(
        [_choice("Lipid", [float("-inf")]), _choice("Lipid", [-0.1]), _choice("Q42", [-3.0])]
    )
    out = _model(server, 3).propose(QUESTION, k=5)
    np.testing.assert_allclose(np.exp(out.log_prior), [2 / 3, 1 / 3])  # sample frequencies
