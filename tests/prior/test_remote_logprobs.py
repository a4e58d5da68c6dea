"""OpenAICompatibleModel on invalid token log-probabilities: a choice with a value above 0 (a
probability over 1) or NaN is set aside with its reason, the others kept, never a silent switch
to sample frequencies; a malformed ``logprobs`` field is an absent one; one bad reply in a batch
of questions costs no other question its answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _stub import _choice

from grounding.datasets import KGQuestion
from grounding.language import Endpoint
from grounding.prior import OpenAICompatibleModel

QUESTION = KGQuestion("q0", "What is made of amino acids?", "Q42", ("r",), (), (), "test")


def _model(stub, n):
    ep = Endpoint(stub.url, "stub", api_key_env="GROUNDING_TEST_NO_SUCH_KEY", retries=0)
    return OpenAICompatibleModel(ep, ("lipid", "Q42"), n_samples=n)


@pytest.mark.parametrize("bad", [0.5, 1e-3, float("nan"), float("inf")])
def test_a_choice_with_a_positive_or_nan_logprob_is_set_aside_with_its_reason(server, bad):
    server.reply([_choice("Lipid", [-0.1]), _choice("Q42", [-0.2, bad])])
    out = _model(server, 2).propose(QUESTION, k=5)
    assert out.entities == ("lipid",) and not out.abstained  # the valid choice is kept
    (dropped,) = out.dropped
    what = "nan (not a number)" if math.isnan(bad) else f"{bad!r} (above 0"
    assert dropped.startswith("Q42 (choice 1, token 1 has log-probability " + what)


def test_when_every_choice_is_broken_the_model_abstains_with_the_reasons(server):
    server.reply([_choice("Lipid", [float("nan")]), _choice("Q42", [0.5])])
    out = _model(server, 2).propose(QUESTION, k=5)
    assert out.abstained and server.url in out.abstain_reason
    assert "choice 0, token 0 has log-probability nan" in out.abstain_reason
    assert "choice 1, token 0 has log-probability 0.5" in out.abstain_reason
    assert len(out.dropped) == 2


@pytest.mark.parametrize("field", [[-0.5, -1.0], "-0.5", -0.5, {"content": "x"}])
def test_a_malformed_logprobs_field_counts_as_absent(server, field):
    """Sample frequencies, as for log-probabilities never sent (module docstring)."""
    bad = _choice("Lipid", None) | {"logprobs": field}
    server.reply([bad, _choice("Lipid", [-0.1]), _choice("Q42", [-3.0])])
    out = _model(server, 3).propose(QUESTION, k=5)
    np.testing.assert_allclose(np.exp(out.log_prior), [2 / 3, 1 / 3])


def test_one_malformed_reply_in_a_batch_of_fifty_questions_costs_no_other_answer(server):
    """Fifty questions through GroundedQA, one of them answered with a ``logprobs`` field of
    the wrong type: every question gets its outcome, the other 49 as if it were not there."""
    from _stub import _completion

    from grounding import GroundingConfig, TypedGraph
    from grounding.qa import GroundedQA
    from grounding.retrieval import PCR, TextIndex

    graph = TypedGraph.from_triples([("Q42", "r", "lipid")], entities=["Q42", "lipid"])
    good = _completion([_choice("Lipid", [-0.1])])
    bad = _completion([_choice("Lipid", None) | {"logprobs": [1, 2]}])
    server.script = [(200, bad if i == 17 else good) for i in range(50)] + [(200, good)]
    questions = [QUESTION] * 50
    qa = GroundedQA(_model(server, 1), PCR(TextIndex(graph), max_hops=1),
                    GroundingConfig(lam=1.0, kappa=1.0), k_nodes=2)  # fmt: skip
    outs = qa.answer_batch(questions)
    assert len(outs) == 50 and all(o.reason is None and o.answer == "lipid" for o in outs)


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
