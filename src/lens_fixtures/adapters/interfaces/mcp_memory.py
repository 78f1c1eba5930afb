"""``--lens-adapter=mcp:COMMAND LINE`` (or ``mcp:server.json``): an MCP knowledge-graph memory server over stdio.

The server is the user's, started as given (e.g. ``npx -y @modelcontextprotocol/server-memory``), once per
scope, with ``MEMORY_FILE_PATH`` pointing at a new file in a fresh directory: every scope starts from an empty
graph. It is spoken to with the official ``mcp`` client (stdio transport, ``ClientSession``) on a private event
loop thread. A config file (JSON) names ``command``, ``args``, ``env``, the tool mapping and the rest; a
``{"mcpServers": {NAME: {...}}}`` file (as desktop clients write them) works too, ``mcp:file.json#NAME`` picking
one server.

The mapping (the tool names are those of ``@modelcontextprotocol/server-memory`` and its many forks; ``tools``
in the config renames them):

- an episode is one entity: ``name`` the episode id, ``entityType`` ``episode``, observations ``[text,
  "timestamp: ..."]``, created with ``create_entities``;
- ``search`` calls ``search_nodes``, which matches a query as one case-insensitive substring of names, types and
  observations and returns matches in the graph's order, unranked. With ``query_mode="terms"`` (the default) the
  adapter asks once per content word of the query and ranks entities by the share of words they matched (ties
  in the server's order); ``query_mode="whole"`` passes the query unchanged, as an agent calling the tool would,
  and scores by rank;
- ``retrieve`` is ``open_nodes`` by name; the entity's first observation is the episode's text.

What it cannot do is absent from the manifest: no date range (the server cannot filter), no metadata filters.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import shlex
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lens_fixtures.adapters.interfaces.base import InterfaceAdapter, merged_results, ranked_results
from lens_fixtures.adapters.snippets import excerpt
from pytest_lens import CapabilityManifest, Document, SearchResult
from pytest_lens.contract.registry import AdapterLoadError
from pytest_lens.text import content_terms

__all__ = ["DEFAULT_TOOLS", "MCPMemoryAdapter", "MCPServerError", "ServerConfig", "read_target"]

#: The tools of the knowledge-graph memory server, by the role the adapter uses them for.
DEFAULT_TOOLS: Mapping[str, str] = {"create": "create_entities", "search": "search_nodes", "open": "open_nodes"}
QUERY_MODES = ("terms", "whole")
#: The line the shell wrapper writes to the server's stderr when it exits (POSIX), for error messages.
_STATUS = "lens-mcp-exit-status:"
_WRAPPER = f'"$@"; status=$?; echo "{_STATUS} $status" >&2; exit $status'
#: Lines of the server's stderr an error message quotes.
STDERR_TAIL = 20


class MCPServerError(RuntimeError):
    """The MCP server could not be started or used; the message names the command, its exit status and stderr."""


@dataclass(frozen=True)
class ServerConfig:
    """How to start one server and which of its tools do what."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    tools: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_TOOLS))
    #: The environment variable the server reads its memory file from ("" when it has none).
    memory_file_env: str = "MEMORY_FILE_PATH"
    entity_type: str = "episode"

    @property
    def command_line(self) -> str:
        """The command as a shell would show it."""
        return shlex.join([self.command, *self.args])


def read_target(rest: str, import_paths: Sequence[Path] = ()) -> ServerConfig:
    """``rest`` as a server config: a JSON file (``path.json`` or ``path.json#NAME``) or a command line."""
    path_text, _, name = rest.partition("#")
    if path_text.endswith(".json"):
        candidates = [Path(path_text), *(Path(directory) / path_text for directory in import_paths)]
        path = next((candidate for candidate in candidates if candidate.is_file()), None)
        if path is None:
            raise AdapterLoadError(
                f"MCP config file {path_text!r} not found (looked in {', '.join(str(c.parent) or '.' for c in candidates)})"
            )
        return _config_from_file(path, name)
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise AdapterLoadError(f"cannot read the MCP server command line {rest!r}: {exc}") from None
    if not words:
        raise AdapterLoadError("the MCP server command line is empty")
    return _remembered(ServerConfig(command=words[0], args=tuple(words[1:])))


