"""`grounding.language.Endpoint` against local servers that misbehave (127.0.0.1 only, bounded):
redirects to another origin, endless or oversized replies, a reply dripped a byte at a time,
deeply nested JSON, error bodies echoing the key, retryable and non-retryable statuses."""

from __future__ import annotations

import copy
import json
import pickle
import random
import re
import socket
import string
import time
import urllib.parse

import pytest
from _stub import _choice, _completion, raw_reply, raw_servers

from grounding.language import Endpoint, EndpointError, HTTPStatusError, json_content
from grounding.plans import LLMPlanner, PlanError

KEY = "sk-secret-0123456789abcdef"
OK = _completion([_choice("Lipid", [-0.1])])


_reply = raw_reply


@pytest.fixture()
def serve(monkeypatch):
    yield from raw_servers(monkeypatch)


def _endpoint(server, **kw):
    return Endpoint(server.url, "m", **({"api_key": KEY, "backoff": 0.01} | kw))


# ---------------------------------------------------------------------------- the key


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_never_followed_and_the_key_never_leaves(serve, status):
    other = serve(lambda c, r: c.sendall(_reply(200, OK)))
    where = f"{other.url}/chat/completions"
    server = serve(lambda c, r: c.sendall(_reply(status, headers=[f"Location: {where}"])))
    with pytest.raises(EndpointError, match=f"HTTP {status} redirect to http://127.0.0.1") as e:
        _endpoint(server).chat({"messages": []})
    assert other.requests == [] and KEY not in str(e.value)
    assert server.requests[0][1]["Authorization"] == f"Bearer {KEY}"


def test_an_error_body_echoing_the_key_is_redacted(serve):
    def echo(conn, request):
        _, headers, _ = request
        conn.sendall(_reply(401, json.dumps({"got": headers["Authorization"]}).encode()))

    server = serve(echo)
    with pytest.raises(HTTPStatusError, match="HTTP 401") as e:
        _endpoint(server).chat({"messages": []})
    assert KEY not in str(e.value) and "Bearer ***" in str(e.value) and e.value.status == 401
    assert len(server.requests) == 1  # 401 is not retried


def test_a_key_split_by_the_quote_limit_is_still_redacted(serve):
    # the key starts just before the 300th character of the body: a naive cut would keep
    # its first half
    body = ("x" * 290 + KEY).encode()
    server = serve(lambda c, r: c.sendall(_reply(400, body)))
    with pytest.raises(HTTPStatusError) as e:
        _endpoint(server).chat({"messages": []})
    assert KEY[:8] not in str(e.value)


def _key(n, alphabet=string.ascii_letters + string.digits + "-_"):
    return "".join(random.Random(n).choices(alphabet, k=n))


CLASSIC = "sk-" + _key(48)  # 51 characters
PROJECT = "sk-proj-" + _key(154)  # 162 characters
SLASHED = "tok/" + _key(40) + "+x/y"  # a base64-like token: JSON may escape its slashes


def _leaks(message, key):
    """The longest run of the key's characters (4 or more) that shows in the message."""
    for n in range(len(key), 3, -1):
        if any(key[i : i + n] in message for i in range(len(key) - n + 1)):
            return key[:n]
    return ""


@pytest.mark.parametrize("key", [CLASSIC, PROJECT])
@pytest.mark.parametrize(
    "body",
    [
        lambda k: "错误" * 50 + k,  # CJK: 3 bytes a character, the key within the quote
        lambda k: "错" * 250 + k,  # the key across the 300-character cut
        lambda k: "错" * 298 + k,
        lambda k: "😀" * 120 + k + " and again " + k,  # 4-byte emoji, the key echoed twice
        lambda k: "é" * 280 + "Bearer " + k,
        lambda k: json.dumps({"error": {"message": "密钥无效 " * 30 + k}}, ensure_ascii=False),
        lambda k: json.dumps({"error": {"message": "bad key " + k}}),  # the same characters
        lambda k: "x" * 290 + k[:20],  # a server that cuts the key itself
        lambda k: "错" * 100 + k[:30],
    ],
)
def test_no_part_of_the_key_survives_a_multibyte_error_body(serve, key, body):
    text = body(key).encode()
    server = serve(lambda c, r: c.sendall(_reply(400, text)))
    with pytest.raises(HTTPStatusError) as e:
        _endpoint(server, api_key=key).chat({"messages": []})
    assert _leaks(str(e.value), key) == "" and "***" in str(e.value)


