"""Letta (optional extra ``pytest-lens[letta]``): one Letta agent per scope, the episodes in its archival memory.

Letta is a server with its own database; it calls its chat model and its embedding
model itself, over HTTP. The adapter owns all of it:

- **The server.** ``letta server`` runs as a child process on 127.0.0.1 with ``HOME``
  and ``LETTA_DIR`` in a directory the adapter creates (Letta's SQLite database and
  logs land there) and deletes on ``close``. The server is a separate installation
  (``server``: the path of its ``letta`` command, or ``LENS_LETTA_SERVER``): the last
  Letta server with a SQLite store, 0.11.x, pins dependencies this project's
  environment cannot take (see docs/systems/letta.md), and ``letta`` 0.34 on the package
  index is Letta Code, a terminal coding agent, not the server.
- **Its models.** Letta is pointed at a relay the adapter serves on 127.0.0.1: its
  ``/v1/chat/completions`` go through the run's ``lens_llm`` (the run's endpoint and
  request cache, so a recorded run replays with no request), its ``/v1/embeddings``
  come from the shared offline embedder (the bundled MiniLM by default).
- **Ingestion** is Letta's own archival insert (``agents.passages.create``): the episode
  text, ``created_at`` the episode's timestamp, tagged ``lens-ref:<episode id>``. Letta
  chunks and embeds it; no chat model is involved, so **nothing is LLM-built at
  ingestion** in this adapter. ``letta-memorize`` (:mod:`lens_fixtures.adapters.letta_memorize`)
  also sends each episode to the agent as a message, so that its model may rewrite the agent's
  core memory with Letta's memory tools (the LLM-built part of Letta), and reads that core memory;
  a reply Letta cannot use is an adapter fault quoting Letta's error.
- **Search** is Letta's archival search (embedding similarity); every passage carries
  its episode's tag, so each hit leads back to its ``ref_id`` (passages of one episode
  are grouped). A date range is passed to Letta widened by a day and then applied
  exactly to the date written in each episode's timestamp.
- **Checkpoints**: episodes reach the archive in stream order and nothing is written
  afterwards, so a search at checkpoint N sees only the first N episodes. ``prepare`` has
  nothing to wait for: the insert (and, in ``letta-memorize``, the agent's turn) is
  synchronous.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from contextlib import closing
from datetime import date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lens_fixtures.adapters.embedding_options import embedder_from_options
from lens_fixtures.adapters.snippets import excerpt
from pytest_lens import AdapterUnavailable, CapabilityManifest, Document, SearchResult, outside_call_timeout

if TYPE_CHECKING:
    from pytest_lens.embedding import CachedEmbedder, Embedder
    from pytest_lens.llm.client import ChatClient

__all__ = ["REF_TAG", "LettaAdapter", "LettaError", "LettaServer", "ModelRelay", "agent_name"]

#: The tag prefix that names a passage's episode.
REF_TAG = "lens-ref:"
SERVER_ENV = "LENS_LETTA_SERVER"
#: The agent's context window without ``--lens-llm-context`` or the ``context_window`` option.
DEFAULT_CONTEXT_WINDOW = 8192
_LETTA_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2} \d{1,2}:\d{2}:\d{2} [AP]M UTC[+-]\d{4}")
_LETTA_DATE = re.compile(r"(The current system date is: )[A-Z][a-z]+ \d{1,2}, \d{4}")
#: One memory block of Letta's system prompt (``<label>`` then its ``<description>``), and one tool rule.
_LETTA_BLOCK = re.compile(r"<(?P<label>[A-Za-z0-9_]+)>\n<description>.*?</(?P=label)>", re.DOTALL)
_LETTA_RULE = re.compile(r"<tool_rule>.*?</tool_rule>", re.DOTALL)


def _sorted_in_place(pattern: re.Pattern[str], text: str) -> str:
    """``text`` with the matches of ``pattern`` put in sorted order, each in the place of the one before it."""
    found = [match.group(0) for match in pattern.finditer(text)]
    ordered = iter(sorted(found))
    return pattern.sub(lambda _: next(ordered), text) if len(found) > 1 else text


class LettaError(RuntimeError):
    """Letta refused a request or could not complete it; the message quotes Letta's."""


