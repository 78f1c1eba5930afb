"""No secret in anything a sharded, resumed and merged run writes.

The run: the LLM agent against the scripted server at a base URL with a password and a key in its query, the API key
in ``OPENAI_API_KEY``, an adapter given a key-like option (whose search fails quoting it), and two MCP servers
(``tests/interfaces/hostile_mcp.py``) given a token in their environment and ``--password``/``--api-key`` arguments:
one well behaved, one exiting at its first tool call with the token and the password on its stderr. Two shards, each
run twice with ``--lens-resume`` (the second reuses what the first kept), each writing its artifact, HTML report,
JUnit XML and terminal output; then ``lens merge`` (artifact, HTML report, its output). Every file written is then
read as bytes for each secret, and for the ``Basic`` credential the URL's user-info makes.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens.records.rows import read_artifact_json
from tests.support import COLD_CHAIN_DEMO

pytest.importorskip("mcp")

HOSTILE = Path(__file__).resolve().parents[1] / "interfaces" / "hostile_mcp.py"
URL_PASSWORD = "pw-url-SECRET-0001"
URL_QUERY_KEY = "qk-query-SECRET-0002"
OPTION_TOKEN = "tok-option-SECRET-0003"
MCP_ENV_TOKEN = "svc-env-SECRET-0004"
MCP_PASSWORD = "pw-arg-SECRET-0005"
MCP_API_KEY = "ak-arg-SECRET-0006"
OPENAI_KEY = "sk-lens-SECRET-0007abcdefghijkl"
SECRETS = {
    "the base URL's password": URL_PASSWORD,
    "the base URL's query key": URL_QUERY_KEY,
    "a key-like adapter option": OPTION_TOKEN,
    "an MCP server's env token": MCP_ENV_TOKEN,
    "an MCP server's --password": MCP_PASSWORD,
    "an MCP server's --api-key": MCP_API_KEY,
    "OPENAI_API_KEY": OPENAI_KEY,
    "the Basic credential of the URL's user-info": base64.b64encode(f"lens:{URL_PASSWORD}".encode()).decode(),
}

KEYED_MEMORY = """
from lens_fixtures.adapters.bm25 import BM25Adapter


class Keyed(BM25Adapter):
    def __init__(self, storage_dir=None, *, service_token="", **options):
        super().__init__(storage_dir, **options)
        self.service_token = service_token

    def search(self, query, filters=None, limit=None):
        if "defrost" in query.lower():
            raise RuntimeError(f"backend refused service_token={self.service_token} (password: {self.service_token})")
        return super().search(query, filters, limit)
"""


def mcp_config(path: Path, mode: str) -> Path:
    args = [str(HOSTILE), mode, "--password", MCP_PASSWORD, f"--api-key={MCP_API_KEY}"]
    path.write_text(json.dumps({"command": sys.executable, "args": args, "env": {"MEMORY_SERVICE_TOKEN": MCP_ENV_TOKEN}}))
    return path


def run_logged(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.CompletedProcess[str]:
    """Run ``command``; its terminal output (stdout and stderr) is kept in ``log``, one more file the run wrote."""
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600)
    log.write_text(done.stdout + done.stderr)
    return done


def test_no_secret_in_any_file_a_sharded_resumed_merged_run_writes(tmp_path: Path) -> None:
    (tmp_path / "keyed_memory.py").write_text(KEYED_MEMORY)
    inputs = {
        tmp_path / "keyed_memory.py",
        mcp_config(tmp_path / "well.json", "well"),
        mcp_config(tmp_path / "bad.json", "exit-after-initialize"),
    }
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "OPENAI_API_KEY": OPENAI_KEY, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    with OpenAITestServer() as server:
        host = server.base_url.removeprefix("http://")
        url = f"http://lens:{URL_PASSWORD}@{host}?api_key={URL_QUERY_KEY}"
        run = [
            *("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:randomly"),
            f"--lens-dataset={COLD_CHAIN_DEMO}",
            "--lens-adapter=keyed=keyed_memory:Keyed",
            f"--lens-adapter-option=keyed.service_token={OPTION_TOKEN}",
            f"--lens-adapter=mem=mcp:{tmp_path / 'well.json'}",
            f"--lens-adapter=mcp:{tmp_path / 'bad.json'}",
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            f"--lens-llm-base-url={url}",
            "--lens-llm-retries=0",
            f"--lens-llm-cache={out / 'llm-cache.sqlite'}",
            f"--lens-resume={out / 'kept'}",
            f"--basetemp={out / 'basetemp'}",
        ]
        for index in (1, 2):
            for attempt in ("first", "resumed"):
                name = f"shard{index}-{attempt}"
                command = [sys.executable, "-m", "pytest", *run, f"--lens-shard={index}/2", "-rA", "-v"]
                outputs = [
                    f"--lens-json={out / f'shard{index}.json'}",
                    f"--lens-html={out / f'{name}.html'}",
                    f"--junitxml={out / f'{name}.xml'}",
                ]
                done = run_logged([*command, *outputs], tmp_path, env, out / f"{name}.terminal.txt")
                assert "INTERNALERROR" not in done.stdout + done.stderr, done.stdout[-3000:]
    lens = str(Path(sys.executable).with_name("lens"))
    shards = [str(out / "shard1.json"), str(out / "shard2.json")]
    merge = [lens, "merge", *shards, "--out", str(out / "merged.json"), "--html", str(out / "merged.html")]
    merged = run_logged(merge, tmp_path, env, out / "merge.terminal.txt")
    assert merged.returncode == 1, merged.stdout[-3000:] + merged.stderr  # the failing adapters fail the run, as a single run
    written = sorted(path for path in tmp_path.rglob("*") if path.is_file() and path not in inputs)
    kinds = {path.suffix for path in written}
    assert {".json", ".jsonl", ".html", ".xml", ".txt", ".sqlite"} <= kinds and len(list((out / "kept").glob("*.json"))) >= 3
    # The secrets did reach the run: the faults quote them (masked), the agent's requests went to the URL.
    merged_text = json.dumps(read_artifact_json(out / "merged.json"))
    assert "backend refused service_token=***" in merged_text and '\\"MEMORY_SERVICE_TOKEN\\": \\"***\\"' in merged_text
    assert "--password ***" in merged_text and server.requests
    found = {
        f"{what} in {path.relative_to(tmp_path)}"
        for path in written
        for what, secret in SECRETS.items()
        if secret.encode() in path.read_bytes()
    }
    assert found == set()
