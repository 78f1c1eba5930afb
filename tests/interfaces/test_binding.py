"""Selecting an interface adapter: SCHEME:TARGET through the registry, checked at start-up, the factory once per scope."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lens.contract.registry import AdapterLoadError, load_adapter_class, registered_schemes
from tests.interfaces.servers import require

require("langchain_core", "'pytest-lens[langchain]'")


def test_the_four_schemes_are_registered() -> None:
    assert set(registered_schemes()) >= {"langchain", "llamaindex", "langgraph-store", "mcp"}


def test_a_scheme_target_loads_one_bound_class_per_target() -> None:
    cls = load_adapter_class("langchain:tests.interfaces.stores:in_memory")
    assert cls.lens_target == "tests.interfaces.stores:in_memory" and cls.scheme == "langchain"
    assert load_adapter_class("langchain:tests.interfaces.stores:in_memory") is cls
    assert load_adapter_class("langchain:tests.interfaces.stores:lossy") is not cls
    assert load_adapter_class("bm25").__name__ == "BM25Adapter"  # registered names and module:Class are unchanged


def test_a_missing_factory_module_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(AdapterLoadError) as caught:
        load_adapter_class("langchain:no_such_memory_pkg:make", [tmp_path])
    message = str(caught.value)
    assert message.startswith("'langchain:no_such_memory_pkg:make': cannot import module 'no_such_memory_pkg'")
    assert str(tmp_path) in message


def test_a_factory_in_the_rootdir_is_found(tmp_path: Path) -> None:
    (tmp_path / "lens_rootdir_memory.py").write_text("def make(embeddings):\n    raise AssertionError('not called at load')\n")
    cls = load_adapter_class("langchain:lens_rootdir_memory:make", [tmp_path])
    assert cls.lens_target == "lens_rootdir_memory:make"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("langchain:", "say what the langchain adapter should use after 'langchain:'"),
        ("langchain:tests.interfaces.stores", "expected a factory as module:function, got 'tests.interfaces.stores'"),
        ("langchain:tests.interfaces.stores:nothing_here", "module 'tests.interfaces.stores' has no attribute 'nothing_here'"),
        ("llamaindex:tests.interfaces.stores:MEMORY_SERVER_VERSION", "not a callable factory"),
    ],
)
def test_bad_factory_targets_are_refused_with_the_reason(target: str, message: str) -> None:
    with pytest.raises(AdapterLoadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_adapter_class(target)


def test_the_factory_is_called_once_per_scope_with_the_keywords_it_names(tmp_path: Path) -> None:
    cls = load_adapter_class("langchain:tests.interfaces.stores:counting")
    from tests.interfaces import stores

    stores.CALLS.clear()
    adapter = cls(storage_dir=str(tmp_path))
    assert stores.CALLS == []  # nothing is made before it is needed
    adapter.reset("a")
    adapter.ingest("ep_1", "a", "2024-01-01T00:00:00", "alpha")
    adapter.reset("b")
    adapter.ingest("ep_1", "b", "2024-01-01T00:00:00", "beta")
    adapter.reset("c")
    assert adapter.retrieve("ep_1") is None  # scope c's store is empty
    adapter.close()
    directories = [call["storage_dir"] for call in stores.CALLS]
    assert len(directories) == 3 and len(set(directories)) == 3  # one store, in its own directory, per scope
    assert all(Path(d).is_dir() and Path(d).parent == tmp_path for d in directories)


def test_a_factory_returning_something_else_is_a_clear_error(tmp_path: Path) -> None:
    adapter = load_adapter_class("langchain:tests.interfaces.stores:not_a_store")(storage_dir=str(tmp_path))
    with pytest.raises(TypeError, match="returned dict: expected a LangChain VectorStore, or a BaseRetriever with a vectorstore"):
        adapter.reset("a")


def test_a_factory_needing_what_is_not_offered_names_it(tmp_path: Path) -> None:
    adapter = load_adapter_class("langchain:tests.interfaces.stores:needs_a_client")(storage_dir=str(tmp_path))
    with pytest.raises(TypeError, match="requires 'client', which the adapter does not offer"):
        adapter.reset("a")


CHAIN_FILTERS = "auto, callable, where, qdrant, none"


@pytest.mark.parametrize(
    ("target", "value", "error", "message"),
    [
        ("langchain:tests.interfaces.stores:in_memory", "sometimes", ValueError, f"must be one of {CHAIN_FILTERS}, got 'sometimes'"),
        ("langchain:tests.interfaces.stores:in_memory", True, ValueError, f"must be one of {CHAIN_FILTERS}, got True"),
        ("llamaindex:tests.interfaces.stores:in_memory", "yes", TypeError, "must be true or false, got 'yes'"),
        ("langgraph-store:tests.interfaces.stores:in_memory", 1, TypeError, "must be true or false, got 1"),
    ],
)
def test_a_bad_date_filter_option_is_refused_before_anything_is_built(target: str, value: object, error: type, message: str) -> None:
    with pytest.raises(error, match=f"option date_filter {message}"):
        load_adapter_class(target)(date_filter=value)


def test_the_date_filter_default_is_each_interfaces_own(tmp_path: Path) -> None:
    # LangChain picks the filter language from the store (auto: InMemoryVectorStore filters by a predicate);
    # the others filter unless told not to; date_filter=none / false declares no date range, honestly.
    chain = load_adapter_class("langchain:tests.interfaces.stores:in_memory")
    assert chain(storage_dir=str(tmp_path)).get_capabilities().supports_date_range is True
    assert chain(storage_dir=str(tmp_path), date_filter="none").get_capabilities().supports_date_range is False
    graph = load_adapter_class("langgraph-store:tests.interfaces.stores:in_memory")
    assert graph(storage_dir=str(tmp_path)).get_capabilities().supports_date_range is True
    assert graph(storage_dir=str(tmp_path), date_filter=False).get_capabilities().supports_date_range is False