@pytest.mark.parametrize(
    "echo",
    [
        lambda k: json.dumps({"error": "bad key " + k}).replace("/", "\\/"),  # PHP-style JSON
        lambda k: json.dumps({"error": "bad key " + k}),
        lambda k: "GET /v1?key=" + urllib.parse.quote(k, safe=""),  # percent-encoded
    ],
)
def test_an_escaped_key_is_redacted(serve, echo):
    server = serve(lambda c, r: c.sendall(_reply(400, echo(SLASHED).encode())))
    with pytest.raises(HTTPStatusError) as e:
        _endpoint(server, api_key=SLASHED).chat({"messages": []})
    assert "***" in str(e.value)
    for form in (SLASHED, SLASHED.replace("/", "\\/"), urllib.parse.quote(SLASHED, safe="")):
        assert _leaks(str(e.value), form) == ""


def test_a_reason_phrase_echoing_the_key_is_redacted_and_cut(serve):
    line = f"HTTP/1.1 400 {'错' * 120}{PROJECT}{'z' * 3000}\r\nContent-Length: 0\r\n\r\n"
    line = line.encode()
    server = serve(lambda c, r: c.sendall(line))
    with pytest.raises(HTTPStatusError) as e:
        _endpoint(server, api_key=PROJECT).chat({"messages": []})
    assert _leaks(str(e.value), PROJECT) == "" and len(str(e.value)) < 800


# ---------------------------------------------------------------------------- pickling


def test_a_pickle_never_holds_the_key(serve):
    server = serve(lambda c, r: c.sendall(_reply(200, OK)))
    ep = _endpoint(server)
    assert KEY not in repr(ep) and KEY not in str(ep)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert KEY.encode() not in pickle.dumps(ep, protocol)
    back = pickle.loads(pickle.dumps(ep))
    assert not back.has_key and "key=not pickled" in repr(back)
    assert (back.url, back.model, back.timeout) == (ep.url, ep.model, ep.timeout)
    with pytest.raises(EndpointError, match=r"unpickled without its key.*api_key"):
        back.chat({"messages": []})
    assert server.requests == []  # nothing was sent without the key
    ep.chat({"messages": []})  # the original keeps it
    assert server.requests[-1][1]["Authorization"] == f"Bearer {KEY}"


def test_a_key_from_the_environment_is_read_again_when_unpickled(serve, monkeypatch):
    server = serve(lambda c, r: c.sendall(_reply(200, OK)))
    monkeypatch.setenv("GROUNDING_TEST_KEY", KEY)
    ep = Endpoint(server.url, "m", api_key_env="GROUNDING_TEST_KEY")
    data = pickle.dumps(ep)
    assert KEY.encode() not in data
    pickle.loads(data).chat({"messages": []})
    assert server.requests[-1][1]["Authorization"] == f"Bearer {KEY}"
    monkeypatch.delenv("GROUNDING_TEST_KEY")
    lost = pickle.loads(data)
    with pytest.raises(EndpointError, match=r"\$GROUNDING_TEST_KEY is not set"):
        lost.chat({"messages": []})
    assert len(server.requests) == 1 and "key=not pickled" in repr(lost)
    monkeypatch.setenv("GROUNDING_TEST_KEY", KEY)  # pickled again where the variable is set
    pickle.loads(pickle.dumps(lost)).chat({"messages": []})
    assert server.requests[-1][1]["Authorization"] == f"Bearer {KEY}"


def test_copies_keep_the_key_and_a_model_pickles_without_it(serve):
    from grounding.qa import OpenAICompatibleModel

    server = serve(lambda c, r: c.sendall(_reply(200, OK)))
    ep = _endpoint(server)
    for twin in (copy.copy(ep), copy.deepcopy(ep)):
        assert twin.has_key
        twin.chat({"messages": []})
        assert server.requests[-1][1]["Authorization"] == f"Bearer {KEY}"
    model = OpenAICompatibleModel(ep, ["lipid"])
    assert KEY.encode() not in pickle.dumps(model)
    assert copy.deepcopy(model).endpoint.has_key


# ---------------------------------------------------------------------------- a 200 error


@pytest.mark.parametrize(
    "error, shown",
    [
        ({"message": "The model `gpt-9` does not exist", "type": "invalid_request_error"}, "gpt-9"),
        ({"message": "quota exceeded", "code": 429}, "quota exceeded"),
        ("server overloaded", "server overloaded"),
    ],
)
def test_a_200_reply_carrying_an_error_object_quotes_it(serve, error, shown):
    server = serve(lambda c, r: c.sendall(_reply(200, json.dumps({"error": error}).encode())))
    with pytest.raises(EndpointError, match="no 'choices' list") as e:
        _endpoint(server).chat({"messages": []})
    assert shown in str(e.value)


