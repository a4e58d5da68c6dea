"""OpenAICompatibleModel against an in-process stub of the chat-completions API (no network)."""

from __future__ import annotations

import json
import math
import socket

import numpy as np
import pytest
from _stub import _choice, _completion

from grounding.datasets import KGQuestion
from grounding.language import Endpoint, normalize_answer
from grounding.prior import CandidateModelError, OpenAICompatibleModel

ENTITIES = ("amino_acid", "lipid", "Q42")
TEXTS = ("Amino acid", "Lipid", "Douglas Adams")
QUESTION = KGQuestion("q0", "What is made of amino acids?", "Q42", ("r",), (), (), "test")


ENDPOINT_ARGS = ("api_key", "api_key_env", "timeout", "retries", "backoff", "max_bytes")


def _model(stub, **kw):
    ep = {k: kw.pop(k) for k in ENDPOINT_ARGS if k in kw}
    ep = {"api_key_env": "GROUNDING_TEST_NO_SUCH_KEY", "backoff": 0.01} | ep
    return OpenAICompatibleModel(Endpoint(stub.url, "stub-model", **ep), ENTITIES, TEXTS, **kw)


def test_answers_map_to_entities_with_sequence_log_probabilities(server):
    server.reply(
        [
            _choice("Amino acid", [-0.1, -0.2]),
            _choice("amino_acid.", [-0.5]),  # another form of the same entity: merges
            _choice(" LIPID ", [-1.0, -1.0]),
            _choice("A Protein.", [-0.05]),  # names no entity: an out-of-graph candidate
        ]
    )
    out = _model(server, n_samples=4).propose(QUESTION, k=5)
    # by hand: amino_acid = log(e^-0.3 + e^-0.5), lipid = -2.0, "a protein" -0.05, normalized
    a, b, c = math.log(math.exp(-0.3) + math.exp(-0.5)), -2.0, -0.05
    z = math.log(math.exp(a) + math.exp(b) + math.exp(c))
    assert out.entities == ("amino_acid", "a protein", "lipid")
    np.testing.assert_allclose(out.log_prior, [a - z, c - z, b - z], atol=1e-12)
    assert out.out_of_graph == ("a protein",) and out.dropped == () and not out.abstained
    assert len(server.requests) == 1
    headers, body = server.requests[0]
    assert body["model"] == "stub-model" and body["logprobs"] is True and body["n"] == 4
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert user["content"].startswith("Question: What is made of amino acids?")
    assert "Douglas Adams" in user["content"]  # the topic Q42, by its text
    assert "Authorization" not in headers


def test_verbatim_repeats_count_once_and_k_truncates(server):
    server.reply(
        [
            _choice("Douglas Adams", [-0.1]),
            _choice("Douglas Adams", [-0.1]),  # the same sequence again: no new mass
            _choice("Q42", [-0.7]),  # a name, matched before the texts
            _choice("Lipid", [-3.0]),
        ]
    )
    out = _model(server, n_samples=4).propose(QUESTION, k=1)
    assert out.entities == ("Q42",)
    np.testing.assert_allclose(out.log_prior, [0.0])
    full = _model(server, n_samples=4).propose(QUESTION, k=5)
    q, lip = math.log(math.exp(-0.1) + math.exp(-0.7)), -3.0
    z = math.log(math.exp(q) + math.exp(lip))
    np.testing.assert_allclose(full.log_prior, [q - z, lip - z], atol=1e-12)


def test_missing_logprobs_fall_back_to_frequencies(server):
    server.reply(
        [
            _choice("Lipid", None),
            _choice("lipid", [-0.2]),
            _choice("Lipid", None),
            _choice("Q42", None),
        ]
    )
    out = _model(server, n_samples=4).propose(QUESTION, k=5)
    assert out.entities == ("lipid", "Q42")
    np.testing.assert_allclose(np.exp(out.log_prior), [3 / 4, 1 / 4])


