from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from pytest_lens.conformance.checks.filters import matches
from pytest_lens.conformance.checks.tools import batch_documents, invalid_variants

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ref_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        "mode": {"type": "string", "enum": ["full", "brief"]},
        "count": {"type": "integer"},
    },
    "required": ["ref_ids"],
    "additionalProperties": False,
}


def test_every_invalid_variant_breaks_the_schema_in_the_way_it_says() -> None:
    variants = dict(invalid_variants(SCHEMA, {"ref_ids": ["a"], "mode": "full", "count": 2}))
    assert set(variants) == {
        "required 'ref_ids' left out",
        "'ref_ids' given as string 'text', not array",
        "'ref_ids' longer than maxItems=3",
        "'ref_ids' shorter than minItems=1",
        "'mode' given as integer 7, not string",
        "'mode' outside its enum",
        "'count' given as string 'text', not integer",
        "an undeclared property 'unexpected_argument'",
    }
    for args in variants.values():
        assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(args)


def test_a_schema_that_allows_anything_has_no_invalid_variants() -> None:
    assert invalid_variants({"type": "object"}, {"x": 1}) == []


def test_number_properties_accept_integers_so_an_integer_is_not_offered_as_wrong() -> None:
    variants = dict(invalid_variants({"type": "object", "properties": {"x": {"type": "number"}}}, {"x": 1.5}))
    assert list(variants) == ["'x' given as string 'text', not number"]


def test_batch_results_are_read_in_both_documented_shapes() -> None:
    assert batch_documents({"documents": [{"ref_id": "a", "text": "A"}], "count": 1}) == [("a", "A")]
    assert batch_documents([{"ref_id": "a", "text": "A"}]) == [("a", "A")]
    assert "expected" in str(batch_documents({"docs": []}))
    assert "document 0" in str(batch_documents({"documents": [{"ref_id": "a"}]}))


@pytest.mark.parametrize(
    ("field_type", "stored", "wanted", "expected"),
    [
        ("string", "north", "north", True),
        ("string", "North", "north", False),
        ("enum", "report", "report", True),
        ("boolean", True, True, True),
        ("boolean", 1, True, False),
        ("integer", 2, 2, True),
        ("number", 2, 2.0, True),
        ("number", True, 1, False),
        ("date", "2020-01-02", "2020-01-02", True),
        ("date", "2020-01-02", "2020-01-03", False),
    ],
)
def test_filter_values_match_by_type(field_type: str, stored: Any, wanted: Any, expected: bool) -> None:
    assert matches(field_type, stored, wanted) is expected
