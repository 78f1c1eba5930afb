"""The standard-library transport: keep-alive reuse, a connection closed while idle, proxies, and no openai import."""

from __future__ import annotations

import json
import shutil
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens.llm.transport import HTTPStatusError, JSONTransport, TransportError

COMPLETION = {"choices": [{"message": {"role": "assistant", "content": "OK"}}]}


@contextmanager
def raw_server(answer: bytes, *, close_after_answer: bool, tls: tuple[Path, Path] | None = None) -> Iterator[tuple[str, list[bytes]]]:
    """An HTTP server (``https`` with ``tls``: certificate, key) answering every request with ``answer``.

    Yields its URL and the request heads it saw.
    """
    heads: list[bytes] = []

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    chunk = self.rfile.readline()
                    if not chunk:
                        return
                    head += chunk
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
                self.rfile.read(length)
                heads.append(head)
                self.wfile.write(answer)
                self.wfile.flush()
                if close_after_answer:  # keep-alive promised, then the connection is dropped while idle
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    with Server(("127.0.0.1", 0), Handler) as server:
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            server.socket = context.wrap_socket(server.socket, server_side=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}/v1", heads
        finally:
            server.shutdown()


def http_answer(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def test_posts_json_and_reuses_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)
    with raw_server(http_answer(COMPLETION), close_after_answer=False) as (url, heads):
        transport = JSONTransport(url, headers={"Authorization": "Bearer k"}, timeout_s=5)
        for _ in range(3):
            assert json.loads(transport.post("/chat/completions", {"model": "m"}).text) == COMPLETION
        transport.close()
    assert [head.split(b"\r\n")[0] for head in heads] == [b"POST /v1/chat/completions HTTP/1.1"] * 3
    assert b"Authorization: Bearer k" in heads[0]
    assert len(transport._idle) == 0  # closed


def test_a_connection_the_server_dropped_while_idle_is_replaced_without_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)
    with raw_server(http_answer(COMPLETION), close_after_answer=True) as (url, heads):
        transport = JSONTransport(url, headers={}, timeout_s=5)
        for _ in range(3):
            assert json.loads(transport.post("/chat/completions", {}).text) == COMPLETION
    assert len(heads) == 3


def test_statuses_and_refusals_are_typed_errors() -> None:
    with OpenAITestServer() as server:
        transport = JSONTransport(server.base_url, headers={}, timeout_s=5)
        with pytest.raises(HTTPStatusError) as status:
            transport.post("/no/such/route", {})
        url = server.base_url
    assert status.value.status_code == 404 and isinstance(status.value.body, dict)
    with pytest.raises(TransportError, match="connection error: ConnectionRefusedError") as refused:
        JSONTransport(url, headers={}, timeout_s=5).post("/chat/completions", {})
    assert refused.value.kind == "connection"


def test_http_proxy_from_the_environment_gets_the_absolute_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with raw_server(http_answer(COMPLETION), close_after_answer=False) as (proxy, heads):
        monkeypatch.setenv("HTTP_PROXY", proxy.removesuffix("/v1").replace("http://", "http://user:pa%3Ass@"))
        for name in ("NO_PROXY", "no_proxy", "http_proxy"):
            monkeypatch.delenv(name, raising=False)
        JSONTransport("http://llm.example:8000/v1", headers={}, timeout_s=5).post("/chat/completions", {})
        monkeypatch.setenv("NO_PROXY", "llm.example")
        with pytest.raises(TransportError):  # bypassed: straight to llm.example, which does not resolve
            JSONTransport("http://llm.example:8000/v1", headers={}, timeout_s=1).post("/chat/completions", {})
    assert heads[0].split(b"\r\n")[0] == b"POST http://llm.example:8000/v1/chat/completions HTTP/1.1"
    assert b"Proxy-Authorization: Basic dXNlcjpwYTpzcw==" in heads[0]  # user:pa:ss
    assert len(heads) == 1


def test_an_llm_request_does_not_import_openai() -> None:
    script = """
import sys, tempfile, pathlib
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats
cache = RequestCache(pathlib.Path(tempfile.mkdtemp()) / "c.sqlite", "off")
client = ChatClient(LLMEndpoint(sys.argv[1], api_key_env="LENS_TEST_KEY"), "scripted", cache=cache, stats=LLMStats())
print(client.complete([{"role": "user", "content": "Say OK"}]).content, "openai" in sys.modules)
"""
    with OpenAITestServer() as server:
        done = subprocess.run([sys.executable, "-c", script, server.base_url], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["OK", "False"]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_https_verifies_the_certificate_against_ssl_cert_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    request = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1"]
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), *request],
        check=True,
        capture_output=True,
    )
    with raw_server(http_answer(COMPLETION), close_after_answer=False, tls=(cert, key)) as (url, heads):
        for name in ("HTTPS_PROXY", "https_proxy", "SSL_CERT_DIR"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        with pytest.raises(TransportError, match="CERTIFICATE_VERIFY_FAILED"):  # certifi's bundle does not know it
            JSONTransport(url, headers={}, timeout_s=5).post("/chat/completions", {})
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        transport = JSONTransport(url, headers={}, timeout_s=5)
        for _ in range(2):
            assert json.loads(transport.post("/chat/completions", {}).text) == COMPLETION
    assert len(heads) == 2
