r"""One OpenAI-compatible chat-completions endpoint, safe against a misbehaving server.

:class:`Endpoint` holds everything every language-model client of the package needs to talk
to a server — the API root, the model name, the key, a deadline, a reply-size cap and a retry
policy — checked once at construction. :meth:`Endpoint.chat` sends one chat request and
returns the reply's ``choices``. Standard library only (``http.client``); no key is stored in
code: pass ``api_key`` or set the environment variable named by ``api_key_env``.

What a request guarantees, whatever the server does:

- **Deadline.** ``timeout`` bounds the whole call, retries and waits included, not each socket
  read: a server that drips its reply a byte at a time is cut off at the deadline.
- **Size cap.** A reply body longer than ``max_bytes`` is not read further.
- **No redirects.** A 3xx reply is an error naming the target's origin; nothing is sent
  there, so the key never leaves the configured origin.
- **Retries.** HTTP 408, 425, 429, 500, 502, 503 and 504 and a connection dropped by the
  server are retried ``retries`` times with exponential backoff (``Retry-After`` honoured when
  it fits the deadline); every other failure is raised at once.
- **Redacted errors.** Every failure raises :class:`EndpointError` (HTTP error statuses:
  :class:`HTTPStatusError`) whose message names the URL and what went wrong; the key never
  appears in it (an echoed ``Authorization`` header is replaced by ``***``) and quoted server
  text is cut to 300 characters. A ``base_url`` carrying ``user:password@``, a query or a
  fragment is refused at construction.
- **Bounded parsing.** A reply nested too deep for the JSON parser is an
  :class:`EndpointError`, not a ``RecursionError``.

Example:
    >>> ep = Endpoint("http://localhost:8000/v1", "qwen2.5-7b-instruct", api_key="sk-x")
    >>> ep.url
    'http://localhost:8000/v1/chat/completions'
    >>> "sk-x" in repr(ep)
    False
"""

from __future__ import annotations

import http.client
import json
import math
import os
import random
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Mapping

from grounding._checks import check_int

__all__ = ["Endpoint", "EndpointError", "HTTPStatusError", "message_content", "json_content"]

#: HTTP statuses worth another try: the server is busy or briefly down.
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
_QUOTE = 300  # characters of server text quoted in an error message
_CHUNK = 1 << 16
_BEARER = re.compile(r"Bearer\s+\S+", re.IGNORECASE)


class EndpointError(RuntimeError):
    """The endpoint timed out, could not be reached, or replied something unusable."""