def test_a_200_error_message_is_redacted_and_cut(serve):
    error = {"error": {"message": "错" * 250 + PROJECT + "z" * 5000}}
    server = serve(lambda c, r: c.sendall(_reply(200, json.dumps(error).encode())))
    with pytest.raises(EndpointError, match="错") as e:
        _endpoint(server, api_key=PROJECT).chat({"messages": []})
    assert _leaks(str(e.value), PROJECT) == "" and len(str(e.value)) < 600


@pytest.mark.parametrize(
    "url, words",
    [
        ("http://user:pa55word@127.0.0.1:1/v1", "must not carry credentials"),
        ("http://127.0.0.1:1/v1?x=1", "a '?query' other than '?api-version=...'"),
        ("http://127.0.0.1:1/v1#frag", "without '#fragment'"),
        ("localhost:8000", "http(s) URL with a host"),
        ("ftp://host/v1", "http(s) URL with a host"),
        ("http:///v1", "http(s) URL with a host"),
        ("http://host:99999/v1", "not a valid URL"),
        ("http://host/v1 x", "printable ASCII"),
        (b"http://host/v1", "URL str"),
    ],
)
def test_bad_base_urls_are_refused_without_quoting_secrets(url, words):
    with pytest.raises(ValueError, match=re.escape(words)) as e:
        Endpoint(url, "m")
    assert "pa55word" not in str(e.value)


def test_a_full_chat_completions_url_is_not_doubled():
    assert Endpoint("http://h/v1/chat/completions/", "m").url == "http://h/v1/chat/completions"
    assert Endpoint("http://h:8/v1/", "m").url == "http://h:8/v1/chat/completions"


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(model=""), "model"),
        (dict(timeout=0), "timeout"),
        (dict(timeout=float("nan")), "timeout"),
        (dict(timeout=True), "timeout"),
        (dict(timeout=1e10), "timeout"),
        (dict(timeout=86400.5), "timeout"),
        (dict(timeout=float("inf")), "timeout"),
        (dict(backoff=1e10), "backoff"),
        (dict(max_bytes=0), "max_bytes"),
        (dict(retries=-1), "retries"),
        (dict(retries=1.5), "retries"),
        (dict(backoff=-1), "backoff"),
        (dict(api_key="sk-1\r\nX-Injected: 1"), "api_key"),
        (dict(api_key=123), "api_key"),
    ],
)
def test_bad_arguments_name_themselves(kw, name):
    with pytest.raises(ValueError, match=name) as e:
        Endpoint("http://h/v1", **({"model": "m"} | kw))
    assert "X-Injected" not in str(e.value)


def test_the_largest_timeout_is_one_day():
    assert Endpoint("http://h/v1", "m", timeout=86400, backoff=86400).timeout == 86400.0
    with pytest.raises(ValueError, match=r"timeout must be .* at most 86400"):
        Endpoint("http://h/v1", "m", timeout=1e10)


def test_the_key_comes_from_the_environment_and_never_from_repr(monkeypatch):
    monkeypatch.setenv("GROUNDING_TEST_KEY", KEY)
    ep = Endpoint("http://h/v1", "m", api_key_env="GROUNDING_TEST_KEY")
    assert ep.has_key and KEY not in repr(ep) and KEY not in str(vars(ep).get("url"))
    monkeypatch.delenv("GROUNDING_TEST_KEY")
    assert not Endpoint("http://h/v1", "m", api_key_env="GROUNDING_TEST_KEY").has_key


# ---------------------------------------------------------------------------- bounds


def test_an_oversized_reply_is_not_read(serve):
    big = 200 << 20  # announced, never sent: the header alone is refused
    server = serve(
        lambda c, r: c.sendall(_reply(200).replace(b"Length: 0", f"Length: {big}".encode()))
    )
    with pytest.raises(EndpointError, match="over the size cap of 1,048,576 bytes"):
        _endpoint(server, max_bytes=1 << 20).chat({"messages": []})


def test_an_endless_reply_is_cut_at_the_cap(serve):
    sent = []

    def endless(conn, request):  # no Content-Length: the body runs until the client leaves
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        chunk = b" " * 65536
        for _ in range(800):  # 50 MiB at most
            conn.sendall(chunk)
            sent.append(len(chunk))

    server = serve(endless)
    with pytest.raises(EndpointError, match="over the size cap"):
        _endpoint(server, max_bytes=1 << 20).chat({"messages": []})