class ModelRelay:
    """Letta's model endpoint: chat completions through the run's ``ChatClient``, embeddings from ``embedder``.

    An OpenAI-compatible HTTP server on 127.0.0.1 (a thread). A chat request that the run's
    client cannot complete is answered with HTTP 502 quoting why, which Letta reports as its error.
    """

    def __init__(self, llm: ChatClient | None, embedder: CachedEmbedder, *, max_tokens: int) -> None:
        self.llm = llm
        self.embedder = embedder
        self.max_tokens = max_tokens
        self.stats = {"chat_requests": 0, "chat_prompt_tokens": 0, "chat_completion_tokens": 0, "embedding_requests": 0}
        self.errors: list[str] = []
        #: The episode timestamp that stands for "now" in Letta's prompts (see :meth:`dated`).
        self.now: str | None = None
        #: The context of the adapter call Letta's requests serve (see :meth:`serving`): the relay's threads answer
        #: in a copy of it, so the run counts those requests on the question whose call caused them.
        self.context: contextvars.Context | None = None
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Silent."""

            def do_GET(self) -> None:
                models = [{"id": relay.llm.model if relay.llm else "none", "object": "model", "created": 0, "owned_by": "lens"}]
                self._send(200, {"object": "list", "data": models})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                path = self.path.split("?")[0].rstrip("/")
                try:
                    body = json.loads(raw)
                    if path.endswith("/embeddings"):
                        self._send(200, relay.embeddings(body))
                    elif path.endswith("/chat/completions"):
                        context = relay.context
                        self._send(200, context.copy().run(relay.chat, body) if context is not None else relay.chat(body))
                    else:
                        self._send(404, {"error": {"message": f"no route POST {path}", "type": "lens_relay"}})
                except Exception as exc:  # reported to Letta as the endpoint's error, and kept for the adapter's message
                    message = f"{type(exc).__name__}: {exc}"
                    relay.errors.append(message)
                    self._send(502, {"error": {"message": message, "type": "lens_relay", "code": 502}})

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="letta-model-relay", daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        """``/v1/embeddings`` from the shared embedder."""
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else [str(item) for item in inputs or []]
        vectors: Any = self.embedder.encode(texts) if texts else []
        self.stats["embedding_requests"] += 1
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in row]} for i, row in enumerate(vectors)]
        return {"object": "list", "data": data, "model": self.embedder.model_id, "usage": {"prompt_tokens": 0, "total_tokens": 0}}

    def dated(self, message: dict[str, Any]) -> dict[str, Any]:
        """The message with Letta's wall-clock times replaced by the episode's (:attr:`now`), its lists in order.

        Letta writes the current time into its system prompt (system date, memory last modified) and into every
        login, heartbeat and tool-result message. Left alone, the model would read each record as written today
        and no request would ever repeat, so a recorded run could not replay.
        """
        content = message.get("content")
        if not isinstance(content, str):
            return message
        if message.get("role") == "system":
            # Letta lists the memory blocks and tool rules in the order its database returns them, which differs
            # from one agent to the next (their ids are random): sorted, the same agent asks the same thing.
            content = _sorted_in_place(_LETTA_RULE, _sorted_in_place(_LETTA_BLOCK, content))
        if self.now is None:
            return {**message, "content": content}
        stamp = self.now
        day = _day(stamp)
        content = _LETTA_CLOCK.sub(stamp, content)
        if day is not None:
            content = _LETTA_DATE.sub(lambda match: match.group(1) + day.strftime("%B %d, %Y"), content)
        return {**message, "content": content}

    @staticmethod
    def numbered_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages with every tool-call id replaced by ``call_N``, numbered in order of first appearance.

        Letta gives each agent's boot-up ``send_message`` call a random UUID, and model servers give their tool
        calls random ids, which Letta sends back in every later request: left alone, no request of an agent's
        would ever repeat, and a recorded run could not replay. The ids only pair a call with its result.
        """
        numbers: dict[str, str] = {}

        def number(call_id: Any) -> Any:
            if not isinstance(call_id, str):
                return call_id
            return numbers.setdefault(call_id, f"call_{len(numbers) + 1}")

        renamed = []
        for message in messages:
            message = dict(message)
            if isinstance(message.get("tool_calls"), list):
                message["tool_calls"] = [
                    {**call, "id": number(call.get("id"))} if isinstance(call, dict) else call for call in message["tool_calls"]
                ]
            if "tool_call_id" in message:
                message["tool_call_id"] = number(message["tool_call_id"])
            renamed.append(message)
        return renamed

    @staticmethod
    def sorted_tools(tools: Any) -> list[Any] | None:
        """The agent's tools, by name.

        Letta lists them in the order its database returns them, which differs from one server to the next (their
        ids are random): left alone, an agent turn would not repeat on another server, and a recording not replay.
        """
        if not tools:
            return None
        return sorted(tools, key=lambda tool: str((tool.get("function") or {}).get("name", "")) if isinstance(tool, dict) else "")

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """``/v1/chat/completions`` through the run's client (its cache, stats and limits)."""
        if self.llm is None:
            raise RuntimeError("no chat model: pass --lens-llm-base-url and --lens-agent-model to let Letta's agent think")
        choice = body.get("tool_choice")
        format_ = body.get("response_format")
        reply = self.llm.complete(
            self.numbered_calls([self.dated(message) for message in body.get("messages") or []]),
            tools=self.sorted_tools(body.get("tools")),
            tool_choice=choice if isinstance(choice, str) else None,
            max_tokens=min(int(body.get("max_tokens") or body.get("max_completion_tokens") or self.max_tokens), self.max_tokens),
            response_format=format_ if isinstance(format_, dict) else None,
            purpose="letta",
        )
        self.stats["chat_requests"] += 1
        if reply.usage is not None:
            self.stats["chat_prompt_tokens"] += reply.usage.prompt_tokens
            self.stats["chat_completion_tokens"] += reply.usage.completion_tokens
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.tool_calls:
            message["tool_calls"] = [call.openai() for call in reply.tool_calls]
        usage = reply.usage
        return {
            "id": "chatcmpl-lens",
            "object": "chat.completion",
            "created": 0,
            "model": self.llm.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")}
            ],
            "usage": {
                "prompt_tokens": usage.prompt_tokens if usage else 0,
                "completion_tokens": usage.completion_tokens if usage else 0,
                "total_tokens": usage.total_tokens if usage else 0,
            },
        }

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


