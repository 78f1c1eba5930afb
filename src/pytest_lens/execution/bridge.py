"""The tool bridge: the only door between an agent and a memory adapter (SPEC §4).

Every agent, offline or LLM, calls tools through :class:`ToolBridge`, so the
same rules hold for all of them: tools built from the capability manifest,
budget limits enforced and recorded, exact result-token accounting, ground-truth
labels stripped from everything returned, and (when the dataset's ids leak the
signal/distractor split) episode ids replaced by opaque aliases.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from pytest_lens.contract.adapter import CapabilityManifest
from pytest_lens.contract.schema import schema_error
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from pytest_lens.records.budget import BudgetTracker
from pytest_lens.records.results import ARGUMENT_CHARS, SNIPPET_CHARS, AdapterFault, MemoryContext, RefHit, ToolCallRecord

__all__ = ["RefAliases", "ToolBridge", "ToolOutcome", "ToolSpec"]

SEARCH = "memory_search"
RETRIEVE = "memory_retrieve"
CAPABILITIES = "memory_capabilities"


@dataclass(frozen=True)
class ToolSpec:
    """A tool as offered to an agent: name, description and JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def openai(self) -> dict[str, Any]:
        """The OpenAI chat-completions ``tools`` entry."""
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call returned to the agent."""

    content: str
    is_error: bool
    record: ToolCallRecord


class ToolArgumentError(ValueError):
    """The agent called a tool wrongly; it gets the message as the tool result."""


class RefAliases:
    """Opaque, stable aliases for episode ids whose shape would tell the agent the ground truth."""

    def __init__(self, scope_id: str, episode_ids: Iterable[str], enabled: bool) -> None:
        self.enabled = enabled
        self._to_alias: dict[str, str] = {}
        self._to_real: dict[str, str] = {}
        if enabled:
            for episode_id in episode_ids:
                size = 4
                while True:
                    alias = "ref_" + hashlib.blake2b(f"{scope_id}/{episode_id}".encode(), digest_size=size).hexdigest()
                    if alias not in self._to_real:
                        break
                    size += 1
                self._to_alias[episode_id] = alias
                self._to_real[alias] = episode_id

    def to_agent(self, ref_id: str) -> str:
        """The id the agent sees for a stored ref."""
        return self._to_alias.get(ref_id, ref_id)

    def to_real(self, ref_id: str) -> str:
        """The stored ref behind an id the agent used."""
        return self._to_real.get(ref_id, ref_id)


class ToolBridge:
    """Executes one question's tool calls against one adapter under one budget."""

    def __init__(
        self,
        caller: AdapterCaller,
        manifest: CapabilityManifest,
        tracker: BudgetTracker,
        *,
        label_keys: frozenset[str] = frozenset(),
        aliases: RefAliases | None = None,
        context: MemoryContext | None = None,
    ) -> None:
        self.caller = caller
        self.manifest = manifest
        self.tracker = tracker
        self.label_keys = label_keys
        self.aliases = aliases or RefAliases("", (), enabled=False)
        self.records: list[ToolCallRecord] = []
        self.faults: list[AdapterFault] = []
        self.malformed_calls = 0
        self._returned: dict[str, None] = {}
        #: Refs whose text a record already holds: later hits of them keep no snippet (the artifact stays small).
        self._snipped: set[str] = set()
        #: Every distinct text each ref returned so far in this question: what the agent has already read of it.
        self._seen: dict[str, list[str]] = {}
        self._tools = {spec.name: spec for spec in self._build_tools()}
        #: The adapter's block of context for the agent's prompt; delivered before any tool call, so charged first.
        self.context = context
        if context is not None:
            self.tracker.charge_result(context.text)
            self._returned[context.ref_id] = None

    # -- what the agent sees -------------------------------------------------------------
    @property
    def tools(self) -> list[ToolSpec]:
        """Tools offered for this question, built from the manifest."""
        return list(self._tools.values())

    @property
    def returned_refs(self) -> list[str]:
        """Stored ref ids (not aliases) that appeared in any tool result, in first-seen order."""
        return list(self._returned)

    def begin_turn(self) -> bool:
        """Count an agent turn; ``False`` once the turn limit is passed (a violation is recorded)."""
        return self.tracker.begin_turn()

    def charge_agent_tokens(self, tokens: int) -> None:
        """Add model-reported tokens to the agent's usage."""
        self.tracker.charge_agent_tokens(tokens)

    def resolve_ref(self, ref_id: str) -> str:
        """Map an id the agent cited back to the stored ref id."""
        return self.aliases.to_real(ref_id)

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> ToolOutcome:
        """Run one tool call. Never raises for agent or adapter mistakes: they come back as error results."""
        started = time.perf_counter()
        index = len(self.records) + 1
        args, parse_error = self._parse_arguments(arguments)
        refusal = self.tracker.admit_tool_call()
        returns: list[_Returned] = []
        if refusal is not None:
            content, status, error = refusal, "refused", refusal
        elif parse_error is not None:
            self.malformed_calls += 1
            content, status, error = f"Error: {parse_error}", "error", parse_error
        else:
            try:
                payload, returns = self._dispatch(name, args)
                content, status, error = json.dumps(payload, ensure_ascii=False), "ok", None
            except ToolArgumentError as exc:
                self.malformed_calls += 1
                content, status, error = f"Error: {exc}", "error", str(exc)
            except AdapterCallError as exc:
                self.faults.append(exc.fault)
                content, status, error = f"Error: the memory system failed ({exc.fault.message})", "error", exc.fault.describe()
        returned = list(dict.fromkeys(item.ref_id for item in returns))
        # A hit that would carry no snippet, no score and no new text (a ref whose whole text an earlier call of
        # this question showed, returned again by a retrieval) is left to returned_refs: the artifact stays small.
        hits = [hit for hit in map(self._hit, returns) if hit.snippet or hit.score is not None or hit.new_chars]
        for ref in returned:
            self._returned.setdefault(ref, None)
        tokens = self.tracker.charge_result(content)
        record = ToolCallRecord(
            index=index,
            turn=self.tracker.turns,
            name=name,
            arguments=stored_arguments(args),
            status=status,  # type: ignore[arg-type]
            result_tokens=tokens,
            returned_refs=returned,
            hits=hits,
            result_tokens_left=self.tracker.remaining_result_tokens,
            calls_left=self.tracker.remaining_tool_calls,
            error=error,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )
        self.records.append(record)
        return ToolOutcome(content=content, is_error=status != "ok", record=record)

    def _hit(self, item: _Returned) -> RefHit:
        """A returned ref as its record keeps it: a snippet on its first text only, and the characters new to the agent."""
        text = item.text if isinstance(item.text, str) else ""
        seen = self._seen.setdefault(item.ref_id, [])
        new_chars = unseen_chars(text, seen)
        if new_chars:
            seen.append(text)
        snippet = ""
        if text and item.ref_id not in self._snipped:
            self._snipped.add(item.ref_id)
            snippet = text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1].rstrip() + "…"
        score = item.score
        number = round(float(score), 6) if isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score) else None
        return RefHit(ref_id=item.ref_id, score=number, snippet=snippet, new_chars=new_chars)

    # -- tool implementations --------------------------------------------------------------
    def _dispatch(self, name: str, args: dict[str, Any]) -> tuple[Any, list[_Returned]]:
        if name == SEARCH:
            return self._search(args)
        if name == RETRIEVE:
            return self._retrieve(args)
        if name == CAPABILITIES:
            return self._capabilities_payload(), []
        if name in self._tools:
            return self._extended(name, args)
        raise ToolArgumentError(f"unknown tool {name!r}; available tools: {', '.join(self._tools)}")

    def _search(self, args: dict[str, Any]) -> tuple[Any, list[_Returned]]:
        _reject_unknown(SEARCH, args, {"query", "limit", "filters"})
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolArgumentError("memory_search needs a non-empty string 'query'")
        limit = self._limit(args.get("limit"))
        filters = self._filters(args.get("filters"))
        results = self.caller.search(query, filters, limit, strict=True)
        payload = []
        for result in results:
            entry: dict[str, Any] = {"ref_id": self.aliases.to_agent(result.ref_id), "text": result.text, "score": round(result.score, 6)}
            metadata = self._sanitize(result.metadata)
            if metadata:
                entry["metadata"] = metadata
            payload.append(entry)
        return payload, [_Returned(result.ref_id, result.text, result.score) for result in results]

    def _retrieve(self, args: dict[str, Any]) -> tuple[Any, list[_Returned]]:
        _reject_unknown(RETRIEVE, args, {"ref_id"})
        ref_id = args.get("ref_id")
        if not isinstance(ref_id, str) or not ref_id:
            raise ToolArgumentError("memory_retrieve needs a string 'ref_id'")
        document = self.caller.retrieve(self.aliases.to_real(ref_id), strict=True)
        if document is None:
            raise ToolArgumentError(f"no document with ref_id {ref_id!r}")
        payload: dict[str, Any] = {"ref_id": self.aliases.to_agent(document.ref_id), "text": document.text}
        metadata = self._sanitize(document.metadata)
        if metadata:
            payload["metadata"] = metadata
        return payload, [_Returned(document.ref_id, document.text)]

    def _extended(self, name: str, args: dict[str, Any]) -> tuple[Any, list[_Returned]]:
        error = schema_error(self._tools[name].parameters, args)
        if error is not None:
            raise ToolArgumentError(f"invalid arguments for {name}: {error}")
        raw = self.caller.extended(name, self._unalias(args))
        found: dict[str, _Returned] = {}
        _collect_refs(raw, found)
        return self._sanitize(raw), list(found.values())

    def _capabilities_payload(self) -> dict[str, Any]:
        manifest = asdict(self.manifest)
        if manifest["context_block"] is None:  # what adapters without a context block always answered
            del manifest["context_block"]
        manifest["extra_tools"] = [{"name": t.name, "description": t.description} for t in self.manifest.extra_tools]
        return manifest

    # -- argument handling ---------------------------------------------------------------
    def _parse_arguments(self, arguments: Mapping[str, Any] | str | None) -> tuple[dict[str, Any], str | None]:
        if arguments is None or arguments == "":
            return {}, None
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments)
            except json.JSONDecodeError as exc:
                return {"_raw": arguments[:500]}, f"tool arguments are not valid JSON ({exc.msg} at position {exc.pos})"
            if not isinstance(parsed, dict):
                return {"_raw": arguments[:500]}, "tool arguments must be a JSON object"
            return parsed, None
        return dict(arguments), None

    def _limit(self, raw: Any) -> int:
        ceiling = self.manifest.max_results_per_search
        if raw is None:
            return min(10, ceiling)
        if isinstance(raw, str) and raw.strip().isdigit():
            raw = int(raw)
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
            raise ToolArgumentError(f"'limit' must be a positive integer, got {raw!r}")
        return min(raw, ceiling)

    def _filters(self, raw: Any) -> dict[str, Any] | None:
        if raw in (None, {}):
            return None
        if not isinstance(raw, dict):
            raise ToolArgumentError(f"'filters' must be an object, got {type(raw).__name__}")
        allowed = {field.name for field in self.manifest.filter_fields}
        if self.manifest.supports_date_range:
            allowed |= {"start_date", "end_date"}
        unknown = sorted(set(raw) - allowed)
        if unknown:
            offered = ", ".join(sorted(allowed)) or "none"
            raise ToolArgumentError(f"unknown filter(s) {', '.join(unknown)}; this memory offers: {offered}")
        return dict(raw)

    def _unalias(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.aliases.to_real(value)
        if isinstance(value, list):
            return [self._unalias(item) for item in value]
        if isinstance(value, dict):
            return {key: self._unalias(item) for key, item in value.items()}
        return value

    def _sanitize(self, value: Any) -> Any:
        """Drop ground-truth label keys at any depth and show ref ids as the agent knows them."""
        if isinstance(value, dict):
            clean = {}
            for key, item in value.items():
                if key in self.label_keys:
                    continue
                if key == "ref_id" and isinstance(item, str):
                    clean[key] = self.aliases.to_agent(item)
                else:
                    clean[key] = self._sanitize(item)
            return clean
        if isinstance(value, list):
            return [self._sanitize(item) for item in value]
        return value

    def _build_tools(self) -> list[ToolSpec]:
        manifest = self.manifest
        search_properties: dict[str, Any] = {
            "query": {"type": "string", "description": "What to look for, in natural language or keywords."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": manifest.max_results_per_search,
                "description": f"Maximum results (at most {manifest.max_results_per_search}).",
            },
        }
        filter_properties: dict[str, Any] = {}
        for field in manifest.filter_fields:
            schema: dict[str, Any] = {"description": field.description or field.name}
            if field.field_type == "enum" and field.enum_values:
                schema.update(type="string", enum=list(field.enum_values))
            else:
                schema["type"] = {"date": "string", "enum": "string"}.get(field.field_type, field.field_type)
            filter_properties[field.name] = schema
        if manifest.supports_date_range:
            filter_properties["start_date"] = {"type": "string", "description": "ISO date; only items at or after it."}
            filter_properties["end_date"] = {"type": "string", "description": "ISO date; only items at or before it."}
        if filter_properties:
            search_properties["filters"] = {"type": "object", "properties": filter_properties, "additionalProperties": False}
        tools = [
            ToolSpec(
                SEARCH,
                "Search the memory system. Returns up to `limit` results [{ref_id, text, score}], best first.",
                {"type": "object", "properties": search_properties, "required": ["query"]},
            ),
            ToolSpec(
                RETRIEVE,
                "Retrieve the full text of one stored item by its ref_id.",
                {"type": "object", "properties": {"ref_id": {"type": "string"}}, "required": ["ref_id"]},
            ),
            ToolSpec(
                CAPABILITIES,
                "Describe the memory system: search modes, filter fields, limits and extra tools.",
                {"type": "object", "properties": {}},
            ),
        ]
        tools.extend(ToolSpec(tool.name, tool.description, tool.parameters) for tool in manifest.extra_tools)
        return tools


def _reject_unknown(tool: str, args: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise ToolArgumentError(f"{tool} got unexpected argument(s) {', '.join(unknown)}; it takes {', '.join(sorted(allowed))}")


class _Returned(NamedTuple):
    """A ref a tool call returned, with the text and score the agent got for it (either may be missing)."""

    ref_id: str
    text: Any = None
    score: Any = None


#: How adapters mark a cut in a snippet ("first words ...", FTS5's "... match ..."): not text of the episode.
_ELLIPSES = re.compile(r"\s*(?:\.\.\.|…)\s*")


def unseen_chars(text: str, seen: list[str]) -> int:
    """Characters of ``text`` not covered by the texts in ``seen`` (earlier returns of the same ref).

    A seen text counts where it occurs in ``text``, piece by piece between the ellipses adapters put into
    snippets; so a retrieval of the full episode after a 300-character search snippet counts everything
    but those 300 characters, and a second retrieval of the same text counts 0.
    """
    if not text.strip():
        return 0
    if any(text in earlier or text.strip() in earlier for earlier in seen):
        return 0
    spans: list[tuple[int, int]] = []
    for earlier in seen:
        for piece in _ELLIPSES.split(earlier):
            piece = piece.strip()
            at = text.find(piece) if piece else -1
            if at >= 0:
                spans.append((at, at + len(piece)))
    covered, reach = 0, 0
    for start, end in sorted(spans):
        start = max(start, reach)
        if end > start:
            covered += end - start
            reach = end
    return len(text) - covered


def _collect_refs(value: Any, into: dict[str, _Returned]) -> None:
    """Every ``ref_id`` in an extra tool's result, first occurrence first, with its text and score when given."""
    if isinstance(value, dict):
        ref = value.get("ref_id")
        if isinstance(ref, str) and ref not in into:
            into[ref] = _Returned(ref, value.get("text"), value.get("score"))
        for item in value.values():
            _collect_refs(item, into)
    elif isinstance(value, list):
        for item in value:
            _collect_refs(item, into)


def stored_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """A tool call's arguments as its record keeps them: whole up to :data:`ARGUMENT_CHARS` characters of JSON.

    Longer arguments (a model may send megabytes) are kept as the start of their JSON text and its full length,
    as answers are (:data:`~pytest_lens.records.results.ANSWER_CHARS`); the call itself got them whole.
    """
    text = json.dumps(args, ensure_ascii=False, default=str)
    if len(text) <= ARGUMENT_CHARS:
        return args
    return {"_cut": text[:ARGUMENT_CHARS], "_chars": len(text)}
