from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_lens.datasets import LoadedScope, load_dataset
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.records.settings import AdapterSpec
from tests.support import RecordingMemory, small_dataset, write_dataset

INSTANCES: list[RecordingMemory] = []


class Tracked(RecordingMemory):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        INSTANCES.append(self)


class FailsOnE3(Tracked):
    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        if episode_id == "e3":
            raise ValueError("disk full")
        super().ingest(episode_id, scope_id, timestamp, text, meta)


class NeedsStorage(Tracked):
    def __init__(self, storage_dir: str) -> None:
        super().__init__()
        self.storage_dir = storage_dir


@pytest.fixture
def runtime(tmp_path: Path) -> LensRuntime:
    INSTANCES.clear()
    specs = {
        "mem": AdapterSpec("mem", f"{__name__}:Tracked", {"batch": False}),
        "broken": AdapterSpec("broken", f"{__name__}:FailsOnE3"),
        "stored": AdapterSpec("stored", f"{__name__}:NeedsStorage"),
        "missing": AdapterSpec("missing", f"{__name__}:Nope"),
    }
    return LensRuntime(specs, tmp_path / "storage")


def runner_calls(adapter: RecordingMemory) -> list[tuple[Any, ...]]:
    return list(adapter.calls)


def test_ingests_incrementally_and_prepares_once_per_checkpoint(runtime: LensRuntime, small_scope: LoadedScope) -> None:
    assert runtime.advance("mem", small_scope, 2) == []
    runtime.advance("mem", small_scope, 2)
    runtime.advance("mem", small_scope, 4)
    (adapter,) = INSTANCES
    assert adapter.batch is False  # constructor options reach the adapter
    assert runner_calls(adapter) == [
        ("reset", "s1"),
        ("ingest", "e1"),
        ("ingest", "e2"),
        ("prepare", "s1", 2),
        ("ingest", "e3"),
        ("ingest", "e4"),
        ("prepare", "s1", 4),
    ]


def test_going_back_resets_and_replays_exactly_n_episodes(runtime: LensRuntime, small_scope: LoadedScope) -> None:
    runtime.advance("mem", small_scope, 6)
    (adapter,) = INSTANCES
    adapter.calls.clear()
    runtime.advance("mem", small_scope, 2)
    assert runner_calls(adapter) == [("reset", "s1"), ("ingest", "e1"), ("ingest", "e2"), ("prepare", "s1", 2)]
    assert set(adapter.store) == {"e1", "e2"}


def test_switching_scope_forgets_the_previous_one(runtime: LensRuntime, small_scope: LoadedScope, tmp_path: Path) -> None:
    other = load_dataset(write_dataset(tmp_path / "o.json", _renamed(small_dataset(), "s2"))).scopes[0]
    runtime.advance("mem", small_scope, 4)
    (adapter,) = INSTANCES
    adapter.calls.clear()
    runtime.advance("mem", other, 2)
    assert runner_calls(adapter)[:2] == [("reset", "s1"), ("reset", "s2")]
    assert set(adapter.store) == {"e1", "e2"}


def test_ingest_faults_are_kept_for_every_later_question(runtime: LensRuntime, small_scope: LoadedScope) -> None:
    assert runtime.advance("broken", small_scope, 2) == []
    (fault,) = runtime.advance("broken", small_scope, 4)
    assert fault.describe() == "adapter 'broken' raised in ingest() (episode e3): ValueError: disk full"
    assert len(runtime.advance("broken", small_scope, 6)) == 1
    (adapter,) = INSTANCES
    assert set(adapter.store) == {"e1", "e2", "e4", "e5", "e6"}  # the rest of the stream still went in


def test_storage_dir_is_private_and_deleted_on_close(runtime: LensRuntime, small_scope: LoadedScope) -> None:
    runtime.advance("stored", small_scope, 1)
    (adapter,) = INSTANCES
    storage = Path(adapter.storage_dir)  # type: ignore[attr-defined]
    assert storage.is_dir() and storage.parent == runtime.storage_root
    assert runtime.close() == []
    assert not runtime.storage_root.exists()


def test_an_adapter_that_cannot_be_built_fails_its_questions(runtime: LensRuntime, small_scope: LoadedScope) -> None:
    (fault,) = runtime.advance("missing", small_scope, 2)
    assert fault.kind == "construct" and "has no attribute 'Nope'" in fault.describe()


def _renamed(document: dict[str, Any], scope: str) -> dict[str, Any]:
    import json

    loaded: dict[str, Any] = json.loads(json.dumps(document).replace('"s1"', f'"{scope}"'))
    return loaded
