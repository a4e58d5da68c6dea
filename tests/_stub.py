"""In-process stubs of the chat-completions API (no network), shared by the tests of the
OpenAI-compatible candidate model, the LLM planner and the endpoint: :func:`server`, a
scripted stub, and :class:`RawServer`, a server whose replies are written byte for byte (over
TLS when given a context)."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

#: The proxy variables the endpoint reads: cleared by the fixtures, so that a proxy set on the
#: test machine never carries the tests' local traffic.
PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy", "request_method")


def no_proxies(monkeypatch) -> None:
    """Unset every proxy variable (both cases) for one test."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def _choice(text, token_logprobs):
    lp = (
        None
        if token_logprobs is None
        else {"content": [{"token": "x", "logprob": v} for v in token_logprobs]}
    )
    return {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": lp}


def _completion(choices) -> bytes:
    return json.dumps({"object": "chat.completion", "choices": choices}).encode()


class Stub:
    """The server's next replies (``(status, body)``, served in order, the last one repeated),
    a delay before each, and the ``(headers, json body)`` and target of every request
    received."""

    def __init__(self):
        self.script: list[tuple[int, bytes]] = [(200, b"{}")]
        self.delay = 0.0
        self.requests: list[tuple[dict, dict]] = []
        self.paths: list[str] = []  # the request target of each request

    def reply(self, choices, status=200):
        self.script = [(status, _completion(choices))]

    def next(self) -> tuple[int, bytes]:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]


@pytest.fixture()
def server(monkeypatch):
    no_proxies(monkeypatch)
    stub = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            n = int(self.headers.get("Content-Length", 0))
            stub.requests.append((dict(self.headers), json.loads(self.rfile.read(n))))
            stub.paths.append(self.path)
            time.sleep(stub.delay)
            status, body = stub.next()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield stub
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=1)


class RawServer:
    """A one-thread HTTP server on 127.0.0.1 whose replies are written by ``handler(sock,
    request)`` byte for byte; records every request (``(request line, headers, body)``).
    With ``tls`` (a server-side ``ssl.SSLContext``) it speaks HTTPS."""

    def __init__(self, handler, tls: ssl.SSLContext | None = None):
        self.handler, self.requests, self.tls = handler, [], tls
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/v1"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            try:
                conn.settimeout(5)
                if self.tls is not None:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                with conn:
                    self.requests.append(read_request(conn))
                    self.handler(conn, self.requests[-1])
            except OSError:  # the client hung up or refused the certificate
                conn.close()

    def close(self):
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


def read_request(conn):
    """``(request line, headers, body)`` of one HTTP request read from a socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionResetError("the client hung up")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    line, *fields = head.decode().split("\r\n")
    headers = dict(f.split(": ", 1) for f in fields)
    while len(body) < int(headers.get("Content-Length", 0)):
        body += conn.recv(65536)
    return line, headers, body


def raw_reply(status, body=b"", headers=()):
    """The bytes of an HTTP/1.1 reply that closes the connection."""
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: close"]
    return ("\r\n".join([*head, *headers]) + "\r\n\r\n").encode() + body


def raw_servers(monkeypatch):
    """The body of a ``serve`` fixture: yields ``start(handler, tls=None)``, which starts a
    :class:`RawServer`; every one is closed after the test, and no proxy is set during it."""
    no_proxies(monkeypatch)
    servers = []

    def start(handler, tls=None):
        servers.append(RawServer(handler, tls))
        return servers[-1]

    yield start
    for s in servers:
        s.close()
