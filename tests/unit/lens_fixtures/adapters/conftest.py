"""Fixtures for the reference adapters that call a model: the project's scripted OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lens_fixtures.openai_server import OpenAITestServer


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    """The scripted server, one per test (its request log is the test's own)."""
    with OpenAITestServer() as running:
        yield running
