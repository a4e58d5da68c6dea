"""OpenAICompatibleModel against an in-process stub of the chat-completions API (no network)."""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from grounding.datasets import KGQuestion
from grounding.qa import CandidateModelError, OpenAICompatibleModel, normalise_answer

ENTITIES = ("amino_acid", "lipid", "Q42")
TEXTS = ("Amino acid", "Lipid", "Douglas Adams")
QUESTION = KGQuestion("q0", "What is made of amino acids?", "lipid", ("r",), (), (), "test")


def _choice(text, token_logprobs):
    lp = (
        None
        if token_logprobs is None
        else {"content": [{"token": "x", "logprob": v} for v in token_logprobs]}
    )
    return {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": lp}


class Stub:
    """What the server replies next (``body``, ``status``, ``delay``) and what it received."""

    def __init__(self):
        self.body: bytes = b"{}"
        self.status = 200
        self.delay = 0.0
        self.requests: list[tuple[dict, dict]] = []

    def reply(self, choices):
        self.body = json.dumps({"object": "chat.completion", "choices": choices}).encode()


@pytest.fixture()
def server():
    stub = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            n = int(self.headers.get("Content-Length", 0))
            stub.requests.append((dict(self.headers), json.loads(self.rfile.read(n))))
            time.sleep(stub.delay)
            self.send_response(stub.status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                self.wfile.write(stub.body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield stub
    httpd.shutdown()
    httpd.server_close()


def _model(stub, **kw):
    kw.setdefault("api_key_env", "GROUNDING_TEST_NO_SUCH_KEY")
    return OpenAICompatibleModel(stub.url, "stub-model", ENTITIES, TEXTS, **kw)


def test_answers_map_to_entities_with_sequence_log_probabilities(server):
    server.reply(
        [
            _choice("Amino acid", [-0.1, -0.2]),
            _choice("amino_acid.", [-0.5]),
            _choice(" LIPID ", [-1.0, -1.0]),
            _choice("a protein", [-0.05]),  # names no entity
        ]
    )
    out = _model(server, n_samples=4).propose(QUESTION, k=5)
    # by hand: amino_acid = log(e^-0.3 + e^-0.5), lipid = -2.0, then normalised
    a, b = math.log(math.exp(-0.3) + math.exp(-0.5)), -2.0
    z = math.log(math.exp(a) + math.exp(b))
    assert out.entities == ("amino_acid", "lipid")
    np.testing.assert_allclose(out.log_prior, [a - z, b - z], atol=1e-12)
    assert out.dropped == ("a protein",) and not out.abstained
    headers, body = server.requests[-1]
    assert body["model"] == "stub-model" and body["logprobs"] is True and body["n"] == 4
    assert body["messages"][-1]["content"].startswith("Question: What is made of amino acids?")
    assert "Authorization" not in headers


def test_texts_match_after_names_and_k_truncates(server):
    server.reply([_choice("Douglas Adams", [-0.1]), _choice("Lipid", [-3.0])])
    out = _model(server).propose(QUESTION, k=1)
    assert out.entities == ("Q42",)
    np.testing.assert_allclose(out.log_prior, [0.0])


def test_missing_logprobs_fall_back_to_frequencies(server):
    server.reply([_choice("Lipid", None), _choice("lipid", [-0.2]), _choice("Q42", None)])
    out = _model(server).propose(QUESTION, k=5)
    assert out.entities == ("lipid", "Q42")
    np.testing.assert_allclose(np.exp(out.log_prior), [2 / 3, 1 / 3])


def test_nothing_maps_is_an_abstention_with_its_reason(server):
    server.reply([_choice("I do not know", [-0.1]), _choice("", [-0.2])])
    out = _model(server).propose(QUESTION, k=5)
    assert out.abstained and "names a graph entity" in out.abstain_reason
    assert out.dropped == ("I do not know", "")


def test_key_is_sent_only_when_configured(server, monkeypatch):
    server.reply([_choice("Lipid", [-0.1])])
    _model(server, api_key="sk-test").propose(QUESTION, k=1)
    assert server.requests[-1][0]["Authorization"] == "Bearer sk-test"
    monkeypatch.setenv("GROUNDING_TEST_KEY", "from-env")
    _model(server, api_key_env="GROUNDING_TEST_KEY").propose(QUESTION, k=1)
    assert server.requests[-1][0]["Authorization"] == "Bearer from-env"


def test_timeout_malformed_and_http_errors_raise(server):
    server.reply([_choice("Lipid", [-0.1])])
    server.delay = 0.5
    with pytest.raises(CandidateModelError, match="timeout of 0.1 s"):
        _model(server, timeout=0.1).propose(QUESTION, k=1)
    server.delay = 0.0
    server.body = b"not json{"
    with pytest.raises(CandidateModelError, match="not JSON"):
        _model(server).propose(QUESTION, k=1)
    server.body = json.dumps({"error": "overloaded"}).encode()
    with pytest.raises(CandidateModelError, match="no 'choices'"):
        _model(server).propose(QUESTION, k=1)
    server.body = json.dumps({"choices": [{"text": "old API"}]}).encode()
    with pytest.raises(CandidateModelError, match="no message content"):
        _model(server).propose(QUESTION, k=1)
    server.status, server.body = 500, b"{}"
    with pytest.raises(CandidateModelError, match="HTTP 500"):
        _model(server).propose(QUESTION, k=1)


def test_unreachable_server_raises():
    m = OpenAICompatibleModel("http://127.0.0.1:9/v1", "m", ENTITIES, timeout=0.5)
    with pytest.raises(CandidateModelError, match="127.0.0.1:9"):
        m.propose(QUESTION, k=1)


@pytest.mark.parametrize(
    "kw",
    [
        dict(base_url="localhost:8000"),
        dict(entities=()),
        dict(texts=("only one",)),
        dict(timeout=0),
        dict(timeout=float("inf")),
        dict(n_samples=0),
        dict(temperature=-1.0),
        dict(model=""),
    ],
)
def test_bad_arguments(kw):
    args = dict(base_url="http://x/v1", model="m", entities=ENTITIES) | kw
    with pytest.raises(ValueError):
        OpenAICompatibleModel(**args)


def test_normalise_answer():
    assert normalise_answer("  'Amino_Acid.'  ") == "amino acid"
    assert normalise_answer("A\tB\n C") == "a b c"
