"""A cap on the size of an endpoint's response body, counted decoded and enforced while it is read.

A 1 MB gzip body that inflates to 1 GiB took 4.3 GB of memory: the HTTP library inflates a whole body at once, and
the SDK then holds it as bytes, as text and as parsed JSON. The client's transport is wrapped: it asks only for the
encodings it can decode itself in bounded steps (``Accept-Encoding: gzip, deflate``), inflates the body 64 KiB at a
time (:mod:`zlib`'s ``max_length``) and stops with :class:`ResponseBodyError` once the decoded body passes the cap,
naming the cap and the endpoint. The HTTP library then sees a plain body (the ``Content-Encoding`` is removed), so
it inflates nothing itself.

Why :data:`MAX_RESPONSE_BYTES` is 16 MiB: a chat completion is capped by its ``max_tokens`` (the agent's default is
a few hundred tokens, and 32,768 tokens of text are about 130 kB); 16 MiB is a hundred times more than any
completion pytest-lens asks for and still small next to the memory a run holds. An embeddings response grows with
its batch: a 3,072-dimension vector written as JSON floats is about 65 kB, so the embedding client allows
:data:`EMBEDDING_BYTES_PER_TEXT` per text of a batch when that is more.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from pytest_lens.llm.api_keys import mask_secrets

__all__ = ["EMBEDDING_BYTES_PER_TEXT", "MAX_RESPONSE_BYTES", "ResponseBodyError", "bounded_transport", "http_library"]

#: The most a response body may hold, decoded (see the module docstring for why 16 MiB).
MAX_RESPONSE_BYTES = 16 * 2**20
#: What an embeddings response may hold per text of its batch, where that is more than :data:`MAX_RESPONSE_BYTES`.
EMBEDDING_BYTES_PER_TEXT = 128 * 2**10
#: The most one inflating step produces: memory for decoding is this, whatever the compression ratio.
_STEP = 64 * 2**10
#: Encodings decoded here, in bounded steps; the request asks for these only.
_DECODED = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


class ResponseBodyError(Exception):
    """A response body pytest-lens will not read: larger than its cap, or in an encoding it cannot decode in steps.

    Not an error of the HTTP library: the SDK passes it through unwrapped (not a connection error to retry).
    """


def http_library(openai: Any) -> Any:
    """The SDK's HTTP library (``httpx``; ``httpx2`` in later releases), for its transports and response class.

    Read from the SDK's own default client class, so it is the library this ``openai`` release sends with.
    """
    return importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.partition(".")[0])


def bounded_transport(library: Any, inner: Any, max_bytes: int, limit_name: str) -> Any:
    """``inner`` (an HTTP transport of ``library``) whose response bodies are decoded here and cut at ``max_bytes``.

    ``limit_name`` says in the error what sets the cap (a constant, an option).
    """
    transport = type("BoundedTransport", (_BoundedTransport, library.BaseTransport), {})
    stream = type("BoundedStream", (_BoundedStream, library.SyncByteStream), {"corrupt": library.DecodingError})
    return transport(inner, max_bytes, limit_name, stream)


class WrappingTransport:
    """An HTTP transport around ``inner``: closing and entering it close and enter ``inner``."""

    inner: Any

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> WrappingTransport:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.inner.__exit__(*exc_info)


class _BoundedTransport(WrappingTransport):
    def __init__(self, inner: Any, max_bytes: int, limit_name: str, stream: type) -> None:
        self.inner = inner
        self.max_bytes = max_bytes
        self.limit_name = limit_name
        self.stream = stream

    def handle_request(self, request: Any) -> Any:
        request.headers["accept-encoding"] = ", ".join(name for name in _DECODED if name != "x-gzip")
        response = self.inner.handle_request(request)
        where = mask_secrets(f"{request.method} {request.url}")
        encodings = [part.strip().lower() for part in response.headers.get("content-encoding", "").split(",")]
        encodings = [name for name in encodings if name and name != "identity"]
        unknown = [name for name in encodings if name not in _DECODED]
        if unknown:
            response.close()
            raise ResponseBodyError(
                f"the response to {where} is encoded as {', '.join(unknown)!r}, which pytest-lens did not ask for "
                f"(Accept-Encoding: {request.headers['accept-encoding']}) and does not decode"
            )
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            response.close()
            raise ResponseBodyError(self._too_large(where, f"its Content-Length says {int(length):,} bytes"))
        if encodings:
            del response.headers["content-encoding"]
            if "content-length" in response.headers:
                del response.headers["content-length"]  # the encoded length: the body read is the decoded one
        too_large = self._too_large(where, "{:,} bytes" + (f" decoded from {'+'.join(encodings)}" if encodings else "") + " and counting")
        response.stream = self.stream(response.stream, encodings, self.max_bytes, too_large)
        return response

    def _too_large(self, where: str, seen: str) -> str:
        return (
            f"the response to {where} is larger than {_size(self.max_bytes)} ({seen}); pytest-lens reads at most "
            f"{self.max_bytes:,} bytes of a response ({self.limit_name}), so that an endpoint cannot fill its memory"
        )


class _BoundedStream:
    """A response body decoded in steps of at most 64 KiB, ending in :class:`ResponseBodyError` past its cap."""

    #: What a body that is not valid in its encoding raises (the HTTP library's error, retried like its own decoding's).
    corrupt: type[Exception] = ValueError

    def __init__(self, inner: Any, encodings: list[str], max_bytes: int, too_large: str) -> None:
        self.inner = inner
        self.encodings = encodings
        self.max_bytes = max_bytes
        self.too_large = too_large

    def __iter__(self) -> Iterator[bytes]:
        chunks: Iterable[bytes] = self.inner
        for name in reversed(self.encodings):  # the last encoding applied is undone first
            chunks = _inflate(chunks, name)
        size = 0
        try:
            for chunk in chunks:
                size += len(chunk)
                if size > self.max_bytes:
                    raise ResponseBodyError(self.too_large.format(size))
                yield chunk
        except zlib.error as exc:
            raise self.corrupt(f"the response body is not valid {'+'.join(self.encodings)}: {exc}") from None

    def close(self) -> None:
        self.inner.close()


def _inflate(chunks: Iterable[bytes], encoding: str) -> Iterator[bytes]:
    """``chunks`` decoded from ``encoding``, no piece longer than :data:`_STEP` (``deflate`` with or without its header)."""
    decoder = zlib.decompressobj(_DECODED[encoding])
    first = True
    for chunk in chunks:
        data = chunk
        while True:
            try:
                out = decoder.decompress(data, _STEP)
            except zlib.error:
                if not (first and encoding == "deflate"):
                    raise
                decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # servers send raw deflate under that name too
                first = False
                continue
            first = False
            if out:
                yield out
            data = decoder.unconsumed_tail
            if not data and len(out) < _STEP:
                break
    rest = decoder.flush()
    if rest:
        yield rest


def _size(count: int) -> str:
    return f"{count / 2**20:g} MiB" if count >= 2**20 else f"{count / 2**10:g} KiB"
