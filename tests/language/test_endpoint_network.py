"""`grounding.language.Endpoint` through proxies named by the environment and over TLS verified by a
CA bundle: an in-process forward proxy, a CONNECT proxy and an HTTPS server whose certificate
is signed by a throwaway CA (127.0.0.1 only)."""

from __future__ import annotations

import base64
import shutil
import socket
import ssl
import subprocess
import threading
import urllib.parse

import pytest
from _stub import _choice, _completion, raw_reply, raw_servers

from grounding.language import Endpoint, EndpointError

OK = _completion([_choice("Lipid", [-0.1])])
KEY = "sk-secret-0123456789abcdef"


@pytest.fixture()
def serve(monkeypatch):
    yield from raw_servers(monkeypatch)


def _ok(conn, request):
    conn.sendall(raw_reply(200, OK))


def _forward(conn, request):
    """A forward proxy: the absolute URL's host is served on 127.0.0.1 (the client never
    resolves it), the request passed on in origin form, the reply relayed."""
    line, headers, body = request
    method, target, version = line.split(" ")
    url = urllib.parse.urlsplit(target)
    assert url.scheme == "http", line  # a forward proxy is asked in absolute form
    with socket.create_connection(("127.0.0.1", url.port), timeout=5) as up:
        fields = [f"{k}: {v}" for k, v in headers.items() if not k.startswith("Proxy-")]
        head = "\r\n".join([f"{method} {url.path} {version}", *fields]) + "\r\n\r\n"
        up.sendall(head.encode() + body)
        while chunk := up.recv(65536):
            conn.sendall(chunk)


def _tunnel(conn, request):
    """A CONNECT proxy: bytes relayed both ways between the client and 127.0.0.1:port."""
    line, _, _ = request
    method, target, _ = line.split(" ")
    assert method == "CONNECT", line
    up = socket.create_connection(("127.0.0.1", int(target.rsplit(":", 1)[1])), timeout=5)
    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

    def pump(a, b):
        try:
            while chunk := a.recv(65536):
                b.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    back = threading.Thread(target=pump, args=(up, conn), daemon=True)
    back.start()
    pump(conn, up)
    back.join(timeout=5)
    up.close()


