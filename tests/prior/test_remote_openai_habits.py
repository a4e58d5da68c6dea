"""Habits of the official OpenAI client that carry over: a refused choice among good ones,
Azure OpenAI's ``?api-version=`` URLs and ``api-key`` header, a ``User-Agent``, the
``max_retries`` name, and answers written with an article; against the in-process stub."""

from __future__ import annotations

import pytest
from _stub import _choice, _completion

from grounding.datasets import KGQuestion
from grounding.language import Endpoint
from grounding.prior import OpenAICompatibleModel

ENTITIES = ("mapk_pathway", "vemurafenib", "braf")
QUESTION = KGQuestion("q0", "What does vemurafenib inhibit?", "vemurafenib", ("r",), (), (), "t")


def _endpoint(url: str, **kw) -> Endpoint:
    return Endpoint(url, "stub-model", **({"api_key_env": "GROUNDING_TEST_NO_KEY"} | kw))


def _refused(text: str | None = "I can't help with that.") -> dict:
    """A choice as OpenAI sends a refusal: null content, the refusal beside it."""
    choice = _choice(None, None)
    choice["message"]["refusal"] = text
    choice["finish_reason"] = "stop"
    return choice


def test_a_refused_choice_is_set_aside_and_the_others_are_answered(server):
    server.reply([_refused(), _choice("BRAF", [-0.2]), _choice("The MAPK pathway.", [-1.0])])
    model = OpenAICompatibleModel(_endpoint(server.url, backoff=0.01), ENTITIES, n_samples=3)
    out = model.propose(QUESTION, k=5)
    assert not out.abstained and out.entities == ("braf", "mapk_pathway")
    assert out.out_of_graph == () and out.dropped == ()
    # a null content without a refusal (every token spent before the answer) is set aside too
    server.reply([{"message": {"role": "assistant", "content": None}, "finish_reason": "length"},
                  _choice("braf", [-0.1])])  # fmt: skip
    assert model.propose(QUESTION, k=5).entities == ("braf",)


def test_when_every_choice_is_refused_the_model_abstains_quoting_the_refusal(server):
    server.reply([_refused(), _refused("Not allowed.")])
    out = OpenAICompatibleModel(_endpoint(server.url), ENTITIES, n_samples=2).propose(QUESTION, 5)
    assert out.abstained
    assert 'choice 0 was refused ("I can\'t help with that.")' in out.abstain_reason
    assert "choice 1 was refused ('Not allowed.')" in out.abstain_reason
    # a reply that is not a chat completion is still an error, not an abstention
    server.script = [(200, _completion([{"text": "old completions API"}]))]
    with pytest.raises(Exception, match="no message content"):
        OpenAICompatibleModel(_endpoint(server.url), ENTITIES, n_samples=1).propose(QUESTION, 5)


def test_azure_api_version_url_and_api_key_header(server):
    url = server.url + "/openai/deployments/gpt-4o?api-version=2024-06-01"
    ep = _endpoint(url, api_key="azure-key-123", key_header="api-key")
    assert ep.url.endswith("/openai/deployments/gpt-4o/chat/completions?api-version=2024-06-01")
    server.reply([_choice("braf", [-0.1])])
    ep.chat({"messages": []})
    headers, _ = server.requests[-1]
    assert (
        server.paths[-1] == "/v1/openai/deployments/gpt-4o/chat/completions?api-version=2024-06-01"
    )
    assert headers["api-key"] == "azure-key-123" and "Authorization" not in headers
    for bad in ("?key=sk-secret", "?api-version=1&x=2", "?api-version=a/b"):
        with pytest.raises(ValueError) as err:
            _endpoint(server.url + bad)
        assert "sk-secret" not in str(err.value)
    with pytest.raises(ValueError, match="key_header must be one of"):
        _endpoint(server.url, key_header="X-Key")


def test_every_request_names_the_client_and_the_bearer_key_is_the_default(server):
    server.reply([_choice("braf", [-0.1])])
    _endpoint(server.url, api_key="sk-abc").chat({"messages": []})
    headers, _ = server.requests[-1]
    assert headers["User-Agent"].startswith("grounding/")
    assert headers["Authorization"] == "Bearer sk-abc" and "api-key" not in headers


def test_max_retries_is_the_official_name_of_retries(server):
    server.script = [(503, b"busy")]
    with pytest.raises(Exception, match="HTTP 503"):
        _endpoint(server.url, max_retries=0, backoff=0.01).chat({"messages": []})
    assert len(server.requests) == 1
    with pytest.raises(Exception, match="HTTP 503"):
        _endpoint(server.url, max_retries=2, backoff=0.01).chat({"messages": []})
    assert len(server.requests) == 1 + 3
    assert _endpoint(server.url).retries == 2 and _endpoint(server.url, retries=0).retries == 0
    with pytest.raises(ValueError, match="not both"):
        _endpoint(server.url, retries=1, max_retries=1)
    with pytest.raises(ValueError, match="max_retries"):
        _endpoint(server.url, max_retries=-1)
