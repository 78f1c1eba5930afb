from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.results import RunArtifact
from pytest_lens.storage import RunStore, SavedRunError, commit_info, load_run, machine_info, open_baseline, resolve_run


def artifact(created: str = "2026-01-01T00:00:00+00:00") -> RunArtifact:
    return RunArtifact(pytest_lens_version="0.1.0", created=created, run={"seed": 42}, results=[], summary={}, machine=machine_info())


def test_saves_are_numbered_per_machine_and_found_by_name_number_or_label(tmp_path: Path) -> None:
    store = RunStore(tmp_path / ".lens", machine_id="Linux-CPython-3.11-64bit")
    first = store.save(artifact("one"), "main")
    second = store.save(artifact("two"), "feature")
    third = store.save(artifact("three"), "main")
    assert [p.name for p in (first, second, third)] == ["0001_main.json", "0002_feature.json", "0003_main.json"]
    assert first.parent == tmp_path / ".lens" / "Linux-CPython-3.11-64bit"
    assert store.find("main").path == third  # the latest of that name
    assert store.find("0001").path == first
    assert store.find("0002_feature").path == second
    assert load_run(third).created == "three"
    assert not list(first.parent.glob("*.partial"))


def test_this_machines_runs_win_over_other_machines(tmp_path: Path) -> None:
    other = RunStore(tmp_path, machine_id="Darwin-CPython-3.12-64bit")
    ours = RunStore(tmp_path, machine_id="Linux-CPython-3.11-64bit")
    other.save(artifact(), "main")
    other.save(artifact(), "main")
    assert ours.find("main").path.parent.name == "Darwin-CPython-3.12-64bit"  # only there: still found
    mine = ours.save(artifact(), "main")
    assert ours.find("main").path == mine


def test_unknown_names_list_what_is_saved(tmp_path: Path) -> None:
    store = RunStore(tmp_path, machine_id="m")
    store.save(artifact(), "main")
    with pytest.raises(SavedRunError, match=r"no saved run 'nope' under .* \(saved: m/0001_main\); save one with --lens-save=nope"):
        store.find("nope")
    with pytest.raises(SavedRunError, match="letters, digits"):
        store.save(artifact(), "../escape")


def test_baselines_are_paths_or_saved_names(tmp_path: Path) -> None:
    store = RunStore(tmp_path / ".lens", machine_id="m")
    saved = store.save(artifact(), "main")
    direct = tmp_path / "run.json"
    direct.write_text(artifact("direct").model_dump_json())
    assert resolve_run("run.json", store, (tmp_path,)) == (direct, "run.json")
    assert resolve_run(str(direct), store) == (direct, "run.json")
    assert resolve_run("main", store, (tmp_path,)) == (saved, "0001_main")
    with pytest.raises(SavedRunError, match=r"baseline file 'missing\.json' does not exist"):
        resolve_run("missing.json", store, (tmp_path,))
    baseline = open_baseline("main", store)
    assert baseline.info.name == "0001_main" and baseline.info.machine == machine_info().machine_id


def test_broken_artifacts_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"pytest_lens_version": "0", "created": "x", "run": {}, "results": [{"adapter": 1}], "summary": {}}))
    with pytest.raises(SavedRunError, match=r"bad.json: not a pytest-lens run artifact \(\d+ problem\(s\); first: results.0.adapter"):
        load_run(path)
    with pytest.raises(SavedRunError, match="cannot read"):
        load_run(tmp_path / "absent.json")


def test_machine_and_commit_info(tmp_path: Path) -> None:
    info = machine_info()
    assert info.machine_id.startswith(f"{info.system}-{info.python_implementation}-")
    assert commit_info(tmp_path) is None  # not a git work tree
    here = commit_info(Path(__file__).parent)
    if here is not None:  # a source checkout (CI clones are): the commit is a 40-hex id
        assert len(here.id) == 40
