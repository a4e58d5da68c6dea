r"""A minimal client for OpenAI-compatible chat-completions endpoints (standard library only).

Shared by every part of the package that asks a language model: the candidate model of
:class:`grounding.qa.OpenAICompatibleModel` and the LLM planner of
:class:`grounding.retrieval.LLMPlanner`. :func:`post_chat` sends one request and returns the
reply's ``choices``; every failure (timeout, no connection, HTTP error status, a reply that
is not a chat completion) raises :class:`EndpointError` with the URL in its message. No key is
stored in code: :func:`api_key` reads the named environment variable when none is passed.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import urllib.error
import urllib.request

__all__ = [
    "EndpointError",
    "HTTPStatusError",
    "post_chat",
    "message_content",
    "api_key",
    "check_base_url",
    "check_timeout",
]


class EndpointError(RuntimeError):
    """The endpoint timed out, could not be reached, or replied something unusable."""


class HTTPStatusError(EndpointError):
    """The endpoint answered an HTTP error status."""


def check_base_url(base_url: object) -> str:
    """The chat-completions URL of an API root (``http(s)://...``), else ValueError."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
    return base_url.rstrip("/") + "/chat/completions"


def api_key(key: str | None, env: str) -> str | None:
    """``key`` when given, else the value of the environment variable ``env`` (or ``None``)."""
    return key if key is not None else os.environ.get(env)


def check_timeout(timeout: object) -> float:
    """A finite number of seconds ``> 0``, else ValueError."""
    ok = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
    if not ok or not math.isfinite(timeout) or timeout <= 0:  # type: ignore[arg-type]
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    return float(timeout)  # type: ignore[arg-type]


def post_chat(url: str, body: dict, *, key: str | None, timeout: float) -> list:
    """POST ``body`` (JSON) to ``url`` and return the reply's ``choices`` list.

    Raises:
        HTTPStatusError: the server answered an HTTP error status (its first 300 bytes quoted).
        EndpointError: a timeout, no connection, a reply that is not JSON or has no
            ``choices`` list.
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    timed_out = f"{url}: no reply within the timeout of {timeout:g} s"
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as err:
        raise HTTPStatusError(f"{url}: HTTP {err.code} {err.reason}{_detail(err)}") from None
    except TimeoutError:
        raise EndpointError(timed_out) from None
    except urllib.error.URLError as err:
        if isinstance(err.reason, TimeoutError):
            raise EndpointError(timed_out) from None
        raise EndpointError(f"{url}: cannot connect ({err.reason})") from None
    except (OSError, http.client.HTTPException) as err:
        raise EndpointError(f"{url}: connection failed ({err!r})") from None
    try:
        reply = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise EndpointError(f"{url}: reply is not JSON ({err})") from None
    if not isinstance(reply, dict) or not isinstance(reply.get("choices"), list):
        raise EndpointError(f"{url}: reply has no 'choices' list")
    return reply["choices"]


def message_content(url: str, i: int, choice: object) -> str:
    """Choice ``i``'s message content (the completion as generated), else EndpointError."""
    try:
        content = choice["message"]["content"]  # type: ignore[index]
    except (KeyError, TypeError):
        raise EndpointError(f"{url}: choice {i} has no message content") from None
    if not isinstance(content, str):
        raise EndpointError(f"{url}: choice {i} content is not text")
    return content


def _detail(err: urllib.error.HTTPError) -> str:
    try:
        text = err.read(300).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return f": {text}" if text else ""
