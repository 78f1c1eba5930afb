"""What adapters return, checked and normalised: search results, documents and the capability manifest.

An adapter may return dicts, dataclasses or objects with the right attributes; these functions turn them into the
contract's records or raise ``TypeError``/``ValueError`` saying what is wrong. :class:`AdapterCaller` turns those
errors into faults; the controls' mutants use the same normalisation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from pytest_lens.citations import citable
from pytest_lens.contract.adapter import CapabilityManifest, ContextBlock, Document, ExtraTool, FilterField, SearchResult

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "FILTER_FIELD_TYPES",
    "as_counters",
    "as_document",
    "as_search_results",
    "optional_text",
    "validate_manifest",
]

BUILTIN_TOOL_NAMES = frozenset({"memory_search", "memory_retrieve", "memory_capabilities"})
FILTER_FIELD_TYPES = frozenset({"string", "number", "integer", "boolean", "date", "enum"})
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _field(item: Any, name: str, default: Any = ...) -> Any:
    if isinstance(item, Mapping):
        if name in item:
            return item[name]
    elif hasattr(item, name):
        return getattr(item, name)
    if default is ...:
        raise TypeError(f"{type(item).__name__} has no field {name!r}")
    return default


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, got {type(value).__name__}")
    return value


def _metadata(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{what}.metadata must be a dict, got {type(value).__name__}")
    return {str(key): val for key, val in value.items()}


def optional_text(raw: Any) -> str | None:
    """What ``context()`` returned: a string or ``None``."""
    if raw is not None and not isinstance(raw, str):
        raise TypeError(f"context() must return str or None, got {type(raw).__name__}")
    return raw


def as_counters(raw: Any) -> dict[str, int]:
    """What ``lens_stats()`` returned: counters by name."""
    if not isinstance(raw, Mapping):
        raise TypeError(f"lens_stats() must return dict[str, int], got {type(raw).__name__}")
    for key, value in raw.items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"lens_stats() must return dict[str, int], got {key!r}: {value!r}")
    return dict(raw)


def as_search_results(raw: Any, limit: int | None = None) -> list[SearchResult]:
    """What ``search`` returned, as :class:`SearchResult` s (dicts and look-alike objects accepted); TypeError/ValueError if malformed.

    With ``limit``, more results than that is a ValueError (the contract: at most ``limit``), checked before any is read.
    """
    if not isinstance(raw, list | tuple):
        raise TypeError(f"expected list[SearchResult], got {type(raw).__name__}")
    if limit is not None and len(raw) > limit:
        raise ValueError(f"{len(raw):,} results for limit={limit} (search must return at most limit results)")
    results = []
    for index, item in enumerate(raw):
        what = f"result[{index}]"
        ref_id = _text(_field(item, "ref_id"), f"{what}.ref_id")
        if not ref_id:
            raise ValueError(f"{what}.ref_id is empty")
        score = _field(item, "score", 0.0)
        if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
            raise TypeError(f"{what}.score must be a number, got {score!r}")
        results.append(
            SearchResult(
                ref_id=ref_id,
                text=_text(_field(item, "text"), f"{what}.text"),
                score=float(score),
                metadata=_metadata(_field(item, "metadata", None), what),
            )
        )
    return results


def as_document(raw: Any, asked: str | None = None) -> Document:
    """What ``retrieve`` returned (not ``None``), as a :class:`Document`; TypeError if malformed.

    With ``asked`` (the ref id passed to ``retrieve``), a document with another ref id is a ValueError.
    """
    ref_id = _text(_field(raw, "ref_id"), "document.ref_id")
    if asked is not None and ref_id != asked:
        raise ValueError(f"retrieve({asked!r}) returned the document {ref_id!r} (a document must have the ref_id asked for)")
    return Document(
        ref_id=ref_id, text=_text(_field(raw, "text"), "document.text"), metadata=_metadata(_field(raw, "metadata", None), "document")
    )


def validate_manifest(raw: Any) -> CapabilityManifest:
    """Normalise and check a capability manifest; :class:`ValueError`/:class:`TypeError` say what is wrong."""
    if raw is None:  # every field has a default, so None would pass for the default manifest: an adapter bug
        raise TypeError("get_capabilities() returned None, expected a CapabilityManifest")
    modes = _field(raw, "search_modes", ["semantic"])
    if not isinstance(modes, list | tuple) or not all(isinstance(m, str) and m for m in modes):
        raise TypeError(f"search_modes must be a list of non-empty strings, got {modes!r}")
    max_results = _field(raw, "max_results_per_search", 10)
    if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1:
        raise ValueError(f"max_results_per_search must be a positive int, got {max_results!r}")
    date_range = _field(raw, "supports_date_range", False)
    if not isinstance(date_range, bool):
        raise TypeError(f"supports_date_range must be a bool, got {date_range!r}")
    filters = []
    for index, item in enumerate(_field(raw, "filter_fields", []) or []):
        name = _text(_field(item, "name"), f"filter_fields[{index}].name")
        field_type = _text(_field(item, "field_type"), f"filter_fields[{index}].field_type")
        if field_type not in FILTER_FIELD_TYPES:
            raise ValueError(f"filter_fields[{index}] ({name}): field_type {field_type!r} is not one of {sorted(FILTER_FIELD_TYPES)}")
        enum_values = _field(item, "enum_values", None)
        if field_type == "enum" and not enum_values:
            raise ValueError(f"filter_fields[{index}] ({name}): an enum field needs enum_values")
        filters.append(
            FilterField(
                name=name,
                field_type=field_type,
                description=str(_field(item, "description", "")),
                enum_values=[str(v) for v in enum_values] if enum_values else None,
            )
        )
    tools = []
    for index, item in enumerate(_field(raw, "extra_tools", []) or []):
        name = _text(_field(item, "name"), f"extra_tools[{index}].name")
        if not _TOOL_NAME.match(name) or name in BUILTIN_TOOL_NAMES:
            raise ValueError(f"extra_tools[{index}]: name {name!r} must match [A-Za-z0-9_-]{{1,64}} and not shadow a memory_* tool")
        parameters = _field(item, "parameters", {"type": "object", "properties": {}})
        if not isinstance(parameters, Mapping) or parameters.get("type") != "object":
            raise ValueError(f"extra_tools[{index}] ({name}): parameters must be a JSON Schema with type 'object'")
        tools.append(ExtraTool(name=name, description=str(_field(item, "description", "")), parameters=dict(parameters)))
    return CapabilityManifest(
        search_modes=list(modes),
        filter_fields=filters,
        max_results_per_search=max_results,
        supports_date_range=date_range,
        extra_tools=tools,
        context_block=_context_block(_field(raw, "context_block", None)),
    )


def _context_block(raw: Any) -> ContextBlock | None:
    if raw is None:
        return None
    ref_id = _text(_field(raw, "ref_id"), "context_block.ref_id")
    # The agent cites the block as [ref_id]: it must read as one citation token.
    if not citable(ref_id):
        raise ValueError(f"context_block.ref_id {ref_id!r} must read as one citation [ref_id] (letters, digits and _ . : # / @ + -)")
    max_tokens = _field(raw, "max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"context_block.max_tokens must be a positive int, got {max_tokens!r}")
    title = _text(_field(raw, "title", "memory context"), "context_block.title")
    return ContextBlock(ref_id=ref_id, max_tokens=max_tokens, title=title.strip() or "memory context")
