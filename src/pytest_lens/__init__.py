"""pytest-lens: test LLM memory systems the way the LENS benchmark does.

The adapter contract is importable from here::

    from pytest_lens import CapabilityManifest, Document, ExtraTool, FilterField, MemoryAdapter, SearchResult

Loading this package imports nothing heavy: pytest loads it on every run once installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_lens._lazy import lazy_attributes
from pytest_lens.contract.adapter import (
    AdapterUnavailable,
    CapabilityManifest,
    ContextBlock,
    Document,
    ExtraTool,
    FilterField,
    MemoryAdapter,
    SearchResult,
    UnknownToolError,
)

__version__ = "0.1.0"

__all__ = [
    "AdapterUnavailable",
    "Budget",
    "CapabilityManifest",
    "ContextBlock",
    "Document",
    "Episode",
    "ExtraTool",
    "FilterField",
    "GroundTruth",
    "KeyFact",
    "LensCase",
    "MemoryAdapter",
    "Question",
    "QuestionResult",
    "SearchResult",
    "UnknownToolError",
    "__version__",
    "outside_call_timeout",
]

# Names that need pydantic are imported on first access, keeping plugin start-up cheap.
_LAZY = {
    "Budget": "pytest_lens.records.budget",
    "Episode": "pytest_lens.datasets.models",
    "GroundTruth": "pytest_lens.datasets.models",
    "KeyFact": "pytest_lens.datasets.models",
    "Question": "pytest_lens.datasets.models",
    "QuestionResult": "pytest_lens.records.results",
    "LensCase": "pytest_lens.records.cases",
    # Lazy too, though stdlib-only: what the plugin imports before its first hook, pytest rewrites (slower start-up).
    "outside_call_timeout": "pytest_lens.execution.deadline",
}

if TYPE_CHECKING:
    from pytest_lens.datasets.models import Episode, GroundTruth, KeyFact, Question
    from pytest_lens.execution.deadline import outside_call_timeout
    from pytest_lens.records.budget import Budget
    from pytest_lens.records.cases import LensCase
    from pytest_lens.records.results import QuestionResult


__getattr__ = lazy_attributes(__name__, _LAZY)
