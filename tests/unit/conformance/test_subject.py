from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_lens.conformance.samples import SampleEpisode
from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.execution.calls import AdapterCallError
from pytest_lens.records.settings import AdapterSpec


class StoresInDir:
    """Writes each episode to a file in its storage_dir; close() can be made to fail."""

    instances: ClassVar[list[StoresInDir]] = []

    def __init__(self, storage_dir: str, fail_close: bool = False) -> None:
        self.dir = Path(storage_dir)
        self.fail_close = fail_close
        self.closed = False
        StoresInDir.instances.append(self)

    def reset(self, scope_id: str) -> None:
        for path in self.dir.glob("*.txt"):
            path.unlink()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        (self.dir / f"{len(list(self.dir.glob('*.txt')))}.txt").write_text(text)

    def search(self, query: str, filters: Any = None, limit: Any = None) -> list[Any]:
        return []

    def retrieve(self, ref_id: str) -> None:
        return None

    def get_capabilities(self) -> dict[str, Any]:
        return {"search_modes": ["keyword"]}

    def close(self) -> None:
        self.closed = True
        if self.fail_close:
            raise OSError("disk gone")


TARGET = f"{__name__}:StoresInDir"


def test_every_instance_gets_its_own_storage_which_is_deleted_after_use(tmp_path: Path) -> None:
    StoresInDir.instances.clear()
    factory = SubjectFactory(AdapterSpec("dir", TARGET), tmp_path)
    with factory.fresh() as first:
        first.load("s", [SampleEpisode("e1", "2020-01-01T00:00:00", "hello")])
        first_dir = first.adapter.dir
        assert list(first_dir.iterdir())
    with factory.fresh() as second:
        assert second.adapter.dir != first_dir
    assert not first_dir.exists() and not second.adapter.dir.exists()
    assert [a.closed for a in StoresInDir.instances] == [True, True]
    assert factory.instances == 2
    assert set(factory.latencies) == {"reset", "ingest", "close"}  # StoresInDir has no prepare()


def test_construction_failures_and_close_failures_are_adapter_faults(tmp_path: Path) -> None:
    broken = SubjectFactory(AdapterSpec("x", "no_such_module_anywhere:Adapter"), tmp_path)
    with pytest.raises(AdapterCallError) as raised, broken.fresh():
        pass
    assert raised.value.fault.kind == "construct" and "no_such_module_anywhere" in raised.value.fault.message

    closing = SubjectFactory(AdapterSpec("c", TARGET, {"fail_close": True}), tmp_path)
    with pytest.raises(AdapterCallError, match=r"raised in close\(\): OSError: disk gone"), closing.fresh():
        pass


def test_a_close_failure_does_not_hide_the_failure_that_came_first(tmp_path: Path) -> None:
    closing = SubjectFactory(AdapterSpec("c", TARGET, {"fail_close": True}), tmp_path)
    with pytest.raises(KeyError, match="first"), closing.fresh():
        raise KeyError("first")


def test_the_manifest_is_probed_once_and_a_bad_one_falls_back_to_the_default(tmp_path: Path) -> None:
    factory = SubjectFactory(AdapterSpec("dir", TARGET), tmp_path)
    manifest, fault = factory.manifest()
    assert manifest.search_modes == ["keyword"] and fault is None
    assert factory.manifest() is factory.manifest()
    assert factory.instances == 1
