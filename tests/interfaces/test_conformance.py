"""The interface adapters through the real conformance suite (pytester), over real library stores and the real MCP server.

Each run uses a small derandomized profile (``lens-interfaces``: 2 examples per clause) to keep CI fast; the
``ci`` profile passes the same (see docs/adapters/). A clause an interface cannot keep is "not applicable" with
its reason, never passed by pretending.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings

from tests.interfaces.servers import memory_server_command, require

require("langchain_core", "'pytest-lens[langchain]'")

PROFILE = "lens-interfaces"
settings.register_profile(PROFILE, max_examples=2, derandomize=True, database=None, deadline=None)
#: For a clause that must fail: the failure as found, not shrunk (shrinking re-embeds candidate texts for minutes).
FAILING_PROFILE = "lens-interfaces-unshrunk"
settings.register_profile(
    FAILING_PROFILE, max_examples=2, derandomize=True, database=None, deadline=None, phases=(Phase.explicit, Phase.generate)
)
NO_CACHE = ("-p", "no:cacheprovider")


def conformance(pytester: pytest.Pytester, adapter: str, *extra: str, profile: str = PROFILE) -> pytest.RunResult:
    return pytester.runpytest(f"--lens-adapter={adapter}", "--lens-conformance", f"--lens-hypothesis-profile={profile}", *extra, *NO_CACHE)


@pytest.mark.parametrize(
    ("adapter", "passed", "not_applicable"),
    [
        (
            "lc=langchain:tests.interfaces.stores:in_memory",
            13,
            "filters.fields, tools.accept_valid, tools.reject_invalid, tools.batch_retrieve, context.size",
        ),
        ("retriever=langchain:tests.interfaces.stores:in_memory_retriever", 13, "filters.fields, tools.accept_valid"),
        ("chroma=langchain:examples.langchain_memory:make_chroma_store", 13, "filters.fields, tools.accept_valid"),
        ("llamaindex=llamaindex:examples.llamaindex_memory:make_index", 13, "filters.fields, tools.accept_valid"),
        ("langgraph=langgraph-store:examples.langgraph_memory:make_store", 13, "filters.fields, tools.accept_valid"),
    ],
    ids=["langchain-in-memory", "langchain-retriever", "langchain-chroma", "llamaindex", "langgraph-store"],
)
def test_library_stores_keep_the_contract(pytester: pytest.Pytester, adapter: str, passed: int, not_applicable: str) -> None:
    if "chroma" in adapter:
        require("langchain_chroma", "langchain-chroma")
    if "llamaindex" in adapter:
        require("llama_index.core", "'pytest-lens[llamaindex]'")
    if "langgraph" in adapter:
        require("langgraph.store", "'pytest-lens[langgraph]'")
    result = conformance(pytester, adapter)
    label = adapter.partition("=")[0]
    result.assert_outcomes(passed=passed, skipped=20 - passed)
    result.stdout.fnmatch_lines(["*= LENS conformance =*", f"{label} * 20 * {passed} * 0 * {20 - passed} *", "not applicable:"])
    assert f"{label}: " + not_applicable.split(", ")[0] in result.stdout.str()


def test_a_store_that_loses_every_second_add_fails_conformance(pytester: pytest.Pytester) -> None:
    result = conformance(pytester, "lossy=langchain:tests.interfaces.stores:lossy", "-k", "roundtrip", profile=FAILING_PROFILE)
    result.assert_outcomes(failed=1, deselected=19)
    result.stdout.fnmatch_lines(
        [
            "*conformance clause retrieve.roundtrip failed for adapter 'lossy'*",
            "broken clauses:",
            "  lossy: retrieve.roundtrip in retrieve(): retrieve(*) returned None for an episode ingested in this scope",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_mcp_memory_server_keeps_the_contract(pytester: pytest.Pytester) -> None:
    require("mcp", "'pytest-lens[mcp]'")
    command = memory_server_command()
    result = conformance(pytester, f"memory=mcp:{command}", "-k", "not latency")
    result.assert_outcomes(passed=11, skipped=8, deselected=1)
    result.stdout.fnmatch_lines(
        ["*= LENS conformance =*", "not applicable:", "  memory: filters.fields (the manifest declares no filter_fields)"]
    )
    out = result.stdout.str()
    assert "memory: filters.date_range (the manifest does not declare supports_date_range)" in out
