from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_lens.conformance.schema_strategy import UnsupportedSchema, from_json_schema

BATCH = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 20}
DAY = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"ref_ids": BATCH}, "required": ["ref_ids"], "additionalProperties": False},
    {
        "type": "object",
        "properties": {"mode": {"enum": ["full", "brief"]}, "n": {"type": "integer", "minimum": 1, "maximum": 5}},
        "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
    },
    {
        "type": "object",
        "properties": {"day": DAY, "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "uniqueItems": True}},
        "required": ["day"],
    },
    {
        "type": "object",
        "properties": {"q": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}, "k": {"$ref": "#/$defs/k"}},
        "required": ["q", "k"],
        "$defs": {"k": {"type": "integer", "multipleOf": 5}},
    },
    {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]},
            {"properties": {"b": {"const": 3}}, "required": ["b"]},
        ]
    },
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_every_generated_value_is_valid_for_its_schema(schema: dict[str, Any]) -> None:
    seen: list[Any] = []

    @settings(max_examples=30, derandomize=True, database=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
    @given(from_json_schema(schema))
    def check(value: Any) -> None:
        jsonschema.validate(value, schema)
        seen.append(value)

    check()
    assert len(seen) >= 10


def test_remote_references_are_refused_with_a_reason() -> None:
    with pytest.raises(UnsupportedSchema, match="only local"):
        from_json_schema({"type": "object", "properties": {"x": {"$ref": "https://example.org/x.json"}}, "required": ["x"]})


def test_array_bounds_are_generated() -> None:
    lengths: set[int] = set()

    @settings(max_examples=40, derandomize=True, database=None)
    @given(from_json_schema(BATCH))
    def check(value: list[str]) -> None:
        lengths.add(len(value))

    check()
    assert {1, 20} <= lengths


def test_a_schema_nothing_satisfies_generates_nothing() -> None:
    assert from_json_schema(False).is_empty
    assert isinstance(from_json_schema(True), st.SearchStrategy)
