"""JSON Schema checks of extra-tool arguments, with each schema's validator built once.

``jsonschema.validate`` re-checks the schema itself on every call (milliseconds each); a
run validates the same few tool schemas thousands of times, so validators are cached by
the schema's canonical JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

__all__ = ["schema_error", "schema_validator"]


@lru_cache(maxsize=256)
def _cached(key: str) -> Any:
    import jsonschema  # imported on first use only

    schema = json.loads(key)
    return jsonschema.validators.validator_for(schema)(schema)


def schema_validator(schema: Mapping[str, Any]) -> Any:
    """The ``jsonschema`` validator of ``schema`` (the schema itself is not checked: the conformance suite does that)."""
    return _cached(json.dumps(schema, sort_keys=True))


def schema_error(schema: Mapping[str, Any], value: Any) -> str | None:
    """The most relevant violation of ``schema`` by ``value`` as ``path: message`` (or just the message), ``None`` if valid."""
    import jsonschema

    error = jsonschema.exceptions.best_match(schema_validator(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{where + ': ' if where else ''}{error.message}"