def _config_from_file(path: Path, name: str) -> ServerConfig:
    from pytest_lens.datasets.json_document import JsonDocumentError, read_input, read_json

    try:
        data = read_json(read_input(path))  # a regular file, bounded; nesting past 200 levels an error, not a RecursionError
    except (OSError, JsonDocumentError) as exc:
        raise AdapterLoadError(f"cannot read MCP config {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not isinstance(data, dict):
        raise AdapterLoadError(f"MCP config {path}: expected a JSON object, got {type(data).__name__}")
    servers = data.get("mcpServers")
    if isinstance(servers, dict):
        if not name and len(servers) == 1:
            name = next(iter(servers))
        if name not in servers:
            raise AdapterLoadError(f"MCP config {path}: name one server as {path}#NAME (servers: {', '.join(servers) or 'none'})")
        data = servers[name]
        if not isinstance(data, dict):
            raise AdapterLoadError(f"MCP config {path}: server {name!r} is not an object")
    known = {"command", "args", "env", "tools", "memory_file_env", "entity_type", "type"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise AdapterLoadError(f"MCP config {path}: unknown keys {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    command, args, env = data.get("command"), data.get("args", []), data.get("env", {})
    if not isinstance(command, str) or not command:
        raise AdapterLoadError(f"MCP config {path}: 'command' must be a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise AdapterLoadError(f"MCP config {path}: 'args' must be a list of strings")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise AdapterLoadError(f"MCP config {path}: 'env' must map names to strings")
    renamed = data.get("tools", {})
    if not isinstance(renamed, dict):
        raise AdapterLoadError(f"MCP config {path}: 'tools' must map {', '.join(DEFAULT_TOOLS)} to tool names, got {_shown(renamed)}")
    tools = {**DEFAULT_TOOLS, **renamed}
    unknown_roles = sorted(set(tools) - set(DEFAULT_TOOLS))
    if unknown_roles or not all(isinstance(v, str) and v for v in tools.values()):
        raise AdapterLoadError(f"MCP config {path}: 'tools' maps {', '.join(DEFAULT_TOOLS)} to tool names (got {_shown(renamed)})")
    for key in ("memory_file_env", "entity_type"):
        if not isinstance(data.get(key, ""), str):
            raise AdapterLoadError(f"MCP config {path}: {key!r} must be a string, got {_shown(data[key])}")
    return _remembered(
        ServerConfig(
            command=command,
            args=tuple(args),
            env=env,
            tools=tools,
            memory_file_env=data.get("memory_file_env", "MEMORY_FILE_PATH"),
            entity_type=data.get("entity_type", "episode"),
        )
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _remembered(config: ServerConfig) -> ServerConfig:
    """``config``, its secrets remembered so that every output masks them: env values named like secrets, secret flags."""
    from pytest_lens.llm.api_keys import remember_arguments, remember_options

    remember_options(config.env)
    remember_arguments([config.command, *config.args])
    return config


class MCPServer:
    """One stdio server process and its client session, driven from a private event loop thread.

    What the server did is said at the first call it fails, once: its exit status and the tail of its stderr, or
    the first line it wrote that is not a JSON-RPC message (the session is ended there, so a server flooding its
    stdout costs one line, not one library traceback per line). Later calls say it is down in one short line.
    """

    def __init__(self, config: ServerConfig, env: Mapping[str, str], log_path: Path, timeout: float) -> None:
        self.config = config
        self._env = {**config.env, **env}
        self._log_path = log_path
        self._timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="lens-mcp", daemon=True)
        self._session: Any = None
        self._stop: asyncio.Event | None = None
        self._served: concurrent.futures.Future[None] | None = None
        self.tools: dict[str, Any] = {}
        #: The first line the server wrote that is not JSON-RPC (the session ends there).
        self._malformed: str | None = None
        #: Why the server cannot be used any more (``None`` while it can): said in full once, then in short.
        self.down: str | None = None

    def start(self) -> None:
        """Start the server and open the session; :class:`MCPServerError` with the exit status and stderr when it fails.

        Bounded by the adapter's ``timeout``, and sooner when the server exits meanwhile.
        """
        self._thread.start()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._served = asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        if not self._wait(ready, self._timeout):
            message = self._describe(f"did not answer initialize within {self._timeout:g} s")  # before it is stopped
            self.close()
            raise MCPServerError(message) from None
        try:
            ready.result(timeout=0)
        except concurrent.futures.CancelledError:  # it exited (or wrote garbage) while starting
            self.close()
            raise MCPServerError(self._fail("ended before it answered initialize")) from None
        except Exception as exc:
            self.close()
            raise MCPServerError(self._fail(_problem(exc))) from None
        missing = sorted(set(self.config.tools.values()) - set(self.tools))
        if missing:
            self.close()
            roles = ", ".join(f"{role}={tool}" for role, tool in self.config.tools.items() if tool in missing)
            raise MCPServerError(
                f"MCP server {self.config.command_line!r} offers no tool {', '.join(map(repr, missing))} (mapped as {roles}); "
                f"it offers: {', '.join(sorted(self.tools)) or 'no tools'}. Map the roles to its tools with a config file's 'tools'."
            )

    def _wait(self, future: concurrent.futures.Future[Any], timeout: float) -> bool:
        """Wait for ``future`` up to ``timeout`` seconds, or until the server exited; whether it is done."""
        end = time.monotonic() + timeout
        while not future.done():
            left = end - time.monotonic()
            if left <= 0:
                return False
            concurrent.futures.wait([future], timeout=min(left, 0.25))
            if not future.done() and (self._exit_status() is not None or self._malformed is not None):
                future.cancel()
                return True
        return True

    async def _serve(self, ready: concurrent.futures.Future[None]) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        command, args = self.config.command, list(self.config.args)
        if sys.platform != "win32":  # the wrapper reports the exit status on stderr
            command, args = "/bin/sh", ["-c", _WRAPPER, "lens-mcp", command, *args]
        params = StdioServerParameters(command=command, args=args, env=self._env)
        self._stop = asyncio.Event()
        try:
            with self._log_path.open("w", encoding="utf-8") as errlog:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    self._guarded(read) as checked,
                    ClientSession(checked, write, read_timeout_seconds=self._timeout) as session,
                ):
                    await session.initialize()
                    listed = await session.list_tools()
                    self.tools = {tool.name: tool for tool in listed.tools}
                    self._session = session
                    ready.set_result(None)
                    await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            if not isinstance(exc, Exception):
                raise

    @contextlib.asynccontextmanager
    async def _guarded(self, read: Any) -> Any:
        """``read`` (what the transport parsed), ended at the first line that is not a JSON-RPC message."""
        import anyio

        send, receive = anyio.create_memory_object_stream[Any](0)

        async def forward() -> None:
            async with send:
                async for item in read:
                    if isinstance(item, Exception):
                        self._malformed = _malformed_line(item)
                        return  # the transport's next line waits for a reader that is gone: it reads no more
                    await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(forward)
            try:
                yield receive
            finally:
                group.cancel_scope.cancel()

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call ``tool``; its structured result (or its text read as JSON). A tool error raises :class:`MCPServerError`."""
        if self.down is not None:
            raise MCPServerError(f"MCP server {self.config.command_line!r} is down ({self.down}); not started again in this scope")
        if self._session is None:
            raise MCPServerError(self._fail("is not running"))
        future = asyncio.run_coroutine_threadsafe(self._session.call_tool(tool, arguments), self._loop)
        if not self._wait(future, self._timeout):
            future.cancel()
            raise MCPServerError(self._describe(f"did not answer {tool} within {self._timeout:g} s")) from None
        try:
            result = future.result(timeout=0)
        except concurrent.futures.CancelledError:
            raise MCPServerError(self._fail(f"ended during {tool}")) from None
        except Exception as exc:
            raise MCPServerError(self._fail(f"{tool} failed: {_problem(exc)}")) from None
        text = "".join(getattr(part, "text", "") for part in getattr(result, "content", []) or [])
        if getattr(result, "isError", False) or getattr(result, "is_error", False):
            raise MCPServerError(f"MCP server {self.config.command_line!r}: tool {tool} returned an error: {text[:500]}")
        structured = getattr(result, "structuredContent", None) or getattr(result, "structured_content", None)
        if structured is not None:
            return structured
        try:
            return json.loads(text)
        except ValueError:
            return text

    def close(self) -> None:
        """Stop the server (the client closes its stdin, then ends it) and the loop thread."""
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._served is not None:
            with contextlib.suppress(Exception):  # a failure was reported by start() or the call that met it
                self._served.result(timeout=15)
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        if not self._loop.is_running():
            self._loop.close()
        self._session = None

    def _fail(self, what: str) -> str:
        """The full description of a failure (:meth:`_describe`); when the server exited or sent garbage, it is down."""
        if self._malformed is None:
            with contextlib.suppress(OSError):  # the shell writes the status line a moment after the server exited
                end = time.monotonic() + 1.0
                while self._exit_status() is None and time.monotonic() < end:
                    time.sleep(0.05)
        status = self._exit_status()
        if self._malformed is not None:
            self.down = f"it sent a line that is not JSON-RPC: {self._malformed!r}"
            what = f"{what}: it sent a line that is not a JSON-RPC message: {self._malformed!r}"
        elif status is not None:
            self.down = f"it exited with status {status}"
        return self._describe(what)

    def _log_lines(self) -> list[str]:
        try:
            with self._log_path.open("rb") as log:  # the tail only: a server may write megabytes to stderr
                log.seek(0, 2)
                log.seek(max(0, log.tell() - 64 * 1024))
                return log.read().decode("utf-8", errors="replace").splitlines()
        except OSError:
            return []

    def _exit_status(self) -> str | None:
        return next((line.split(":", 1)[1].strip() for line in reversed(self._log_lines()) if line.startswith(_STATUS)), None)

    def _describe(self, what: str) -> str:
        """``what`` happened, with the command, its exit status (when it exited) and the tail of its stderr."""
        lines = self._log_lines()
        status = next((line.split(":", 1)[1].strip() for line in reversed(lines) if line.startswith(_STATUS)), None)
        stderr = [line[:500] for line in lines if not line.startswith(_STATUS)][-STDERR_TAIL:]
        exited = f"; it exited with status {status}" if status is not None else ""
        tail = "\n".join(f"    {line}" for line in stderr) if stderr else "    (nothing)"
        return f"MCP server {self.config.command_line!r} {what}{exited}\n  stderr (last {STDERR_TAIL} lines):\n{tail}"


def _problem(exc: BaseException) -> str:
    """``Type: message`` of ``exc``, or of the one exception an exception group holds (anyio's task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def _malformed_line(exc: Exception) -> str:
    """The line the server wrote that the transport could not parse (its start), from the parse error."""
    errors = getattr(exc, "errors", None)
    found = errors()[0].get("input") if callable(errors) and errors() else None
    text = found if isinstance(found, str) else str(exc)
    return text[:200]


class MCPMemoryAdapter(InterfaceAdapter):
    """A knowledge-graph memory MCP server, one server (and one memory file) per scope.

    Options: ``query_mode`` (``terms``: one search per content word, ranked by the share matched; ``whole``: the
    query as given), ``timeout`` (seconds for the server to start and for each tool call, 30), ``snippet_chars``
    (600), ``max_results`` (20).
    """

    scheme = "mcp"
    library_extra = "mcp"

    @classmethod
    def check_target(cls, rest: str, import_paths: Sequence[Path]) -> None:
        """The command line parses, or the config file reads."""
        read_target(rest, import_paths)

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        query_mode: str = "terms",
        timeout: float = 30.0,
        snippet_chars: int = 600,
        max_results: int = 20,
    ) -> None:
        if query_mode not in QUERY_MODES:
            raise ValueError(f"option query_mode must be one of {', '.join(QUERY_MODES)}, got {query_mode!r}")
        self._config = read_target(self.target())
        self._root = Path(storage_dir) if storage_dir else Path(tempfile.mkdtemp(prefix="lens-mcp-"))
        self._scopes = itertools.count(1)
        self._query_mode = query_mode
        self._timeout = float(timeout)
        self._snippet_chars = snippet_chars
        self._max_results = max_results
        self._server: MCPServer | None = None
        self._directory: Path | None = None
        #: Why this scope's server could not be started: every later call of the scope says so at once, unstarted.
        self._start_failed: str | None = None

    def _running(self) -> MCPServer:
        if self._start_failed is not None:
            raise MCPServerError(self._start_failed)
        if self._server is None:
            directory = self._root / f"scope-{next(self._scopes)}"
            directory.mkdir(parents=True, exist_ok=True)
            env = {self._config.memory_file_env: str(directory / "memory.jsonl")} if self._config.memory_file_env else {}
            server = MCPServer(self._config, env, directory / "stderr.log", self._timeout)
            try:
                server.start()
            except MCPServerError as exc:
                first = str(exc).splitlines()[0]
                self._start_failed = f"not started again in this scope: the server failed to start ({first})"
                raise
            self._server = server
        return self._server

    def reset(self, scope_id: str) -> None:
        """Stop this scope's server; the next call starts a new one on a new, empty memory file."""
        if self._server is not None:
            self._server.close()
            self._server = None
        self._start_failed = None
        self._running()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """One entity per episode: the text, then its timestamp, as observations."""
        entity = {"name": episode_id, "entityType": self._config.entity_type, "observations": [text, f"timestamp: {timestamp}"]}
        self._running().call(self._config.tools["create"], {"entities": [entity]})

    def _entities(self, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        """The entities ``tool`` answers, each checked: a name, observations that are a list of strings."""
        found = self._running().call(self._config.tools[tool], arguments)
        entities = found.get("entities", []) if isinstance(found, dict) else []
        if not isinstance(entities, list):
            raise MCPServerError(f"{self._config.tools[tool]} answered 'entities' that are not a list: {_shown(entities)}")
        for entity in entities:
            observations = entity.get("observations", []) if isinstance(entity, dict) else None
            if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
                raise MCPServerError(
                    f"MCP server {self._config.command_line!r}: {self._config.tools[tool]} answered an entity that is not "
                    f"{{name, entityType, observations: [text, ...]}}: {_shown(entity)}"
                )
        return [entity for entity in entities if isinstance(entity.get("name"), str)]

    def _search_tool(self, query: str) -> list[dict[str, Any]]:
        return self._entities("search", {"query": query})

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Entities the server matches, best first (see the module docstring for ``query_mode``)."""
        if not query.strip():
            return []
        k = max(1, min(limit or 10, self._max_results))
        terms = content_terms(query) if self._query_mode == "terms" else []
        if self._query_mode == "whole" or len(terms) <= 1:
            asked = terms[0] if self._query_mode == "terms" and terms else query.strip()
            ordered: list[tuple[str, str, float | None, dict[str, Any]]] = [
                (e["name"], self._snippet(e), None, self._metadata(e)) for e in self._search_tool(asked)
            ]
            return ranked_results(ordered, k)
        matched: dict[str, int] = {}
        by_name: dict[str, dict[str, Any]] = {}
        for term in terms:
            for entity in self._search_tool(term):
                by_name.setdefault(entity["name"], entity)
                matched[entity["name"]] = matched.get(entity["name"], 0) + 1
        shares: list[tuple[str, str, float, dict[str, Any]]] = [
            (name, self._snippet(by_name[name]), matched[name] / len(terms), self._metadata(by_name[name])) for name in by_name
        ]
        return merged_results(shares, k)

    def _snippet(self, entity: Mapping[str, Any]) -> str:
        text = _text(entity)
        return excerpt(text, self._snippet_chars) if text.strip() else text

    @staticmethod
    def _metadata(entity: Mapping[str, Any]) -> dict[str, Any]:
        observations = entity.get("observations") or []
        stamp = next((o[len("timestamp: ") :] for o in observations[1:] if isinstance(o, str) and o.startswith("timestamp: ")), "")
        return {"timestamp": stamp} if stamp else {}

    def retrieve(self, ref_id: str) -> Document | None:
        """``open_nodes([ref_id])``: the entity's first observation, the episode's text."""
        for entity in self._entities("open", {"names": [ref_id]}):
            if entity.get("name") == ref_id:
                return Document(ref_id=ref_id, text=_text(entity), metadata=self._metadata(entity))
        return None

    def get_capabilities(self) -> CapabilityManifest:
        """Keyword (substring) search; no date range, no filters: the server offers none."""
        return CapabilityManifest(search_modes=["keyword"], max_results_per_search=self._max_results)

    def close(self) -> None:
        """Stop the server."""
        if self._server is not None:
            self._server.close()
            self._server = None


def _text(entity: Mapping[str, Any]) -> str:
    observations = entity.get("observations") or []
    return str(observations[0]) if observations else ""