class HTTPStatusError(EndpointError):
    """The endpoint answered an HTTP error status (:attr:`status`)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class _Retry(Exception):
    """An attempt failed in a way worth retrying (carries the error and any Retry-After)."""

    def __init__(self, error: EndpointError, after: float | None = None):
        self.error, self.after = error, after


class Endpoint:
    """An OpenAI-compatible chat-completions endpoint (see the module docstring).

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1`` (``http`` or ``https``, a
            host, no credentials, query or fragment). A URL that already ends in
            ``/chat/completions`` is used as it is.
        model: the model name the server expects.
        api_key: a key, sent as ``Authorization: Bearer``; default: the environment variable
            ``api_key_env`` (no header when neither is set).
        api_key_env: the variable read when ``api_key`` is ``None``.
        timeout: seconds one :meth:`chat` call may take in all, retries included (``> 0``).
        max_bytes: the largest reply body read, in bytes (``>= 1``).
        retries: further attempts after a retryable failure (``>= 0``).
        backoff: seconds before the first retry, doubled for each further one (``>= 0``).

    Raises:
        ValueError: an argument is out of range (the message names it and never the key).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_bytes: int = 8 << 20,
        retries: int = 2,
        backoff: float = 0.5,
    ):
        self.url = _chat_url(base_url)
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-empty str, got {model!r}")
        if api_key is not None and not isinstance(api_key, str):
            raise ValueError(f"api_key must be a str or None, got {type(api_key).__name__}")
        if not isinstance(api_key_env, str) or not api_key_env:
            raise ValueError(f"api_key_env must be a non-empty str, got {api_key_env!r}")
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        if key and not all(33 <= ord(c) < 127 for c in key):  # a header value, never quoted
            where = "api_key" if api_key is not None else f"${api_key_env}"
            raise ValueError(f"the key in {where} must be printable ASCII without spaces")
        self.model = model
        self.timeout = _positive_number("timeout", timeout)
        self.max_bytes = check_int(max_bytes, "max_bytes")
        self.retries = check_int(retries, "retries", 0)
        self.backoff = _positive_number("backoff", backoff, zero_ok=True)
        self._key = key or None
        split = urllib.parse.urlsplit(self.url)
        self._https, self._path = split.scheme == "https", split.path
        self._host, self._port = split.hostname or "", split.port

    def __repr__(self) -> str:
        key = "set" if self._key else "none"
        return f"Endpoint({self.url!r}, model={self.model!r}, key={key}, timeout={self.timeout:g})"

    @property
    def has_key(self) -> bool:
        """Whether requests carry an ``Authorization`` header."""
        return self._key is not None

    def chat(self, body: Mapping) -> list:
        """POST a chat request (``body`` without ``model``: the endpoint's is added) and return
        the reply's ``choices`` list.

        Raises:
            HTTPStatusError: the server answered an HTTP error status (after the retries, for
                a retryable one).
            EndpointError: the deadline passed, no connection, a redirect, a reply over the
                size cap, not JSON, or with no ``choices`` list.
        """
        data = json.dumps({"model": self.model, **body}, allow_nan=False).encode()
        deadline = time.monotonic() + self.timeout
        for attempt in range(self.retries + 1):
            try:
                raw = self._attempt(data, deadline)
                break
            except _Retry as retry:
                wait = retry.after if retry.after is not None else self._wait(attempt)
                if attempt == self.retries or time.monotonic() + wait >= deadline:
                    raise retry.error from None
                time.sleep(wait)
        return self._choices(raw)

    def text(self, choices: list, i: int = 0) -> str:
        """Choice ``i``'s message content, else :class:`EndpointError` naming the URL."""
        if not choices:
            raise EndpointError(f"{self.url}: the reply has no choice")
        return message_content(self.url, i, choices[i])

    # -- one attempt -------------------------------------------------------------------------

    def _attempt(self, data: bytes, deadline: float) -> bytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._timed_out()
        if self._https:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self._host, self._port, timeout=remaining, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=remaining)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        expired = threading.Event()
        watchdog = threading.Timer(remaining, _cut, (conn, expired))
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.request("POST", self._path, body=data, headers=headers)
            with conn.getresponse() as resp:  # closed here: it holds the socket's file
                raw = self._read(resp, deadline)
            if expired.is_set():  # the watchdog cut the body short
                raise self._timed_out()
            return raw
        except (EndpointError, _Retry):
            raise
        except TimeoutError:
            raise self._timed_out() from None
        except (ConnectionResetError, BrokenPipeError) as err:  # RemoteDisconnected included
            if expired.is_set():
                raise self._timed_out() from None
            raise _Retry(self._error(f"connection dropped ({_name(err)})")) from None
        except ConnectionRefusedError:
            raise self._error("cannot connect (connection refused)") from None
        except (OSError, http.client.HTTPException, ValueError) as err:
            if expired.is_set():
                raise self._timed_out() from None
            raise self._error(f"connection failed ({_name(err)})") from None
        finally:
            watchdog.cancel()
            conn.close()

    def _read(self, resp: http.client.HTTPResponse, deadline: float) -> bytes:
        """The body of a success reply; an error for a redirect or an error status."""
        status = resp.status
        if 300 <= status < 400:
            where = _origin(resp.getheader("Location") or "")
            raise self._error(
                f"HTTP {status} redirect to {where} not followed "
                "(set base_url to the server's final address)"
            )
        if status >= 400:  # quote the start of the body: read a little more, redact, cut
            head = self._body(resp, deadline, _QUOTE + 2 * len(self._key or "") + 64, cut=True)
            detail = self._redact(head.decode("utf-8", "replace").strip())[:_QUOTE]
            error = HTTPStatusError(
                self._redact(f"{self.url}: HTTP {status} {resp.reason}")
                + (f": {detail}" if detail else ""),
                status,
            )
            if status in RETRY_STATUSES:
                raise _Retry(error, _retry_after(resp.getheader("Retry-After")))
            raise error
        length = resp.getheader("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > self.max_bytes:
            raise self._error(f"reply of {int(length):,} bytes is over {self._cap}")
        return self._body(resp, deadline, self.max_bytes, cut=False)

    def _body(self, resp: http.client.HTTPResponse, deadline: float, limit: int, cut: bool):
        """The body, read chunk by chunk until the deadline; past ``limit`` bytes it is cut
        (``cut``) or an error."""
        chunks, size = [], 0
        while True:
            if time.monotonic() >= deadline:
                raise self._timed_out()
            chunk = resp.read1(_CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                if cut:
                    return b"".join(chunks)[:limit]
                raise self._error(f"reply is over {self._cap}")

    def _choices(self, raw: bytes) -> list:
        try:
            reply = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise EndpointError(f"{self.url}: reply is not JSON ({err})") from None
        except RecursionError:
            raise EndpointError(f"{self.url}: reply is nested too deep to parse") from None
        if not isinstance(reply, dict) or not isinstance(reply.get("choices"), list):
            raise EndpointError(f"{self.url}: reply has no 'choices' list")
        return reply["choices"]

    # -- helpers -----------------------------------------------------------------------------

    @property
    def _cap(self) -> str:
        return f"the size cap of {self.max_bytes:,} bytes (max_bytes)"

    def _error(self, what: str) -> EndpointError:
        return EndpointError(self._redact(f"{self.url}: {what}"))

    def _timed_out(self) -> EndpointError:
        return self._error(f"no complete reply within the deadline of {self.timeout:g} s")

    def _wait(self, attempt: int) -> float:
        return self.backoff * 2**attempt * (1 + 0.1 * random.random())

    def _redact(self, text: str) -> str:
        """``text`` with the key (and an echoed ``Bearer`` header) replaced by ``***``."""
        text = _BEARER.sub("Bearer ***", text)
        return text.replace(self._key, "***") if self._key else text


def message_content(url: str, i: int, choice: object) -> str:
    """Choice ``i``'s message content (the completion as generated), else EndpointError."""
    try:
        content = choice["message"]["content"]  # type: ignore[index]
    except (KeyError, TypeError, IndexError):
        raise EndpointError(f"{url}: choice {i} has no message content") from None
    if not isinstance(content, str):
        raise EndpointError(f"{url}: choice {i} content is not text")
    return content


def json_content(content: str) -> object:
    """The JSON value a completion's text holds (a fenced ```json block allowed), else
    ValueError quoting at most 200 characters of it (too deep a nesting included).

    Example:
        >>> json_content('```json\\n[0.5, 1]\\n```')
        [0.5, 1]
    """
    body = content.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.S)
    try:
        return json.loads(fenced.group(1) if fenced else body)
    except json.JSONDecodeError as err:
        raise ValueError(f"the reply is not JSON ({err}): {content[:200]!r}") from None
    except RecursionError:
        raise ValueError(f"the reply is nested too deep to parse: {content[:200]!r}") from None


def _chat_url(base_url: object) -> str:
    """The chat-completions URL of an API root, else ValueError (never quoting credentials)."""
    if not isinstance(base_url, str):
        raise ValueError(f"base_url must be an http(s) URL str, got {type(base_url).__name__}")
    if any(not 33 <= ord(c) < 127 for c in base_url.strip()):
        raise ValueError("base_url must be printable ASCII without spaces (percent-encode others)")
    try:
        parts = urllib.parse.urlsplit(base_url.strip())
        port = parts.port
    except ValueError as err:
        raise ValueError(f"base_url is not a valid URL ({err})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = _origin(base_url) if "@" in base_url else repr(base_url[:100])
        raise ValueError(
            f"base_url must be an http(s) URL with a host, e.g. http://localhost:8000/v1, "
            f"got {shown}"
        )
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            "base_url must not carry credentials (user:password@host); pass api_key instead"
        )
    if parts.query or parts.fragment:
        raise ValueError(
            f"base_url must be the API root without '?query' or '#fragment', got {_origin(base_url)}"
            f"{parts.path} with {'a query' if parts.query else 'a fragment'}"
        )
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # IPv6 literal
    netloc = host if port is None else f"{host}:{port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, path, "", ""))


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL, without credentials, path or query."""
    try:
        p = urllib.parse.urlsplit(url)
        host = p.hostname or "?"
        port = f":{p.port}" if p.port else ""
    except ValueError:
        return "an unparseable URL"
    return f"{p.scheme or '?'}://{host}{port}"


def _cut(conn: http.client.HTTPConnection, expired: threading.Event) -> None:
    """The deadline watchdog: shut the socket down so a blocked read returns at once."""
    expired.set()
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _retry_after(value: str | None) -> float | None:
    """Seconds of a ``Retry-After: <seconds>`` header (an HTTP date is ignored)."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None


def _name(err: BaseException) -> str:
    text = str(err)
    return f"{type(err).__name__}: {text}"[:_QUOTE] if text else type(err).__name__


def _positive_number(name: str, x: object, *, zero_ok: bool = False) -> float:
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    if not ok or x < 0 or (x == 0 and not zero_ok):  # type: ignore[operator]
        bound = ">= 0" if zero_ok else "> 0"
        raise ValueError(f"{name} must be a finite number of seconds {bound}, got {x!r}")
    return float(x)  # type: ignore[arg-type]