def repair_sqlite_defaults(database: Path) -> list[str]:
    """Give Letta's SQLite tables declared ``DEFAULT 'now()'`` a real default; the names of the tables repaired.

    Letta 0.11's ``archives_agents.created_at`` has ``server_default="now()"``: Postgres reads it as the function, SQLite
    stores the text ``'now()'``, and reading the row back fails ("Invalid isoformat string: 'now()'"), so the first archival
    insert of every agent is refused. The table is rebuilt with ``DEFAULT CURRENT_TIMESTAMP`` (its rows kept).
    """
    import sqlite3

    if not database.is_file():
        return []
    repaired = []
    with closing(sqlite3.connect(database, timeout=30)) as db, db:
        for name, ddl in db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE '%DEFAULT ''now()''%'"
        ).fetchall():
            fixed = ddl.replace("DEFAULT 'now()'", "DEFAULT CURRENT_TIMESTAMP").replace(
                f"CREATE TABLE {name} ", f"CREATE TABLE {name}__lens ", 1
            )
            db.execute(fixed)
            db.execute(f"INSERT INTO {name}__lens SELECT * FROM {name}")
            db.execute(f"DROP TABLE {name}")
            db.execute(f"ALTER TABLE {name}__lens RENAME TO {name}")
            repaired.append(name)
    return repaired


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _day(value: Any) -> date | None:
    try:
        return date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        return None


