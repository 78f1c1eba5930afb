"""Load the interface libraries and the embedding model once, before any pytester run.

Pytester's in-process runs forget the modules first imported inside them, and a C extension imported a second
time in one process breaks ("bad call flags", crashes): torch (the MiniLM embedder), langgraph's ormsgpack,
Chroma's bindings, FAISS. Keeping them loaded also loads the model once for all the runs.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator

import pytest

LIBRARIES = (
    "langchain_core.vectorstores",
    "langchain_chroma",
    "faiss",
    "langchain_community.vectorstores",
    "langchain_qdrant",
    "langchain_postgres",
    "llama_index.core",
    "langgraph.store.memory",
    "mcp.client.stdio",
)


@pytest.fixture(scope="session", autouse=True)
def preloaded() -> None:
    """Import the libraries and the adapters, and load MiniLM, in this process."""
    for module in LIBRARIES:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    import lens_fixtures.adapters.interfaces.base  # noqa: F401
    from pytest_lens.embedding import SentenceTransformerEmbedder

    SentenceTransformerEmbedder().encode(["load the model once"])


@pytest.fixture(scope="session")
def pgvector_url() -> Iterator[str]:
    """A real PostgreSQL with pgvector for this session (tests/interfaces/postgres.py), its URL in ``LENS_PGVECTOR_URL``.

    Skipped (failed under ``CI=true``) where no server can be started, saying what to install.
    """
    from tests.interfaces.postgres import URL_ENV, PostgresUnavailable, pgvector_server
    from tests.interfaces.servers import missing, require

    require("langchain_postgres", "langchain-postgres 'psycopg[binary]'")
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(pgvector_server())
        except PostgresUnavailable as exc:
            missing(str(exc))
        before = os.environ.get(URL_ENV)
        os.environ[URL_ENV] = url
        try:
            yield url
        finally:
            if before is None:
                os.environ.pop(URL_ENV, None)
            else:
                os.environ[URL_ENV] = before
