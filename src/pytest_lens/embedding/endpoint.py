"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, TEI, llama.cpp, Ollama)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from pytest_lens.embedding.base import Vectors, normalize_rows
from pytest_lens.llm.api_keys import mask_secrets, read_api_key, remember_url
from pytest_lens.llm.bounded import EMBEDDING_BYTES_PER_TEXT, MAX_RESPONSE_BYTES, bounded_transport, http_library
from pytest_lens.llm.settings import split_base_url

if TYPE_CHECKING:
    from openai import OpenAI

__all__ = ["API_KEY_ENV", "OpenAIEmbedder"]

#: Environment variables read for the endpoint's key, in order (keys never go into options, caches or reports).
API_KEY_ENV = ("LENS_EMBEDDING_API_KEY", "OPENAI_API_KEY")


class OpenAIEmbedder:
    """Calls ``POST {base_url}/embeddings`` through the ``openai`` client, ``batch_size`` texts per request.

    Vectors are normalised here, whatever the server returns. The API key comes
    from ``LENS_EMBEDDING_API_KEY`` or ``OPENAI_API_KEY``; local servers that need
    none get a placeholder. Error messages never show the key, even when the server echoes it.
    """

    def __init__(self, model: str, base_url: str, *, batch_size: int = 64, timeout: float = 60.0, max_retries: int = 2) -> None:
        if not model:
            raise ValueError("an OpenAI-compatible embedder needs a model name (embedding_model)")
        if not base_url:
            raise ValueError("an OpenAI-compatible embedder needs a base URL, e.g. http://127.0.0.1:8000/v1")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        remember_url(self.base_url)  # its password and key parameters are masked in every message from now on
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_retries = max_retries
        self._client: OpenAI | None = None

    @property
    def model_id(self) -> str:
        """``openai:<base_url>:<model>``, the URL's secrets masked (it keys the embedding cache and is printed)."""
        return f"openai:{mask_secrets(self.base_url)}:{self.model}"

    def encode(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in order; a wrong-sized or malformed response is an error naming the endpoint."""
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            rows.extend(self._request(batch))
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        if len({len(row) for row in rows}) != 1:
            raise ValueError(f"embedding endpoint {self.model_id} returned vectors of different lengths")
        return normalize_rows(np.asarray(rows, dtype=np.float32))

    def _request(self, batch: list[str]) -> list[list[float]]:
        client = self._connect()
        try:
            response = client.embeddings.create(model=self.model, input=batch, encoding_format="float")
        except Exception as exc:
            # The server's error body may echo the request, key included: mask it, and leave the
            # unmasked exception out of the chain (tracebacks print causes).
            problem = mask_secrets(f"embedding endpoint {self.base_url} (model {self.model!r}) failed: {type(exc).__name__}: {exc}")
            raise RuntimeError(problem) from None
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise ValueError(f"embedding endpoint {mask_secrets(self.base_url)} returned {len(data)} vectors for {len(batch)} texts")
        return [list(item.embedding) for item in data]

    @property
    def max_response_bytes(self) -> int:
        """The most one response may hold, decoded: a chat completion's cap, or more for a large batch's vectors."""
        return max(MAX_RESPONSE_BYTES, self.batch_size * EMBEDDING_BYTES_PER_TEXT)

    def _connect(self) -> OpenAI:
        if self._client is None:
            import openai

            api_key = read_api_key(*API_KEY_ENV) or "not-needed"
            library = http_library(openai)
            plain = library.HTTPTransport(limits=openai.DEFAULT_CONNECTION_LIMITS)
            limit = "MAX_RESPONSE_BYTES, or EMBEDDING_BYTES_PER_TEXT per text of batch_size, in pytest_lens.llm.bounded"
            transport = bounded_transport(library, plain, self.max_response_bytes, limit)
            base_url, query = split_base_url(self.base_url)  # ?api-version=... stays a query parameter of each request
            self._client = openai.OpenAI(
                base_url=base_url,
                default_query=query or None,
                api_key=api_key,
                timeout=self.timeout,
                max_retries=self.max_retries,
                http_client=openai.DefaultHttpxClient(transport=transport, timeout=self.timeout),
            )
        return self._client
