"""The MCP adapter against the real npm memory server, and the errors a user sees when a server cannot be used."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from lens_fixtures.adapters.interfaces.mcp_memory import MCPServerError, read_target
from pytest_lens.contract.registry import AdapterLoadError, load_adapter_class
from pytest_lens.llm.api_keys import mask_secrets
from tests.interfaces.servers import memory_server_command, require

require("mcp", "'pytest-lens[mcp]'")


EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "examples" / "mcp_memory.json"


def make(target: str, tmp_path: Path, **options: object) -> object:
    cls = load_adapter_class(f"mcp:{target}")
    return cls(storage_dir=str(tmp_path / "storage"), **options)


def test_episodes_round_trip_through_the_real_server_and_each_scope_starts_empty(tmp_path: Path) -> None:
    adapter = make(memory_server_command(), tmp_path)
    try:
        adapter.reset("scope-a")  # type: ignore[attr-defined]
        adapter.ingest("ep_1", "scope-a", "2024-03-01T09:00:00", "Freezer 3 read -12 C at dawn.\nDoor left ajar.")  # type: ignore[attr-defined]
        adapter.ingest("ep_2", "scope-a", "2024-03-02T09:00:00", "Compressor on freezer 3 replaced.")  # type: ignore[attr-defined]
        hits = adapter.search("freezer compressor", limit=5)  # type: ignore[attr-defined]
        assert [hit.ref_id for hit in hits] == ["ep_2", "ep_1"]  # ep_2 matches both words, ep_1 one
        assert hits[0].score > hits[1].score and hits[0].metadata == {"timestamp": "2024-03-02T09:00:00"}
        document = adapter.retrieve("ep_1")  # type: ignore[attr-defined]
        assert document is not None and document.text == "Freezer 3 read -12 C at dawn.\nDoor left ajar."
        assert adapter.retrieve("ep_9") is None  # type: ignore[attr-defined]
        memory_files = sorted((tmp_path / "storage").glob("scope-*/memory.jsonl"))
        assert len(memory_files) == 1 and '"name":"ep_1"' in memory_files[0].read_text()  # the server's own file
        adapter.reset("scope-b")  # type: ignore[attr-defined]
        assert adapter.search("freezer") == [] and adapter.retrieve("ep_1") is None  # type: ignore[attr-defined]
    finally:
        adapter.close()  # type: ignore[attr-defined]


def test_whole_query_mode_passes_the_query_as_the_server_matches_it(tmp_path: Path) -> None:
    adapter = make(memory_server_command(), tmp_path, query_mode="whole")
    try:
        adapter.reset("s")  # type: ignore[attr-defined]
        adapter.ingest("ep_1", "s", "2024-03-01T09:00:00", "freezer 3 alarm")  # type: ignore[attr-defined]
        assert adapter.search("freezer alarm") == []  # type: ignore[attr-defined]  # not one substring
        assert [hit.ref_id for hit in adapter.search("freezer 3")] == ["ep_1"]  # type: ignore[attr-defined]
    finally:
        adapter.close()  # type: ignore[attr-defined]


def test_the_example_config_file_runs_the_server_it_names(tmp_path: Path) -> None:
    config = json.loads(EXAMPLE_CONFIG.read_text())
    assert read_target(str(EXAMPLE_CONFIG)).command_line == "npx -y @modelcontextprotocol/server-memory"
    words = shlex.split(memory_server_command())
    config.update(command=words[0], args=words[1:])  # the installed server instead of npx (no download in tests)
    path = tmp_path / "memory.json"
    path.write_text(json.dumps({"mcpServers": {"memory": config}}))
    adapter = make(str(path), tmp_path)
    try:
        adapter.reset("s")  # type: ignore[attr-defined]
        adapter.ingest("ep_1", "s", "2024-03-01T09:00:00", "pallet 7 delayed")  # type: ignore[attr-defined]
        assert [hit.ref_id for hit in adapter.search("pallet")] == ["ep_1"]  # type: ignore[attr-defined]
    finally:
        adapter.close()  # type: ignore[attr-defined]


def test_a_command_that_does_not_exist_is_reported_with_its_exit_status_and_stderr(tmp_path: Path) -> None:
    adapter = make("lens-no-such-mcp-server --flag", tmp_path, timeout=10)
    with pytest.raises(MCPServerError) as caught:
        adapter.reset("s")  # type: ignore[attr-defined]
    message = str(caught.value)
    assert message.startswith("MCP server 'lens-no-such-mcp-server --flag' ")
    assert "it exited with status 127" in message and "lens-no-such-mcp-server" in message.split("stderr", 1)[1]


def test_a_server_that_exits_at_start_is_reported_with_its_exit_status_and_stderr_tail(tmp_path: Path) -> None:
    script = (
        "import sys; print('\\n'.join(f'line {i}' for i in range(30)), file=sys.stderr); "
        "print('fatal: no config', file=sys.stderr); sys.exit(3)"
    )
    command = shlex.join([sys.executable, "-c", script])
    adapter = make(command, tmp_path, timeout=10)
    with pytest.raises(MCPServerError) as caught:
        adapter.reset("s")  # type: ignore[attr-defined]
    message = str(caught.value)
    assert f"MCP server {command!r}" in message and "it exited with status 3" in message
    assert "stderr (last 20 lines):" in message and message.rstrip().endswith("fatal: no config")
    assert "line 10" not in message and "line 11" in message  # the tail, not the whole log


def test_a_mapped_tool_the_server_lacks_is_named_with_the_tools_it_has(tmp_path: Path) -> None:
    words = shlex.split(memory_server_command())
    path = tmp_path / "renamed.json"
    path.write_text(json.dumps({"command": words[0], "args": words[1:], "tools": {"search": "find_memories"}}))
    adapter = make(str(path), tmp_path)
    with pytest.raises(MCPServerError) as caught:
        adapter.reset("s")  # type: ignore[attr-defined]
    message = str(caught.value)
    assert "offers no tool 'find_memories' (mapped as search=find_memories)" in message
    assert "create_entities" in message and "search_nodes" in message


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("", "say what the mcp adapter should use after 'mcp:'"),
        ("missing-config.json", "MCP config file 'missing-config.json' not found"),
        ("'unclosed", "cannot read the MCP server command line"),
    ],
)
def test_bad_targets_are_refused_when_the_adapter_is_loaded(target: str, expected: str) -> None:
    with pytest.raises(AdapterLoadError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        load_adapter_class(f"mcp:{target}")


def test_a_config_file_with_several_servers_must_name_one(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}))
    with pytest.raises(AdapterLoadError, match=r"name one server as .*servers.json#NAME \(servers: a, b\)"):
        read_target(str(path))
    assert read_target(f"{path}#b").command == "y"


# -- hostile servers and config files (issue 46) --------------------------------------------------------------

HOSTILE = Path(__file__).with_name("hostile_mcp.py")


def hostile(mode: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None, **options: object) -> object:
    """The adapter over ``hostile_mcp.py MODE`` (a real process speaking JSON-RPC over stdio), from a config file."""
    path = tmp_path / f"{mode}.json"
    path.write_text(json.dumps({"command": sys.executable, "args": [str(HOSTILE), mode, *args], "env": env or {}}))
    return make(str(path), tmp_path, **options)


def failures(adapter: object, calls: int = 3) -> list[tuple[str, float]]:
    """What each of ``calls`` ingest calls raised, and how long it took."""
    found = []
    for index in range(calls):
        started = time.monotonic()
        with pytest.raises(MCPServerError) as caught:
            adapter.ingest(f"ep_{index}", "s", "2024-03-01T09:00:00", "freezer 3")  # type: ignore[attr-defined]
        found.append((str(caught.value), time.monotonic() - started))
    return found


def test_a_server_that_exits_mid_scope_is_described_once_then_refused_at_once(tmp_path: Path) -> None:
    # On main every later call said the whole story again, and one that exited at start restarted it on every call.
    secrets = {"MEMORY_SERVICE_TOKEN": "svc-token-0123456789"}
    adapter = hostile("exit-after-initialize", tmp_path, "--password", "hunter2-secret", env=secrets)
    try:
        adapter.reset("s")  # type: ignore[attr-defined]
        (first, _), *later = failures(adapter)
    finally:
        adapter.close()  # type: ignore[attr-defined]
    assert "create_entities failed" in first and "it exited with status 7" in first and "stderr (last 20 lines):" in first
    assert mask_secrets(first).count("***") >= 2 and "svc-token-0123456789" not in mask_secrets(first)
    assert "hunter2-secret" not in mask_secrets(first)  # the stderr quoted both; every output masks them
    for message, seconds in later:
        assert message.endswith("is down (it exited with status 7); not started again in this scope") and seconds < 1


def test_a_server_that_exits_at_start_is_not_started_again_in_the_scope(tmp_path: Path) -> None:
    adapter = hostile("exit-at-start", tmp_path, timeout=20)
    started = time.monotonic()
    with pytest.raises(MCPServerError) as caught:
        adapter.reset("s")  # type: ignore[attr-defined]
    assert "it exited with status 3" in str(caught.value) and "hostile: cannot open the memory store" in str(caught.value)
    assert "ExceptionGroup" not in str(caught.value) and time.monotonic() - started < 15
    for message, seconds in failures(adapter):
        assert message.startswith("not started again in this scope: the server failed to start (MCP server ") and seconds < 1
    assert len(list((tmp_path / "storage").glob("scope-*"))) == 1  # one start, not one per call


def test_a_server_flooding_stdout_costs_one_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # On main: every one of 200,000 lines logged a library traceback (555 MB of output from an 8-question run).
    adapter = hostile("flood", tmp_path, timeout=10)
    try:
        adapter.reset("s")  # type: ignore[attr-defined]
        (first, seconds), (second, _) = failures(adapter, 2)
    finally:
        adapter.close()  # type: ignore[attr-defined]
    assert "it sent a line that is not a JSON-RPC message: 'this is not JSON-RPC, line after line'" in first and seconds < 10
    assert second.endswith(
        "is down (it sent a line that is not JSON-RPC: 'this is not JSON-RPC, line after line'); not started again in this scope"
    )
    assert len(caplog.records) <= 2 and len(caplog.text) < 20_000


def test_a_malformed_search_reply_is_named_not_a_key_error(tmp_path: Path) -> None:
    # On main: KeyError: 0 (an entity's observations an object, read as a list).
    adapter = hostile("malformed", tmp_path)
    try:
        adapter.reset("s")  # type: ignore[attr-defined]
        adapter.ingest("ep_1", "s", "2024-03-01T09:00:00", "freezer 3 alarm")  # type: ignore[attr-defined]
        with pytest.raises(MCPServerError) as caught:
            adapter.search("freezer")  # type: ignore[attr-defined]
    finally:
        adapter.close()  # type: ignore[attr-defined]
    assert "search_nodes answered an entity that is not {name, entityType, observations: [text, ...]}: {'name': 'ep_1'" in str(caught.value)


def test_a_silent_server_fails_its_start_once_per_scope(tmp_path: Path) -> None:
    adapter = hostile("silent", tmp_path, timeout=2)
    started = time.monotonic()
    with pytest.raises(MCPServerError, match="did not answer initialize within 2 s"):
        adapter.reset("s")  # type: ignore[attr-defined]
    assert time.monotonic() - started < 12
    assert all(seconds < 1 for _, seconds in failures(adapter))
    adapter.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply (over 200 levels)"),  # on main: RecursionError
        ('{"command": "x", "tools": ["a"]}', "'tools' must map create, search, open to tool names, got ['a']"),  # TypeError
        ('{"command": "x", "entity_type": 5}', "'entity_type' must be a string, got 5"),
    ],
    ids=["nested", "tools_list", "entity_type"],
)
def test_a_bad_config_file_is_one_line_naming_the_file_and_the_field(tmp_path: Path, document: str, message: str) -> None:
    path = tmp_path / "server.json"
    path.write_text(document)
    with pytest.raises(AdapterLoadError) as caught:
        read_target(str(path))
    assert str(path) in str(caught.value) and message in str(caught.value) and "\n" not in str(caught.value)


def test_a_command_line_with_a_key_is_labelled_by_its_scheme(pytester: pytest.Pytester) -> None:
    from pytest_lens.plugin.options import read_settings

    settings = read_settings(pytester.parseconfig("--lens-adapter=mcp:npx -y server --api-key=sk-lens-0123456789abcdef"))
    assert [spec.label for spec in settings.adapters] == ["mcp"]
