"""``--lens-llm-timeout`` for a whole response: the HTTP library's timeouts are per read, not per request.

``httpx`` gives up on a read that waits longer than its timeout; a server that sends one byte every half second
never makes a read wait that long, and a 270-byte body took 135 s under ``--lens-llm-timeout=5``. The client's
transport is wrapped: once the response's headers are in, a timer shuts the connection's socket down when the
request's time is up (waking a read blocked on it), and the body, cut off or read past the deadline, is a read
timeout -- the error the SDK and :class:`~pytest_lens.llm.client.LLMEndpoint` already retry and report. Connecting
and waiting for the headers are bounded by the per-read timeouts themselves (each no longer than the request's).
Each attempt of a retried request has its own deadline: the request's own timeout where the SDK passed one (sized
per request), else the client's.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from pytest_lens.llm.bounded import MAX_RESPONSE_BYTES, WrappingTransport, bounded_transport

__all__ = ["deadline_http_client"]


def deadline_http_client(openai: Any, library: Any, total_s: float) -> Any:
    """The SDK's default HTTP client (its limits, redirects, proxies) whose every request ends within ``total_s``.

    Its response bodies are capped too (:mod:`pytest_lens.llm.bounded`).
    """
    transport = type("DeadlineTransport", (_DeadlineTransport, library.BaseTransport), {})
    plain = library.HTTPTransport(limits=openai.DEFAULT_CONNECTION_LIMITS)
    inner = bounded_transport(library, plain, MAX_RESPONSE_BYTES, "MAX_RESPONSE_BYTES in pytest_lens.llm.bounded")
    return openai.DefaultHttpxClient(transport=transport(inner, total_s, library), timeout=total_s)


class _DeadlineTransport(WrappingTransport):
    """An HTTP transport whose responses end (a read timeout) ``total_s`` after the request was sent."""

    def __init__(self, inner: Any, total_s: float, library: Any) -> None:
        self.inner = inner
        self.total_s = total_s
        self.library = library
        #: The library's body stream type (``httpx`` checks what it iterates is one).
        self.stream = type("DeadlineStream", (_DeadlineStream, library.SyncByteStream), {})

    def handle_request(self, request: Any) -> Any:
        total_s = _request_timeout(request) or self.total_s
        deadline = time.monotonic() + total_s
        response = self.inner.handle_request(request)
        late = self.library.ReadTimeout(f"no complete response within {total_s:g} s (--lens-llm-timeout)", request=request)
        left = deadline - time.monotonic()
        if left <= 0:
            response.close()
            raise late
        timer = threading.Timer(left, _shut_down, (response.extensions.get("network_stream"),))
        timer.daemon = True
        timer.start()
        response.stream = self.stream(response.stream, deadline, timer, late)
        return response


class _DeadlineStream:
    """A response body that raises ``late`` once its deadline passed (cut off by the timer, or read slowly)."""

    def __init__(self, inner: Any, deadline: float, timer: threading.Timer, late: Exception) -> None:
        self.inner = inner
        self.deadline = deadline
        self.timer = timer
        self.late = late

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self.inner:
                if time.monotonic() > self.deadline:
                    raise self.late
                yield chunk
        except Exception as exc:
            if exc is not self.late and time.monotonic() > self.deadline:
                raise self.late from exc  # the timer shut the socket: that was the deadline, not the server
            raise
        finally:
            self.timer.cancel()

    def close(self) -> None:
        self.timer.cancel()
        self.inner.close()


def _request_timeout(request: Any) -> float | None:
    """The request's own timeout (a per-request ``timeout`` the SDK passed down to the HTTP library), if it has one."""
    timeouts = request.extensions.get("timeout")
    read = timeouts.get("read") if isinstance(timeouts, dict) else None
    return float(read) if isinstance(read, (int, float)) and read > 0 else None


def _shut_down(network_stream: Any) -> None:
    """Wake a read blocked on the response's socket (the connection is not reused: it is closed with the response)."""
    if network_stream is None:
        return
    sock = network_stream.get_extra_info("socket")
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