# ---------------------------------------------------------------------------- proxies


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy"])
def test_an_http_request_goes_through_the_proxy_of_the_environment(serve, monkeypatch, variable):
    target, proxy = serve(_ok), serve(_forward)
    monkeypatch.setenv(variable, f"http://127.0.0.1:{proxy.port}")
    ep = Endpoint(f"http://llm.invalid:{target.port}/v1", "m", api_key=KEY)
    assert ep.chat({"messages": []})[0]["message"]["content"] == "Lipid"
    line, headers, _ = proxy.requests[0]
    assert line == f"POST http://llm.invalid:{target.port}/v1/chat/completions HTTP/1.1"
    assert headers["Host"] == f"llm.invalid:{target.port}"
    assert target.requests[0][0] == "POST /v1/chat/completions HTTP/1.1"
    assert target.requests[0][1]["Authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("variable", ["NO_PROXY", "no_proxy"])
@pytest.mark.parametrize("hosts", ["127.0.0.1", "localhost,127.0.0.1", "*"])
def test_no_proxy_bypasses_the_proxy(serve, monkeypatch, variable, hosts):
    target, proxy = serve(_ok), serve(_forward)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv(variable, hosts)
    Endpoint(target.url, "m").chat({"messages": []})
    assert proxy.requests == [] and len(target.requests) == 1


def test_all_proxy_is_not_read(serve, monkeypatch):
    target, proxy = serve(_ok), serve(_forward)
    monkeypatch.setenv("ALL_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("all_proxy", f"http://127.0.0.1:{proxy.port}")
    Endpoint(target.url, "m").chat({"messages": []})
    assert proxy.requests == [] and len(target.requests) == 1


def test_the_proxy_credentials_go_to_the_proxy_and_never_into_a_message(serve, monkeypatch):
    def refuse(conn, request):
        conn.sendall(raw_reply(407, request[1].get("Proxy-Authorization", "").encode()))

    proxy = serve(refuse)
    monkeypatch.setenv("http_proxy", f"http://ann:p%40ss@127.0.0.1:{proxy.port}")
    with pytest.raises(EndpointError, match="HTTP 407") as e:
        Endpoint("http://llm.invalid:1/v1", "m").chat({"messages": []})
    sent = proxy.requests[0][1]["Proxy-Authorization"]
    assert sent == "Basic " + base64.b64encode(b"ann:p@ss").decode()
    assert sent.split()[1] not in str(e.value) and "p@ss" not in str(e.value)


def test_an_unreachable_or_unsupported_proxy_is_named(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.setenv("http_proxy", f"http://ann:s3cr3t@127.0.0.1:{port}")
    with pytest.raises(EndpointError, match=f"through the proxy http://127.0.0.1:{port}") as e:
        Endpoint("http://h.invalid/v1", "m", retries=0).chat({"messages": []})
    assert "ann:" not in str(e.value) and "s3cr3t" not in str(e.value)
    monkeypatch.setenv("https_proxy", "socks5://127.0.0.1:1080")
    with pytest.raises(EndpointError, match=r"socks5://127.0.0.1:1080 is not supported.*no_proxy"):
        Endpoint("https://h.invalid/v1", "m").chat({"messages": []})


# ---------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A throwaway CA and a certificate it signs for 127.0.0.1 and llm.invalid."""
    if shutil.which("openssl") is None:
        pytest.skip(reason="needs the openssl command to make a test certificate")
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)

    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=grounding test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    run("req", *ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1")
    (d / "leaf.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:llm.invalid\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
    )
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "leaf.ext")  # fmt: skip
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(d / "leaf.pem", d / "leaf.key")
    return d, server


def test_a_ca_bundle_verifies_the_server(serve, pki):
    d, tls = pki
    target = serve(_ok, tls=tls)
    ep = Endpoint(target.url, "m", ca_bundle=d / "ca.pem", api_key=KEY)
    assert ep.ca_bundle == str(d / "ca.pem")
    assert ep.chat({"messages": []})[0]["message"]["content"] == "Lipid"
    assert target.requests[0][1]["Authorization"] == f"Bearer {KEY}"
    with pytest.raises(EndpointError, match="CERTIFICATE_VERIFY_FAILED"):
        Endpoint(target.url, "m", api_key=KEY).chat({"messages": []})  # the system's CAs
    assert len(target.requests) == 1  # the key never went to an unverified server


def test_ssl_cert_file_also_works(serve, pki, monkeypatch):
    d, tls = pki
    target = serve(_ok, tls=tls)
    monkeypatch.setenv("SSL_CERT_FILE", str(d / "ca.pem"))
    assert Endpoint(target.url, "m").chat({"messages": []})[0]["message"]["content"] == "Lipid"


def test_https_goes_through_a_connect_tunnel(serve, pki, monkeypatch):
    d, tls = pki
    target, proxy = serve(_ok, tls=tls), serve(_tunnel)
    monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{proxy.port}")  # no scheme: http assumed
    ep = Endpoint(f"https://llm.invalid:{target.port}/v1", "m", ca_bundle=d / "ca.pem")
    assert ep.chat({"messages": []})[0]["message"]["content"] == "Lipid"
    assert proxy.requests[0][0].startswith(f"CONNECT llm.invalid:{target.port} HTTP/1.")
    assert target.requests[0][0] == "POST /v1/chat/completions HTTP/1.1"


def test_a_bad_ca_bundle_is_refused_naming_it(tmp_path):
    missing = tmp_path / "nowhere.pem"
    with pytest.raises(ValueError, match=f"ca_bundle '{missing}' does not exist"):
        Endpoint("https://h/v1", "m", ca_bundle=missing)
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(ValueError, match="ca_bundle .*junk.pem.* holds no usable PEM"):
        Endpoint("https://h/v1", "m", ca_bundle=str(junk))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="is an empty directory"):
        Endpoint("https://h/v1", "m", ca_bundle=tmp_path / "empty")
    with pytest.raises(ValueError, match="ca_bundle must be a str path"):
        Endpoint("https://h/v1", "m", ca_bundle=3)
    with pytest.raises(ValueError, match="ca_bundle verifies https servers"):
        Endpoint("http://h/v1", "m", ca_bundle=junk)