class LettaServer:
    """``letta server`` as a child process on 127.0.0.1, its ``HOME`` and ``LETTA_DIR`` (its SQLite database) in ``directory``."""

    def __init__(self, command: str, directory: Path, *, port: int = 0, timeout: float = 300.0) -> None:
        self.directory = directory
        self.port = port or _free_port()
        home = directory / "home"
        home.mkdir(parents=True, exist_ok=True)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LETTA_", "OPENAI_"))},
            "HOME": str(home),
            "LETTA_DIR": str(home / ".letta"),
            "OPENAI_API_KEY": "lens-relay",
            # Whatever Letta orders by string hash (sets) comes out the same at every server start. (What did change
            # its prompts from one agent to the next was database order; the relay sorts those lists.)
            "PYTHONHASHSEED": "0",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
        self.log = directory / "server.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [command, "server", "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=home,
                start_new_session=True,
            )
        try:
            self._wait(timeout)
            repair_sqlite_defaults(home / ".letta" / "sqlite.db")
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def _wait(self, timeout: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LettaError(f"letta server exited with status {self.process.returncode} while starting: {self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/v1/health/", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise LettaError(f"letta server did not answer /v1/health/ within {timeout:.0f} s: {self.log_tail()}")

    def log_tail(self, lines: int = 8) -> str:
        """The last lines of the server's log, on one line."""
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no server log)"
        return " | ".join(line.strip() for line in text[-lines:])

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after 30 s."""
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


def agent_name(scope_id: str) -> str:
    """A name Letta accepts for a scope's agent: letters, digits, spaces, ``-`` and ``_`` only (else HTTP 422).

    Other characters become ``_``, and a short digest of the scope id keeps two scopes that differ only there apart.
    """
    digest = hashlib.sha1(scope_id.encode()).hexdigest()[:8]
    return f"lens-{re.sub(r'[^A-Za-z0-9 _-]', '_', scope_id)[:48]}-{digest}"


class LettaAdapter:
    """One Letta agent per scope on a private ``letta server``; episodes in its archival memory (see the module docstring).

    Options: ``server`` (the Letta server's ``letta`` command; ``LENS_LETTA_SERVER`` by default), ``port`` (0: a free
    one), ``model`` (the agent's model; the run's by default), ``max_tokens`` (1024, cap of Letta's completions),
    ``context_window`` (the agent's context in tokens: ``--lens-llm-context``, else 8192), ``startup_timeout``
    (300 s), ``snippet_chars`` (500), ``max_results`` (20) and the embedder's options.
    """

    lens_isolated_instances = True

    @classmethod
    def lens_extras(cls, options: Mapping[str, Any]) -> tuple[str, ...]:
        """Letta's client: a missing one is a usage error at start-up, not a skip per question."""
        return ("letta",)

    def __init__(
        self,
        storage_dir: str | None = None,
        *,
        lens_llm: ChatClient | None = None,
        server: str | None = None,
        server_url: str | None = None,
        port: int = 0,
        model: str | None = None,
        max_tokens: int = 1024,
        context_window: int | None = None,
        startup_timeout: float = 300.0,
        embedding_model: str | None = None,
        embedding_base_url: str | None = None,
        embedding_batch_size: int | None = None,
        cache: bool = True,
        cache_dir: str | None = None,
        embedder: Embedder | None = None,
        snippet_chars: int = 500,
        max_results: int = 20,
    ) -> None:
        try:
            import letta_client
        except ImportError:
            raise AdapterUnavailable("the letta adapter needs letta-client: pip install 'pytest-lens[letta]'") from None
        command = server or os.environ.get(SERVER_ENV)
        if not command and not server_url:
            raise AdapterUnavailable(
                f"the letta adapter needs a Letta server installation: pass the option server=/path/to/letta or set {SERVER_ENV} "
                "(install it apart: pip install 'letta[server,sqlite]>=0.11.7,<0.12' asyncpg, see docs/systems/letta.md)"
            )
        self._llm = lens_llm.with_model(model) if model and lens_llm else lens_llm
        # The agent's context is the run's model's (--lens-llm-context), unless the option says otherwise.
        self._context_window = context_window or getattr(lens_llm, "context_tokens", None) or DEFAULT_CONTEXT_WINDOW
        self._snippet_chars = snippet_chars
        self._max_results = max_results
        self._root = Path(tempfile.mkdtemp(prefix="letta-", dir=storage_dir))
        self._episodes: dict[str, tuple[str, str]] = {}
        self._agent_id: str | None = None
        self._stats = {"passages_inserted": 0, "episodes_memorized": 0, "searches": 0}
        self._server: LettaServer | None = None
        self._relay: ModelRelay | None = None
        self._embedder = embedder_from_options(
            embedder=embedder,
            embedding_model=embedding_model,
            embedding_base_url=embedding_base_url,
            embedding_batch_size=embedding_batch_size,
            cache=cache,
            cache_dir=cache_dir,
        )
        try:
            self._relay = ModelRelay(self._llm, self._embedder, max_tokens=max_tokens)
            if server_url is None:
                assert command is not None
                with outside_call_timeout():  # a cold start imports Letta's whole server: a minute on a busy machine
                    self._server = LettaServer(command, self._root, port=port, timeout=startup_timeout)
            url = server_url or self._server.url  # type: ignore[union-attr]
            self._client = letta_client.Letta(base_url=url, timeout=600.0, max_retries=0)
        except BaseException:
            self.close()
            raise

    def _call(self, what: str, action: Any) -> Any:
        """Run a client call; Letta's refusal becomes :class:`LettaError` quoting Letta's message (and the relay's)."""
        import letta_client

        try:
            return action()
        except letta_client.APIStatusError as exc:
            detail = exc.response.text[:500] if exc.response is not None else str(exc)
            relay = f" (the model endpoint said: {self._relay.errors[-1]})" if self._relay and self._relay.errors else ""
            raise LettaError(f"Letta could not {what}: HTTP {exc.status_code}: {detail}{relay}") from None
        except letta_client.APIError as exc:
            raise LettaError(f"Letta could not {what}: {exc}") from None

    def _model_configs(self) -> dict[str, Any]:
        assert self._relay is not None
        model = self._llm.model if self._llm else "none"
        return {
            "llm_config": {
                "model": model,
                "model_endpoint_type": "openai",
                "model_endpoint": self._relay.base_url,
                "context_window": self._context_window,
                "handle": f"openai/{model}",
            },
            "embedding_config": {
                "embedding_endpoint_type": "openai",
                "embedding_endpoint": self._relay.base_url,
                "embedding_model": self._embedder.model_id,
                "embedding_dim": self._embedder.dimension,
                "embedding_chunk_size": 300,
                "handle": f"openai/{self._embedder.model_id}",
            },
        }

    def reset(self, scope_id: str) -> None:
        """Delete the scope's agent (and its archive) if any, and create a fresh one."""
        self._drop_agent()
        self._episodes.clear()
        agent = self._call(
            "create the scope's agent",
            lambda: self._client.agents.create(
                name=agent_name(scope_id),
                memory_blocks=[{"label": "human", "value": ""}, {"label": "persona", "value": "I keep the operator's records."}],
                **self._model_configs(),
            ),
        )
        self._agent_id = str(agent.id)

    def _drop_agent(self) -> None:
        if self._agent_id is not None:
            agent_id, self._agent_id = self._agent_id, None
            self._call("delete the scope's agent", lambda: self._client.agents.delete(agent_id))

    def _agent(self) -> str:
        if self._agent_id is None:
            raise LettaError("no scope is live: reset(scope_id) first")
        return self._agent_id

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Letta's archival insert, dated and tagged with the episode."""
        agent_id = self._agent()
        created = self._call(
            f"store episode {episode_id!r} in archival memory",
            lambda: self._client.agents.passages.create(agent_id, text=text, created_at=timestamp, tags=[REF_TAG + episode_id]),
        )
        self._stats["passages_inserted"] += len(created) if isinstance(created, list) else 1
        self._episodes[episode_id] = (timestamp, text)

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Nothing to wait for: Letta's insert and agent turn return when done."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Letta's archival search; passages grouped by their episode tag, best first; a date range applied exactly."""
        if not query.strip():
            return []
        limit = max(1, min(limit or 10, self._max_results))
        start, end = _day((filters or {}).get("start_date")), _day((filters or {}).get("end_date"))
        window: dict[str, Any] = {}
        if start:
            window["start_datetime"] = datetime.combine(start - timedelta(days=1), datetime.min.time()).isoformat()
        if end:
            window["end_datetime"] = datetime.combine(end + timedelta(days=2), datetime.min.time()).isoformat()
        agent_id = self._agent()
        found = self._call(
            "search archival memory",
            lambda: self._client.agents.passages.search(agent_id, query=query, top_k=limit * 4, **window),
        )
        self._stats["searches"] += 1
        grouped: dict[str, list[str]] = {}
        for item in found.results:
            ref = next((tag[len(REF_TAG) :] for tag in item.tags or [] if tag.startswith(REF_TAG)), None)
            if ref is None or ref not in self._episodes:
                continue
            day = _day(self._episodes[ref][0])
            if (start and (day is None or day < start)) or (end and (day is None or day > end)):
                continue
            grouped.setdefault(ref, []).append(item.content)
        ranked = list(grouped.items())[:limit]
        return [
            SearchResult(
                ref_id=ref,
                text=excerpt("\n".join(parts), self._snippet_chars),
                score=round(1.0 / (rank + 1), 6),
                metadata={"timestamp": self._episodes[ref][0]},
            )
            for rank, (ref, parts) in enumerate(ranked)
        ]

    def retrieve(self, ref_id: str) -> Document | None:
        """The episode as ingested (the adapter's copy: Letta returns passages, chunked), ``None`` when unknown."""
        kept = self._episodes.get(ref_id)
        return Document(ref_id=ref_id, text=kept[1], metadata={"timestamp": kept[0]}) if kept else None

    def get_capabilities(self) -> CapabilityManifest:
        """Semantic search (Letta's archival search) with a date range; no extra tools."""
        return CapabilityManifest(search_modes=["semantic"], max_results_per_search=self._max_results, supports_date_range=True)

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        """No extra tools."""
        raise ValueError(f"unknown tool {name!r}")

    def core_memory(self) -> dict[str, str]:
        """The agent's core memory blocks (label -> value): what the model wrote in ``letta-memorize``."""
        agent_id = self._agent()
        page = self._call("read core memory", lambda: self._client.agents.blocks.list(agent_id))
        # The first page only: letta-client 1.12 pages by cursor, which a 0.11 server ignores (iterating never ends).
        return {str(block.label): str(block.value) for block in page.items}

    def lens_stats(self) -> dict[str, int]:
        """Passages inserted, episodes memorized, searches, the relay's chat/embedding counters and the embedding cache's."""
        relay = self._relay.stats if self._relay else {}
        return {**self._stats, **relay, **self._embedder.stats.as_counters()}

    def close(self) -> None:
        """Stop the server and the relay; delete the server's directory (its SQLite database included)."""
        try:
            if self._server is not None:
                self._server.stop()
            elif self._agent_id is not None and hasattr(self, "_client"):
                self._drop_agent()  # a shared server: leave no agent behind
        finally:
            if self._relay is not None:
                self._relay.close()
                self._relay = None
            self._embedder.close()
            shutil.rmtree(self._root, ignore_errors=True)