def test_ignored_n_is_topped_up_by_further_requests(server):
    # Ollama-style: one choice per request whatever "n" says
    server.script = [
        (200, _completion([_choice("Lipid", [-0.5])])),
        (200, _completion([_choice("Q42", [-1.5])])),
        (200, _completion([_choice("Q42", [-1.5])])),
    ]
    out = _model(server, n_samples=3).propose(QUESTION, k=5)
    assert [b.get("n") for _, b in server.requests] == [3, 2, None]
    z = math.log(math.exp(-0.5) + math.exp(-1.5))
    assert out.entities == ("lipid", "Q42")
    np.testing.assert_allclose(out.log_prior, [-0.5 - z, -1.5 - z], atol=1e-12)


def test_rejected_n_falls_back_to_one_request_per_sample(server):
    # llama.cpp-style: "n" != 1 is an HTTP error
    error = json.dumps({"error": {"message": "Only one completion choice is allowed"}})
    ok = (200, _completion([_choice("Lipid", [-0.1])]))
    server.script = [(400, error.encode()), ok]
    model = _model(server, n_samples=2)
    out = model.propose(QUESTION, k=5)
    assert [b.get("n") for _, b in server.requests] == [2, None, None]
    assert out.entities == ("lipid",)
    model.propose(QUESTION, k=5)
    assert [b.get("n") for _, b in server.requests[3:]] == [None, None]


def test_unlinked_answers_are_out_of_graph_candidates_and_only_empty_ones_are_dropped(server):
    """An answer that names no entity stays a candidate (its normalized text, listed in
    ``out_of_graph``); an empty one cannot be a candidate: dropped, and when every answer is
    empty the model abstains with that reason."""
    server.reply([_choice("I do not know", [-0.1]), _choice(" ''. ", [-0.2])])
    out = _model(server, n_samples=2).propose(QUESTION, k=5)
    assert out.entities == out.out_of_graph == ("i do not know",)
    np.testing.assert_allclose(out.log_prior, [0.0])
    assert out.dropped == ("''.",) and not out.abstained  # the first line, stripped
    server.reply([_choice("", [-0.1]), _choice(" . ", [-0.2])])
    out = _model(server, n_samples=2).propose(QUESTION, k=5)
    assert out.abstained and "all empty" in out.abstain_reason
    assert out.dropped == ("", ".")


def test_an_ambiguous_answer_is_split_over_every_entity_it_names(server):
    """``bank`` names two entities (one by name, one by text): each gets half its mass, and
    it merges with another answer naming one of them by log-sum-exp."""
    ep = Endpoint(server.url, "stub-model", api_key_env="GROUNDING_TEST_NO_SUCH_KEY")
    model = OpenAICompatibleModel(ep, ("bank", "bank_2", "river"), ("Bank", "bank", "River"))
    server.reply([_choice("Bank", [-0.2]), _choice("bank_2", [-1.0]), _choice("river", [-0.7])])
    out = model.propose(QUESTION, k=5)
    w = {
        "bank": math.exp(-0.2) / 2,
        "bank_2": math.exp(-0.2) / 2 + math.exp(-1.0),
        "river": math.exp(-0.7),
    }
    z = sum(w.values())
    assert set(out.entities) == set(w) and out.out_of_graph == ()
    got = dict(zip(out.entities, np.exp(out.log_prior)))
    for e, x in w.items():
        np.testing.assert_allclose(got[e], x / z, atol=1e-12)
    assert model.linker.link("BANK.") == ("bank", "bank_2")


