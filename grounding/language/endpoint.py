r"""One OpenAI-compatible chat-completions endpoint, safe against a misbehaving server.

:class:`Endpoint` holds everything every language-model client of the package needs to talk
to a server — the API root, the model name, the key, a deadline, a reply-size cap and a retry
policy — checked once at construction. :meth:`Endpoint.chat` sends one chat request and
returns the reply's ``choices``. Standard library only (``http.client``, :mod:`ssl`); no key is
stored in code: pass ``api_key`` or set the environment variable named by ``api_key_env``.

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
  :class:`HTTPStatusError`) whose message names the URL and what went wrong. Quoted server
  text (an error body, a reason phrase, the ``error`` object of a reply without ``choices``)
  is decoded, cleared of the key — as sent, JSON-escaped or percent-encoded — and of any
  ``Bearer``/``Basic`` credential (replaced by ``***``), and only then cut to 300
  characters; a start of the key (4 characters or more) left at the end of the cut is
  replaced too. A ``base_url`` carrying ``user:password@``, a fragment or a query other than
  ``?api-version=...`` is refused at construction.
- **Bounded parsing.** A reply nested too deep for the JSON parser is an
  :class:`EndpointError`, not a ``RecursionError``.

Headers: ``User-Agent: grounding/<version> (python http.client)`` on every request; the key
as ``Authorization: Bearer <key>``, or as ``api-key: <key>`` with ``key_header="api-key"``
(Azure OpenAI, whose ``base_url`` ends in ``?api-version=...``: the one query a ``base_url``
may carry, kept on the request).

Network settings: ``http_proxy``/``https_proxy`` (either case; lowercase wins) send the
request through an ``http://`` proxy — a forward proxy for an ``http`` URL, a ``CONNECT``
tunnel for an ``https`` one, ``user:password@`` in the proxy URL sent as
``Proxy-Authorization`` — unless ``no_proxy`` names the host (``*``: every host); the
variables are read at each request, as :mod:`urllib` reads them (``all_proxy`` and the
system's proxy settings are not read). ``https`` replies are verified against ``ca_bundle``
when given, else the system's certificates (``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` also
work).

Pickling: a pickle of an endpoint never holds its key. An endpoint whose key came from the
environment reads the variable again when unpickled; one whose key was passed as ``api_key``
comes back without it, and its :meth:`~Endpoint.chat` raises :class:`EndpointError` saying so
instead of sending a request without the key. ``copy.copy`` and ``copy.deepcopy`` keep the
key (the copy stays in the process).

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
import ssl
import threading
import time
import urllib.parse
from collections.abc import Mapping

from grounding._checks import check_int
from grounding.language import _net

__all__ = ["Endpoint", "EndpointError", "HTTPStatusError", "message_content", "json_content"]

#: HTTP statuses worth another try: the server is busy or briefly down.
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
_QUOTE = 300  # characters of server text quoted in an error message
_REASON = 100  # characters of an HTTP reason phrase quoted
_CHUNK = 1 << 16
_MAX_SECONDS = 86400.0  # the longest timeout and backoff: one day
#: The headers a key can travel in: a bearer token (OpenAI) or Azure OpenAI's ``api-key``.
KEY_HEADERS = ("Authorization", "api-key")
USER_AGENT = _net.USER_AGENT


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
        api_key: a key, sent as ``Authorization: Bearer <key>``; default: the environment
            variable ``api_key_env`` (no header when neither is set).
        api_key_env: the variable read when ``api_key`` is ``None``.
        key_header: the header that carries the key: ``"Authorization"`` (a bearer token,
            the OpenAI protocol) or ``"api-key"`` (the key as it is: Azure OpenAI's keys,
            with a ``base_url`` ending in ``?api-version=...``).
        timeout: seconds one :meth:`chat` call may take in all, retries included (``> 0``,
            at most one day, 86400).
        max_bytes: the largest reply body read, in bytes (``>= 1``).
        retries: further attempts after a retryable failure (``>= 0``; default 2).
        max_retries: the same setting by the official client's name (give one of the two).
        backoff: seconds before the first retry, doubled for each further one (``>= 0``, at
            most one day).
        ca_bundle: for an ``https`` URL, the certificates that verify the server (a PEM file,
            or a directory of OpenSSL-hashed certificates) in place of the system's; checked
            here. Without it the system's certificates are used, and ``SSL_CERT_FILE`` /
            ``SSL_CERT_DIR`` name others.

    Proxies come from ``http_proxy``/``https_proxy``/``no_proxy`` at each request, and a
    pickle never holds the key (the module docstring says how each works).

    Raises:
        ValueError: an argument is out of range, or ``ca_bundle`` is missing, unreadable or
            given for an ``http`` URL (the message names it and never the key).
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
        retries: int | None = None,
        backoff: float = 0.5,
        ca_bundle: str | os.PathLike | None = None,
        key_header: str = "Authorization",
        max_retries: int | None = None,
    ):
        self.url = _net.chat_url(base_url)
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-empty str, got {model!r}")
        if api_key is not None and not isinstance(api_key, str):
            raise ValueError(f"api_key must be a str or None, got {type(api_key).__name__}")
        if not isinstance(api_key_env, str) or not api_key_env:
            raise ValueError(f"api_key_env must be a non-empty str, got {api_key_env!r}")
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        if key and not _printable(key):  # a header value, never quoted
            where = "api_key" if api_key is not None else f"${api_key_env}"
            raise ValueError(f"the key in {where} must be printable ASCII without spaces")
        self.model = model
        self.timeout = _seconds("timeout", timeout)
        self.max_bytes = check_int(max_bytes, "max_bytes")
        if retries is not None and max_retries is not None:
            raise ValueError("give retries or max_retries (the same setting), not both")
        name, n = ("retries", retries) if max_retries is None else ("max_retries", max_retries)
        self.retries = check_int(2 if n is None else n, name, 0)
        if key_header not in KEY_HEADERS:
            raise ValueError(f"key_header must be one of {KEY_HEADERS}, got {key_header!r:.100}")
        self.key_header = key_header
        self.backoff = _seconds("backoff", backoff, zero_ok=True)
        self._key = key or None
        # a key read from the environment is read there again when unpickled
        self._key_env = api_key_env if api_key is None and self._key else None
        self._key_lost: str | None = None  # why an unpickled endpoint has no key
        split = urllib.parse.urlsplit(self.url)
        self._https, self._netloc = split.scheme == "https", split.netloc
        if ca_bundle is not None and not self._https:
            raise ValueError(
                f"ca_bundle verifies https servers; {_net.origin(self.url)} is plain http"
            )
        self.ca_bundle = _net.check_ca_bundle(ca_bundle)
        self._tls: ssl.SSLContext | None = None  # built at the first https request

    def __repr__(self) -> str:
        key = "not pickled" if self._key_lost else "set" if self._key else "none"
        return f"Endpoint({self.url!r}, model={self.model!r}, key={key}, timeout={self.timeout:g})"

    def __getstate__(self) -> dict:
        """The endpoint's state without its key (and without the TLS context)."""
        state = dict(self.__dict__, _key=None, _tls=None)
        if self._key and not self._key_env:
            state["_key_lost"] = (
                "an api_key is never pickled; build the Endpoint again with api_key=..., or "
                "pass the key through the environment (api_key_env), which an unpickled "
                "endpoint reads again"
            )
        return state

    def __setstate__(self, state: dict) -> None:
        """Restore the state; a key from the environment is read there again."""
        self.__dict__.update(state)
        if self._key_env:
            key, self._key_lost = os.environ.get(self._key_env), None
            if not key:
                self._key_lost = f"${self._key_env} is not set in this process"
            elif not _printable(key):
                self._key_lost = f"the key in ${self._key_env} is not printable ASCII"
            else:
                self._key = key

    def __copy__(self) -> Endpoint:
        """A copy that keeps the key (it stays in the process)."""
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)  # the key included: a copy stays in the process
        return twin

    def __deepcopy__(self, memo: dict) -> Endpoint:
        """As :meth:`__copy__`: every field is immutable (the TLS context is shared)."""
        return self.__copy__()

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
                size cap, not JSON, or with no ``choices`` list (quoting the server's
                ``error`` object when it sent one); an unpickled endpoint that lost its key.
        """
        if self._key_lost:
            raise EndpointError(
                f"{self.url}: this endpoint was unpickled without its key: {self._key_lost}"
            )
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
        try:
            proxy = _net.proxy_for("https" if self._https else "http", self._netloc)
        except ValueError as err:
            raise self._error(f"{err} (set no_proxy to bypass it)") from None
        via = f" through the proxy {proxy.origin}" if proxy else ""
        tls = self._tls_context() if self._https else None
        conn, target, extra = _net.connect(self.url, remaining, tls, proxy)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
            **extra,
        }
        if self._key:
            bearer = self.key_header == "Authorization"
            headers[self.key_header] = f"Bearer {self._key}" if bearer else self._key
        expired = threading.Event()
        watchdog = threading.Timer(remaining, _net.cut, (conn, expired))
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.request("POST", target, body=data, headers=headers)
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
            raise _Retry(self._error(f"connection dropped{via} ({self._name(err)})")) from None
        except ConnectionRefusedError:
            raise self._error(f"cannot connect{via} (connection refused)") from None
        except (OSError, http.client.HTTPException, ValueError) as err:
            if expired.is_set():
                raise self._timed_out() from None
            raise self._error(f"connection failed{via} ({self._name(err)})") from None
        finally:
            watchdog.cancel()
            conn.close()

    def _read(self, resp: http.client.HTTPResponse, deadline: float) -> bytes:
        """The body of a success reply; an error for a redirect or an error status."""
        status = resp.status
        if 300 <= status < 400:
            where = _net.origin(resp.getheader("Location") or "")
            raise self._error(
                f"HTTP {status} redirect to {where} not followed "
                "(set base_url to the server's final address)"
            )
        if status >= 400:  # quote the start of the body: decode, redact, then cut
            head = self._body(resp, deadline, _net.quote_bytes(self._key, _QUOTE), cut=True)
            detail = self._quote(head.decode("utf-8", "replace").strip())
            reason = self._quote(resp.reason or "", _REASON)
            error = HTTPStatusError(
                self._redact(f"{self.url}: HTTP {status} {reason}")
                + (f": {detail}" if detail else ""),
                status,
            )
            if status in RETRY_STATUSES:
                raise _Retry(error, _net.retry_after(resp.getheader("Retry-After")))
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
            said = _net.server_error(reply.get("error")) if isinstance(reply, dict) else ""
            said = f"; the server's error: {self._quote(said)}" if said else ""
            raise self._error(f"reply has no 'choices' list{said}")
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
        """``text`` with the key (and any echoed credential) replaced by ``***``."""
        return _net.redact(text, self._key)

    def _quote(self, text: str, limit: int = _QUOTE) -> str:
        """Server text, redacted and then cut to ``limit`` characters."""
        return _net.redact(text, self._key, limit)

    def _name(self, err: BaseException) -> str:
        text = str(err)
        return self._quote(f"{type(err).__name__}: {text}" if text else type(err).__name__)

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = _net.tls_context(self.ca_bundle)
        return self._tls


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


def _printable(key: str) -> bool:
    return all(33 <= ord(c) < 127 for c in key)


def _seconds(name: str, x: object, *, zero_ok: bool = False) -> float:
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    if not ok or x < 0 or (x == 0 and not zero_ok) or x > _MAX_SECONDS:  # type: ignore[operator]
        bound = ">= 0" if zero_ok else "> 0"
        raise ValueError(
            f"{name} must be a finite number of seconds {bound} and at most "
            f"{_MAX_SECONDS:g} (one day), got {x!r}"
        )
    return float(x)  # type: ignore[arg-type]
