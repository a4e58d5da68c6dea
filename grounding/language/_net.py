"""The network half of :class:`~grounding.language.Endpoint`: redaction of server text, the proxy
a request goes through (from the standard environment variables), the TLS context (a CA
bundle, else the system's certificates and ``SSL_CERT_FILE``) and the connection itself.
Standard library only."""

from __future__ import annotations

import base64
import http.client
import importlib.metadata
import json
import math
import os
import re
import socket
import ssl
import threading
import urllib.parse
import urllib.request

#: An echoed ``Authorization`` (any token) or ``Proxy-Authorization`` (a base64 token) value.
_CREDENTIAL = re.compile(r"\b(Bearer)\s+\S+|\b(Basic)\s+[A-Za-z0-9+/]{4,}=*", re.IGNORECASE)
_MIN_PREFIX = 4  # a key prefix this long at the end of a cut quote is redacted too
_ERROR_TEXT = 1200  # characters of a non-text error member kept before it is quoted


def key_forms(key: str | None) -> tuple[str, ...]:
    """The spellings of a key a server may echo: as sent, JSON-escaped (with or without
    escaped slashes) and percent-encoded; longest first."""
    if not key:
        return ()
    escaped = json.dumps(key)[1:-1]
    forms = {key, escaped, escaped.replace("/", "\\/"), urllib.parse.quote(key, safe="")}
    return tuple(sorted(forms, key=len, reverse=True))


def redact(text: str, key: str | None, limit: int | None = None) -> str:
    """``text`` with every spelling of the key and any ``Bearer``/``Basic`` credential
    replaced by ``***``, then cut to ``limit`` characters; a start of the key left at the end
    (a key cut by the limit, or by the server) is replaced too."""
    forms = key_forms(key)
    text = _CREDENTIAL.sub(lambda m: f"{m.group(1) or m.group(2)} ***", text)
    for form in forms:
        text = text.replace(form, "***")
    if limit is not None and len(text) > limit:
        marker = text.find("***", max(limit - 2, 0))  # keep a marker the cut would split whole
        text = text[: marker + 3 if -1 < marker < limit else limit]
    for form in forms:
        for n in range(min(len(form), len(text)), _MIN_PREFIX - 1, -1):
            if text.endswith(form[:n]):
                text = text[:-n] + "***"
                break
    return text


def quote_bytes(key: str | None, limit: int) -> int:
    """How many bytes to read to quote ``limit`` characters: enough for every character to
    take 4 bytes and for a key starting inside the quote to be read whole, in any spelling."""
    longest = max((len(f) for f in key_forms(key)), default=0)
    return 4 * (limit + longest) + 4


def origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL, without credentials, path or query."""
    try:
        p = urllib.parse.urlsplit(url)
        host = p.hostname or "?"
        port = f":{p.port}" if p.port else ""
    except ValueError:
        return "an unparseable URL"
    return f"{p.scheme or '?'}://{host}{port}"


class Proxy:
    """An HTTP proxy from the environment: its origin and its ``Proxy-Authorization``."""

    def __init__(self, url: str):
        if "://" not in url:  # "host:port", as curl and urllib accept
            url = f"http://{url}"
        self.origin = origin(url)
        try:
            parts = urllib.parse.urlsplit(url)
            self.host, self.port = parts.hostname, parts.port or 80
        except ValueError:
            raise ValueError(f"the proxy {self.origin} is not a valid URL") from None
        if parts.scheme != "http" or not self.host:
            raise ValueError(f"the proxy {self.origin} is not supported: http:// proxies only")
        self.headers = {}
        if parts.username is not None:
            user = urllib.parse.unquote(parts.username)
            word = urllib.parse.unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{word}".encode()).decode()
            self.headers["Proxy-Authorization"] = f"Basic {token}"


def proxy_for(scheme: str, netloc: str) -> Proxy | None:
    """The proxy the environment names for a request (``http_proxy`` / ``https_proxy``, either
    case, lowercase first), or ``None`` when none is set or ``no_proxy`` exempts the host."""
    proxies = urllib.request.getproxies_environment()
    url = proxies.get(scheme)
    if not url or urllib.request.proxy_bypass_environment(netloc, proxies):
        return None
    return Proxy(url)


def check_ca_bundle(ca_bundle: object) -> str | None:
    """The CA bundle path (a PEM file, or a directory of OpenSSL-hashed certificates),
    checked, else ValueError naming it."""
    if ca_bundle is None:
        return None
    path = os.fspath(ca_bundle) if isinstance(ca_bundle, (str, os.PathLike)) else None
    if not isinstance(path, str):
        raise ValueError(f"ca_bundle must be a str path or None, got {type(ca_bundle).__name__}")
    if not os.path.exists(path):
        raise ValueError(f"ca_bundle {path!r} does not exist")
    if os.path.isdir(path):
        if not os.listdir(path):
            raise ValueError(f"ca_bundle {path!r} is an empty directory")
        return path
    try:
        tls_context(path)
    except (ssl.SSLError, OSError) as err:
        raise ValueError(f"ca_bundle {path!r} holds no usable PEM certificate ({err})") from None
    return path


def tls_context(ca_bundle: str | None) -> ssl.SSLContext:
    """A verifying TLS context: the CA bundle alone when given, else the system's certificates
    (OpenSSL also reads ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``)."""
    if ca_bundle is None:
        return ssl.create_default_context()
    if os.path.isdir(ca_bundle):
        return ssl.create_default_context(capath=ca_bundle)
    return ssl.create_default_context(cafile=ca_bundle)


def connect(
    url: str, timeout: float, context: ssl.SSLContext | None, proxy: Proxy | None
) -> tuple[http.client.HTTPConnection, str, dict]:
    """An unopened connection for a POST to ``url``, the request target to send and the extra
    headers: straight to the host, through a forward proxy (``http``) or through a ``CONNECT``
    tunnel of the proxy (``https``)."""
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "", parts.port
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    conn: http.client.HTTPConnection
    if proxy is None:
        if context is None:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        else:
            conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        return conn, target, {}
    if context is None:  # a forward proxy: the absolute URL is the request target
        conn = http.client.HTTPConnection(proxy.host, proxy.port, timeout=timeout)
        return conn, url, dict(proxy.headers)
    conn = http.client.HTTPSConnection(proxy.host, proxy.port, timeout=timeout, context=context)
    conn.set_tunnel(host, port, headers=dict(proxy.headers))
    return conn, target, {}


def chat_url(base_url: object) -> str:
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
        shown = origin(base_url) if "@" in base_url else repr(base_url[:100])
        raise ValueError(
            f"base_url must be an http(s) URL with a host, e.g. http://localhost:8000/v1, "
            f"got {shown}"
        )
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            "base_url must not carry credentials (user:password@host); pass api_key instead"
        )
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    if parts.fragment or [name for name, _ in query] not in ([], [API_VERSION]):
        raise ValueError(
            f"base_url must be the API root without '#fragment' or a '?query' other than "
            f"'?{API_VERSION}=...' (Azure OpenAI's; a key goes in api_key, never in the URL), "
            f"got {origin(base_url)}{parts.path} with "
            f"{'a fragment' if parts.fragment else 'a query'}"
        )
    if query and not re.fullmatch(r"[\w.\-]+", query[0][1]):
        raise ValueError(f"base_url's {API_VERSION} must be a version such as 2024-06-01")
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # IPv6 literal
    netloc = host if port is None else f"{host}:{port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, path, parts.query, ""))


#: The one query parameter a ``base_url`` may carry: Azure OpenAI's API version.
API_VERSION = "api-version"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:  # a source tree that is not installed
        return "unknown"


#: Sent with every request, so that a server's logs can tell the client apart.
USER_AGENT = f"grounding/{_version('grounding')} (python http.client)"


def cut(conn: http.client.HTTPConnection, expired: threading.Event) -> None:
    """The deadline watchdog: shut the socket down so a blocked read returns at once."""
    expired.set()
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def retry_after(value: str | None) -> float | None:
    """Seconds of a ``Retry-After: <seconds>`` header (an HTTP date is ignored)."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None


def server_error(error: object) -> str:
    """The text of a reply's ``error`` member: a string, or an object's ``message`` with its
    ``type`` and ``code``; empty when there is none."""
    if isinstance(error, dict):
        message = error.get("message")
        kinds = [f"{k} {error[k]}" for k in ("type", "code") if _scalar(error.get(k))]
        text = message if isinstance(message, str) else _json_text(error)
        return text + (f" ({', '.join(kinds)})" if kinds else "")
    return error if isinstance(error, str) else "" if error is None else _json_text(error)


def _scalar(value: object) -> bool:
    return isinstance(value, (str, int, float)) and value != ""


def _json_text(value: object) -> str:
    try:
        return json.dumps(value)[:_ERROR_TEXT]
    except (ValueError, TypeError, RecursionError):
        return f"a {type(value).__name__}"
