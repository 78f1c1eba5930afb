"""The ``batch_retrieve`` extra tool shared by the reference adapters that offer it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pytest_lens import Document, ExtraTool
from pytest_lens.contract.schema import schema_validator

__all__ = ["BATCH_RETRIEVE", "batch_payload", "batch_ref_ids"]

BATCH_RETRIEVE = ExtraTool(
    name="batch_retrieve",
    description="Retrieve the full text of several stored items in one call.",
    parameters={
        "type": "object",
        "properties": {"ref_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 20}},
        "required": ["ref_ids"],
        "additionalProperties": False,
    },
)


def batch_ref_ids(args: dict[str, Any]) -> list[str]:
    """The ``ref_ids`` of valid ``batch_retrieve`` arguments; ``jsonschema.ValidationError`` says which argument is wrong."""
    schema_validator(BATCH_RETRIEVE.parameters).validate(args)
    return list(args["ref_ids"])


def batch_payload(ref_ids: Iterable[str], retrieve: Callable[[str], Document | None]) -> dict[str, Any]:
    """``{"documents": [{ref_id, text}], "count": n}`` for the ids ``retrieve`` finds, in request order."""
    documents = [{"ref_id": doc.ref_id, "text": doc.text} for ref in ref_ids if (doc := retrieve(ref)) is not None]
    return {"documents": documents, "count": len(documents)}
