"""Deprecated path: moved to :mod:`pytest_lens.execution.memory_context`; public names are in :mod:`pytest_lens.api`."""

from typing import Any

from pytest_lens._moved import forward


def __getattr__(name: str) -> Any:
    return forward(__name__, "pytest_lens.execution.memory_context", name)
