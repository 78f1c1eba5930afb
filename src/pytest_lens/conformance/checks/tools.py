"""``tools.*``: declared extra tools honour their JSON Schemas, and ``batch_retrieve`` equals individual retrieves.

Valid arguments are generated from each tool's schema (:mod:`~pytest_lens.conformance.schema_strategy`;
string values are swapped for ingested ids when the result still validates, so
tools that look ids up find some). Invalid arguments are valid ones broken in
one way the schema forbids: a required property dropped, a property of the wrong
JSON type, an unexpected property under ``additionalProperties: false``, an
array outside ``minItems``/``maxItems``, a value outside an ``enum``; each is
confirmed invalid by ``jsonschema`` before use. Rejecting means raising an
exception or returning an object with a non-empty ``"error"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from pytest_lens.conformance.clause import Clause, ClauseContext, ClauseViolation
from pytest_lens.conformance.samples import SampleEpisode, abbreviate, explain_text_difference, show_ids
from pytest_lens.conformance.schema_strategy import from_json_schema
from pytest_lens.conformance.strategies import episode_ids, episode_lists, marked_prose, scope_ids, unicode_texts
from pytest_lens.contract.adapter import CapabilityManifest, ExtraTool
from pytest_lens.contract.schema import schema_error, schema_validator
from pytest_lens.execution.calls import AdapterCallError

__all__ = ["BATCH_RETRIEVE", "TOOLS_ACCEPT_VALID", "TOOLS_BATCH_RETRIEVE", "TOOLS_REJECT_INVALID", "batch_documents", "invalid_variants"]

BATCH_RETRIEVE = "batch_retrieve"

#: One value of each JSON type, to give a property a type its schema does not allow.
_SAMPLE_OF_TYPE: dict[str, Any] = {
    "string": "text",
    "integer": 7,
    "number": 7.5,
    "boolean": True,
    "array": ["x"],
    "object": {"x": 1},
    "null": None,
}


def _properties(schema: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    properties = schema.get("properties")
    return {str(k): v for k, v in properties.items() if isinstance(v, Mapping)} if isinstance(properties, Mapping) else {}


def _rejectable(tool: ExtraTool) -> bool:
    """Whether some object breaks the tool's schema in a way :func:`invalid_variants` produces."""
    schema = tool.parameters
    return (
        bool(schema.get("required"))
        or schema.get("additionalProperties") is False
        or any("type" in p for p in _properties(schema).values())
    )


