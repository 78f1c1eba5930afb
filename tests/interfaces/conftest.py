"""Load the interface libraries and the embedding model once, before any pytester run.

Pytester's in-process runs forget the modules first imported inside them, and a C extension imported a second
time in one process breaks ("bad call flags", crashes): torch (the MiniLM embedder), langgraph's ormsgpack,
Chroma's bindings. Keeping them loaded also loads the model once for all the runs.
"""

from __future__ import annotations

import contextlib
import importlib

import pytest

LIBRARIES = ("langchain_core.vectorstores", "langchain_chroma", "llama_index.core", "langgraph.store.memory", "mcp.client.stdio")


@pytest.fixture(scope="session", autouse=True)
def preloaded() -> None:
    """Import the libraries and the adapters, and load MiniLM, in this process."""
    for module in LIBRARIES:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    import lens_fixtures.adapters.interfaces.base  # noqa: F401
    from pytest_lens.embedding import SentenceTransformerEmbedder

    SentenceTransformerEmbedder().encode(["load the model once"])
