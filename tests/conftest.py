"""Fixtures shared by pytest-lens's own tests."""

from __future__ import annotations

import contextlib
import importlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

# numpy's C extension cannot be loaded twice in one process, and pytester's in-process runs drop
# the modules first imported inside them; importing numpy and scipy.stats here, before any
# run, keeps them loaded for the whole session (pytest-lens's summaries use them).
import numpy  # noqa: F401
import pytest
import scipy.stats  # noqa: F401

from pytest_lens.datasets import LoadedScope, load_dataset
from pytest_lens.records.results import RunArtifact
from tests.support import run_lens_session, small_dataset, write_dataset

# The same for the HTTP transport under the openai client, which is imported on the first connection: first
# imported inside a run, it is dropped afterwards, and the next run's transport errors (a refused connection,
# a read timeout) escape as the transport's own exceptions instead of openai's.
for _transport in ("httpcore", "httpcore2"):
    with contextlib.suppress(ImportError):
        importlib.import_module(_transport)


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt during the test, as in a terminal, even where the suite runs with it ignored.

    A background job started without job control (``cmd &`` in a script), or ``nohup``, inherits SIGINT ignored;
    tests that send themselves Ctrl-C need Python's own handler.
    """
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are set from the main thread only")  # pragma: no cover
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def small_scope(tmp_path: Path) -> LoadedScope:
    """The six-episode scope of :func:`tests.support.small_dataset`, loaded and validated."""
    return load_dataset(write_dataset(tmp_path / "small.json", small_dataset())).scopes[0]


#: bm25 answers the example scope well; the degraded bm25 loses its best hit; null remembers nothing (every answer gated).
EXAMPLE_ADAPTERS = {"bm25": "bm25", "drops": "lens_fixtures.adapters.degraded:DropsBestBM25Adapter", "null": "null"}


@pytest.fixture(scope="session")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> RunArtifact:
    """A real run of bm25, a degraded bm25 and null on the cold-chain example scope (24 results)."""
    artifact: RunArtifact = run_lens_session(tmp_path_factory.mktemp("example-run"), EXAMPLE_ADAPTERS).artifact()
    return artifact


@pytest.fixture(scope="session")
def aliased_run(tmp_path_factory: pytest.TempPathFactory) -> RunArtifact:
    """bm25 on the example with opaque ref aliases: the agent sees and cites aliases, never stored ids."""
    artifact: RunArtifact = run_lens_session(tmp_path_factory.mktemp("aliased-run"), {"bm25": "bm25"}, opaque_refs="always").artifact()
    return artifact
