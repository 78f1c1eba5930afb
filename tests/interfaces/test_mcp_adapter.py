"""The MCP adapter against the real npm memory server, and the errors a user sees when a server cannot be used."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from lens_fixtures.adapters.interfaces.mcp_memory import MCPServerError, read_target
from pytest_lens.contract.registry import AdapterLoadError, load_adapter_class
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