def test_a_dripped_reply_is_cut_at_the_deadline(serve):
    def drip(conn, request):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(100):
            conn.sendall(b" ")
            time.sleep(0.1)

    server = serve(drip)
    t0 = time.monotonic()
    with pytest.raises(EndpointError, match=r"deadline of 0\.6 s"):
        _endpoint(server, timeout=0.6).chat({"messages": []})
    assert time.monotonic() - t0 < 2.0  # each read alone would never time out


def test_dripped_headers_are_cut_at_the_deadline(serve):
    def drip(conn, request):
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 100:
            conn.sendall(bytes([byte]))
            time.sleep(0.1)

    server = serve(drip)
    t0 = time.monotonic()
    with pytest.raises(EndpointError, match="deadline"):
        _endpoint(server, timeout=0.6).chat({"messages": []})
    assert time.monotonic() - t0 < 2.0


def test_a_deeply_nested_reply_is_an_endpoint_error(serve):
    deep = b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    server = serve(lambda c, r: c.sendall(_reply(200, deep)))
    with pytest.raises(EndpointError, match="nested too deep"):
        _endpoint(server).chat({"messages": []})
    # the planner's fallback does not swallow a broken endpoint, and nothing escapes as
    # RecursionError
    with pytest.raises(EndpointError, match="nested too deep"):
        LLMPlanner(_endpoint(server), fallback="flat").plan("Who?")


def test_a_deeply_nested_plan_is_a_plan_error_and_falls_back(serve):
    content = "[" * 100_000 + "]" * 100_000
    server = serve(lambda c, r: c.sendall(_reply(200, _completion([_choice(content, None)]))))
    with pytest.raises(PlanError, match="nested too deep"):
        LLMPlanner(_endpoint(server), rewrite=False).plan("Who?")
    flat = LLMPlanner(_endpoint(server), rewrite=False, fallback="flat").plan("Who?")
    assert len(flat.steps) == 1 and "nested too deep" in flat.fallback
    with pytest.raises(ValueError, match="nested too deep"):
        json_content(content)


def test_a_huge_error_body_gives_a_short_message(serve):
    server = serve(lambda c, r: c.sendall(_reply(400, b"e" * (20 << 20))))
    with pytest.raises(HTTPStatusError) as e:
        _endpoint(server).chat({"messages": []})
    assert len(str(e.value)) < 500


# ---------------------------------------------------------------------------- retries


def _script(*replies):
    """A handler serving ``replies`` in order (the last one repeated)."""
    queue = list(replies)

    def handler(conn, request):
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if reply is None:  # hang up without a reply
            return
        conn.sendall(reply)

    return handler


def test_429_and_5xx_are_retried_with_backoff(serve):
    server = serve(_script(_reply(429, headers=["Retry-After: 0"]), _reply(503), _reply(200, OK)))
    choices = _endpoint(server, retries=2).chat({"messages": []})
    assert choices[0]["message"]["content"] == "Lipid" and len(server.requests) == 3


def test_retries_run_out_with_the_last_error(serve):
    server = serve(_script(_reply(502, b"bad gateway")))
    with pytest.raises(HTTPStatusError, match="HTTP 502") as e:
        _endpoint(server, retries=2).chat({"messages": []})
    assert e.value.status == 502 and len(server.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(serve, status):
    server = serve(_script(_reply(status)))
    with pytest.raises(HTTPStatusError, match=f"HTTP {status}"):
        _endpoint(server, retries=3).chat({"messages": []})
    assert len(server.requests) == 1


def test_a_dropped_connection_is_retried(serve):
    server = serve(_script(None, _reply(200, OK)))
    assert _endpoint(server, retries=1).chat({"messages": []})[0]["message"]["content"] == "Lipid"
    assert len(server.requests) == 2


def test_the_deadline_bounds_the_retries(serve):
    server = serve(_script(_reply(503, headers=["Retry-After: 30"])))
    t0 = time.monotonic()
    with pytest.raises(HTTPStatusError, match="HTTP 503"):
        _endpoint(server, retries=5, timeout=1.0).chat({"messages": []})
    assert time.monotonic() - t0 < 1.5 and len(server.requests) == 1


def test_a_refused_connection_is_clear_and_not_retried():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(EndpointError, match=f"127.0.0.1:{port}.*connection refused"):
        Endpoint(f"http://127.0.0.1:{port}/v1", "m", timeout=2).chat({"messages": []})


def test_the_request_carries_the_model_and_the_body(serve):
    server = serve(_script(_reply(200, OK)))
    _endpoint(server).chat({"messages": [{"role": "user", "content": "hi"}], "n": 2})
    line, headers, body = server.requests[0]
    assert line == "POST /v1/chat/completions HTTP/1.1"
    assert json.loads(body) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "n": 2,
    }
