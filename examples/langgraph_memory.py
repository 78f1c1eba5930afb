"""A LangGraph store with a semantic index (what LangMem builds on) as the memory under test: only a factory.

    pytest -m lens --lens-adapter=langgraph-store:examples.langgraph_memory:make_store

The factory is called once per scope with the keywords it names: ``index`` (``dims``, ``embed`` (the offline
MiniLM, through pytest-lens's embedding cache) and ``fields``), or ``embed`` and ``dims`` alone, and
``storage_dir``. A ``PostgresStore(conn, index=index)`` goes here just as well.
"""

from __future__ import annotations

from typing import Any

from langgraph.store.memory import InMemoryStore


def make_store(index: dict[str, Any]) -> InMemoryStore:
    return InMemoryStore(index=index)  # type: ignore[arg-type]
