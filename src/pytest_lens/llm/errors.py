"""Errors of the LLM plumbing; every one of them is an :class:`LLMError`."""

from __future__ import annotations

__all__ = ["LLMCacheError", "LLMCacheMiss", "LLMContextLengthError", "LLMError", "LLMRequestError", "LLMResponseError", "LLMTimeoutError"]


class LLMError(RuntimeError):
    """An LLM request could not be answered."""


class LLMRequestError(LLMError):
    """The endpoint refused the request, or kept failing after every retry."""


class LLMContextLengthError(LLMRequestError):
    """The endpoint refused the prompt as longer than the model's context (not retried: a resend is as long).

    ``limit`` (the model's context, in tokens) and ``prompt_tokens`` are what the server said, ``None`` when it did not.
    """

    def __init__(self, message: str, *, limit: int | None = None, prompt_tokens: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit
        self.prompt_tokens = prompt_tokens


class LLMTimeoutError(LLMRequestError):
    """The endpoint took every attempt but answered none in time: a slow model, not a down endpoint.

    ``timeout_s`` is the last attempt's timeout and ``max_tokens`` the request's token cap.
    """

    def __init__(self, message: str, *, timeout_s: float, max_tokens: int | None) -> None:
        super().__init__(message)
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens


class LLMResponseError(LLMError):
    """The endpoint answered with something that is not a usable chat completion."""


class LLMCacheError(LLMError):
    """The cache file cannot be used at all; the message names the file and what to do."""


class LLMCacheMiss(LLMError):
    """Replay mode and the request is not in the cache (or its entry is corrupted); the message names the request."""
