"""The mem0 adapter runs real mem0 (optional extra ``pytest-lens[mem0]``); skipped only when mem0ai is not installed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("mem0") is None:  # importorskip would import mem0 before the adapter configures it
    pytest.skip("the optional extra pytest-lens[mem0] (mem0ai) is not installed", allow_module_level=True)

from lens_fixtures.adapters.mem0_adapter import Mem0Adapter
from pytest_lens.extras import install_command

EPISODES = [
    ("ep1", "2024-01-01T10:00:00", "## 2024-01-01 Log\n### Pumps\n- pump seven vibration normal"),
    ("ep2", "2024-01-02T10:00:00", "## 2024-01-02 Log\n### Pumps\n- pump seven vibration rising sharply"),
    ("ep3", "2024-01-03T10:00:00", "## 2024-01-03 Log\n### Weather\n- heavy snow closed the north road"),
]


@pytest.fixture
def mem0_adapter(tmp_path: Path, hashing: Any) -> Any:
    adapter = Mem0Adapter(storage_dir=str(tmp_path), embedder=hashing)
    adapter.reset("scope")
    for ref, timestamp, text in EPISODES:
        adapter.ingest(ref, "scope", timestamp, text, {"episode_type": "signal"})
    yield adapter
    adapter.close()


def test_episodes_round_trip_through_mem0_verbatim(mem0_adapter: Any) -> None:
    assert mem0_adapter.retrieve("ep3").text == EPISODES[2][2]
    assert mem0_adapter.retrieve("missing") is None


def test_search_is_mem0s_vector_search_mapped_to_episode_ids(mem0_adapter: Any, hashing: Any) -> None:
    results = mem0_adapter.search("heavy snow north road", None, 2)
    assert results[0].ref_id == "ep3"
    assert len(results) <= 2
    assert all(set(r.metadata) == {"timestamp"} for r in results)
    assert any("heavy snow closed the north road" in call for texts in hashing.calls for call in texts)


def test_date_range_becomes_a_mem0_metadata_filter(mem0_adapter: Any) -> None:
    results = mem0_adapter.search("pump seven vibration", {"start_date": "2024-01-02", "end_date": "2024-01-02"}, 5)
    assert [r.ref_id for r in results] == ["ep2"]


def test_reingest_replaces_and_reset_empties(mem0_adapter: Any) -> None:
    mem0_adapter.ingest("ep3", "scope", "2024-01-03T10:00:00", "## 2024-01-03 Log\n### Weather\n- warm sunshine")
    assert mem0_adapter.retrieve("ep3").text.endswith("warm sunshine")
    assert [r.ref_id for r in mem0_adapter.search("weather", None, 10)].count("ep3") == 1
    mem0_adapter.reset("scope")
    assert mem0_adapter.search("pump", None, 5) == []
    assert mem0_adapter.retrieve("ep1") is None


def test_runs_locally_with_telemetry_off_and_storage_under_storage_dir(mem0_adapter: Any, tmp_path: Path) -> None:
    import mem0.memory.main
    import mem0.memory.telemetry

    assert mem0.memory.telemetry.MEM0_TELEMETRY is False
    assert mem0.memory.main.MEM0_TELEMETRY is False
    assert (tmp_path / "mem0" / "qdrant").is_dir()
    assert (tmp_path / "mem0" / "history.db").is_file()
    # infer=False: the placeholder LLM at 127.0.0.1:9 was never needed to store three episodes.
    assert mem0_adapter.lens_stats()["embed_cache_misses"] >= 3


def test_close_releases_qdrants_path_lock(tmp_path: Path, hashing: Any) -> None:
    first = Mem0Adapter(storage_dir=str(tmp_path), embedder=hashing)
    first.close()
    second = Mem0Adapter(storage_dir=str(tmp_path), embedder=hashing)
    second.reset("scope")
    second.close()


def test_fastembed_without_its_bm25_model_on_disk_downloads_nothing(tmp_path: Path, hashing: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # fastembed comes with Cognee (CI runs this file in Cognee's venv too). mem0's Qdrant store would fetch
    # Qdrant/bm25 at its first write: offline, three tries and 40 s of waits before it turns BM25 off.
    pytest.importorskip("fastembed", reason="fastembed is not installed here (CI runs this test in Cognee's venv, which has it)")
    from fastembed.sparse.bm25 import Bm25

    fetched: list[dict[str, Any]] = []
    original = Bm25.download_model.__func__  # type: ignore[attr-defined]

    def download_model(cls: Any, model: Any, cache_dir: str, retries: int = 3, **kwargs: Any) -> Any:
        fetched.append(kwargs)
        return original(cls, model, cache_dir, retries=0, **kwargs)  # offline here: fail at once, whatever was asked

    monkeypatch.setattr(Bm25, "download_model", classmethod(download_model))
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "fastembed-cache"))  # empty: the model is not on disk
    adapter = Mem0Adapter(storage_dir=str(tmp_path / "store"), embedder=hashing)
    adapter.reset("scope")
    for ref, timestamp, text in EPISODES:
        adapter.ingest(ref, "scope", timestamp, text)
    assert adapter.search("snow north road", None, 3)[0].ref_id == "ep3"
    adapter.close()
    assert fetched and all(call.get("local_files_only") for call in fetched)  # looked on disk only, never fetched


def test_without_the_extra_naming_the_adapter_says_what_to_install() -> None:
    code = textwrap.dedent(
        """
        import importlib.util
        real = importlib.util.find_spec
        importlib.util.find_spec = lambda name, *a: None if name == "mem0" else real(name, *a)
        from pytest_lens.contract.registry import AdapterLoadError, load_adapter_class
        try:
            load_adapter_class("mem0")
        except AdapterLoadError as exc:
            print(exc)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert f"the mem0 adapter needs the mem0 extra (mem0 is not installed): {install_command('mem0')}" in out.stdout
