"""The worked examples of docs/adapters/, run as users run them: pytest -m lens --lens-adapter=SCHEME:... (pytester).

A small slice keeps CI fast: the six-episode scope of tests.support (three checkpoints' questions), the
offline agent. Each run must answer every question without a fault, and the memory must be searched and cited.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from pytest_lens.records.rows import read_artifact_json
from tests.interfaces.servers import memory_server_command, require
from tests.support import small_dataset, write_dataset

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def lens_run(pytester: pytest.Pytester, adapter: str) -> dict[str, object]:
    dataset = write_dataset(pytester.path / "small.json", small_dataset())
    result = pytester.runpytest(f"--lens-adapter={adapter}", f"--lens-dataset={dataset}", "--lens-json=run.json", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    artifact = read_artifact_json(pytester.path / "run.json")
    label = adapter.partition("=")[0]
    summary = next(value for key, value in artifact["summary"].items() if key.startswith(label))
    assert summary["faults"] == 0 and summary["n_questions"] == len(artifact["results"]) > 0
    assert summary["tool_calls_mean"] >= 1 and summary["metrics"]["evidence_coverage"] > 0, summary
    return summary  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("adapter", "module"),
    [
        ("lc=langchain:examples.langchain_memory:make_store", "langchain_core"),
        ("chroma=langchain:examples.langchain_memory:make_chroma_store", "langchain_chroma"),
        ("li=llamaindex:examples.llamaindex_memory:make_index", "llama_index.core"),
        ("lg=langgraph-store:examples.langgraph_memory:make_store", "langgraph.store"),
    ],
    ids=["langchain", "langchain-chroma", "llamaindex", "langgraph-store"],
)
def test_each_library_example_answers_a_lens_run(pytester: pytest.Pytester, adapter: str, module: str) -> None:
    require(module, "the extra named in docs/adapters/")
    lens_run(pytester, adapter)


def test_the_mcp_example_config_answers_a_lens_run(pytester: pytest.Pytester) -> None:
    require("mcp", "'pytest-lens[mcp]'")
    config = json.loads((EXAMPLES / "mcp_memory.json").read_text())
    words = shlex.split(memory_server_command())
    config.update(command=words[0], args=words[1:])  # the installed server in place of npx: no download in tests
    (pytester.path / "memory.json").write_text(json.dumps(config))
    lens_run(pytester, "memory=mcp:memory.json")
