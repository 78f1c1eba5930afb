"""What adapter authors and test writers import, in one place.

``pytest_lens`` itself exports the adapter contract and the records a test reads (``MemoryAdapter``,
``SearchResult``, ``QuestionResult``, ...). This module adds the tools an adapter's own tests and
benchmarks use: calling an adapter the way a run does, loading adapters and datasets, the shared
embedder, progress lines, and the LLM client. Everything else in the package is internal: its
modules may move between releases; these names will not without a deprecation::

    from pytest_lens.api import AdapterCaller, load_adapter_class, load_dataset

Names are imported on first use, so importing this module costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_lens._lazy import lazy_attributes

__all__ = [
    "AdapterCallError",
    "AdapterCaller",
    "AdapterLoadError",
    "AdapterSpec",
    "ChatClient",
    "LensRuntime",
    "Progress",
    "accepts_keyword",
    "as_document",
    "as_search_results",
    "content_terms",
    "default_embedder",
    "fetch_context",
    "generate_scope",
    "load_adapter_class",
    "load_dataset",
    "normalize",
    "outside_call_timeout",
    "report_activity",
    "report_embeddings",
    "validate_manifest",
]

#: Where each name lives (internal modules: import the name from here, not from there).
SOURCES: dict[str, str] = {
    "AdapterCallError": "pytest_lens.execution.calls",
    "AdapterCaller": "pytest_lens.execution.calls",
    "AdapterLoadError": "pytest_lens.contract.registry",
    "AdapterSpec": "pytest_lens.records.settings",
    "ChatClient": "pytest_lens.llm.client",
    "LensRuntime": "pytest_lens.execution.runner",
    "Progress": "pytest_lens.progress",
    "accepts_keyword": "pytest_lens.contract.registry",
    "as_document": "pytest_lens.contract.checks",
    "as_search_results": "pytest_lens.contract.checks",
    "content_terms": "pytest_lens.text",
    "default_embedder": "pytest_lens.embedding",
    "fetch_context": "pytest_lens.execution.memory_context",
    "generate_scope": "pytest_lens.generator.pipeline",
    "load_adapter_class": "pytest_lens.contract.registry",
    "load_dataset": "pytest_lens.datasets.loader",
    "normalize": "pytest_lens.text",
    "outside_call_timeout": "pytest_lens.execution.deadline",
    "report_activity": "pytest_lens.progress",
    "report_embeddings": "pytest_lens.progress",
    "validate_manifest": "pytest_lens.contract.checks",
}

if TYPE_CHECKING:
    from pytest_lens.contract.checks import as_document, as_search_results, validate_manifest
    from pytest_lens.contract.registry import AdapterLoadError, accepts_keyword, load_adapter_class
    from pytest_lens.datasets.loader import load_dataset
    from pytest_lens.embedding import default_embedder
    from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
    from pytest_lens.execution.deadline import outside_call_timeout
    from pytest_lens.execution.memory_context import fetch_context
    from pytest_lens.execution.runner import LensRuntime
    from pytest_lens.generator.pipeline import generate_scope
    from pytest_lens.llm.client import ChatClient
    from pytest_lens.progress import Progress, report_activity, report_embeddings
    from pytest_lens.records.settings import AdapterSpec
    from pytest_lens.text import content_terms, normalize


__getattr__ = lazy_attributes(__name__, SOURCES)


def __dir__() -> list[str]:
    return sorted(__all__)
