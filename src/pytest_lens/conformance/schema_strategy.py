"""Hypothesis strategies for JSON values valid against a JSON Schema (the arguments of extra tools).

Covers what tool schemas use: ``type`` (one or several), ``enum``, ``const``,
``properties``/``required``/``additionalProperties``, ``items``/``prefixItems``,
``minItems``/``maxItems``/``uniqueItems``, string lengths and ``pattern``,
numeric bounds and ``multipleOf``, ``anyOf``/``oneOf``/``allOf`` and local
``$ref``. Every value is checked against the whole schema with ``jsonschema``
before use, so keywords approximated here (``not``, ``if``/``then``,
``dependentRequired``, ...) never yield an invalid value; a schema nothing can
satisfy makes hypothesis give up (``Unsatisfiable``).

(hypothesis-jsonschema does this more completely, but relies on private
hypothesis internals that current hypothesis releases no longer have.)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

__all__ = ["UnsupportedSchema", "from_json_schema"]

_MAX_ITEMS = 8
#: Longest array generated, whatever maxItems allows.
_MAX_LENGTH = 64
_SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(-1000, 1000), st.floats(-1e6, 1e6, allow_nan=False), st.text(max_size=12)
)
_ANY_JSON: st.SearchStrategy[Any] = st.recursive(
    _SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(st.text(max_size=8), children, max_size=3)),
    max_leaves=6,
)


class UnsupportedSchema(ValueError):
    """The schema uses something values cannot be generated for (e.g. a remote ``$ref``)."""


def from_json_schema(schema: Mapping[str, Any] | bool) -> st.SearchStrategy[Any]:
    """Values valid against ``schema``; :class:`UnsupportedSchema` when it cannot be generated from."""
    import jsonschema

    validator = jsonschema.validators.validator_for(schema if isinstance(schema, Mapping) else {})(schema)
    return _strategy(schema, schema, 0).filter(validator.is_valid)


def _strategy(schema: Any, root: Any, depth: int) -> st.SearchStrategy[Any]:
    if schema is True or schema == {}:
        return _ANY_JSON
    if schema is False:
        return st.nothing()
    if not isinstance(schema, Mapping):
        raise UnsupportedSchema(f"a schema must be an object or a boolean, got {schema!r}")
    if depth > 8:
        raise UnsupportedSchema("the schema nests (or refers to itself) too deeply")
    if "$ref" in schema:
        return _strategy(_resolve(schema["$ref"], root), root, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            rest = {k: v for k, v in schema.items() if k != combinator}
            return st.one_of(
                [_strategy({**rest, **dict(sub)} if isinstance(sub, Mapping) else sub, root, depth + 1) for sub in schema[combinator]]
            )
    if "allOf" in schema:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for sub in schema["allOf"]:
            merged = _merge(merged, _resolve(sub["$ref"], root) if isinstance(sub, Mapping) and "$ref" in sub else sub)
        return _strategy(merged, root, depth + 1)
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else list(declared) if isinstance(declared, list) else _implied_types(schema)
    return st.one_of([_typed(kind, schema, root, depth) for kind in types])


def _implied_types(schema: Mapping[str, Any]) -> list[str]:
    if any(key in schema for key in ("properties", "required", "additionalProperties")):
        return ["object"]
    if any(key in schema for key in ("items", "prefixItems", "minItems", "maxItems")):
        return ["array"]
    if any(key in schema for key in ("minLength", "maxLength", "pattern")):
        return ["string"]
    if any(key in schema for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return ["number"]
    return ["null", "boolean", "integer", "number", "string", "array", "object"]


def _typed(kind: str, schema: Mapping[str, Any], root: Any, depth: int) -> st.SearchStrategy[Any]:
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind in ("integer", "number"):
        return _numbers(kind, schema)
    if kind == "string":
        return _strings(schema)
    if kind == "array":
        return _arrays(schema, root, depth)
    if kind == "object":
        return _objects(schema, root, depth)
    raise UnsupportedSchema(f"unknown JSON type {kind!r}")


def _numbers(kind: str, schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    step = schema.get("multipleOf")
    if kind == "integer" or step is not None:
        low_int = math.ceil(low) if low is not None else -1000
        high_int = math.floor(high) if high is not None else max(low_int, 0) + 1000
        integers = st.integers(low_int, high_int)
        return integers.map(lambda n: n * step) if step is not None else integers
    return st.one_of(
        st.integers(math.ceil(low) if low is not None else -1000, math.floor(high) if high is not None else 1000),
        st.floats(low, high, allow_nan=False, allow_infinity=False),
    )


def _strings(schema: Mapping[str, Any]) -> st.SearchStrategy[str]:
    low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
    if "pattern" in schema:
        return st.from_regex(str(schema["pattern"])).filter(lambda s: len(s) >= low and (high is None or len(s) <= high))
    return st.text(min_size=low, max_size=int(high) if high is not None else max(low, 20))


def _arrays(schema: Mapping[str, Any], root: Any, depth: int) -> st.SearchStrategy[list[Any]]:
    low = int(schema.get("minItems", 0))
    high = min(int(schema.get("maxItems", low + _MAX_ITEMS)), low + _MAX_LENGTH)
    prefix = [_strategy(sub, root, depth + 1) for sub in schema.get("prefixItems", [])]
    items = schema.get("items", True)
    element = _strategy(items, root, depth + 1) if isinstance(items, Mapping | bool) else _ANY_JSON
    unique = _key if schema.get("uniqueItems") else None
    # The bounds themselves are the likeliest to be mishandled: draw them as often as any other length.
    sizes = st.one_of(st.integers(low, high), st.sampled_from([low, high])).map(lambda size: max(0, size - len(prefix)))
    rest = sizes.flatmap(lambda size: st.lists(element, min_size=size, max_size=size, unique_by=unique))
    if not prefix:
        return rest
    return st.tuples(st.tuples(*prefix), rest).map(lambda parts: [*parts[0], *parts[1]])


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _objects(schema: Mapping[str, Any], root: Any, depth: int) -> st.SearchStrategy[dict[str, Any]]:
    properties = {str(k): v for k, v in (schema.get("properties") or {}).items()}
    required = [str(k) for k in schema.get("required") or []]
    extra = schema.get("additionalProperties", True)
    values = {name: _strategy(properties.get(name, True), root, depth + 1) for name in {*properties, *required}}

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, strategy in values.items():
            if name in required or draw(st.booleans()):
                out[name] = draw(strategy)
        if extra is not False and draw(st.integers(0, 4)) == 0:  # now and then, a property the schema allows but does not name
            name = draw(st.text(min_size=1, max_size=10).filter(lambda key: key not in values))
            out[name] = draw(_strategy(extra, root, depth + 1) if isinstance(extra, Mapping) else _SCALARS)
        return out

    return build()


def _resolve(reference: Any, root: Any) -> Any:
    if not isinstance(reference, str) or not reference.startswith("#"):
        raise UnsupportedSchema(f"only local $ref ('#/...') can be followed, not {reference!r}")
    node = root
    for part in [p for p in reference[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            raise UnsupportedSchema(f"$ref {reference!r} points nowhere in the schema")
        node = node[part]
    return node


def _merge(base: Mapping[str, Any], extra: Any) -> dict[str, Any]:
    if not isinstance(extra, Mapping):
        return dict(base)
    merged = dict(base)
    for key, value in extra.items():
        if key == "properties":
            merged["properties"] = {**merged.get("properties", {}), **value}
        elif key == "required":
            merged["required"] = sorted({*merged.get("required", []), *value})
        else:
            merged.setdefault(key, value)
    return merged
