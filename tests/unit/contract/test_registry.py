"""Loading ``module:Class`` adapters: the invocation directory and the rootdir are searched, failures say where."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from pytest_lens.contract.registry import AdapterLoadError, load_adapter_class

#: A complete small adapter, as a user would write it in ``mymem.py``.
ADAPTER = textwrap.dedent(
    """
    from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult

    class Memory(MemoryAdapter):
        def __init__(self):
            self.docs = {}

        def reset(self, scope_id):
            self.docs = {}

        def ingest(self, episode_id, scope_id, timestamp, text, meta=None):
            self.docs[episode_id] = text

        def search(self, query, filters=None, limit=None):
            words = set(query.lower().split())
            scored = sorted((-sum(w in text.lower() for w in words), ref) for ref, text in self.docs.items())
            return [SearchResult(ref, self.docs[ref][:200], float(-score)) for score, ref in scored[: min(limit or 10, 10)] if score]

        def retrieve(self, ref_id):
            text = self.docs.get(ref_id)
            return None if text is None else Document(ref_id, text)

        def get_capabilities(self):
            return CapabilityManifest(search_modes=["keyword"], max_results_per_search=10)
    """
)


@pytest.fixture(autouse=True)
def _restore_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))


def test_a_module_in_an_import_path_is_found(tmp_path: Path) -> None:
    (tmp_path / "reg_local_mem.py").write_text(ADAPTER)
    cls = load_adapter_class("reg_local_mem:Memory", [tmp_path])
    assert cls.__name__ == "Memory"
    assert sys.modules["reg_local_mem"].__file__ == str(tmp_path / "reg_local_mem.py")


def test_the_first_import_path_holding_the_module_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "invocation", tmp_path / "rootdir"
    first.mkdir()
    (second / "reg_pkg_mem").mkdir(parents=True)
    (second / "reg_pkg_mem" / "__init__.py").write_text("")
    (second / "reg_pkg_mem" / "memory.py").write_text(ADAPTER)
    cls = load_adapter_class("reg_pkg_mem.memory:Memory", [first, second])
    assert Path(sys.modules[cls.__module__].__file__ or "").parent == second / "reg_pkg_mem"


def test_a_missing_module_says_where_it_looked_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(AdapterLoadError) as info:
        load_adapter_class("reg_nowhere_mem:Memory", [tmp_path, tmp_path / "root"])
    message = str(info.value)
    assert "no module named 'reg_nowhere_mem'" in message
    assert f"  - {tmp_path} (no reg_nowhere_mem.py or reg_nowhere_mem/ there)" in message
    assert f"  - {tmp_path / 'root'} (no reg_nowhere_mem.py" in message
    assert f"the installed packages of {sys.executable}" in message
    assert "Put reg_nowhere_mem.py in the directory you run pytest from or in the rootdir" in message
    assert "pip install -e ." in message


def test_a_module_whose_own_import_fails_is_not_reported_missing(tmp_path: Path) -> None:
    (tmp_path / "reg_needs_dep.py").write_text("import reg_absent_dependency_xyz\n" + ADAPTER)
    with pytest.raises(AdapterLoadError) as info:
        load_adapter_class("reg_needs_dep:Memory", [tmp_path])
    message = str(info.value)
    assert f"was found in {tmp_path} but importing it failed" in message
    assert "No module named 'reg_absent_dependency_xyz'" in message
    assert "install 'reg_absent_dependency_xyz' into this environment" in message
    assert "Looked in" not in message


def test_an_error_raised_while_importing_is_reported(tmp_path: Path) -> None:
    (tmp_path / "reg_raises.py").write_text("raise RuntimeError('no database URL')\n")
    with pytest.raises(AdapterLoadError, match=r"cannot import module 'reg_raises' .* RuntimeError: no database URL"):
        load_adapter_class("reg_raises:Memory", [tmp_path])


def test_installed_modules_still_load_without_import_paths() -> None:
    assert load_adapter_class("bm25").__name__ == "BM25Adapter"
    assert load_adapter_class("lens_fixtures.adapters.null:NullAdapter").__name__ == "NullAdapter"
