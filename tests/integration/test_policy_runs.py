"""Memory policies end to end: their block of context reaches the LLM agent's prompt, is charged and can be cited."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens.plugin.conformance import options
from pytest_lens.records.budget import result_tokens
from pytest_lens.records.rows import read_artifact_json
from tests.support import COLD_CHAIN_DEMO, assert_answered

QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


@pytest.fixture(scope="module", autouse=True)
def preloaded() -> None:
    """Import the policies and load MiniLM here, before pytester's in-process runs (torch cannot be imported twice)."""
    import lens_fixtures.adapters.policies  # noqa: F401
    from pytest_lens.embedding import SentenceTransformerEmbedder

    SentenceTransformerEmbedder().encode(["load the model once"])


@pytest.fixture(autouse=True)
def cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.mktemp("lens-cache")
    monkeypatch.setenv("LENS_CACHE_DIR", str(path))
    return path


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running


def test_a_policy_block_reaches_the_agent_prompt_is_charged_and_can_be_cited(pytester: pytest.Pytester, server: OpenAITestServer) -> None:
    result = pytester.runpytest(
        "--lens-adapter=policy-core",
        "--lens-agent=llm",
        "--lens-agent-model=scripted",
        f"--lens-llm-base-url={server.base_url}",
        f"--lens-dataset={COLD_CHAIN_DEMO}",
        "--lens-json=out.json",
        *QUIET,
    )
    assert_answered(result, 8)
    artifact = read_artifact_json(pytester.path / "out.json")
    results = artifact["results"]
    assert server.count(kind="policy") > 0  # the folds went to the run's endpoint
    prompts = [r.body["messages"][0]["content"] for r in server.requests if r.kind == "agent"]
    for row in results:
        block = row["context"]
        assert block is not None and block["ref_id"] == "core_memory" and block["title"] == "core memory"
        # Seen at the server: the block, delimited, in the agent's system prompt.
        assert any(f'<memory_context ref_id="core_memory">\n{block["text"].strip()}\n</memory_context>' in p for p in prompts)
        # Charged to the budget before any tool result: the question's result tokens hold it and every tool result.
        assert block["tokens"] == result_tokens(block["text"]) > 0
        assert row["result_tokens"] == block["tokens"] + sum(call["result_tokens"] for call in row["tool_calls"])
    cited = [row for row in results if "core_memory" in row["cited_refs"]]
    assert cited, "the scripted agent reads the block like a retrieved document and cites it"
    # Citing the block is grounded: an answer citing only the block still has full grounding.
    only_block = [row for row in cited if row["cited_refs"] == ["core_memory"]]
    assert all(row["metrics"]["evidence_grounding"] == 1.0 for row in only_block)
    assert all(row["metrics"]["evidence_grounding"] > 0 for row in cited)


def test_a_policy_without_an_endpoint_is_skipped_with_a_reason(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=policy-summary", f"--lens-dataset={COLD_CHAIN_DEMO}", "-rs", *QUIET)
    result.assert_outcomes(skipped=8)
    result.stdout.fnmatch_lines(["*policy-summary needs an LLM to fold its memory: pass --lens-llm-base-url*"])


@pytest.mark.parametrize("policy", ["policy-core", "policy-summary", "policy-faceted"])
def test_the_policies_keep_the_context_clauses(
    pytester: pytest.Pytester, server: OpenAITestServer, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    args = (f"--lens-adapter={policy}", f"--lens-llm-base-url={server.base_url}", "--lens-agent-model=scripted")
    result = pytester.runpytest(*args, options.CONFORMANCE, "-k", "context", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, deselected=18)
    assert server.count(kind="policy") > 0