def invalid_variants(schema: Mapping[str, Any], args: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Copies of valid ``args`` broken in one way each, with what was broken; only those the schema really rejects."""
    variants: list[tuple[str, dict[str, Any]]] = []
    for key in schema.get("required") or []:
        if key in args:
            variants.append((f"required {key!r} left out", {k: v for k, v in args.items() if k != key}))
    for key, prop in _properties(schema).items():
        declared = prop.get("type")
        types = [declared] if isinstance(declared, str) else list(declared) if isinstance(declared, list) else []
        wrong = next(
            (
                (kind, value)
                for kind, value in _SAMPLE_OF_TYPE.items()
                if kind not in types and not (kind == "integer" and "number" in types)
            ),
            None,
        )
        if types and wrong is not None:
            variants.append((f"{key!r} given as {wrong[0]} {wrong[1]!r}, not {'/'.join(types)}", {**args, key: wrong[1]}))
        if "enum" in prop:
            variants.append((f"{key!r} outside its enum", {**args, key: "not-one-of-the-enum-values"}))
        if isinstance(prop.get("maxItems"), int):
            item = (args.get(key) or ["x"])[0] if isinstance(args.get(key), list) else "x"
            variants.append((f"{key!r} longer than maxItems={prop['maxItems']}", {**args, key: [item] * (prop["maxItems"] + 1)}))
        if isinstance(prop.get("minItems"), int) and prop["minItems"] > 0:
            variants.append((f"{key!r} shorter than minItems={prop['minItems']}", {**args, key: []}))
    if schema.get("additionalProperties") is False:
        variants.append(("an undeclared property 'unexpected_argument'", {**args, "unexpected_argument": 1}))
    validator = schema_validator(schema)
    return [(what, variant) for what, variant in variants if not validator.is_valid(variant)]


def _swap_strings(value: Any, ids: list[str], counter: list[int]) -> Any:
    if isinstance(value, str):
        counter[0] += 1
        return ids[counter[0] % len(ids)]
    if isinstance(value, list):
        return [_swap_strings(item, ids, counter) for item in value]
    if isinstance(value, dict):
        return {key: _swap_strings(item, ids, counter) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class ToolExample:
    """A stream, then one call of an extra tool."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]
    tool: str
    args: dict[str, Any]
    broken: str = ""


def _valid_args(draw: st.DrawFn, tool: ExtraTool, ids: list[str]) -> dict[str, Any]:
    args: Any = draw(from_json_schema(tool.parameters))
    use_ids: bool = draw(st.booleans())
    if ids and use_ids:
        start: int = draw(st.integers(0, len(ids) - 1))
        swapped = _swap_strings(args, ids, [start])
        if schema_validator(tool.parameters).is_valid(swapped):
            return dict(swapped)
    return dict(args)


def _accept_examples(manifest: CapabilityManifest) -> st.SearchStrategy[ToolExample]:
    @st.composite
    def build(draw: st.DrawFn) -> ToolExample:
        episodes = draw(episode_lists(min_size=0, max_size=4, text=marked_prose()))
        tool = draw(st.sampled_from(manifest.extra_tools))
        args = _valid_args(draw, tool, [e.episode_id for e in episodes])
        return ToolExample(draw(scope_ids()), episodes, tool.name, args)

    return build()


def _error_of(result: Any) -> Any:
    return result.get("error") if isinstance(result, Mapping) else None


def _check_accept(context: ClauseContext, example: ToolExample) -> None:
    call = f"call_extended_tool({example.tool!r}, {abbreviate(example.args)})"
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        try:
            result = subject.extended(example.tool, example.args)
        except AdapterCallError as exc:
            raise ClauseViolation(
                f"{call} failed although the arguments are valid for the tool's schema: {exc.fault.describe()}", method=exc.fault.method
            ) from None
    if _error_of(result):
        raise ClauseViolation(f"{call} returned an error for arguments valid for its schema: {abbreviate(result)}")


TOOLS_ACCEPT_VALID = Clause(
    id="tools.accepts_valid",
    contract=(
        "every declared extra tool accepts any arguments valid for its JSON Schema and returns a JSON-serialisable result, not an error"
    ),
    method="call_extended_tool",
    examples=_accept_examples,
    check=_check_accept,
    applies=lambda manifest: None if manifest.extra_tools else "the manifest declares no extra_tools",
    cost=0.6,
)


def _reject_examples(manifest: CapabilityManifest) -> st.SearchStrategy[ToolExample]:
    tools = [tool for tool in manifest.extra_tools if _rejectable(tool)]

    @st.composite
    def build(draw: st.DrawFn) -> ToolExample:
        episodes = draw(episode_lists(min_size=0, max_size=3, text=marked_prose()))
        tool = draw(st.sampled_from(tools))
        variants = invalid_variants(tool.parameters, _valid_args(draw, tool, [e.episode_id for e in episodes]))
        if not variants:  # e.g. a property whose schema has no type: fall back to leaving out what is required
            variants = invalid_variants(tool.parameters, {})
        from hypothesis import assume

        assume(bool(variants))
        what, args = draw(st.sampled_from(variants))
        return ToolExample(draw(scope_ids()), episodes, tool.name, args, what)

    return build()


def _check_reject(context: ClauseContext, example: ToolExample) -> None:
    tool = next(t for t in context.manifest.extra_tools if t.name == example.tool)
    call = f"call_extended_tool({example.tool!r}, {abbreviate(example.args)})"
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        try:
            result = subject.extended(example.tool, example.args)
        except AdapterCallError as exc:
            if exc.fault.kind == "exception":
                return  # rejected with an error, as it should
            raise
    if _error_of(result):
        return
    raise ClauseViolation(
        f"{call} returned {abbreviate(result)} although the arguments break its schema ({example.broken}: "
        f"{schema_error(tool.parameters, example.args)}); it must raise an error or return {{'error': ...}}"
    )


TOOLS_REJECT_INVALID = Clause(
    id="tools.rejects_invalid",
    contract="every declared extra tool rejects arguments its JSON Schema forbids with an error (an exception, or {'error': ...})",
    method="call_extended_tool",
    examples=_reject_examples,
    check=_check_reject,
    applies=lambda manifest: (
        None
        if any(_rejectable(tool) for tool in manifest.extra_tools)
        else "no extra tool declares a schema that forbids anything"
        if manifest.extra_tools
        else "the manifest declares no extra_tools"
    ),
    cost=0.6,
)


@dataclass(frozen=True)
class BatchExample:
    """A stream, then ``batch_retrieve`` of stored and unknown ids."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]
    ref_ids: tuple[str, ...]


def _batch_tool(manifest: CapabilityManifest) -> ExtraTool | None:
    return next((tool for tool in manifest.extra_tools if tool.name == BATCH_RETRIEVE), None)


def _batch_examples(manifest: CapabilityManifest) -> st.SearchStrategy[BatchExample]:
    tool = _batch_tool(manifest)
    ref_schema = _properties(tool.parameters if tool else {}).get("ref_ids", {})
    low = max(1, int(ref_schema.get("minItems", 1)))
    high = max(low, min(int(ref_schema.get("maxItems", 8)), 8))

    @st.composite
    def build(draw: st.DrawFn) -> BatchExample:
        episodes = draw(
            episode_lists(min_size=1, max_size=6, text=st.one_of(marked_prose(), unicode_texts(60), st.just("")), long_text=True)
        )
        known = [e.episode_id for e in episodes]
        pool = st.one_of(st.sampled_from(known), episode_ids())
        refs = draw(st.lists(pool, min_size=low, max_size=high, unique=True))
        return BatchExample(draw(scope_ids()), episodes, tuple(refs))

    return build()


def batch_documents(result: Any) -> list[tuple[str, str]] | str:
    """``(ref_id, text)`` pairs of a ``batch_retrieve`` result (``{"documents": [...]}`` or a list), or what is wrong with it."""
    items = result.get("documents") if isinstance(result, Mapping) else result
    if not isinstance(items, list):
        return 'expected {"documents": [{"ref_id": ..., "text": ...}, ...]} or a list of such documents'
    pairs = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or not isinstance(item.get("ref_id"), str) or not isinstance(item.get("text"), str):
            return f"document {index} is {abbreviate(item)}, not an object with string 'ref_id' and 'text'"
        pairs.append((item["ref_id"], item["text"]))
    return pairs


def _check_batch(context: ClauseContext, example: BatchExample) -> None:
    tool = _batch_tool(context.manifest)
    assert tool is not None  # guaranteed by `applies`
    args = {"ref_ids": list(example.ref_ids)}
    refused = schema_error(tool.parameters, args)
    if refused:
        raise ClauseViolation(
            f"batch_retrieve's schema rejects {abbreviate(args)} ({refused}); agents call it with a list of ref_ids",
            method="get_capabilities",
        )
    call = f"batch_retrieve({abbreviate(args)})"
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        result = subject.extended(BATCH_RETRIEVE, args)
        individually = {ref: document.text for ref in example.ref_ids if (document := subject.retrieve(ref)) is not None}
    pairs = batch_documents(result)
    if isinstance(pairs, str):
        raise ClauseViolation(f"{call} returned {abbreviate(result)}: {pairs}")
    got: dict[str, str] = {}
    for ref, text in pairs:
        if ref in got:
            raise ClauseViolation(f"{call} returned {abbreviate(ref)} twice")
        got[ref] = text
    missing = [ref for ref in individually if ref not in got]
    if missing:
        raise ClauseViolation(f"{call} left out {show_ids(missing)}, which retrieve() returns one by one")
    extra = [ref for ref in got if ref not in individually]
    if extra:
        raise ClauseViolation(f"{call} returned {show_ids(extra)}, for which retrieve() returns None (or which were not asked for)")
    for ref, text in individually.items():
        if got[ref] != text:
            raise ClauseViolation(
                f"{call} returned another text for {abbreviate(ref)} than retrieve(): {explain_text_difference(text, got[ref])}"
            )
    count = result.get("count") if isinstance(result, Mapping) else None
    if count is not None and count != len(pairs):
        raise ClauseViolation(f"{call} says count={count!r} but returned {len(pairs)} documents")


TOOLS_BATCH_RETRIEVE = Clause(
    id="tools.batch_retrieve",
    contract=(
        "batch_retrieve(ref_ids) returns exactly what retrieve() returns one by one: every found id once with the same text, "
        "unknown ids left out, and a consistent count"
    ),
    method="call_extended_tool",
    examples=_batch_examples,
    check=_check_batch,
    applies=lambda manifest: None if _batch_tool(manifest) else "the manifest declares no batch_retrieve tool",
    cost=0.6,
)
