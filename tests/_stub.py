"""An in-process stub of the chat-completions API (no network), shared by the tests of the
OpenAI-compatible candidate model and the LLM planner."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


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
    a delay before each, and the ``(headers, json body)`` of every request received."""

    def __init__(self):
        self.script: list[tuple[int, bytes]] = [(200, b"{}")]
        self.delay = 0.0
        self.requests: list[tuple[dict, dict]] = []

    def reply(self, choices, status=200):
        self.script = [(status, _completion(choices))]

    def next(self) -> tuple[int, bytes]:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]


@pytest.fixture()
def server():
    stub = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            n = int(self.headers.get("Content-Length", 0))
            stub.requests.append((dict(self.headers), json.loads(self.rfile.read(n))))
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
