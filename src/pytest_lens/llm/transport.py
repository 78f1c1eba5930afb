"""POSTing JSON to an OpenAI-compatible endpoint over keep-alive HTTP/1.1 connections, with the standard library.

pytest-lens reads every completion as raw JSON (:mod:`pytest_lens.llm.client`), so it needs no SDK:
importing ``openai`` (its request and response types) costs about a second of CPU per process, and
the larger heap makes every garbage collection slower — half of a 24-question LLM run's CPU on this
project's 2-core machine. :class:`JSONTransport` keeps idle connections for reuse (one per request
in flight), honours the proxy environment variables (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``)
and, for ``https``, ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, else certifi's bundle where installed
(as the openai client does), else the system's certificates.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import threading
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["HTTPResponse", "HTTPStatusError", "JSONTransport", "TransportError"]

#: The errors of a connection that the server closed while idle; the request is resent once on a new one.
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class TransportError(Exception):
    """The request got no HTTP response: ``kind`` is ``timeout`` or ``connection``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class HTTPStatusError(Exception):
    """A response with a status other than 2xx; ``body`` is its JSON (``None`` when not JSON), ``text`` its text."""

    def __init__(self, response: HTTPResponse) -> None:
        self.status_code = response.status
        self.headers = response.headers
        self.text = response.text
        try:
            self.body: Any = json.loads(response.text)
        except ValueError:
            self.body = None
        self.message = " ".join(response.text.split())[:300] or response.reason
        super().__init__(f"HTTP {self.status_code}: {self.message}")


@dataclass(frozen=True)
class HTTPResponse:
    """A response: status, headers (names lower-cased) and the body as text."""

    status: int
    reason: str
    headers: Mapping[str, str]
    text: str


class JSONTransport:
    """POSTs JSON under one base URL; thread-safe, reusing idle keep-alive connections."""

    def __init__(self, base_url: str, *, headers: Mapping[str, str], timeout_s: float) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"an LLM base URL must be http:// or https://host..., got {base_url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.path = parts.path.rstrip("/")
        self.timeout_s = timeout_s
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", **headers}
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None
        self._proxy = _proxy_for(parts.scheme, self.host)
        if self._proxy is not None and self.scheme == "http":
            self._headers.update(self._proxy.headers)

    def post(self, path: str, payload: Mapping[str, Any]) -> HTTPResponse:
        """POST ``payload`` as JSON to ``base_url + path``; :class:`HTTPStatusError` unless the status is 2xx.

        :class:`TransportError` when no response came (timeout, refused or broken connection).
        """
        body = json.dumps(payload).encode()
        target = self.path + path
        if self._proxy is not None and self.scheme == "http":  # a plain-HTTP proxy takes the absolute URL
            target = f"http://{self.host}:{self.port}{target}"
        for reused in (True, False):
            connection = self._take() if reused else None
            if reused and connection is None:
                continue
            if connection is None:
                connection = self._connect()
            try:
                connection.request("POST", target, body, self._headers)
                raw = connection.getresponse()
                text = raw.read().decode("utf-8", errors="replace")
            except _STALE as exc:
                connection.close()
                if reused:
                    continue
                raise TransportError("connection", f"connection error: {type(exc).__name__}: {exc}") from None
            except TimeoutError:
                connection.close()
                raise TransportError("timeout", f"timed out: no response within {self.timeout_s:g} s") from None
            except (OSError, http.client.HTTPException) as exc:  # refused, TLS, a body cut off, a malformed status line
                connection.close()
                raise TransportError("connection", f"connection error: {type(exc).__name__}: {exc}") from None
            response = HTTPResponse(raw.status, raw.reason, {name.lower(): value for name, value in raw.getheaders()}, text)
            if raw.will_close:
                connection.close()
            else:
                self._give_back(connection)
            if not 200 <= response.status < 300:
                raise HTTPStatusError(response)
            return response
        raise AssertionError("unreachable: the second attempt always connects anew")

    def close(self) -> None:
        """Close the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _take(self) -> http.client.HTTPConnection | None:
        with self._lock:
            return self._idle.pop() if self._idle else None

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.append(connection)

    def _connect(self) -> http.client.HTTPConnection:
        proxy = self._proxy
        if self.scheme == "http":
            if proxy is None:
                return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            return http.client.HTTPConnection(proxy.host, proxy.port, timeout=self.timeout_s)
        context = self._context()
        if proxy is None:
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout_s, context=context)
        connection = http.client.HTTPSConnection(proxy.host, proxy.port, timeout=self.timeout_s, context=context)
        connection.set_tunnel(self.host, self.port, headers=proxy.headers)
        return connection

    def _context(self) -> ssl.SSLContext:
        with self._lock:
            if self._tls is None:
                self._tls = _tls_context()
            return self._tls


@dataclass(frozen=True)
class _Proxy:
    host: str
    port: int
    headers: dict[str, str]


def _proxy_for(scheme: str, host: str) -> _Proxy | None:
    """The proxy the environment names for ``scheme`` (``None`` when none, or when ``NO_PROXY`` covers ``host``)."""
    url = urllib.request.getproxies().get(scheme)
    if not url or urllib.request.proxy_bypass(host):
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if not parts.hostname:
        return None
    headers = {}
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(credentials).decode()
    return _Proxy(parts.hostname, parts.port or 80, headers)


def _tls_context() -> ssl.SSLContext:
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if not cafile and not capath:
        try:
            import certifi
        except ImportError:
            return ssl.create_default_context()
        cafile = certifi.where()
    return ssl.create_default_context(cafile=cafile, capath=capath)