def test_an_out_of_graph_answer_is_grounded_as_unsupported_in_the_loop(server):
    """End to end: the adapter's out-of-graph candidate reaches ``ground`` in GroundedQA and
    comes back unsupported with slack energy kappa, beside a supported graph answer."""
    from grounding import EvidenceStatus, GroundingConfig, TypedGraph
    from grounding.qa import GroundedQA
    from grounding.retrieval import PCR, TextIndex

    graph = TypedGraph.from_triples(
        [("Q42", "r", "lipid"), ("lipid", "s", "amino_acid")], entities=ENTITIES, texts=TEXTS
    )
    server.reply([_choice("Lipid", [-0.7]), _choice("a protein", [-0.2])])
    qa = GroundedQA(
        _model(server, n_samples=2),
        PCR(TextIndex(graph), max_hops=1),
        GroundingConfig(lam=4.0, kappa=1.0),
    )
    out = qa.answer(QUESTION)
    assert out.reason is None and out.candidates.out_of_graph == ("a protein",)
    res = out.result
    status = dict(zip(res.answers, map(EvidenceStatus, np.asarray(res.status))))
    energy = dict(zip(res.answers, np.asarray(res.energy)))
    assert status == {"a protein": EvidenceStatus.UNSUPPORTED, "lipid": EvidenceStatus.SUPPORTED}
    assert energy["a protein"] == 1.0 and out.answer == "lipid"


def test_key_is_sent_only_when_configured(server, monkeypatch):
    server.reply([_choice("Lipid", [-0.1])])
    _model(server, n_samples=1, api_key="sk-test").propose(QUESTION, k=1)
    assert server.requests[-1][0]["Authorization"] == "Bearer sk-test"
    monkeypatch.setenv("GROUNDING_TEST_KEY", "from-env")
    _model(server, n_samples=1, api_key_env="GROUNDING_TEST_KEY").propose(QUESTION, k=1)
    assert server.requests[-1][0]["Authorization"] == "Bearer from-env"
    monkeypatch.delenv("GROUNDING_TEST_KEY")
    _model(server, n_samples=1, api_key_env="GROUNDING_TEST_KEY").propose(QUESTION, k=1)
    assert "Authorization" not in server.requests[-1][0]


def test_timeout_raises_naming_url_and_timeout(server):
    server.reply([_choice("Lipid", [-0.1])])
    server.delay = 0.6
    with pytest.raises(CandidateModelError, match=r"deadline of 0\.2 s") as err:
        _model(server, n_samples=1, timeout=0.2).propose(QUESTION, k=1)
    assert server.url in str(err.value)


@pytest.mark.parametrize(
    "status, body, message",
    [
        (200, b"not json{", "not JSON"),
        (200, json.dumps({"error": "overloaded"}).encode(), "no 'choices'"),
        (200, json.dumps({"choices": [{"text": "old API"}]}).encode(), "no message content"),
        (500, b'{"error": "boom"}', "HTTP 500"),
    ],
)
def test_malformed_replies_and_http_errors_raise(server, status, body, message):
    server.script = [(status, body)]
    with pytest.raises(CandidateModelError, match=message) as err:
        _model(server, n_samples=2).propose(QUESTION, k=1)
    assert server.url in str(err.value)


def test_unreachable_server_raises():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = OpenAICompatibleModel(Endpoint(f"http://127.0.0.1:{port}/v1", "m", timeout=0.5), ENTITIES)
    with pytest.raises(CandidateModelError, match=f"127.0.0.1:{port}"):
        m.propose(QUESTION, k=1)


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(entities=()), "entities"),
        (dict(texts=("only one",)), "texts"),
        (dict(n_samples=0), "n_samples"),
        (dict(max_tokens=0), "max_tokens"),
        (dict(temperature=-1.0), "temperature"),
    ],
)
def test_bad_arguments(kw, name):
    args = dict(endpoint=Endpoint("http://x/v1", "m"), entities=ENTITIES) | kw
    with pytest.raises(ValueError, match=name):
        OpenAICompatibleModel(**args)
    with pytest.raises(TypeError, match="endpoint must be a grounding.language.Endpoint"):
        OpenAICompatibleModel("http://x/v1", ENTITIES)


def test_normalize_answer():
    assert normalize_answer("  'Amino_Acid.'  ") == "amino acid"
    assert normalize_answer("A\tB\n C") == "a b c"
    for x in ("a. .", "'\"x\"'.", " _a_ . ", "Straße"):  # idempotent
        assert normalize_answer(normalize_answer(x)) == normalize_answer(x), x
